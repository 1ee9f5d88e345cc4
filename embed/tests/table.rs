//! Packed tables read back through the runtime reader; damaged blobs give errors, never panics
//! or wrong answers.

use kiln_embed::finddb::{FindDb, FindItem, FindRecord};
use kiln_embed::pack::{find_db_input, pack};
use kiln_format::records::find_items;
use kiln_format::table::{DecodeBuffer, EmbeddedTable, TableError};

fn synthetic(n: usize) -> FindDb {
    let records = (0..n)
        .map(|i| FindRecord {
            key: format!(
                "{}-14-14-1x1-{}-14-14-16-0x0-1x1-1x1-0-NCHW-FP32-F",
                8 + i,
                16 + i % 7
            ),
            items: vec![
                FindItem {
                    solver: format!("Solver{}", i % 5),
                    time_ms: 0.01 * i as f64,
                    workspace: i as u64,
                    algorithm: "miopenConvolutionFwdAlgoDirect".into(),
                },
                FindItem {
                    solver: "ConvDirectNaiveFwd".into(),
                    time_ms: 9.5,
                    workspace: 0,
                    algorithm: "miopenConvolutionFwdAlgoDirect".into(),
                },
            ],
        })
        .collect();
    FindDb { records }
}

fn open(blob: Vec<u8>) -> &'static EmbeddedTable {
    let blob: &'static [u8] = Box::leak(blob.into_boxed_slice());
    let storage: &'static DecodeBuffer<{ 256 * 1024 }, 64> =
        Box::leak(Box::new(DecodeBuffer::new()));
    Box::leak(Box::new(EmbeddedTable::new(blob, storage)))
}

#[test]
fn every_key_found_and_misses_missed() {
    let db = synthetic(1500);
    let packed = pack(&find_db_input(&db, "t").unwrap()).unwrap();
    assert!(packed.blocks > 1 && packed.decoded_len < 256 * 1024);
    let table = open(packed.blob);
    for r in &db.records {
        let rec = table.get(r.key.as_bytes()).unwrap().expect("present");
        let items: Vec<_> = find_items(rec.payload).unwrap().collect();
        assert_eq!(items.len(), 2);
        assert_eq!(
            table.string(items[0].solver as u32).unwrap(),
            r.items[0].solver
        );
        assert_eq!(items[0].time_ms, r.items[0].time_ms);
        assert_eq!(items[0].workspace, r.items[0].workspace);
    }
    assert!(table.get(b"nope").unwrap().is_none());
    assert!(table.get(b"").unwrap().is_none());
}

#[test]
fn duplicate_keys_are_rejected() {
    let mut db = synthetic(3);
    db.records.push(db.records[0].clone());
    let e = pack(&find_db_input(&db, "gfx942130 find-db").unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("packing gfx942130 find-db: duplicate key '8-14-14"),
        "{e}"
    );
}

#[test]
fn corruption_is_detected() {
    let db = synthetic(1200);
    let packed = pack(&find_db_input(&db, "t").unwrap()).unwrap();
    let key = db.records[0].key.as_bytes();

    // Damage the tail of the compressed section (some block's zstd frame).
    let mut blob = packed.blob.clone();
    let n = blob.len();
    for b in &mut blob[n - 40..n - 30] {
        *b ^= 0xff;
    }
    let table = open(blob);
    let mut errors = 0;
    for r in &db.records {
        match table.get(r.key.as_bytes()) {
            Ok(Some(_)) => {}
            Ok(None) => panic!("a damaged block must not turn hits into misses"),
            // The frame's digest is checked before the decompressor reads it.
            Err(TableError::DigestMismatch { .. }) => errors += 1,
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert!(errors > 0);

    // Damage the magic: every lookup fails cleanly.
    let mut blob = packed.blob.clone();
    blob[0] = b'X';
    let e = open(blob).get(key).unwrap_err();
    assert!(matches!(e, TableError::Malformed(_)), "{e}");

    // Truncate: sections no longer add up.
    let blob = packed.blob[..packed.blob.len() - 1].to_vec();
    assert!(matches!(
        open(blob).get(key).unwrap_err(),
        TableError::Malformed(_)
    ));
}

#[test]
fn overlapping_block_ranges_are_refused_before_any_decode() {
    // Review D7(v): a damaged dec_offset must not let one block's decode overwrite another.
    let db = synthetic(1500);
    let packed = pack(&find_db_input(&db, "t").unwrap()).unwrap();
    assert!(packed.blocks > 1);
    let h = kiln_format::table::Header::parse(&packed.blob).unwrap();
    let mut blob = packed.blob.clone();
    // Block 1's dec_offset (bytes 8..16 of its descriptor) set to block 0's.
    let at = h.blocks_at + kiln_format::table::BLOCK_DESC_LEN + 8;
    blob[at..at + 8].copy_from_slice(&0u64.to_le_bytes());
    let table = open(blob);
    assert!(matches!(
        table.get(db.records[0].key.as_bytes()),
        Err(TableError::Malformed(m)) if m.contains("overlap")
    ));
}

#[test]
fn fuzzer_findings_stay_fixed() {
    // Blobs the embedded_table fuzz target found (section sizes whose sum overflowed u64).
    let found: [&[u8]; 2] = [
        &[
            75, 73, 76, 78, 84, 65, 66, 49, 1, 0, 0, 0, 3, 0, 0, 0, 215, 0, 0, 0, 1, 0, 0, 0, 1, 0,
            0, 0, 0, 0, 0, 0, 225, 125, 81, 100, 20, 43, 60, 254, 167, 229, 84, 65, 66, 255, 255,
            255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
            255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
            255, 255, 255, 255, 255, 255, 59, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
            255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
            255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
            255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 0, 153, 3, 2, 182, 98, 33, 126, 159,
            30, 29, 186, 240, 32, 5, 0, 192, 4, 90, 2, 75, 64,
        ],
        &[
            75, 73, 76, 78, 84, 65, 66, 49, 1, 0, 0, 0, 3, 0, 0, 0, 215, 0, 0, 0, 1, 0, 0, 0, 1, 0,
            0, 0, 239, 0, 1, 0, 0, 0, 1, 0, 0, 0, 153, 3, 2, 182, 158, 222, 7, 226, 237, 0, 0, 0,
            255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
            255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
            255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
            255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 26, 0, 0, 0,
            87, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 87, 0, 0, 0, 237, 0, 0, 0, 164, 173, 125, 245, 48, 17, 17, 161, 125, 81, 100,
            100, 20, 43, 60, 254, 167, 229, 127, 203, 107, 239, 126, 159, 30, 29, 186, 240, 32, 5,
            0, 192, 4, 90, 2, 75, 64, 197, 38, 206, 48, 73, 227, 229, 156,
        ],
    ];
    for blob in found {
        let table = open(blob.to_vec());
        assert!(table.header().is_err());
        assert!(table.get(b"a").is_err());
    }
}
