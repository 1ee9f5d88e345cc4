#!/usr/bin/env python3
"""Which NVIDIA objects' code differs between two kdbs: each object's `.text.*` sections (its
SASS, one section per kernel entry) compared, not the file bytes, which also change with kernel
parameter sizes and other metadata. Objects are matched by (kernel_name, kernel_args).

    python3 ci/kdb-code-diff.py OLD.kdb NEW.kdb [--match SUBSTRING]

A kdb of an earlier commit: git show <commit>:targets/sm_90_132/sm_90_132.kdb > /tmp/old.kdb.
Prints one line per object whose code differs (and the entries that do), the objects only one
side has, and the counts. Exit status 0 either way (a report, not a check).
"""
import argparse
import bz2
import sqlite3
import struct


def sections(elf):
    """{name: bytes} of an ELF64 little-endian file's sections."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise ValueError("not an ELF64 object")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    out = {}
    for name_at, kind, _, _, offset, size, *_ in headers:
        start = names + name_at
        name = elf[start:elf.index(b"\0", start)].decode()
        out[name] = b"" if kind == 8 else elf[offset:offset + size]  # 8: SHT_NOBITS
    return out


def code(blob):
    """The `.text.*` sections of a kdb entry (bzip2-compressed, as MIOpen stores them)."""
    return {k: v for k, v in sections(bz2.decompress(blob)).items() if k.startswith(".text.")}


def load(path):
    db = sqlite3.connect(path)
    return {(n, a): b for n, a, b in db.execute("select kernel_name, kernel_args, kernel_blob from kern_db")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--match", default="", help="only objects whose name or args contain this")
    a = ap.parse_args()
    old, new = load(a.old), load(a.new)
    keys = sorted(k for k in set(old) | set(new) if a.match in k[0] + k[1])
    same = differ = 0
    for k in keys:
        label = f"{k[0]} {k[1].strip()}"
        if k not in old or k not in new:
            print(f"only in {'new' if k in new else 'old'}: {label}")
            continue
        try:
            before, after = code(old[k]), code(new[k])
        except (ValueError, OSError) as e:  # an AMD code object bundle, or a damaged blob
            print(f"not compared ({e}): {label}")
            continue
        if before == after:
            same += 1
        else:
            differ += 1
            entries = sorted(s for s in set(before) | set(after) if before.get(s) != after.get(s))
            print(f"code differs: {label}: {', '.join(entries)}")
    print(f"{same} objects with the same code, {differ} with different code")


if __name__ == "__main__":
    main()
