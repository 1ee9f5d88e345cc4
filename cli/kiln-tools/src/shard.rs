//! Tuning spread over jobs: `find --shard I/N` measures the problems of one stable partition of
//! the problem lists into its own directory, which records where it was measured; `db merge`
//! puts the shards' records into a target's DBs, refusing shards measured on another device,
//! driver or kiln.
//!
//! Problems are partitioned by their perf-db key (sha256, first 8 bytes, modulo N), so every
//! problem that writes a perf-db record writes it in one shard only, and a key's shard depends
//! on the key alone: the same on every host and run.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use kiln_embed::finddb::{FindDb, FindRecord};
use kiln_embed::perfdb::{PerfDb, PerfRecord};
use sha2::{Digest, Sha256};

type Error = Box<dyn std::error::Error>;

/// One job's share of the problems: shard `index` of `count` (0-based, as Slurm array task IDs
/// and Kubernetes completion indexes are).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, below `count`.
    pub index: u32,
    /// Shards in all, at least 1.
    pub count: u32,
}

impl Shard {
    /// Parses `I/N` (`--shard 3/8`).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("shard {text:?} is not I/N with 0 <= I < N (e.g. 0/4)");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse::<u32>().map_err(|_| bad())?,
            n.trim().parse::<u32>().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// The shard of `count` that holds the problem whose perf-db key is `perf_key`.
    pub fn of(perf_key: &str, count: u32) -> u32 {
        let digest = Sha256::digest(perf_key.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        (u64::from_be_bytes(first) % u64::from(count.max(1))) as u32
    }

    /// Whether this shard measures the problem whose perf-db key is `perf_key`.
    pub fn owns(&self, perf_key: &str) -> bool {
        Shard::of(perf_key, self.count) == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Where a shard's records were measured: `<base>.shard.txt` in its directory, `name = value`
/// lines. Shards merge only when all but `shard` agree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provenance {
    /// Target basename (`sm_90_132`).
    pub target: String,
    /// The device: name, arch and SM/CU count, or the find log the records came from.
    pub device: String,
    /// The driver's major version (CUDA), `hip`, or `none` for a log.
    pub driver: String,
    /// The kiln version that measured.
    pub kiln: String,
    /// Which shard.
    pub shard: Shard,
}

/// The fields of a provenance file, in file order.
const FIELDS: [&str; 5] = ["target", "device", "driver", "kiln", "shard"];

impl Provenance {
    /// The file of target `base` in directory `dir`.
    pub fn path(dir: &Path, base: &str) -> PathBuf {
        dir.join(format!("{base}.shard.txt"))
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let values = [
            self.target.clone(),
            self.device.clone(),
            self.driver.clone(),
            self.kiln.clone(),
            self.shard.to_string(),
        ];
        let mut out = String::from(
            "# kiln-tools find --shard: where this directory's records were measured\n",
        );
        for (name, value) in FIELDS.iter().zip(values) {
            out.push_str(&format!("{name} = {value}\n"));
        }
        out
    }

    /// Reads `file`; errors name file:line and the field.
    pub fn read(file: &Path) -> Result<Provenance, Error> {
        let text = kiln_embed::input::read_text(file)?;
        let mut values: HashMap<&str, String> = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = || format!("{}:{}", file.display(), i + 1);
            let (name, value) = line
                .split_once('=')
                .ok_or_else(|| format!("{}: expected `name = value`", at()))?;
            let name = name.trim();
            let field = FIELDS
                .iter()
                .find(|f| **f == name)
                .ok_or_else(|| format!("{}: unknown field {name:?}", at()))?;
            if values.insert(field, value.trim().to_string()).is_some() {
                return Err(format!("{}: {name} given twice", at()).into());
            }
        }
        let mut take = |name: &str| {
            values
                .remove(name)
                .ok_or_else(|| format!("{}: no {name}", file.display()))
        };
        Ok(Provenance {
            target: take("target")?,
            device: take("device")?,
            driver: take("driver")?,
            kiln: take("kiln")?,
            shard: Shard::parse(&take("shard")?).map_err(|e| format!("{}: {e}", file.display()))?,
        })
    }

    /// The first field in which `other` was measured elsewhere than `self` (shard aside).
    pub fn differs(&self, other: &Provenance) -> Option<(&'static str, String, String)> {
        let pairs = [
            ("target", &self.target, &other.target),
            ("device", &self.device, &other.device),
            ("driver", &self.driver, &other.driver),
            ("kiln", &self.kiln, &other.kiln),
        ];
        pairs
            .into_iter()
            .find(|(_, a, b)| a != b)
            .map(|(f, a, b)| (f, a.clone(), b.clone()))
    }
}

/// One shard read back for merging.
pub struct ShardDbs {
    /// Its directory.
    pub dir: PathBuf,
    /// Where it was measured.
    pub provenance: Provenance,
    /// Its find-db (empty for `tune` shards).
    pub find: FindDb,
    /// Its perf-db.
    pub perf: PerfDb,
}

impl ShardDbs {
    /// Reads shard directory `dir` of target `base`: its provenance and DBs (a DB it lacks is
    /// empty).
    pub fn read(dir: &Path, base: &str) -> Result<ShardDbs, Error> {
        let file = Provenance::path(dir, base);
        if !file.exists() {
            return Err(format!(
                "{}: no {base}.shard.txt: not a shard directory of `kiln-tools find --shard`",
                dir.display()
            )
            .into());
        }
        let provenance = Provenance::read(&file)?;
        let dbs = crate::cmd::TargetDbs::read(dir, base)?;
        Ok(ShardDbs {
            dir: dir.to_path_buf(),
            provenance,
            find: dbs.find,
            perf: dbs.perf,
        })
    }
}

/// What a merge did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// Find-db records added.
    pub find_added: usize,
    /// Find-db records replaced.
    pub find_replaced: usize,
    /// Perf-db records added.
    pub perf_added: usize,
    /// Perf-db records updated.
    pub perf_updated: usize,
    /// Shard indexes of the partition that no given shard is.
    pub missing: Vec<u32>,
}

