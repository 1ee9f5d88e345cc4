//! The ELF checks every code object passes before a driver sees it, and the section lookup:
//! arbitrary bytes against several device archs give an error or a checked object (a section)
//! whose structure lies within the bytes, never a panic or an out-of-bounds read.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kiln::codeobject::inspect(data);
    // A section found lies inside the bytes.
    for name in [".text", ".nv.info", ".note", ""] {
        if let Ok(Some(bytes)) = kiln::codeobject::section(data, name) {
            let at = bytes.as_ptr() as usize - data.as_ptr() as usize;
            assert!(at + bytes.len() <= data.len());
        }
    }
    for arch in ["sm_90", "sm_86", "gfx90a:sramecc+:xnack-", "gfx942:sramecc-:xnack+", "gfx1100"] {
        if let Ok(c) = kiln::codeobject::check_for_device(data, arch) {
            assert_eq!(c.bytes().len(), data.len());
        }
    }
});
