//! The embedded table: one binary blob per database, written by `kiln-embed` at build time and
//! read here at run time, straight from `.rodata`.
//!
//! A table is a perfect-hash index (rust-phf's CHD displacements, generated at build time) over
//! records laid out in hash-slot order, cut into blocks of `records_per_block` records. Each
//! block is zstd-compressed on its own (optionally with a dictionary trained on the table) and
//! carries the sha256 of its zstd frame. A lookup hashes the key, finds the slot, checks the
//! frame's digest before the decompressor reads it, decodes the block once into static storage
//! (`.bss`, never the heap; zstd checks its XXH64 content checksum as it decodes), and compares
//! the stored key. Later lookups in that block touch no allocator. Hashing the frame, not the
//! decoded bytes, hashes 4-6x fewer bytes on a code object's cold start.
//!
//! Blob layout (little endian, 8-byte aligned sections):
//! ```text
//! header (64 B)   magic "KILNTAB1", kind, record_count, records_per_block, block_count,
//!                 disp_count, string_count, hash_key, decoded_len, dict_len, strings_len,
//!                 compressed_len
//! disps           disp_count x (d1 u32, d2 u32)
//! blocks          block_count x (comp_offset u64, dec_offset u64, comp_len u32,
//!                 dec_len u32, sha256 [u8; 32])
//! strings         (string_count + 1) x u32 offsets, then the UTF-8 bytes (padded to 8)
//! dictionary      dict_len bytes (padded to 8)
//! compressed      the blocks' zstd frames
//! ```
//! A decoded block is `count u32`, `(count + 1) x u32` record offsets from the block start,
//! then the records; a record is `key_len u32`, the key, then a kind-specific payload.

use core::cell::UnsafeCell;
use core::fmt;
use core::hash::Hasher;
use core::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use phf_shared::{HashKey, PhfHash};
use sha2::{Digest, Sha256};

/// First 8 bytes of every table blob.
pub const MAGIC: &[u8; 8] = b"KILNTAB1";
/// Size of the fixed header.
pub const HEADER_LEN: usize = 64;
/// Size of one block descriptor.
pub const BLOCK_DESC_LEN: usize = 56;

/// What a table holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// Find-db: problem key -> ranked solutions.
    FindDb = 1,
    /// Perf-db: problem key -> (solver, params) pairs.
    PerfDb = 2,
    /// Kernel db: (kernel_name, kernel_args) -> code object.
    KernelDb = 3,
}

impl TableKind {
    /// From the header's kind field.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            1 => Some(TableKind::FindDb),
            2 => Some(TableKind::PerfDb),
            3 => Some(TableKind::KernelDb),
            _ => None,
        }
    }

    /// Short name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            TableKind::FindDb => "find-db",
            TableKind::PerfDb => "perf-db",
            TableKind::KernelDb => "kdb",
        }
    }
}

/// What went wrong reading an embedded table. Every variant means the binary's own data is
/// damaged or was built by an incompatible kiln: it is reported, never trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableError {
    /// Header missing, wrong magic, or a section that lies outside the blob.
    Malformed(&'static str),
    /// A block failed to decompress.
    Decompress {
        /// Block index.
        block: u32,
    },
    /// A block's zstd frame has a sha256 other than the recorded one.
    DigestMismatch {
        /// Block index.
        block: u32,
    },
    /// A record inside a decoded block is out of bounds.
    BadRecord {
        /// Slot of the record.
        slot: u32,
    },
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::Malformed(what) => write!(f, "embedded table is malformed: {what}"),
            TableError::Decompress { block } => {
                write!(f, "embedded table block {block} does not decompress")
            }
            TableError::DigestMismatch { block } => {
                write!(
                    f,
                    "embedded table block {block} failed its sha256 check (corrupted binary?)"
                )
            }
            TableError::BadRecord { slot } => {
                write!(f, "embedded table record {slot} is out of bounds")
            }
        }
    }
}

impl std::error::Error for TableError {}

