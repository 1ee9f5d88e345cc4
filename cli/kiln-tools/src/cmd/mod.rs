//! One module per command of `kiln-tools`, and the helpers they share.

pub mod bench;
mod bench_net;
pub mod db_check;
pub mod db_convert;
pub mod db_import;
pub mod db_merge;
pub mod db_stats;
#[cfg(feature = "emulate")]
pub mod emulate;
pub mod find;
mod find_workers;
pub mod kdb_build;
pub mod net_import;
pub mod plot;
pub mod regret;

use std::path::Path;

/// `--device`, shared by the commands that measure on a GPU.
#[derive(clap::Args)]
pub struct DeviceArgs {
    /// cuda:0, cuda://GPU-<uuid>, hip:0, hip://<uuid> (default: KILN_DEVICE, else the first GPU).
    #[arg(long)]
    pub device: Option<String>,
}

impl DeviceArgs {
    /// Opens the device (an error of exit class 3 when it cannot be found or opened) and its
    /// context.
    pub fn context(&self) -> Result<kiln::context::Context, Box<dyn std::error::Error>> {
        let device = kiln::harness::output::open_device(self.device.as_deref())?;
        Ok(kiln::context::Context::new(device)?)
    }
}

/// Which MIOpen database a file is, by its name.
pub enum DbKind {
    /// `.fdb.txt`.
    Find,
    /// `.db.txt`, `.db`, `.udb.txt`, `.udb`.
    Perf,
    /// `.kdb`, `.ukdb`.
    Kdb,
}

/// The kind of database `path` names, or an error listing the names understood.
pub fn kind_of(path: &Path) -> Result<DbKind, Box<dyn std::error::Error>> {
    // The kind is in the name's ASCII ending: a name that is not UTF-8 still has it.
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    if name.ends_with(".fdb.txt") {
        Ok(DbKind::Find)
    } else if name.ends_with(".kdb") || name.ends_with(".ukdb") {
        Ok(DbKind::Kdb)
    } else if name.ends_with(".db.txt")
        || name.ends_with(".db")
        || name.ends_with(".udb.txt")
        || name.ends_with(".udb")
    {
        Ok(DbKind::Perf)
    } else {
        Err(format!("{}: cannot tell the database kind from the name (expected .fdb.txt, .db.txt, .db or .kdb)", kiln::format::text::escaped(&path.to_string_lossy())).into())
    }
}

pub use kiln_embed::input::write_atomic;

/// A target's find-db and perf-db in a directory (`<base>.HIP.fdb.txt`, `<base>.db.txt`), read
/// where they exist (empty where not), with the paths they are written back to.
pub struct TargetDbs {
    /// The find-db's file.
    pub find_path: std::path::PathBuf,
    /// The find-db.
    pub find: kiln_embed::finddb::FindDb,
    /// The perf-db's file.
    pub perf_path: std::path::PathBuf,
    /// The perf-db.
    pub perf: kiln_embed::perfdb::PerfDb,
}

impl TargetDbs {
    /// Reads target `base`'s DBs in `dir`.
    pub fn read(dir: &Path, base: &str) -> Result<TargetDbs, Box<dyn std::error::Error>> {
        let find_path = dir.join(format!("{base}.HIP.fdb.txt"));
        let perf_path = dir.join(format!("{base}.db.txt"));
        let find = if find_path.exists() {
            kiln_embed::finddb::FindDb::read(&find_path)?
        } else {
            Default::default()
        };
        let perf = if perf_path.exists() {
            kiln_embed::perfdb::PerfDb::read(&perf_path)?
        } else {
            Default::default()
        };
        Ok(TargetDbs {
            find_path,
            find,
            perf_path,
            perf,
        })
    }
}
