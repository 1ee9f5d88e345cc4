//! The description of a target compiled into a binary: what `kiln-embed`'s generated code
//! writes as `static` literals and the runtime reads. Every type the generated code names lives
//! here (as `phf::Map` lives in `phf` for `phf_codegen`), so the contract is checked by the
//! compiler on both sides. Lookups in the tables are in [`crate::lookup`].

use core::fmt;

use crate::measured::MeasuredProblem;
use crate::table::{EmbeddedTable, TableKind};
use crate::Vendor;

/// The code-object format a target's kdb holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeObjectKind {
    /// AMD HSA code object (ELF, `EM_AMDGPU`).
    Hsaco,
    /// NVIDIA cubin (ELF, `EM_CUDA`).
    Cubin,
}

impl CodeObjectKind {
    /// The vendor's code-object format.
    pub const fn of(vendor: Vendor) -> CodeObjectKind {
        match vendor {
            Vendor::Amd => CodeObjectKind::Hsaco,
            Vendor::Nvidia => CodeObjectKind::Cubin,
        }
    }

    /// `hsaco` or `cubin`, as `target.toml` writes it.
    pub const fn name(self) -> &'static str {
        match self {
            CodeObjectKind::Hsaco => "hsaco",
            CodeObjectKind::Cubin => "cubin",
        }
    }

    /// From its `target.toml` name.
    pub fn from_name(name: &str) -> Option<CodeObjectKind> {
        match name {
            "hsaco" => Some(CodeObjectKind::Hsaco),
            "cubin" => Some(CodeObjectKind::Cubin),
            _ => None,
        }
    }
}

/// One input file of an embedded target, as recorded at build time.
#[derive(Debug)]
pub struct InputFile {
    /// Which table it became.
    pub kind: TableKind,
    /// File name.
    pub name: &'static str,
    /// Where the build read it (repo path, directory or URL).
    pub source: &'static str,
    /// sha256 of the file (equal to its pin).
    pub sha256: &'static str,
    /// File size in bytes.
    pub bytes: u64,
    /// Records (lines, configs or code objects).
    pub records: u64,
}

/// A target compiled into this binary.
pub struct EmbeddedTarget {
    /// MIOpen basename (`gfx942130`, `sm_90_132`).
    pub basename: &'static str,
    /// Vendor.
    pub vendor: Vendor,
    /// Arch (`gfx942`, `sm_90`).
    pub arch: &'static str,
    /// CU (AMD) or SM (NVIDIA) count.
    pub compute_units: u32,
    /// The kdb's code-object format.
    pub code_object: CodeObjectKind,
    /// Readable names (cargo feature aliases).
    pub aliases: &'static [&'static str],
    /// Where the data came from.
    pub origin: &'static str,
    /// The compilers that built its code objects, from `target.toml` (`"NVRTC 12.9, ..."`;
    /// empty when it does not say).
    pub toolchain: &'static str,
    /// Find-db table.
    pub find_db: Option<&'static EmbeddedTable>,
    /// Perf-db table.
    pub perf_db: Option<&'static EmbeddedTable>,
    /// Kernel db table.
    pub kdb: Option<&'static EmbeddedTable>,
    /// The find-db's measured problems of kiln's solvers: what ranks a problem the find-db
    /// lacks (see [`crate::measured`]).
    pub measured: &'static [MeasuredProblem<'static>],
    /// Input files and their digests.
    pub inputs: &'static [InputFile],
}

impl EmbeddedTarget {
    /// The table of `kind`, if this target embeds one.
    pub fn table(&self, kind: TableKind) -> Option<&'static EmbeddedTable> {
        match kind {
            TableKind::FindDb => self.find_db,
            TableKind::PerfDb => self.perf_db,
            TableKind::KernelDb => self.kdb,
        }
    }

    /// The input file that became the table of `kind`.
    pub fn input(&self, kind: TableKind) -> Option<&'static InputFile> {
        self.inputs.iter().find(|i| i.kind == kind)
    }
}

impl fmt::Debug for EmbeddedTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedTarget")
            .field("basename", &self.basename)
            .field("arch", &self.arch)
            .field("compute_units", &self.compute_units)
            .finish_non_exhaustive()
    }
}

/// A network compiled into a binary (`KILN_MODELS` at build time): its definition's text form
/// and its weights (safetensors bytes, zstd-compressed), pinned by sha256 when it was embedded.
#[derive(Debug)]
pub struct EmbeddedModel {
    /// The network's name (its definition file's stem).
    pub name: &'static str,
    /// The definition's text form (`kiln::net::NetworkDef::from_text` reads it).
    pub definition: &'static str,
    /// The weights' safetensors bytes, one zstd frame.
    pub weights_zst: &'static [u8],
    /// Their length, uncompressed.
    pub weights_len: usize,
    /// The sha256 of the uncompressed weights, lowercase hex (the pin they were embedded with).
    pub weights_sha256: &'static str,
}

impl EmbeddedModel {
    /// The weights' safetensors bytes, decompressed and checked against their pin.
    pub fn weights(&self) -> Result<Vec<u8>, String> {
        let bytes = zstd::bulk::decompress(self.weights_zst, self.weights_len).map_err(|e| {
            format!(
                "model {}: the embedded weights do not decompress: {e}",
                self.name
            )
        })?;
        let digest = <sha2::Sha256 as sha2::Digest>::digest(&bytes);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        if bytes.len() != self.weights_len || hex != self.weights_sha256 {
            return Err(format!(
                "model {}: the embedded weights hash to {hex} ({} bytes), not their pin {} ({} bytes)",
                self.name,
                bytes.len(),
                self.weights_sha256,
                self.weights_len
            ));
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod model_tests {
    use super::EmbeddedModel;

    #[test]
    fn embedded_weights_decompress_and_are_checked_against_their_pin() {
        let raw = b"safetensors bytes, or any".to_vec();
        let zst: &'static [u8] =
            Box::leak(zstd::bulk::compress(&raw, 19).unwrap().into_boxed_slice());
        let digest = <sha2::Sha256 as sha2::Digest>::digest(&raw);
        let pin: &'static str = Box::leak(
            digest
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
                .into_boxed_str(),
        );
        let m = EmbeddedModel {
            name: "m",
            definition: "",
            weights_zst: zst,
            weights_len: raw.len(),
            weights_sha256: pin,
        };
        assert_eq!(m.weights().unwrap(), raw);
        let wrong = EmbeddedModel {
            weights_sha256: "00",
            ..m
        };
        assert!(wrong.weights().unwrap_err().contains("not their pin 00"));
        let short = EmbeddedModel {
            weights_len: 3,
            ..wrong
        };
        assert!(short.weights().unwrap_err().contains("do not decompress"));
    }
}
