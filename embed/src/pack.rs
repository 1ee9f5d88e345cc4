//! Packing a database into kiln's embedded table blob (layout: `kiln_format::table`):
//! perfect hash from rust-phf's generator, records in slot order, blocks compressed with zstd,
//! with a dictionary trained on the table when that makes it smaller.

use std::collections::HashSet;

use kiln_format::records::{
    encode_find_payload, encode_kdb_payload, encode_perf_payload, kdb_key, RawFindItem,
};
use kiln_format::table::{encode_block, encode_header, encode_strings, pad8, BlockDesc, TableKind};
use md5::Md5;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::finddb::FindDb;
use crate::kdb::KernelDb;
use crate::perfdb::PerfDb;

/// A table before packing: records as (key, payload) and the interned strings they index.
#[derive(Clone, Debug)]
pub struct TableInput {
    /// Kind.
    pub kind: TableKind,
    /// Name for errors and reports (`gfx942130 find-db`).
    pub name: String,
    /// (key, payload) pairs.
    pub records: Vec<(Vec<u8>, Vec<u8>)>,
    /// Interned strings (solver names).
    pub strings: Vec<String>,
}

/// A packed table and what packing measured.
#[derive(Clone, Debug)]
pub struct PackedTable {
    /// The blob to embed.
    pub blob: Vec<u8>,
    /// Records.
    pub records: usize,
    /// Blocks.
    pub blocks: usize,
    /// Decoded size (the `.bss` the table needs).
    pub decoded_len: usize,
    /// Dictionary bytes embedded (0 = none was worth it).
    pub dict_len: usize,
    /// Compressed size of a sample without / with the dictionary (the measurement that chose).
    pub sample_sizes: (usize, usize),
    /// zstd level used.
    pub level: i32,
}

struct Interner {
    strings: Vec<String>,
}

impl Interner {
    fn index(&mut self, s: &str, table: &str) -> Result<u16> {
        if let Some(i) = self.strings.iter().position(|x| x == s) {
            return Ok(i as u16);
        }
        if self.strings.len() >= u16::MAX as usize {
            return Err(Error::Pack {
                table: table.to_string(),
                reason: "more than 65535 distinct solver names".into(),
            });
        }
        self.strings.push(s.to_string());
        Ok((self.strings.len() - 1) as u16)
    }
}

/// Builds the find-db table input.
pub fn find_db_input(db: &FindDb, name: &str) -> Result<TableInput> {
    let mut interner = Interner {
        strings: Vec::new(),
    };
    let mut records = Vec::with_capacity(db.records.len());
    for r in &db.records {
        let mut items = Vec::with_capacity(r.items.len());
        for it in &r.items {
            items.push(RawFindItem {
                solver: interner.index(&it.solver, name)?,
                algorithm: kiln_format::records::algorithm_index(&it.algorithm).ok_or_else(
                    || Error::Pack {
                        table: name.to_string(),
                        reason: format!("unknown algorithm {}", it.algorithm),
                    },
                )?,
                time_ms: it.time_ms,
                workspace: it.workspace,
            });
        }
        records.push((r.key.as_bytes().to_vec(), encode_find_payload(&items)));
    }
    Ok(TableInput {
        kind: TableKind::FindDb,
        name: name.to_string(),
        records,
        strings: interner.strings,
    })
}

/// Builds the perf-db table input.
pub fn perf_db_input(db: &PerfDb, name: &str) -> Result<TableInput> {
    let mut interner = Interner {
        strings: Vec::new(),
    };
    let mut records = Vec::with_capacity(db.records.len());
    for r in &db.records {
        let mut items = Vec::with_capacity(r.items.len());
        for it in &r.items {
            items.push((interner.index(&it.solver, name)?, it.params.as_str()));
        }
        records.push((r.key.as_bytes().to_vec(), encode_perf_payload(&items)));
    }
    Ok(TableInput {
        kind: TableKind::PerfDb,
        name: name.to_string(),
        records,
        strings: interner.strings,
    })
}

