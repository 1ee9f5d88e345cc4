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
