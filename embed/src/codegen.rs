//! The build step: for every enabled target, obtain its files (repo folder, directory or URL,
//! all sha256-pinned), validate them, pack each into a table blob, and write the Rust source
//! that places the blobs in the binary. `build.rs` is a thin call into [`embed`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fetch::{obtain, FetchOptions, Source};
use crate::finddb::FindDb;
use crate::kdb::KernelDb;
use crate::pack::{find_db_input, kdb_input, pack, perf_db_input, PackedTable, TableInput};
use crate::perfdb::PerfDb;
use crate::target::TargetConfig;

/// What to embed and where.
#[derive(Clone, Debug)]
pub struct EmbedRequest {
    /// `targets/`.
    pub targets_dir: PathBuf,
    /// Basenames to embed.
    pub enabled: Vec<String>,
    /// `$OUT_DIR`.
    pub out_dir: PathBuf,
    /// Per-target override of where files come from (else the target's folder).
    pub sources: Vec<(String, Source)>,
    /// Fetch settings.
    pub fetch: FetchOptions,
    /// Toolchain and version facts to record.
    pub provenance: Vec<(String, String)>,
    /// `kernels/manifest.toml`, emitted as `KERNEL_MANIFEST` for the runtime's solvers.
    pub manifest: Option<PathBuf>,
}

/// One packed table, for the build log.
#[derive(Clone, Debug)]
pub struct TableReport {
    /// Target basename.
    pub target: String,
    /// `find-db`, `perf-db`, `kdb`.
    pub kind: &'static str,
    /// Input file size.
    pub input_bytes: u64,
    /// Packing outcome.
    pub packed: PackedTable,
}

/// What the build did.
#[derive(Clone, Debug, Default)]
pub struct EmbedReport {
    /// Tables packed.
    pub tables: Vec<TableReport>,
    /// Files the build read (for `cargo:rerun-if-changed`).
    pub inputs: Vec<PathBuf>,
}

struct InputFile {
    kind: &'static str,
    name: String,
    source: String,
    sha256: String,
    bytes: u64,
    records: usize,
}

fn ident(base: &str, kind: &str) -> String {
    format!(
        "{}_{}",
        base.to_uppercase(),
        kind.to_uppercase().replace('-', "_")
    )
}

