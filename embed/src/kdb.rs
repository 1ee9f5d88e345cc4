//! MIOpen's kernel database (`<base>.kdb`): SQLite table `kern_db`, one row per compiled code
//! object, keyed by (`kernel_name` = source file + `.o`, `kernel_args` = compile options +
//! ` -mcpu=<arch>`), blob bzip2-compressed unless that does not shrink it
//! (`uncompressed_size = 0` then), `kernel_hash` = MD5 hex of the uncompressed object.

use std::io::Read;
use std::path::Path;

use md5::{Digest, Md5};

use crate::error::{Error, Result};
use crate::perfdb::check_columns;

/// MIOpen's `kern_db` schema (kern_db.hpp).
pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS `kern_db` (`id` INTEGER PRIMARY KEY ASC,`kernel_name` TEXT NOT NULL,`kernel_args` TEXT NOT NULL,`kernel_blob` BLOB NOT NULL,`kernel_hash` TEXT NOT NULL,`uncompressed_size` INT NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS `idx_kern_db` ON kern_db(kernel_name, kernel_args);";

/// Smallest valid system kdb (MIOpen: "Empty MIOpen DBs are 20 kb"; it rejects < 512 B).
pub const MIN_KDB_BYTES: u64 = 512;

/// One code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KdbEntry {
    /// Source file name + `.o` (`naive_conv.cpp.o`).
    pub kernel_name: String,
    /// Compile options + ` -mcpu=<arch>`.
    pub kernel_args: String,
    /// The uncompressed code object.
    pub object: Vec<u8>,
}

impl KdbEntry {
    /// MIOpen's `kernel_hash`: MD5 of the object as 32 lowercase hex characters.
    pub fn md5_hex(&self) -> String {
        hex(&Md5::digest(&self.object))
    }
}

/// A whole kernel database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelDb {
    /// Entries in row-id order.
    pub entries: Vec<KdbEntry>,
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub use kiln_format::manifest::{kernel_args, kernel_name};

/// Largest code object a kdb row may decompress to (kiln's largest is under 100 KiB; MIOpen's
/// under 10 MiB).
pub const MAX_OBJECT_BYTES: u64 = 64 << 20;

/// Most bytes all code objects of one kdb may decompress to (kiln's largest decodes to under
/// 40 MiB), checked against the rows' claimed sizes before anything is decompressed.
pub const MAX_KDB_DECODED_BYTES: u64 = 256 << 20;

/// Longest `kernel_name` a row may have (MIOpen's are source file names, under 100 bytes).
pub const MAX_KERNEL_NAME_BYTES: usize = 1024;

/// Longest `kernel_args` a row may have (compile options; kiln's longest are under 1 KiB).
pub const MAX_KERNEL_ARGS_BYTES: usize = 16 << 10;

/// bzip2 as MIOpen calls it: block size 9, work factor 30, output no larger than the input.
/// Returns `None` when the compressed form would not fit (MIOpen stores the raw bytes then).
pub fn bz2_compress_like_miopen(data: &[u8]) -> Option<Vec<u8>> {
    let mut enc = bzip2::read::BzEncoder::new(data, bzip2::Compression::best());
    let mut out = Vec::new();
    enc.read_to_end(&mut out).ok()?;
    (out.len() <= data.len()).then_some(out)
}

fn check_lfs_or_tiny(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64).read_to_end(&mut head))
        .map_err(|e| Error::io(path, e))?;
    if head.starts_with(b"version https://git-lfs") {
        return Err(Error::sqlite(
            path,
            "this is a Git LFS pointer file, not a kdb: fetch the real file (git lfs pull) or give a URL/directory source",
        ));
    }
    if meta.len() < MIN_KDB_BYTES {
        return Err(Error::sqlite(
            path,
            format!(
                "{} bytes is too small to be a kdb (MIOpen rejects files under {MIN_KDB_BYTES} B)",
                meta.len()
            ),
        ));
    }
    if !head.starts_with(b"SQLite format 3\0") {
        return Err(Error::sqlite(path, "not a SQLite database (bad header)"));
    }
    Ok(())
}