/// Builds the kdb table input.
pub fn kdb_input(db: &KernelDb, name: &str) -> Result<TableInput> {
    let records = db
        .entries
        .iter()
        .map(|e| {
            let md5: [u8; 16] = Md5::digest(&e.object).into();
            let sha: [u8; 32] = Sha256::digest(&e.object).into();
            (
                kdb_key(&e.kernel_name, &e.kernel_args),
                encode_kdb_payload(md5, sha, &e.object),
            )
        })
        .collect();
    Ok(TableInput {
        kind: TableKind::KernelDb,
        name: name.to_string(),
        records,
        strings: Vec::new(),
    })
}

/// Decoded bytes a block aims for: small enough that decoding one on first touch is ~10 us,
/// big enough that zstd finds redundancy.
const TARGET_BLOCK_BYTES: usize = 16 * 1024;

fn zstd_level(decoded: usize) -> i32 {
    // zstd -19 runs at ~2 MB/s on this class of machine: keep it for normal-sized tables and
    // step down for very large ones so that embedding stays within the build-time budget.
    match decoded {
        0..=8_000_000 => 19,
        8_000_001..=64_000_000 => 9,
        _ => 3,
    }
}

fn compress_all(blocks: &[Vec<u8>], level: i32, dict: &[u8]) -> Result<Vec<Vec<u8>>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(blocks.len().max(1));
    let chunk = blocks.len().div_ceil(threads.max(1)).max(1);
    let results: Vec<std::io::Result<Vec<Vec<u8>>>> = std::thread::scope(|s| {
        let handles: Vec<_> = blocks
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut c = zstd::bulk::Compressor::with_dictionary(level, dict)?;
                    // zstd's own XXH64 of the decoded bytes, checked as it decodes: the
                    // sha256 covers the frame (checked before decoding), this the decoder.
                    c.include_checksum(true)?;
                    c.include_contentsize(true)?;
                    part.iter().map(|b| c.compress(b)).collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("compression thread panicked")))
            })
            .collect()
    });
    let mut out = Vec::with_capacity(blocks.len());
    for r in results {
        out.extend(r.map_err(|e| Error::Pack {
            table: String::new(),
            reason: format!("zstd: {e}"),
        })?);
    }
    Ok(out)
}