/// A key given in parts, hashed and compared as their concatenation without building it.
/// The kdb key is `kernel_name`, a NUL byte, then `kernel_args`.
#[derive(Clone, Copy, Debug)]
pub struct KeyParts<'a>(pub &'a [&'a [u8]]);

impl KeyParts<'_> {
    fn len(&self) -> usize {
        self.0.iter().map(|p| p.len()).sum()
    }

    fn eq_bytes(&self, mut other: &[u8]) -> bool {
        if other.len() != self.len() {
            return false;
        }
        for part in self.0 {
            let (head, tail) = other.split_at(part.len());
            if head != *part {
                return false;
            }
            other = tail;
        }
        true
    }
}

impl PhfHash for KeyParts<'_> {
    /// Same bytes as `<[u8] as PhfHash>` of the concatenation: length, then the bytes
    /// (SipHash consumes a stream, so feeding the parts one after another is identical).
    fn phf_hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.len() as u64);
        for part in self.0 {
            state.write(part);
        }
    }
}

/// The hash every table uses: phf's SipHash-1-3 of the key bytes.
pub fn hash_key(key: &[u8], hash_key: HashKey) -> phf_shared::Hashes {
    phf_shared::hash(key, &hash_key)
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Rounds up to a multiple of 8.
pub const fn pad8(v: usize) -> usize {
    (v + 7) & !7
}

/// The parsed header of a table blob: offsets of its sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// What the table holds.
    pub kind: TableKind,
    /// Number of records (= number of hash slots).
    pub record_count: u32,
    /// Records per compressed block.
    pub records_per_block: u32,
    /// Number of blocks.
    pub block_count: u32,
    /// Number of phf displacement pairs.
    pub disp_count: u32,
    /// Number of interned strings (solver names).
    pub string_count: u32,
    /// phf hash key.
    pub hash_key: u64,
    /// Total decoded size of all blocks.
    pub decoded_len: u64,
    /// Size of the zstd dictionary (0 = none).
    pub dict_len: u32,
    /// Size of the string section.
    pub strings_len: u32,
    /// Size of the compressed section.
    pub compressed_len: u64,
    disps_at: usize,
    /// Offset of the block descriptors in the blob.
    pub blocks_at: usize,
    strings_at: usize,
    dict_at: usize,
    compressed_at: usize,
}

impl Header {
    /// Parses and bounds-checks a blob's header.
    pub fn parse(b: &[u8]) -> Result<Header, TableError> {
        let m = TableError::Malformed;
        if b.len() < HEADER_LEN || &b[..8] != MAGIC {
            return Err(m(
                "bad magic (not a kiln table, or built by another kiln version)",
            ));
        }
        let r32 = |at| read_u32(b, at).ok_or(m("truncated header"));
        let r64 = |at| read_u64(b, at).ok_or(m("truncated header"));
        let kind = TableKind::from_u32(r32(8)?).ok_or(m("unknown table kind"))?;
        let record_count = r32(12)?;
        let records_per_block = r32(16)?;
        let block_count = r32(20)?;
        let disp_count = r32(24)?;
        let string_count = r32(28)?;
        let hash_key = r64(32)?;
        let decoded_len = r64(40)?;
        let dict_len = r32(48)?;
        let strings_len = r32(52)?;
        let compressed_len = r64(56)?;
        if record_count > 0 && (records_per_block == 0 || disp_count == 0) {
            return Err(m("zero block size or displacement count"));
        }
        let expected_blocks = if record_count == 0 {
            0
        } else {
            record_count.div_ceil(records_per_block)
        };
        if block_count != expected_blocks {
            return Err(m("block count does not match record count"));
        }
        // Section offsets in u64 with overflow checks: every field comes from the blob.
        let sizes = m("section sizes do not add up to the blob size");
        let add = |a: u64, b: u64| a.checked_add(b).ok_or(sizes);
        let disps_at = HEADER_LEN as u64;
        let blocks_at = add(disps_at, disp_count as u64 * 8)?;
        let strings_at = add(blocks_at, block_count as u64 * BLOCK_DESC_LEN as u64)?;
        let dict_at = add(strings_at, (strings_len as u64).next_multiple_of(8))?;
        let compressed_at = add(dict_at, (dict_len as u64).next_multiple_of(8))?;
        if add(compressed_at, compressed_len)? != b.len() as u64 {
            return Err(sizes);
        }
        // All offsets are now within the blob, so they fit usize.
        let [disps_at, blocks_at, strings_at, dict_at, compressed_at] =
            [disps_at, blocks_at, strings_at, dict_at, compressed_at].map(|v| v as usize);
        // Blocks decode into disjoint ranges in block order, inside `decoded_len`: checked here,
        // once, because the lock-free decode relies on it (a damaged descriptor must not let
        // one block's decode overwrite another block already verified).
        let mut next_free = 0u64;
        for i in 0..block_count as usize {
            let at = blocks_at + i * BLOCK_DESC_LEN;
            let desc = b
                .get(at..at + BLOCK_DESC_LEN)
                .and_then(BlockDesc::parse)
                .ok_or(m("block descriptor out of bounds"))?;
            let dec_end = desc
                .dec_offset
                .checked_add(desc.dec_len as u64)
                .ok_or(m("block range overflows"))?;
            if desc.dec_offset < next_free || dec_end > decoded_len {
                return Err(m("block decode ranges overlap or leave the decoded length"));
            }
            next_free = dec_end;
        }
        Ok(Header {
            kind,
            record_count,
            records_per_block,
            block_count,
            disp_count,
            string_count,
            hash_key,
            decoded_len,
            dict_len,
            strings_len,
            compressed_len,
            disps_at,
            blocks_at,
            strings_at,
            dict_at,
            compressed_at,
        })
    }
}

