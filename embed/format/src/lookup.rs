//! Lookups in an embedded target's databases: find-db (problem -> ranked solutions),
//! perf-db (problem, solver -> tuned params) and kdb (kernel name, args -> code object).
//! None of them touches the filesystem or the heap once a block is decoded.

use core::fmt;

use crate::embedded::EmbeddedTarget;
use crate::records::{self, find_items, kdb_payload, perf_items, PayloadError, ALGORITHM_NAMES};
use crate::table::{EmbeddedTable, KeyParts, TableError, TableKind};
use crate::ConvProblem;

/// A lookup that found a damaged embedded table or record (only possible if the binary's own
/// data is damaged): which target, which table, what failed.
#[derive(Debug)]
pub struct LookupError {
    /// Target basename.
    pub target: &'static str,
    /// The table read.
    pub table: TableKind,
    /// What failed.
    pub cause: LookupCause,
}

/// What a failed lookup found.
#[derive(Debug)]
pub enum LookupCause {
    /// The table (digest mismatch, bad bounds, undecodable block).
    Table(TableError),
    /// A record's payload.
    Payload(PayloadError),
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what: &dyn fmt::Display = match &self.cause {
            LookupCause::Table(e) => e,
            LookupCause::Payload(e) => e,
        };
        write!(f, "target {} {}: {what}", self.target, self.table.name())
    }
}

impl std::error::Error for LookupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            LookupCause::Table(e) => Some(e),
            LookupCause::Payload(e) => Some(e),
        }
    }
}

type Result<T> = core::result::Result<T, LookupError>;

fn table_error(
    target: &'static str,
    table: TableKind,
) -> impl Fn(TableError) -> LookupError + Copy {
    move |e| LookupError {
        target,
        table,
        cause: LookupCause::Table(e),
    }
}

fn payload_error(
    target: &'static str,
    table: TableKind,
) -> impl Fn(PayloadError) -> LookupError + Copy {
    move |e| LookupError {
        target,
        table,
        cause: LookupCause::Payload(e),
    }
}

/// Most solutions one find-db record can hold (the count is stored in a byte).
pub const MAX_SOLUTIONS: usize = 255;

/// One find-db solution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Solution {
    /// Solver DB name.
    pub solver: &'static str,
    /// Measured time in milliseconds.
    pub time_ms: f64,
    /// Workspace bytes.
    pub workspace: u64,
    /// MIOpen algorithm name.
    pub algorithm: &'static str,
}

/// The solutions of one find-db record, in stored order (MIOpen ranks them by time).
#[derive(Clone, Copy)]
pub struct Solutions {
    target: &'static str,
    table: &'static EmbeddedTable,
    payload: &'static [u8],
}

impl Solutions {
    /// Number of solutions.
    pub fn len(&self) -> usize {
        self.payload.first().copied().unwrap_or(0) as usize
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Solutions in stored order.
    pub fn iter(&self) -> impl Iterator<Item = Result<Solution>> + '_ {
        let items = find_items(self.payload).map_err(payload_error(self.target, TableKind::FindDb));
        let (ok, err) = match items {
            Ok(it) => (Some(it), None),
            Err(e) => (None, Some(Err(e))),
        };
        err.into_iter()
            .chain(ok.into_iter().flatten().map(move |raw| {
                let solver = self
                    .table
                    .string(raw.solver as u32)
                    .map_err(table_error(self.target, TableKind::FindDb))?;
                let algorithm = ALGORITHM_NAMES
                    .get(raw.algorithm as usize)
                    .copied()
                    .ok_or_else(|| {
                        payload_error(self.target, TableKind::FindDb)(records::PayloadError(
                            "algorithm index out of range",
                        ))
                    })?;
                Ok(Solution {
                    solver,
                    time_ms: raw.time_ms,
                    workspace: raw.workspace,
                    algorithm,
                })
            }))
    }

    /// Solutions sorted by time (stable), on the stack.
    pub fn ranked(&self) -> Result<heapless::Vec<Solution, MAX_SOLUTIONS>> {
        let mut out = heapless::Vec::new();
        for s in self.iter() {
            // len() <= 255 = capacity, so this push cannot fail.
            let _ = out.push(s?);
        }
        out.sort_by(|a: &Solution, b: &Solution| a.time_ms.total_cmp(&b.time_ms));
        Ok(out)
    }
}

/// An embedded code object, decoded and verified.
#[derive(Clone, Copy, Debug)]
pub struct CodeObject {
    /// The object bytes (ELF), in static storage.
    pub bytes: &'static [u8],
    /// sha256 of the bytes, recorded at build time (the block holding them passed its frame
    /// digest and zstd's content checksum when it was decoded).
    pub sha256: [u8; 32],
    /// MIOpen's MD5 `kernel_hash`.
    pub md5: [u8; 16],
}