/// Merges `shards` into `find` and `perf` (a target's DBs). The result does not depend on the
/// shards' order or count: a record already in the DBs is replaced in place, new records are
/// appended in key order. Refused, naming the shard: shards measured on another device, driver
/// or kiln than the first, of another partition size, the same shard twice, or a shard holding
/// a record its partition does not own (a DB copied in, not measured). `perf_key_of` gives the
/// perf-db key of a find-db key (the partition's key).
pub fn merge(
    find: &mut FindDb,
    perf: &mut PerfDb,
    shards: &[ShardDbs],
    perf_key_of: impl Fn(&str) -> Result<String, Error>,
) -> Result<MergeReport, Error> {
    let Some(first) = shards.first() else {
        return Err("no shards to merge".into());
    };
    let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
    for s in shards {
        let p = &s.provenance;
        if let Some((field, want, got)) = first.provenance.differs(p) {
            return Err(format!(
                "{}: measured with {field} {got:?}, but {} with {want:?}: shards merge only when measured alike",
                s.dir.display(),
                first.dir.display()
            )
            .into());
        }
        if p.shard.count != first.provenance.shard.count {
            return Err(format!(
                "{}: shard {} is of another partition than {} (shard {})",
                s.dir.display(),
                p.shard,
                first.dir.display(),
                first.provenance.shard
            )
            .into());
        }
        if let Some(other) = seen.insert(p.shard.index, &s.dir) {
            return Err(format!(
                "{}: shard {} is also {}",
                s.dir.display(),
                p.shard,
                other.display()
            )
            .into());
        }
        let foreign = |key: &str| {
            format!(
            "{}: holds {key}, which shard {} does not measure (a shard directory holds only what `find --shard` measured there)",
            s.dir.display(),
            p.shard
        )
        };
        for r in &s.find.records {
            if !p.shard.owns(&perf_key_of(&r.key)?) {
                return Err(foreign(&r.key).into());
            }
        }
        for r in &s.perf.records {
            if !p.shard.owns(&r.key) {
                return Err(foreign(&r.key).into());
            }
        }
    }
    let count = first.provenance.shard.count;
    let mut report = MergeReport {
        missing: (0..count).filter(|i| !seen.contains_key(i)).collect(),
        ..MergeReport::default()
    };
    // Partitions are disjoint, so each key comes from one shard: gather by key, in key order.
    let new_find: BTreeMap<&str, &FindRecord> = shards
        .iter()
        .flat_map(|s| s.find.records.iter().map(|r| (r.key.as_str(), r)))
        .collect();
    let new_perf: BTreeMap<&str, &PerfRecord> = shards
        .iter()
        .flat_map(|s| s.perf.records.iter().map(|r| (r.key.as_str(), r)))
        .collect();
    let index: HashMap<String, usize> = find
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| (r.key.clone(), i))
        .collect();
    for (key, rec) in new_find {
        match index.get(key) {
            Some(&i) => {
                find.records[i] = rec.clone();
                report.find_replaced += 1;
            }
            None => {
                find.records.push(rec.clone());
                report.find_added += 1;
            }
        }
    }
    let known: std::collections::HashSet<String> =
        perf.records.iter().map(|r| r.key.clone()).collect();
    report.perf_updated = new_perf.keys().filter(|k| known.contains(**k)).count();
    report.perf_added = new_perf.len() - report.perf_updated;
    // One merge, in key order (each call indexes the whole perf-db).
    perf.merge(PerfDb {
        records: new_perf.into_values().cloned().collect(),
    });
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse_naming_the_text() {
        assert_eq!(Shard::parse("3/8"), Ok(Shard { index: 3, count: 8 }));
        assert_eq!(Shard::parse("0/1").unwrap().to_string(), "0/1");
        for bad in ["8/8", "1/0", "x/2", "2", "-1/4", "1/4/2", ""] {
            let e = Shard::parse(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn every_key_falls_in_exactly_one_shard_the_same_on_every_run() {
        let keys: Vec<String> = (0..500)
            .map(|i| format!("2x{i}x56x56x1x3x3x1x64x32x1x1x0x1x1x0x1x1x0x0x1xNHWCxFP16xF"))
            .collect();
        for count in [1, 2, 3, 7, 16] {
            let mut per = vec![0usize; count as usize];
            for k in &keys {
                let owners: Vec<u32> = (0..count)
                    .filter(|&i| Shard { index: i, count }.owns(k))
                    .collect();
                assert_eq!(owners.len(), 1, "{k} in shards {owners:?} of {count}");
                per[owners[0] as usize] += 1;
            }
            // Spread: no shard empty or holding more than twice its share.
            let share = keys.len() / count as usize;
            assert!(per.iter().all(|&n| n > 0 && n <= 2 * share + 1), "{per:?}");
        }
        // The partition is sha256's (the same on every host), not a hasher seeded per process.
        let k = "2x64x56x56x1x3x3x1x64x32x1x1x0x1x1x0x1x1x0x0x1xNHWCxFP16xF";
        let digest = Sha256::digest(k.as_bytes());
        let first = u64::from_be_bytes(digest[..8].try_into().unwrap());
        assert_eq!(Shard::of(k, 7), (first % 7) as u32);
    }

    #[test]
    fn provenance_round_trips_and_bad_files_name_the_line() {
        let p = Provenance {
            target: "sm_90_132".into(),
            device: "NVIDIA H200, sm_90, 132 SMs".into(),
            driver: "13".into(),
            kiln: "0.1.0".into(),
            shard: Shard { index: 1, count: 4 },
        };
        let dir = tempfile::tempdir().unwrap();
        let file = Provenance::path(dir.path(), "sm_90_132");
        std::fs::write(&file, p.to_text()).unwrap();
        assert_eq!(Provenance::read(&file).unwrap(), p);
        for (text, want) in [
            ("target = a\nbogus\n", ":2: expected `name = value`"),
            ("target = a\ncolour = red\n", ":2: unknown field \"colour\""),
            ("target = a\ntarget = b\n", ":2: target given twice"),
            ("target = a\n", "no device"),
        ] {
            std::fs::write(&file, text).unwrap();
            let e = Provenance::read(&file).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