impl KernelDb {
    /// Reads a kdb, decompressing every blob and checking its MD5 like MIOpen's loader.
    pub fn read(path: &Path) -> Result<KernelDb> {
        crate::input::check_regular(path)?;
        check_lfs_or_tiny(path)?;
        let conn = crate::sqlitefile::open_read_only(path)?;
        check_columns(
            &conn,
            path,
            "kern_db",
            &[
                "kernel_name",
                "kernel_args",
                "kernel_blob",
                "kernel_hash",
                "uncompressed_size",
            ],
        )?;
        // Every blob decodes to exactly its claimed size (or the row is refused), so the sum
        // of the claims bounds what decoding can cost: check it before decoding anything.
        let (claimed, longest_name, longest_args): (f64, i64, i64) = conn
            .query_row(
                "SELECT total(CASE WHEN uncompressed_size = 0 THEN length(kernel_blob) ELSE max(uncompressed_size, 0) END), \
                 coalesce(max(length(CAST(kernel_name AS BLOB))), 0), coalesce(max(length(CAST(kernel_args AS BLOB))), 0) FROM kern_db",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(|e| Error::sqlite(path, e))?;
        if claimed > MAX_KDB_DECODED_BYTES as f64 {
            return Err(Error::sqlite(
                path,
                format!(
                    "the rows claim {claimed:.0} bytes of code objects, above the {} MiB cap on one kdb",
                    MAX_KDB_DECODED_BYTES >> 20
                ),
            ));
        }
        if longest_name as usize > MAX_KERNEL_NAME_BYTES
            || longest_args as usize > MAX_KERNEL_ARGS_BYTES
        {
            return Err(Error::sqlite(
                path,
                format!(
                    "a kernel_name of {longest_name} bytes or kernel_args of {longest_args} bytes (at most {MAX_KERNEL_NAME_BYTES} and {MAX_KERNEL_ARGS_BYTES})"
                ),
            ));
        }
        let mut stmt = conn
            .prepare("SELECT kernel_name, kernel_args, kernel_blob, kernel_hash, uncompressed_size FROM kern_db")
            .map_err(|e| Error::sqlite(path, e))?;
        let mut rows = stmt.query([]).map_err(|e| Error::sqlite(path, e))?;
        let mut entries = Vec::new();
        let mut keys = std::collections::HashSet::new();
        let mut decoded = 0u64;
        while let Some(row) = rows.next().map_err(|e| Error::sqlite(path, e))? {
            let name: String = row.get(0).map_err(|e| Error::sqlite(path, e))?;
            let args: String = row.get(1).map_err(|e| Error::sqlite(path, e))?;
            let key = format!(
                "'{}' args '{}'",
                crate::input::excerpt(&name),
                crate::input::excerpt(&args)
            );
            let bad = |reason: String| Error::Kdb {
                file: path.to_path_buf(),
                key: key.clone(),
                reason,
            };
            let blob: Vec<u8> = row.get(2).map_err(|e| bad(format!("kernel_blob: {e}")))?;
            let hash: String = row.get(3).map_err(|e| bad(format!("kernel_hash: {e}")))?;
            let size: i64 = row
                .get(4)
                .map_err(|e| bad(format!("uncompressed_size: {e}")))?;
            let object = if size == 0 {
                blob
            } else {
                let size = usize::try_from(size)
                    .map_err(|_| bad(format!("negative uncompressed_size {size}")))?;
                if size as u64 > MAX_OBJECT_BYTES {
                    return Err(bad(format!(
                        "uncompressed_size {size} is above the {} MiB cap on one code object",
                        MAX_OBJECT_BYTES >> 20
                    )));
                }
                // Grows with what really decompresses, bounded by the claim (+1 to detect a
                // lie): the claimed size is never allocated up front.
                let mut out = Vec::new();
                bzip2::read::BzDecoder::new(&blob[..])
                    .take(size as u64 + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| bad(format!("corrupted bzip2 blob: {e}")))?;
                if out.len() != size {
                    return Err(bad(format!(
                        "blob decompresses to {} bytes, uncompressed_size says {size}",
                        out.len()
                    )));
                }
                out
            };
            let entry = KdbEntry {
                kernel_name: name,
                kernel_args: args,
                object,
            };
            let actual = entry.md5_hex();
            if actual != hash {
                return Err(bad(format!(
                    "MD5 mismatch: kernel_hash is {}, blob hashes to {actual} (possible database corruption)",
                    crate::input::excerpt(&hash)
                )));
            }
            decoded += entry.object.len() as u64;
            if decoded > MAX_KDB_DECODED_BYTES {
                return Err(bad(format!(
                    "the code objects decompress to more than {} MiB in all",
                    MAX_KDB_DECODED_BYTES >> 20
                )));
            }
            if !keys.insert((entry.kernel_name.clone(), entry.kernel_args.clone())) {
                return Err(bad(
                    "the key appears twice (MIOpen's schema makes it unique)".into(),
                ));
            }
            entries.push(entry);
        }
        Ok(KernelDb { entries })
    }

    /// Writes a kdb as MIOpen does (replacing `path` only once complete). Rows are inserted in entry order, so the
    /// same entries give a byte-identical file.
    pub fn write(&self, path: &Path) -> Result<()> {
        // System kdbs use journal_mode off or delete (MIOpen's db_sync test); delete is the default.
        crate::sqlitefile::write_new(path, SCHEMA, |tx| {
            let mut ins = tx
                .prepare("INSERT OR REPLACE INTO kern_db(kernel_name, kernel_args, kernel_blob, kernel_hash, uncompressed_size) VALUES(?, ?, ?, ?, ?)")
                .map_err(|e| Error::sqlite(path, e))?;
            for e in &self.entries {
                let (blob, size) = match bz2_compress_like_miopen(&e.object) {
                    Some(c) => (c, e.object.len() as i64),
                    None => (e.object.clone(), 0),
                };
                ins.execute(rusqlite::params![
                    e.kernel_name,
                    e.kernel_args,
                    blob,
                    e.md5_hex(),
                    size
                ])
                .map_err(|err| Error::sqlite(path, err))?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    #[test]
    fn incompressible_blobs_are_stored_raw() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.kdb");
        // A xorshift stream does not compress; a run of zeros does.
        let mut x = 0x1234_5678_u32;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let db = KernelDb {
            entries: vec![
                KdbEntry {
                    kernel_name: "a.cpp.o".into(),
                    kernel_args: " -DX=1 -mcpu=gfx942".into(),
                    object: noise,
                },
                KdbEntry {
                    kernel_name: "b.cpp.o".into(),
                    kernel_args: " -mcpu=gfx942".into(),
                    object: vec![0; 4096],
                },
            ],
        };
        db.write(&p).unwrap();
        let c = Connection::open(&p).unwrap();
        let sizes: Vec<i64> = c
            .prepare("SELECT uncompressed_size FROM kern_db")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(sizes, vec![0, 4096]);
        assert_eq!(KernelDb::read(&p).unwrap(), db);
    }

    #[test]
    fn lfs_pointer_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("gfx90a.kdb");
        std::fs::write(
            &p,
            "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 233781575\n",
        )
        .unwrap();
        let e = KernelDb::read(&p).unwrap_err().to_string();
        assert!(e.contains("Git LFS pointer"), "{e}");
    }
}