impl EmbeddedTarget {
    /// Decodes and verifies every block of the table of `kind` now, if the target has one (see
    /// [`EmbeddedTable::decode_all`]).
    pub fn decode_table(&'static self, kind: TableKind) -> Result<()> {
        match self.table(kind) {
            Some(table) => table.decode_all().map_err(table_error(self.basename, kind)),
            None => Ok(()),
        }
    }

    /// Find-db lookup by problem: the record as stored, which may name MIOpen solvers kiln
    /// cannot run (a runtime's resolver ranks what it can run). `Ok(None)`: not in the find-db.
    pub fn find_record(&'static self, problem: &ConvProblem) -> Result<Option<Solutions>> {
        let key = problem.find_db_key();
        if key.is_truncated() {
            return Ok(None);
        }
        self.find_record_by_key_bytes(key.as_bytes())
    }

    /// Find-db lookup by key text (`64-56-56-3x3-...-F`).
    pub fn find_record_by_key(&'static self, key: &str) -> Result<Option<Solutions>> {
        self.find_record_by_key_bytes(key.as_bytes())
    }

    fn find_record_by_key_bytes(&'static self, key: &[u8]) -> Result<Option<Solutions>> {
        let Some(table) = self.find_db else {
            return Ok(None);
        };
        let rec = table
            .get(key)
            .map_err(table_error(self.basename, TableKind::FindDb))?;
        Ok(rec.map(|r| Solutions {
            target: self.basename,
            table,
            payload: r.payload,
        }))
    }

    /// Perf-db lookup: the tuned params of `solver` for `problem`.
    pub fn perf_params(
        &'static self,
        problem: &ConvProblem,
        solver: &str,
    ) -> Result<Option<&'static str>> {
        let key = problem.perf_db_key();
        if key.is_truncated() {
            return Ok(None);
        }
        self.perf_params_by_key_bytes(key.as_bytes(), solver)
    }

    /// Perf-db lookup by key text (`2x...xF`).
    pub fn perf_params_by_key(
        &'static self,
        key: &str,
        solver: &str,
    ) -> Result<Option<&'static str>> {
        self.perf_params_by_key_bytes(key.as_bytes(), solver)
    }

    fn perf_params_by_key_bytes(
        &'static self,
        key: &[u8],
        solver: &str,
    ) -> Result<Option<&'static str>> {
        let Some(table) = self.perf_db else {
            return Ok(None);
        };
        let Some(rec) = table
            .get(key)
            .map_err(table_error(self.basename, TableKind::PerfDb))?
        else {
            return Ok(None);
        };
        let payload_err = payload_error(self.basename, TableKind::PerfDb);
        for item in perf_items(rec.payload).map_err(payload_err)? {
            let (idx, params) = item.map_err(payload_err)?;
            if table
                .string_bytes(idx as u32)
                .map_err(table_error(self.basename, TableKind::PerfDb))?
                == solver.as_bytes()
            {
                return Ok(Some(params));
            }
        }
        Ok(None)
    }

    /// Every (solver, params) of a perf-db record, in stored order.
    pub fn perf_record(
        &'static self,
        problem: &ConvProblem,
    ) -> Result<heapless::Vec<(&'static str, &'static str), MAX_SOLUTIONS>> {
        let mut out = heapless::Vec::new();
        let Some(table) = self.perf_db else {
            return Ok(out);
        };
        let key = problem.perf_db_key();
        let Some(rec) = table
            .get(key.as_str().as_bytes())
            .map_err(table_error(self.basename, TableKind::PerfDb))?
        else {
            return Ok(out);
        };
        let payload_err = payload_error(self.basename, TableKind::PerfDb);
        for item in perf_items(rec.payload).map_err(payload_err)? {
            let (idx, params) = item.map_err(payload_err)?;
            let solver = table
                .string(idx as u32)
                .map_err(table_error(self.basename, TableKind::PerfDb))?;
            let _ = out.push((solver, params));
        }
        Ok(out)
    }

    /// Kernel-db lookup by MIOpen's key: `kernel_name` (`file.o`) and `kernel_args`
    /// (`<options> -mcpu=<arch>`).
    pub fn code_object(
        &'static self,
        kernel_name: &str,
        kernel_args: &str,
    ) -> Result<Option<CodeObject>> {
        let Some(table) = self.kdb else {
            return Ok(None);
        };
        let key = KeyParts(&[kernel_name.as_bytes(), b"\0", kernel_args.as_bytes()]);
        let Some(rec) = table
            .get_parts(key)
            .map_err(table_error(self.basename, TableKind::KernelDb))?
        else {
            return Ok(None);
        };
        let p =
            kdb_payload(rec.payload).map_err(payload_error(self.basename, TableKind::KernelDb))?;
        Ok(Some(CodeObject {
            bytes: p.object,
            sha256: p.sha256,
            md5: p.md5,
        }))
    }
}