/// Embeds the enabled targets; writes `kiln_embedded.rs` and the blobs into `out_dir`.
pub fn embed(req: &EmbedRequest) -> Result<EmbedReport> {
    let mut report = EmbedReport::default();
    let mut statics = String::new();
    let mut targets = String::new();
    let mut index = phf_codegen::Map::<&str>::new();
    let mut index_values: Vec<(String, String)> = Vec::new();
    let manifest = match &req.manifest {
        Some(path) => {
            report.inputs.push(path.clone());
            Some(crate::kdbbuild::Manifest::load(path)?)
        }
        None => None,
    };
    let mut enabled = req.enabled.clone();
    enabled.sort();
    enabled.dedup();
    for (ti, base) in enabled.iter().enumerate() {
        let dir = req.targets_dir.join(base);
        if !dir.join("target.toml").is_file() {
            return Err(Error::Target {
                target: base.clone(),
                reason: format!(
                    "feature enabled but {} does not exist",
                    dir.join("target.toml").display()
                ),
            });
        }
        report.inputs.push(dir.join("target.toml"));
        let cfg = TargetConfig::load(&dir)?;
        let source = req
            .sources
            .iter()
            .find(|(b, _)| b == base)
            .map(|(_, s)| s.clone())
            .unwrap_or_else(|| Source::Dir(dir.clone()));
        let mut inputs: Vec<InputFile> = Vec::new();
        let mut tables: Vec<(&'static str, PackedTable)> = Vec::new();
        let (mut find_db, mut perf_db) = (None, None);
        let files = [
            ("find-db", cfg.files.find_db.as_deref()),
            ("perf-db", cfg.files.perf_db.as_deref()),
            ("kdb", cfg.files.kdb.as_deref()),
        ];
        for (kind, file) in files {
            let Some(file) = file else { continue };
            let pin = cfg.pin(file).unwrap_or_default();
            let path = obtain(&source, file, pin, &req.fetch)?;
            report.inputs.push(path.clone());
            let bytes = std::fs::metadata(&path)
                .map_err(|e| Error::io(&path, e))?
                .len();
            let name = format!("{base} {kind}");
            let (input, records): (TableInput, usize) = match kind {
                "find-db" => {
                    let db = FindDb::read(&path)?;
                    let table = (find_db_input(&db, &name)?, db.records.len());
                    find_db = Some(db);
                    table
                }
                "perf-db" => {
                    let db = PerfDb::read(&path)?;
                    let table = (perf_db_input(&db, &name)?, db.records.len());
                    perf_db = Some(db);
                    table
                }
                _ => {
                    let db = KernelDb::read(&path)?;
                    (kdb_input(&db, &name)?, db.entries.len())
                }
            };
            let packed = pack(&input)?;
            let blob_path = req.out_dir.join(format!("{base}.{kind}.kilntab"));
            write_if_changed(&blob_path, &packed.blob)?;
            let id = ident(base, kind);
            let blocks = packed.blocks.max(1);
            writeln!(
                statics,
                "static {id}_STORAGE: ::kiln_format::table::DecodeBuffer<{}, {blocks}> = ::kiln_format::table::DecodeBuffer::new();\n\
                 static {id}: ::kiln_format::table::EmbeddedTable = ::kiln_format::table::EmbeddedTable::new(\n    \
                 ::include_bytes_aligned::include_bytes_aligned!(8, {:?}),\n    &{id}_STORAGE,\n);",
                packed.decoded_len,
                blob_path.display().to_string(),
            )
            .ok();
            inputs.push(InputFile {
                kind,
                name: file.to_string(),
                source: match &source {
                    Source::Dir(d) if d == &dir => format!("targets/{base}/{file}"),
                    Source::Dir(d) => d.join(file).display().to_string(),
                    Source::Url(u) => format!("{u}/{file}"),
                },
                sha256: pin.to_string(),
                bytes,
                records,
            });
            report.tables.push(TableReport {
                target: base.clone(),
                kind,
                input_bytes: bytes,
                packed: packed.clone(),
            });
            tables.push((kind, packed));
        }
        let table_ref = |kind: &str| {
            if tables.iter().any(|(k, _)| *k == kind) {
                format!("Some(&{})", ident(base, kind))
            } else {
                "None".to_string()
            }
        };
        // The fallback for problems the find-db lacks: its measured problems of kiln's solvers.
        let model = match (&find_db, &manifest) {
            (Some(find), Some(m)) => crate::neighbours::build(find, perf_db.as_ref(), m),
            _ => Vec::new(),
        };
        let neighbours_id = ident(base, "neighbours");
        statics.push_str(&crate::neighbours::emit(&neighbours_id, &model));
        let vendor = if cfg.vendor == "amd" { "Amd" } else { "Nvidia" };
        let mut input_lits = String::new();
        for i in &inputs {
            write!(
                input_lits,
                "InputFile {{ kind: {:?}, name: {:?}, source: {:?}, sha256: {:?}, bytes: {}, records: {} }}, ",
                i.kind, i.name, i.source, i.sha256, i.bytes, i.records
            )
            .ok();
        }
        let aliases: Vec<String> = cfg.aliases.iter().map(|a| format!("{a:?}")).collect();
        writeln!(
            targets,
            "    EmbeddedTarget {{\n        basename: {:?},\n        vendor: ::kiln_format::Vendor::{vendor},\n        arch: {:?},\n        \
             compute_units: {},\n        code_object: {:?},\n        aliases: &[{}],\n        origin: {:?},\n        \
             find_db: {},\n        perf_db: {},\n        kdb: {},\n        neighbours: {neighbours_id},\n        inputs: &[{}],\n    }},",
            cfg.basename,
            cfg.arch,
            cfg.compute_units,
            cfg.code_object,
            aliases.join(", "),
            cfg.origin,
            table_ref("find-db"),
            table_ref("perf-db"),
            table_ref("kdb"),
            input_lits,
        )
        .ok();
        index_values.push((cfg.basename.clone(), ti.to_string()));
        for a in &cfg.aliases {
            index_values.push((a.clone(), ti.to_string()));
        }
    }
    for (k, v) in &index_values {
        if index_values.iter().filter(|(k2, _)| k2 == k).count() > 1 {
            return Err(Error::Target {
                target: k.clone(),
                reason: "name or alias used by two enabled targets".into(),
            });
        }
        index.entry(k.as_str(), v.clone());
    }
    let mut manifest_code = String::from("pub static KERNEL_MANIFEST: &[ManifestSolver] = &[\n");
    let mut data_types = String::new();
    if let Some(m) = &manifest {
        for s in &m.solvers {
            let params: Vec<String> = s.params.iter().map(|p| format!("{p:?}")).collect();
            writeln!(
                manifest_code,
                "    ManifestSolver {{ id: {:?}, algorithm: {:?}, source: {:?}, function: {:?}, options: {:?}, params: &[{}] }},",
                s.id,
                s.algorithm,
                s.source,
                s.function,
                s.options,
                params.join(", ")
            )
            .ok();
        }
        data_types = m
            .data_types
            .iter()
            .map(|d| format!("{d:?}"))
            .collect::<Vec<_>>()
            .join(", ");
    }
    manifest_code.push_str("];\n");
    let mut prov = String::new();
    for (k, v) in &req.provenance {
        write!(prov, "({k:?}, {v:?}), ").ok();
    }
    let code = format!(
        "// @generated by kiln-embed from targets/ for the enabled target features. Do not edit.\n\
         {statics}\n\
         /// Every target compiled into this binary, sorted by basename.\n\
         pub static TARGETS: &[EmbeddedTarget] = &[\n{targets}];\n\n\
         /// Basenames and aliases -> index into [`TARGETS`] (a rust-phf map generated at build time).\n\
         pub static TARGET_INDEX: ::phf::Map<&'static str, usize> = {};\n\n\
         /// How this binary's tables were built: (what, value) pairs.\n\
         pub static BUILD_PROVENANCE: &[(&str, &str)] = &[{prov}];\n\n\
         /// The solvers of kernels/manifest.toml (what every kdb was compiled from).\n\
         {manifest_code}\n\
         /// Data types every solver is compiled for.\n\
         pub static KERNEL_DATA_TYPES: &[&str] = &[{data_types}];\n",
        index.build()
    );
    write_if_changed(&req.out_dir.join("kiln_embedded.rs"), code.as_bytes())?;
    Ok(report)
}

/// Writes only when the content differs, so unchanged blobs do not force a recompile.
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::read(path).ok().as_deref() == Some(bytes) {
        return Ok(());
    }
    std::fs::write(path, bytes).map_err(|e| Error::io(path, e))
}
