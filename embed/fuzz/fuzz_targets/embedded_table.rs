//! The embedded-table reader (header, block descriptors, zstd blocks, sha256, records, strings)
//! on an arbitrary blob: errors, never a panic or an out-of-bounds read.
#![no_main]
use kiln_format::table::{DecodeBuffer, EmbeddedTable};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // EmbeddedTable needs 'static data: leak per input and reclaim at the end (nothing borrowed
    // from them outlives this closure).
    let blob: &'static mut [u8] = Box::leak(data.to_vec().into_boxed_slice());
    let storage: &'static mut DecodeBuffer<65536, 16> = Box::leak(Box::new(DecodeBuffer::new()));
    let blob_ptr: *mut [u8] = blob;
    let storage_ptr: *mut DecodeBuffer<65536, 16> = storage;
    {
        let table = EmbeddedTable::new(unsafe { &*blob_ptr }, unsafe { &*storage_ptr });
        if let Ok(h) = table.header() {
            let _ = table.stats();
            for i in 0..h.record_count.min(64) {
                let _ = table.record(i);
            }
            for i in 0..h.string_count.min(16) {
                let _ = table.string(i);
            }
            for key in [&b"a"[..], b"", data.get(..8).unwrap_or(b"")] {
                if let Ok(Some(r)) = table.get(key) {
                    let _ = kiln_format::records::find_items(r.payload).map(|i| i.count());
                    let _ = kiln_format::records::perf_items(r.payload).map(|i| i.count());
                    let _ = kiln_format::records::kdb_payload(r.payload);
                }
            }
        }
    }
    // SAFETY: both came from Box::leak above and no reference to them is alive.
    unsafe {
        drop(Box::from_raw(blob_ptr));
        drop(Box::from_raw(storage_ptr));
    }
});