/// Packs a table.
pub fn pack(input: &TableInput) -> Result<PackedTable> {
    let fail = |reason: String| Error::Pack {
        table: input.name.clone(),
        reason,
    };
    let n = input.records.len();
    if n > u32::MAX as usize / 2 {
        return Err(fail("too many records".into()));
    }
    let mut seen = HashSet::with_capacity(n);
    for (k, _) in &input.records {
        if !seen.insert(k.as_slice()) {
            return Err(fail(format!(
                "duplicate key '{}'",
                String::from_utf8_lossy(k)
            )));
        }
    }
    // phf's generator loops forever on duplicates; they were rejected above.
    let keys: Vec<&[u8]> = input.records.iter().map(|(k, _)| k.as_slice()).collect();
    let (hash_key, disps, order) = if n == 0 {
        (0u64, Vec::new(), Vec::new())
    } else {
        let state = phf_generator::generate_hash(&keys);
        (state.key, state.disps, state.map)
    };
    let rpb = match input.kind {
        TableKind::KernelDb => 1,
        _ => {
            let total: usize = input
                .records
                .iter()
                .map(|(k, p)| 8 + k.len() + p.len())
                .sum();
            let avg = total.checked_div(n).unwrap_or(1).max(1);
            (TARGET_BLOCK_BYTES / avg).clamp(1, 4096)
        }
    };
    // Records in hash-slot order, cut into blocks.
    let slotted: Vec<(&[u8], &[u8])> = order
        .iter()
        .map(|&i| (input.records[i].0.as_slice(), input.records[i].1.as_slice()))
        .collect();
    let blocks: Vec<Vec<u8>> = slotted.chunks(rpb).map(encode_block).collect();
    let decoded_len: usize = blocks.iter().map(Vec::len).sum();
    let level = zstd_level(decoded_len);

    // Decide on a dictionary from a sample of blocks: train on records, compare sizes.
    let sample: Vec<Vec<u8>> = blocks
        .iter()
        .step_by((blocks.len() / 64).max(1))
        .take(64)
        .cloned()
        .collect();
    let mut dict = Vec::new();
    let mut sample_sizes = (0, 0);
    if blocks.len() >= 4 {
        let training: Vec<Vec<u8>> = match input.kind {
            TableKind::KernelDb => slotted.iter().map(|(_, p)| p.to_vec()).collect(),
            _ => slotted
                .iter()
                .step_by((n / 20_000).max(1))
                .map(|(k, p)| [*k, *p].concat())
                .collect(),
        };
        let max_dict = (decoded_len / 50).clamp(4096, 64 * 1024);
        let mut samples: Vec<u8> = Vec::new();
        let mut sizes = Vec::new();
        for t in &training {
            samples.extend_from_slice(t);
            sizes.push(t.len());
        }
        if let Ok(trained) = zstd::dict::from_continuous(&samples, &sizes, max_dict) {
            let plain: usize = compress_all(&sample, level, &[])?
                .iter()
                .map(Vec::len)
                .sum();
            let with: usize = compress_all(&sample, level, &trained)?
                .iter()
                .map(Vec::len)
                .sum();
            let scale = blocks.len() as f64 / sample.len().max(1) as f64;
            sample_sizes = (plain, with);
            // Keep the dictionary only if it pays for its own bytes across all blocks.
            if (with as f64 * scale + trained.len() as f64) < plain as f64 * scale {
                dict = trained;
            }
        }
    }
    let frames = compress_all(&blocks, level, &dict).map_err(|e| fail(e.to_string()))?;

    let strings: Vec<&str> = input.strings.iter().map(String::as_str).collect();
    let string_section = encode_strings(&strings);
    let compressed_len: usize = frames.iter().map(Vec::len).sum();
    let header = encode_header(
        input.kind,
        n as u32,
        rpb as u32,
        blocks.len() as u32,
        disps.len() as u32,
        strings.len() as u32,
        hash_key,
        decoded_len as u64,
        dict.len() as u32,
        string_section.len() as u32,
        compressed_len as u64,
    );
    let mut blob = Vec::with_capacity(header.len() + compressed_len + 64 * 1024);
    blob.extend_from_slice(&header);
    for (d1, d2) in &disps {
        blob.extend_from_slice(&d1.to_le_bytes());
        blob.extend_from_slice(&d2.to_le_bytes());
    }
    let (mut comp_off, mut dec_off) = (0u64, 0u64);
    for (block, frame) in blocks.iter().zip(&frames) {
        let desc = BlockDesc {
            comp_offset: comp_off,
            dec_offset: dec_off,
            comp_len: frame.len() as u32,
            dec_len: block.len() as u32,
            sha256: Sha256::digest(frame).into(),
        };
        blob.extend_from_slice(&desc.to_bytes());
        comp_off += frame.len() as u64;
        dec_off += block.len() as u64;
    }
    blob.extend_from_slice(&string_section);
    blob.resize(pad8(blob.len()), 0);
    blob.extend_from_slice(&dict);
    blob.resize(pad8(blob.len()), 0);
    for f in &frames {
        blob.extend_from_slice(f);
    }
    Ok(PackedTable {
        blob,
        records: n,
        blocks: blocks.len(),
        decoded_len,
        dict_len: dict.len(),
        sample_sizes,
        level,
    })
}

/// The zstd library version, for provenance.
pub fn zstd_version() -> String {
    let v = zstd::zstd_safe::version_number();
    format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100)
}
