//! Damaged code objects and arbitrary code: errors that say what is wrong, never a panic.

use kiln_emu::code_object::CodeObject;
use kiln_emu::decode::{walk, Family};

fn an_object() -> Vec<u8> {
    let kdb =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../targets/gfx90a68/gfx90a68.kdb");
    let db = kiln_embed::kdb::KernelDb::read(&kdb).unwrap();
    db.entries[0].object.clone()
}

#[test]
fn damaged_code_objects_are_errors() {
    let good = an_object();
    assert!(!CodeObject::parse(&good).unwrap().kernels.is_empty());
    for (bytes, want) in [
        (Vec::new(), "outside the 0-byte file"),
        (
            b"not an elf file at all, but long enough to hold a header of sixty-four bytes"
                .to_vec(),
            "ELF64",
        ),
    ] {
        let e = CodeObject::parse(&bytes).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    let mut other_machine = good.clone();
    other_machine[18] = 62; // x86-64
    assert!(CodeObject::parse(&other_machine)
        .unwrap_err()
        .to_string()
        .contains("e_machine"));
    // Every truncation, and every byte of the headers flipped: an error or a parse, no panic.
    for len in (0..good.len()).step_by(97) {
        let _ = CodeObject::parse(&good[..len]);
    }
    for i in 0..good.len().min(4096) {
        let mut b = good.clone();
        b[i] ^= 0xff;
        if let Ok(co) = CodeObject::parse(&b) {
            for k in &co.kernels {
                let _ = co.words_from(k.entry);
            }
        }
    }
}

#[test]
fn arbitrary_words_decode_or_fail_with_the_pc() {
    // A simple generator (xorshift): every family, 200,000 words.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let words: Vec<u32> = (0..200_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u32
        })
        .collect();
    for family in [Family::Gfx9, Family::Gfx10, Family::Gfx11] {
        for start in (0..words.len()).step_by(1000) {
            if let Err(e) = walk(family, &words[start..start + 64], 0x1000) {
                assert!(e.to_string().contains("pc 0x"), "{e}");
            }
        }
    }
}