/// One block's descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockDesc {
    /// Offset of the zstd frame within the compressed section.
    pub comp_offset: u64,
    /// Offset of the decoded block within the table's decode storage.
    pub dec_offset: u64,
    /// Size of the zstd frame.
    pub comp_len: u32,
    /// Size of the decoded block.
    pub dec_len: u32,
    /// sha256 of the block's zstd frame.
    pub sha256: [u8; 32],
}

impl BlockDesc {
    /// Serialized form.
    pub fn to_bytes(&self) -> [u8; BLOCK_DESC_LEN] {
        let mut out = [0u8; BLOCK_DESC_LEN];
        out[0..8].copy_from_slice(&self.comp_offset.to_le_bytes());
        out[8..16].copy_from_slice(&self.dec_offset.to_le_bytes());
        out[16..20].copy_from_slice(&self.comp_len.to_le_bytes());
        out[20..24].copy_from_slice(&self.dec_len.to_le_bytes());
        out[24..56].copy_from_slice(&self.sha256);
        out
    }

    fn parse(b: &[u8]) -> Option<BlockDesc> {
        Some(BlockDesc {
            comp_offset: read_u64(b, 0)?,
            dec_offset: read_u64(b, 8)?,
            comp_len: read_u32(b, 16)?,
            dec_len: read_u32(b, 20)?,
            sha256: b.get(24..56)?.try_into().ok()?,
        })
    }
}

/// Where a table's blocks are decoded to. Implemented by [`DecodeBuffer`], a static
/// zero-initialised buffer (`.bss`) sized at build time.
///
/// # Safety
/// `region()` must return the same pointer and length on every call, valid for reads and writes
/// of that many bytes for `'static`, used by nothing but the one [`EmbeddedTable`] it is given to
/// (which writes a block's range only while it owns that block's state, see [`BLOCK_DECODING`]).
pub unsafe trait DecodeStorage: Sync {
    /// Start of the decode region and its length.
    fn region(&self) -> (*mut u8, usize);
    /// One state per block: [`BLOCK_EMPTY`], [`BLOCK_DECODING`], [`BLOCK_READY`] or [`BLOCK_FAILED`].
    fn states(&self) -> &[AtomicU8];
}

/// Block not decoded yet.
pub const BLOCK_EMPTY: u8 = 0;
/// One thread is decoding the block.
pub const BLOCK_DECODING: u8 = 1;
/// Block decoded and verified; its bytes never change again.
pub const BLOCK_READY: u8 = 2;
/// Block failed to decode or verify; every lookup into it reports the error.
pub const BLOCK_FAILED: u8 = 3;

/// Static decode storage for a table of `LEN` decoded bytes in `BLOCKS` blocks.
pub struct DecodeBuffer<const LEN: usize, const BLOCKS: usize> {
    bytes: UnsafeCell<[u8; LEN]>,
    states: [AtomicU8; BLOCKS],
}

