//! One module per command of `kiln-tools`, and the helpers they share.

pub mod bench;
mod bench_net;
pub mod db_check;
pub mod db_convert;
pub mod db_import;
pub mod db_stats;
pub mod find;
pub mod kdb_build;
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
