//! Networks embedded at build time (`KILN_MODELS`): a definition with its weights and pins is
//! compressed into the generated code; a file that does not match its pin, a missing pin or
//! weights file, a name given twice and a file that is no definition are refused, naming it.

use std::path::Path;

use sha2::{Digest, Sha256};

fn hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// `<dir>/<name>.txt`, `.safetensors` and `.sha256` (pins of both).
fn model(dir: &Path, name: &str, text: &str, weights: &[u8]) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let def = dir.join(format!("{name}.txt"));
    std::fs::write(&def, text).unwrap();
    std::fs::write(dir.join(format!("{name}.safetensors")), weights).unwrap();
    let pins = format!(
        "{}  {name}.txt\n{}  {name}.safetensors\n",
        hex(text.as_bytes()),
        hex(weights)
    );
    std::fs::write(dir.join(format!("{name}.sha256")), pins).unwrap();
    def
}

const TEXT: &str =
    "kiln-network 1\nname tiny\ninput x 8x4x4\nnode s softmax from=x to=y act=identity\noutput y\n";

#[test]
fn a_pinned_model_is_embedded_and_bad_ones_are_refused_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let weights = vec![7u8; 4096];
    let def = model(&tmp.path().join("a"), "tiny", TEXT, &weights);
    let read = kiln_embed::models::embed_models(std::slice::from_ref(&def), &out).unwrap();
    assert_eq!(read.len(), 3);
    let code = std::fs::read_to_string(out.join("kiln_models.rs")).unwrap();
    assert!(code.contains("name: \"tiny\""), "{code}");
    assert!(
        code.contains(&format!(
            "weights_len: 4096, weights_sha256: \"{}\"",
            hex(&weights)
        )),
        "{code}"
    );
    let zst = std::fs::read(out.join("models/tiny.safetensors.zst")).unwrap();
    assert!(zst.len() < 200, "compressed: {} B", zst.len());
    assert_eq!(zstd::bulk::decompress(&zst, 4096).unwrap(), weights);
    // None: an empty list.
    kiln_embed::models::embed_models(&[], &out).unwrap();
    let code = std::fs::read_to_string(out.join("kiln_models.rs")).unwrap();
    assert!(code.contains("&[\n];"), "{code}");

    let err = |defs: &[std::path::PathBuf]| {
        kiln_embed::models::embed_models(defs, &out)
            .unwrap_err()
            .to_string()
    };
    // Weights changed after pinning.
    let changed = model(&tmp.path().join("b"), "tiny", TEXT, &weights);
    std::fs::write(tmp.path().join("b/tiny.safetensors"), [1u8; 10]).unwrap();
    let e = err(&[changed]);
    assert!(
        e.contains("tiny.safetensors") && e.contains(&hex(&weights)),
        "{e}"
    );
    // No pins file; a pins file without the weights' line.
    let nopins = model(&tmp.path().join("c"), "tiny", TEXT, &weights);
    std::fs::remove_file(tmp.path().join("c/tiny.sha256")).unwrap();
    assert!(err(&[nopins]).contains("tiny.sha256"));
    let half = model(&tmp.path().join("d"), "tiny", TEXT, &weights);
    std::fs::write(
        tmp.path().join("d/tiny.sha256"),
        format!("{}  tiny.txt\n", hex(TEXT.as_bytes())),
    )
    .unwrap();
    assert!(err(&[half]).contains("no pin for tiny.safetensors"));
    // The same name twice; not a definition; not named <name>.txt.
    let twice = model(&tmp.path().join("e"), "tiny", TEXT, &weights);
    assert!(err(&[def.clone(), twice]).contains("given twice"));
    let notdef = model(&tmp.path().join("f"), "junk", "hello\n", &weights);
    assert!(err(&[notdef]).contains("not a network definition"));
    let wrongext = tmp.path().join("a/tiny.def");
    std::fs::copy(&def, &wrongext).unwrap();
    assert!(err(&[wrongext]).contains("<name>.txt"));
}
