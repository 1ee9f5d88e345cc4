//! A kdb written by kiln with real code objects (kernels/conv_naive.cpp built by clang-19 for
//! AMD and NVRTC 12.9 for sm_90) reads back identically with Python's sqlite3 module and with
//! kiln; MD5, sizes and the raw-when-incompressible rule follow MIOpen.

use std::path::{Path, PathBuf};

use kiln_embed::compile::{compile_amd, Nvrtc};
use kiln_embed::kdb::{kernel_args, kernel_name, KdbEntry, KernelDb};

fn kernels() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels")
}

fn real_objects() -> Vec<KdbEntry> {
    let src = kernels().join("conv_naive.cpp");
    let mut out = Vec::new();
    for (arch, opt) in [
        ("gfx90a", "-DKILN_DTYPE_FP32"),
        ("gfx942", "-DKILN_DTYPE_FP16"),
        ("gfx1100", "-DKILN_DTYPE_BF16"),
    ] {
        let obj = compile_amd(&src, &kernels(), arch, &[opt.to_string()])
            .expect("clang-19 builds (run ci/setup.sh)");
        out.push(KdbEntry {
            kernel_name: kernel_name("conv_naive.cpp"),
            kernel_args: kernel_args(opt, arch),
            object: obj,
        });
    }
    let nvrtc = Nvrtc::load().expect("NVRTC wheel present (run ci/setup.sh)");
    let headers = kiln_embed::kdbbuild::kiln_headers(&kernels()).unwrap();
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let source = std::fs::read_to_string(&src).unwrap();
    let cubin = nvrtc
        .compile_cubin(
            "conv_naive.cpp",
            &source,
            &headers,
            "sm_90",
            &["-DKILN_DTYPE_FP32".to_string()],
        )
        .unwrap();
    out.push(KdbEntry {
        kernel_name: kernel_name("conv_naive.cpp"),
        kernel_args: kernel_args("-DKILN_DTYPE_FP32", "sm_90"),
        object: cubin,
    });
    out
}

#[test]
fn kdb_round_trip_with_real_code_objects() {
    let entries = real_objects();
    // They are real ELF objects: AMDGPU (e_machine 0xE0) and CUDA (190).
    for e in &entries {
        assert_eq!(&e.object[..4], b"\x7fELF");
        let machine = u16::from_le_bytes([e.object[18], e.object[19]]);
        assert!(
            machine == 0xE0 || machine == 190,
            "{}: e_machine {machine}",
            e.kernel_args
        );
    }
    // Plus one object that bzip2 cannot shrink: MIOpen stores it raw with uncompressed_size 0.
    let mut x = 88172645463325252u64;
    let noise: Vec<u8> = (0..2048)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let mut all = entries.clone();
    all.push(KdbEntry {
        kernel_name: "noise.s.o".into(),
        kernel_args: kernel_args("", "gfx942"),
        object: noise,
    });
    let db = KernelDb { entries: all };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gfx942130.kdb");
    db.write(&path).unwrap();

    // kiln reads back exactly what it wrote.
    assert_eq!(KernelDb::read(&path).unwrap(), db);

    // A plain SQLite client (Python's sqlite3 + bz2 + hashlib) sees MIOpen's schema and rules.
    let script = r#"
import sqlite3, bz2, hashlib, sys
c = sqlite3.connect(sys.argv[1])
cols = [r[1] for r in c.execute("PRAGMA table_info(kern_db)")]
assert cols == ["id", "kernel_name", "kernel_args", "kernel_blob", "kernel_hash", "uncompressed_size"], cols
for name, args, blob, h, size in c.execute("SELECT kernel_name, kernel_args, kernel_blob, kernel_hash, uncompressed_size FROM kern_db ORDER BY id"):
    raw = blob if size == 0 else bz2.decompress(blob)
    assert size == 0 or blob[:4] == b"BZh9", (name, blob[:4])
    assert size == 0 or len(raw) == size
    assert hashlib.md5(raw).hexdigest() == h
    print(name, args, size, len(blob), h, hashlib.sha256(raw).hexdigest())
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), db.entries.len());
    for (line, e) in lines.iter().zip(&db.entries) {
        let f: Vec<&str> = line.split(' ').collect();
        let sha = f[f.len() - 1];
        let md5 = f[f.len() - 2];
        let size: usize = f[f.len() - 4].parse().unwrap();
        assert_eq!(md5, e.md5_hex());
        assert_eq!(
            sha,
            kiln_embed::kdb::hex(&<sha2::Sha256 as sha2::Digest>::digest(&e.object))
        );
        if e.kernel_name == "noise.s.o" {
            assert_eq!(size, 0, "incompressible blob must be stored raw");
        } else {
            assert_eq!(
                size,
                e.object.len(),
                "code objects compress, so uncompressed_size is set"
            );
        }
    }
    // The args keep MIOpen's form: options, then " -mcpu=<arch>".
    assert_eq!(db.entries[0].kernel_args, " -DKILN_DTYPE_FP32 -mcpu=gfx90a");
}

#[test]
fn builds_are_reproducible() {
    let a = real_objects();
    let b = real_objects();
    assert_eq!(a, b);
    let dir = tempfile::tempdir().unwrap();
    let (p1, p2) = (dir.path().join("a.kdb"), dir.path().join("b.kdb"));
    KernelDb { entries: a }.write(&p1).unwrap();
    KernelDb { entries: b }.write(&p2).unwrap();
    assert_eq!(std::fs::read(&p1).unwrap(), std::fs::read(&p2).unwrap());
}

/// A committed kdb read and written again is byte-identical: what `kdb build --check` relies on
/// (the temporary file is written without a journal, which does not change the file).
#[test]
fn a_committed_kdb_rewrites_byte_for_byte() {
    let committed =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../targets/gfx942130/gfx942130.kdb");
    let db = KernelDb::read(&committed).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("again.kdb");
    db.write(&out).unwrap();
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&committed).unwrap());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the kdb is left"
    );
}
