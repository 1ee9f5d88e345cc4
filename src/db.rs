//! Lookups in an embedded target's databases: find-db (problem -> ranked solutions),
//! perf-db (problem, solver -> tuned params) and kdb (kernel name, args -> code object).
//! None of them touches the filesystem or the heap once a block is decoded.

use kiln_format::records::{self, find_items, kdb_payload, perf_items, ALGORITHM_NAMES};
use kiln_format::table::{EmbeddedTable, KeyParts};
use kiln_format::ConvProblem;

use crate::embedded::EmbeddedTarget;
use crate::error::{Error, Result};

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
        let items = find_items(self.payload).map_err(|e| Error::Payload {
            target: self.target,
            table: "find-db",
            source: e,
        });
        let (ok, err) = match items {
            Ok(it) => (Some(it), None),
            Err(e) => (None, Some(Err(e))),
        };
        err.into_iter()
            .chain(ok.into_iter().flatten().map(move |raw| {
                let solver = self
                    .table
                    .string(raw.solver as u32)
                    .map_err(|e| Error::Table {
                        target: self.target,
                        table: "find-db",
                        source: e,
                    })?;
                let algorithm =
                    ALGORITHM_NAMES
                        .get(raw.algorithm as usize)
                        .copied()
                        .ok_or(Error::Payload {
                            target: self.target,
                            table: "find-db",
                            source: records::PayloadError("algorithm index out of range"),
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
    /// sha256 of the bytes, checked when the block was decoded.
    pub sha256: [u8; 32],
    /// MIOpen's MD5 `kernel_hash`.
    pub md5: [u8; 16],
}

impl EmbeddedTarget {
    fn table_err(
        &self,
        table: &'static str,
    ) -> impl Fn(kiln_format::table::TableError) -> Error + '_ {
        move |source| Error::Table {
            target: self.basename,
            table,
            source,
        }
    }

    /// Find-db lookup by problem. `Ok(None)`: the problem is not in the find-db.
    pub fn find_solutions(&'static self, problem: &ConvProblem) -> Result<Option<Solutions>> {
        let key = problem.find_db_key();
        if key.is_truncated() {
            return Ok(None);
        }
        self.find_solutions_by_key_bytes(key.as_bytes())
    }

    /// Find-db lookup by key text (`64-56-56-3x3-...-F`).
    pub fn find_solutions_by_key(&'static self, key: &str) -> Result<Option<Solutions>> {
        self.find_solutions_by_key_bytes(key.as_bytes())
    }

    fn find_solutions_by_key_bytes(&'static self, key: &[u8]) -> Result<Option<Solutions>> {
        let Some(table) = self.find_db else {
            return Ok(None);
        };
        let rec = table.get(key).map_err(self.table_err("find-db"))?;
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
        let Some(rec) = table.get(key).map_err(self.table_err("perf-db"))? else {
            return Ok(None);
        };
        let payload_err = |source| Error::Payload {
            target: self.basename,
            table: "perf-db",
            source,
        };
        for item in perf_items(rec.payload).map_err(payload_err)? {
            let (idx, params) = item.map_err(payload_err)?;
            if table
                .string_bytes(idx as u32)
                .map_err(self.table_err("perf-db"))?
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
            .map_err(self.table_err("perf-db"))?
        else {
            return Ok(out);
        };
        let payload_err = |source| Error::Payload {
            target: self.basename,
            table: "perf-db",
            source,
        };
        for item in perf_items(rec.payload).map_err(payload_err)? {
            let (idx, params) = item.map_err(payload_err)?;
            let solver = table
                .string(idx as u32)
                .map_err(self.table_err("perf-db"))?;
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
        let Some(rec) = table.get_parts(key).map_err(self.table_err("kdb"))? else {
            return Ok(None);
        };
        let p = kdb_payload(rec.payload).map_err(|source| Error::Payload {
            target: self.basename,
            table: "kdb",
            source,
        })?;
        Ok(Some(CodeObject {
            bytes: p.object,
            sha256: p.sha256,
            md5: p.md5,
        }))
    }
}