// SAFETY: a block's bytes are written only by the one thread that moved its state from EMPTY to
// DECODING, and read only after its state is READY (release/acquire), so no byte is ever read
// and written concurrently. Blocks occupy disjoint ranges.
unsafe impl<const LEN: usize, const BLOCKS: usize> Sync for DecodeBuffer<LEN, BLOCKS> {}

impl<const LEN: usize, const BLOCKS: usize> DecodeBuffer<LEN, BLOCKS> {
    /// An empty buffer (all blocks undecoded).
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        DecodeBuffer {
            bytes: UnsafeCell::new([0; LEN]),
            states: [const { AtomicU8::new(BLOCK_EMPTY) }; BLOCKS],
        }
    }
}

// SAFETY: the region is the buffer's own array, fixed for its lifetime; the generated code gives
// each DecodeBuffer static to exactly one EmbeddedTable.
unsafe impl<const LEN: usize, const BLOCKS: usize> DecodeStorage for DecodeBuffer<LEN, BLOCKS> {
    fn region(&self) -> (*mut u8, usize) {
        (self.bytes.get().cast::<u8>(), LEN)
    }
    fn states(&self) -> &[AtomicU8] {
        &self.states
    }
}

/// One record: its key and its kind-specific payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Key bytes.
    pub key: &'a [u8],
    /// Payload bytes (see [`crate::records`]).
    pub payload: &'a [u8],
}

/// Sizes of a table, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableStats {
    /// What it holds.
    pub kind: TableKind,
    /// Records.
    pub records: u32,
    /// Blocks.
    pub blocks: u32,
    /// Bytes of the whole blob in the binary.
    pub embedded_bytes: usize,
    /// Decoded size of all blocks.
    pub decoded_bytes: u64,
    /// Dictionary size (0 = none).
    pub dict_bytes: u32,
}

/// A table compiled into the binary.
pub struct EmbeddedTable {
    blob: &'static [u8],
    storage: &'static dyn DecodeStorage,
    header: OnceLock<Result<Header, TableError>>,
}

impl EmbeddedTable {
    /// Wraps a blob and its decode storage (both statics emitted by the build).
    pub const fn new(blob: &'static [u8], storage: &'static dyn DecodeStorage) -> Self {
        EmbeddedTable {
            blob,
            storage,
            header: OnceLock::new(),
        }
    }

    /// The header, parsed and bounds-checked on first use.
    pub fn header(&self) -> Result<Header, TableError> {
        *self.header.get_or_init(|| Header::parse(self.blob))
    }

    /// Sizes for reports.
    pub fn stats(&self) -> Result<TableStats, TableError> {
        let h = self.header()?;
        Ok(TableStats {
            kind: h.kind,
            records: h.record_count,
            blocks: h.block_count,
            embedded_bytes: self.blob.len(),
            decoded_bytes: h.decoded_len,
            dict_bytes: h.dict_len,
        })
    }

    /// Interned string `index` (solver names of find-db and perf-db tables).
    pub fn string(&self, index: u32) -> Result<&'static str, TableError> {
        let bytes = self.string_bytes(index)?;
        core::str::from_utf8(bytes).map_err(|_| TableError::Malformed("string is not UTF-8"))
    }

    /// The bytes of interned string `index`, without UTF-8 validation (for comparisons).
    pub fn string_bytes(&self, index: u32) -> Result<&'static [u8], TableError> {
        let h = self.header()?;
        string_at(self.blob, &h, index)
    }

    /// Looks a key up. `Ok(None)` is a miss.
    pub fn get(&self, key: &[u8]) -> Result<Option<Record<'static>>, TableError> {
        self.get_parts(KeyParts(&[key]))
    }

    /// Looks up a key given in parts (see [`KeyParts`]).
    pub fn get_parts(&self, key: KeyParts<'_>) -> Result<Option<Record<'static>>, TableError> {
        let h = self.header()?;
        if h.record_count == 0 {
            return Ok(None);
        }
        let hashes = phf_shared::hash(&key, &h.hash_key);
        let disp_index = (hashes.g % h.disp_count) as usize;
        let at = h.disps_at + disp_index * 8;
        let d1 =
            read_u32(self.blob, at).ok_or(TableError::Malformed("displacement out of bounds"))?;
        let d2 = read_u32(self.blob, at + 4)
            .ok_or(TableError::Malformed("displacement out of bounds"))?;
        let slot = phf_shared::displace(hashes.f1, hashes.f2, d1, d2) % h.record_count;
        let record = self.record_in(&h, slot)?;
        Ok(key.eq_bytes(record.key).then_some(record))
    }

    /// The record in hash slot `slot` (for iterating a whole table).
    pub fn record(&self, slot: u32) -> Result<Record<'static>, TableError> {
        let h = self.header()?;
        if slot >= h.record_count {
            return Err(TableError::BadRecord { slot });
        }
        self.record_in(&h, slot)
    }

    /// Decodes and verifies every block now (each once per process), so that later lookups
    /// only read memory: what a context does at start for the tables every problem touches.
    pub fn decode_all(&self) -> Result<(), TableError> {
        let h = self.header()?;
        for i in 0..h.block_count {
            self.block(&h, i)?;
        }
        Ok(())
    }

    /// Number of records.
    pub fn len(&self) -> Result<u32, TableError> {
        Ok(self.header()?.record_count)
    }

    /// Whether the table holds no records.
    pub fn is_empty(&self) -> Result<bool, TableError> {
        Ok(self.len()? == 0)
    }

    fn record_in(&self, h: &Header, slot: u32) -> Result<Record<'static>, TableError> {
        let block_index = slot / h.records_per_block;
        let block = self.block(h, block_index)?;
        let i = (slot % h.records_per_block) as usize;
        let bad = TableError::BadRecord { slot };
        let count = read_u32(block, 0).ok_or(bad)? as usize;
        if i >= count {
            return Err(bad);
        }
        let start = read_u32(block, 4 + 4 * i).ok_or(bad)? as usize;
        let end = read_u32(block, 8 + 4 * i).ok_or(bad)? as usize;
        let rec = block.get(start..end).ok_or(bad)?;
        let key_len = read_u32(rec, 0).ok_or(bad)? as usize;
        let key = rec.get(4..4 + key_len).ok_or(bad)?;
        Ok(Record {
            key,
            payload: &rec[4 + key_len..],
        })
    }

    /// The decoded bytes of block `index`, decoding and verifying it on first use.
    fn block(&self, h: &Header, index: u32) -> Result<&'static [u8], TableError> {
        let m = TableError::Malformed;
        let states = self.storage.states();
        let state = states
            .get(index as usize)
            .ok_or(m("more blocks than decode states"))?;
        let at = h.blocks_at + index as usize * BLOCK_DESC_LEN;
        let desc = self
            .blob
            .get(at..at + BLOCK_DESC_LEN)
            .and_then(BlockDesc::parse)
            .ok_or(m("block descriptor out of bounds"))?;
        let (base, storage_len) = self.storage.region();
        let dec_end = desc
            .dec_offset
            .checked_add(desc.dec_len as u64)
            .ok_or(m("block range overflows"))?;
        if dec_end > storage_len as u64 || dec_end > h.decoded_len {
            return Err(m("block lies outside the decode storage"));
        }
        loop {
            match state.load(Ordering::Acquire) {
                BLOCK_READY => {
                    // SAFETY: READY means the range was fully written and is immutable from now on;
                    // it lies within the storage (checked above).
                    let bytes = unsafe {
                        core::slice::from_raw_parts(
                            base.add(desc.dec_offset as usize),
                            desc.dec_len as usize,
                        )
                    };
                    return Ok(bytes);
                }
                BLOCK_FAILED => return Err(TableError::DigestMismatch { block: index }),
                BLOCK_DECODING => std::thread::yield_now(),
                _ => {
                    if state
                        .compare_exchange(
                            BLOCK_EMPTY,
                            BLOCK_DECODING,
                            Ordering::Acquire,
                            Ordering::Acquire,
                        )
                        .is_err()
                    {
                        continue;
                    }
                    // SAFETY: this thread owns the range until it publishes READY or FAILED; no
                    // reader touches it before then, and blocks do not overlap (checked in
                    // Header::parse) and lie within the storage (checked above).
                    let dst = unsafe {
                        core::slice::from_raw_parts_mut(
                            base.add(desc.dec_offset as usize),
                            desc.dec_len as usize,
                        )
                    };
                    let result = self.decode_into(h, &desc, index, dst);
                    let next = if result.is_ok() {
                        BLOCK_READY
                    } else {
                        BLOCK_FAILED
                    };
                    state.store(next, Ordering::Release);
                    result?;
                }
            }
        }
    }

    fn decode_into(
        &self,
        h: &Header,
        desc: &BlockDesc,
        index: u32,
        dst: &mut [u8],
    ) -> Result<(), TableError> {
        let m = TableError::Malformed;
        let comp_start = (h.compressed_at as u64)
            .checked_add(desc.comp_offset)
            .ok_or(m("block offset overflows"))?;
        let comp_end = comp_start
            .checked_add(desc.comp_len as u64)
            .ok_or(m("block offset overflows"))?;
        let src = self
            .blob
            .get(comp_start as usize..comp_end as usize)
            .ok_or(m("compressed block out of bounds"))?;
        // The decompressor reads only bytes whose digest matched.
        if Sha256::digest(src).as_slice() != desc.sha256 {
            return Err(TableError::DigestMismatch { block: index });
        }
        let dict = &self.blob[h.dict_at..h.dict_at + h.dict_len as usize];
        let n = decompress(src, dict, dst).map_err(|_| TableError::Decompress { block: index })?;
        if n != dst.len() {
            return Err(TableError::Decompress { block: index });
        }
        Ok(())
    }
}

/// The digested form of an embedded dictionary (keyed by its address), built on its first use
/// and kept for the process: a frame decoded with it skips rebuilding the dictionary's entropy
/// tables (about 20 us per 80 KB code object in a warm measurement on the build host; within
/// the noise of an in-process cold decode). None when zstd cannot allocate one.
fn digested(dict: &'static [u8]) -> Option<&'static zstd::zstd_safe::DDict<'static>> {
    type Digested = Vec<(usize, &'static zstd::zstd_safe::DDict<'static>)>;
    static DIGESTED: std::sync::Mutex<Digested> = std::sync::Mutex::new(Vec::new());
    // The list only grows by whole entries: a panic elsewhere cannot leave it half-written.
    let mut list = DIGESTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let key = dict.as_ptr() as usize;
    if let Some(&(_, d)) = list.iter().find(|(k, _)| *k == key) {
        return Some(d);
    }
    // One per embedded table with a dictionary (a handful per binary), never freed.
    let d: &'static _ = Box::leak(Box::new(zstd::zstd_safe::DDict::try_create(dict)?));
    list.push((key, d));
    Some(d)
}

fn decompress(src: &[u8], dict: &'static [u8], dst: &mut [u8]) -> std::io::Result<usize> {
    // This runs on the cold start of every table block: one decompression context per thread
    // is reused (its ~100 KiB workspace is mapped once, not per block), and the dictionary is
    // digested once per process.
    thread_local! {
        static CTX: core::cell::RefCell<Option<zstd::zstd_safe::DCtx<'static>>> =
            const { core::cell::RefCell::new(None) };
    }
    fn run(
        ctx: &mut zstd::zstd_safe::DCtx<'static>,
        src: &[u8],
        dict: &'static [u8],
        dst: &mut [u8],
    ) -> Result<usize, usize> {
        if dict.is_empty() {
            ctx.decompress(dst, src)
        } else if let Some(d) = digested(dict) {
            ctx.decompress_using_ddict(dst, src, d)
        } else {
            ctx.decompress_using_dict(dst, src, dict)
        }
    }
    let reused = CTX.try_with(|cell| {
        cell.try_borrow_mut().ok().map(|mut slot| {
            run(
                slot.get_or_insert_with(zstd::zstd_safe::DCtx::create),
                src,
                dict,
                dst,
            )
        })
    });
    let n = match reused {
        Ok(Some(n)) => n,
        // No thread-local storage (thread teardown) or re-entered: a context of its own.
        _ => run(&mut zstd::zstd_safe::DCtx::create(), src, dict, dst),
    };
    n.map_err(|code| std::io::Error::other(zstd::zstd_safe::get_error_name(code)))
}

fn string_at(blob: &'static [u8], h: &Header, index: u32) -> Result<&'static [u8], TableError> {
    let m = TableError::Malformed;
    if index >= h.string_count {
        return Err(m("string index out of range"));
    }
    let section = blob
        .get(h.strings_at..h.strings_at + h.strings_len as usize)
        .ok_or(m("string section out of bounds"))?;
    let bytes_at = 4 * (h.string_count as usize + 1);
    let start =
        read_u32(section, 4 * index as usize).ok_or(m("string offset out of bounds"))? as usize;
    let end =
        read_u32(section, 4 * index as usize + 4).ok_or(m("string offset out of bounds"))? as usize;
    section
        .get(bytes_at + start..bytes_at + end)
        .ok_or(m("string out of bounds"))
}

/// Serializes the string section: offsets then bytes.
pub fn encode_strings(strings: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut off = 0u32;
    out.extend_from_slice(&off.to_le_bytes());
    for s in strings {
        off += s.len() as u32;
        out.extend_from_slice(&off.to_le_bytes());
    }
    for s in strings {
        out.extend_from_slice(s.as_bytes());
    }
    out
}

/// Serializes one decoded block from its records' (key, payload) pairs.
pub fn encode_block(records: &[(&[u8], &[u8])]) -> Vec<u8> {
    let count = records.len();
    let mut out = Vec::new();
    out.extend_from_slice(&(count as u32).to_le_bytes());
    let mut off = 4 + 4 * (count + 1);
    for (k, p) in records {
        out.extend_from_slice(&(off as u32).to_le_bytes());
        off += 4 + k.len() + p.len();
    }
    out.extend_from_slice(&(off as u32).to_le_bytes());
    for (k, p) in records {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
        out.extend_from_slice(p);
    }
    out
}

/// Writes the fixed header.
#[allow(clippy::too_many_arguments)]
pub fn encode_header(
    kind: TableKind,
    record_count: u32,
    records_per_block: u32,
    block_count: u32,
    disp_count: u32,
    string_count: u32,
    hash_key: u64,
    decoded_len: u64,
    dict_len: u32,
    strings_len: u32,
    compressed_len: u64,
) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&(kind as u32).to_le_bytes());
    h[12..16].copy_from_slice(&record_count.to_le_bytes());
    h[16..20].copy_from_slice(&records_per_block.to_le_bytes());
    h[20..24].copy_from_slice(&block_count.to_le_bytes());
    h[24..28].copy_from_slice(&disp_count.to_le_bytes());
    h[28..32].copy_from_slice(&string_count.to_le_bytes());
    h[32..40].copy_from_slice(&hash_key.to_le_bytes());
    h[40..48].copy_from_slice(&decoded_len.to_le_bytes());
    h[48..52].copy_from_slice(&dict_len.to_le_bytes());
    h[52..56].copy_from_slice(&strings_len.to_le_bytes());
    h[56..64].copy_from_slice(&compressed_len.to_le_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_hash_like_concatenation() {
        let whole = b"naive_conv.cpp.o\0 -DFOO=1 -mcpu=gfx942";
        let parts = KeyParts(&[b"naive_conv.cpp.o", b"\0", b" -DFOO=1 -mcpu=gfx942"]);
        for key in [0u64, 1, 0xdead_beef_1234_5678] {
            let a = phf_shared::hash(&whole[..], &key);
            let b = phf_shared::hash(&parts, &key);
            assert_eq!((a.g, a.f1, a.f2), (b.g, b.f1, b.f2));
        }
        assert!(parts.eq_bytes(whole));
        assert!(!parts.eq_bytes(b"naive_conv.cpp.o\0 -DFOO=2 -mcpu=gfx942"));
    }

    #[test]
    fn header_rejects_garbage() {
        assert!(Header::parse(b"short").is_err());
        let mut h = encode_header(TableKind::FindDb, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0).to_vec();
        assert!(Header::parse(&h).is_ok());
        h[0] = b'X';
        assert_eq!(
            Header::parse(&h).unwrap_err(),
            TableError::Malformed("bad magic (not a kiln table, or built by another kiln version)")
        );
    }
}
