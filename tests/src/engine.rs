//! rdbx-side helpers for the tests: apply an ops script with rdbx, read whole
//! tables and whole databases, and run the `mdbx-oracle` binary.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use rdbx::{Db, DbFlags, Env, PutFlags, RoTxn, RwTxn};

use crate::golden::{self, DumpSection};
use crate::ops::Op;

/// Every (key, value) of a table in cursor order, through `next()`.
pub fn read_all(txn: &RoTxn<'_>, db: Db) -> rdbx::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut c = txn.cursor(db)?;
    let mut out = Vec::new();
    while let Some((k, v)) = c.next()? {
        out.push((k.to_vec(), v.to_vec()));
    }
    Ok(out)
}

/// Every (key, value) of a table in reverse cursor order, through `prev()`.
pub fn read_all_rev(txn: &RoTxn<'_>, db: Db) -> rdbx::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut c = txn.cursor(db)?;
    let mut out = Vec::new();
    while let Some((k, v)) = c.prev()? {
        out.push((k.to_vec(), v.to_vec()));
    }
    Ok(out)
}

/// The whole database as sections, in the layout of
/// [`crate::oracle::dump_sections`] (main-table plain records first if any).
pub fn dump_sections(txn: &RoTxn<'_>) -> rdbx::Result<Vec<DumpSection>> {
    let names = txn.table_names()?;
    let mut out = Vec::new();
    let main_flags = txn.db_flags(Db::MAIN)?.bits();
    let mut main = DumpSection::new(None, main_flags);
    for (k, v) in read_all(txn, Db::MAIN)? {
        if !names.contains(&k) {
            main.records.push((k, v));
        }
    }
    if !main.records.is_empty() || names.is_empty() {
        out.push(main);
    }
    for n in &names {
        let db = txn.open_db_bytes(Some(n))?;
        let mut s = DumpSection::new(Some(n), txn.db_flags(db)?.bits());
        s.records = read_all(txn, db)?;
        out.push(s);
    }
    Ok(out)
}

fn name_str(n: &Option<Vec<u8>>) -> Option<&str> {
    n.as_ref().map(|n| std::str::from_utf8(n).expect("table names in scripts are UTF-8"))
}

/// Apply one script operation inside a write transaction (`Commit` is not
/// handled here). `dbs` caches table handles.
pub fn apply_op(txn: &mut RwTxn<'_>, dbs: &mut HashMap<Option<Vec<u8>>, Db>, op: &Op) -> rdbx::Result<()> {
    let mut db_of = |txn: &mut RwTxn<'_>, t: &Option<Vec<u8>>| -> rdbx::Result<Db> {
        if let Some(d) = dbs.get(t) {
            return Ok(*d);
        }
        let d = txn.open_db(name_str(t))?;
        dbs.insert(t.clone(), d);
        Ok(d)
    };
    match op {
        Op::Create { table, flags } => {
            let d = txn.create_db(name_str(table), DbFlags::from_bits_truncate(*flags))?;
            dbs.insert(table.clone(), d);
        }
        Op::Put { table, key, value, flags } => {
            let d = db_of(txn, table)?;
            txn.put(d, key, value, PutFlags::from_bits_truncate(*flags))?;
        }
        Op::Del { table, key, value } => {
            let d = db_of(txn, table)?;
            txn.del(d, key, value.as_deref())?;
        }
        Op::Clear { table } => {
            let d = db_of(txn, table)?;
            txn.clear_db(d)?;
        }
        Op::Drop { table } => {
            let d = db_of(txn, table)?;
            txn.drop_db(d)?;
            dbs.remove(table);
        }
        Op::Commit => unreachable!("commit is handled by apply_rdbx"),
    }
    Ok(())
}

/// Apply a script with rdbx: one write transaction per `commit`-separated
/// part. Returns the number of commits. On error, says which operation failed.
pub fn apply_rdbx(env: &Env, ops: &[Op]) -> Result<usize, String> {
    let mut dbs = HashMap::new();
    let mut commits = 0;
    let mut txn: Option<RwTxn<'_>> = None;
    for (i, op) in ops.iter().enumerate() {
        if let Op::Commit = op {
            if let Some(t) = txn.take() {
                t.commit().map_err(|e| format!("rdbx commit #{} (before op {i}): {e:?}", commits + 1))?;
                commits += 1;
            }
            continue;
        }
        if txn.is_none() {
            txn = Some(env.begin_rw_txn().map_err(|e| format!("rdbx begin_rw_txn: {e:?}"))?);
        }
        let t = txn.as_mut().expect("txn");
        apply_op(t, &mut dbs, op)
            .map_err(|e| format!("rdbx op #{i} in txn #{} ({}): {e:?}", commits + 1, show_op(op)))?;
    }
    if let Some(t) = txn.take() {
        t.commit().map_err(|e| format!("rdbx final commit #{}: {e:?}", commits + 1))?;
        commits += 1;
    }
    Ok(commits)
}

/// Short description of an op (keys abbreviated).
pub fn show_op(op: &Op) -> String {
    let s = crate::ops::format_ops(std::slice::from_ref(op));
    let s = s.trim_end();
    if s.len() > 120 {
        format!("{}... ({} chars)", &s[..120], s.len())
    } else {
        s.to_string()
    }
}

/// Stats of the main table and every named table, through rdbx.
pub fn all_stats(txn: &RoTxn<'_>) -> rdbx::Result<Vec<(Option<Vec<u8>>, rdbx::Stat)>> {
    let mut out = vec![(None, txn.db_stat(Db::MAIN)?)];
    for n in txn.table_names()? {
        let db = txn.open_db_bytes(Some(&n))?;
        out.push((Some(n), txn.db_stat(db)?));
    }
    Ok(out)
}

/// Convert an rdbx stat to the figures of a `.stat` file.
pub fn figures(s: &rdbx::Stat) -> golden::StatFigures {
    golden::StatFigures {
        page_size: s.page_size as u64,
        depth: s.depth as u64,
        branch_pages: s.branch_pages,
        leaf_pages: s.leaf_pages,
        overflow_pages: s.overflow_pages,
        entries: s.entries,
    }
}

/// Runs the `mdbx-oracle` binary (libmdbx in a child process).
pub struct OracleCli {
    pub exe: std::path::PathBuf,
}

/// Output of one `mdbx-oracle` run.
pub struct CliOutput {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl OracleCli {
    pub fn new(exe: impl Into<std::path::PathBuf>) -> Self {
        OracleCli { exe: exe.into() }
    }

    pub fn run(&self, args: &[&std::ffi::OsStr]) -> CliOutput {
        let out = Command::new(&self.exe).args(args).output().unwrap_or_else(|e| panic!("running {:?}: {e}", self.exe));
        CliOutput {
            code: out.status.code(),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `mdbx-oracle chk PATH`: `Ok(summary line)` when clean, `Err(report)` otherwise.
    pub fn chk(&self, path: &Path) -> Result<String, String> {
        let o = self.run(&["chk".as_ref(), path.as_os_str()]);
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        if o.code == Some(0) {
            Ok(text)
        } else {
            Err(format!("libmdbx chk of {path:?} failed (exit {:?}):\n{text}\nstderr:\n{}", o.code, o.stderr))
        }
    }

    /// `mdbx-oracle dump PATH`, parsed.
    pub fn dump(&self, path: &Path) -> Result<Vec<DumpSection>, String> {
        let o = self.run(&["dump".as_ref(), path.as_os_str()]);
        if o.code != Some(0) {
            return Err(format!("libmdbx dump of {path:?} failed (exit {:?}): {}", o.code, o.stderr));
        }
        golden::parse_dump(&o.stdout).map_err(|e| format!("parsing mdbx-oracle dump: {e}"))
    }

    /// `mdbx-oracle stat PATH`, parsed.
    pub fn stat(
        &self,
        path: &Path,
    ) -> Result<std::collections::BTreeMap<Option<Vec<u8>>, golden::StatFigures>, String> {
        let o = self.run(&["stat".as_ref(), path.as_os_str()]);
        if o.code != Some(0) {
            return Err(format!("libmdbx stat of {path:?} failed (exit {:?}): {}", o.code, o.stderr));
        }
        golden::parse_stat(&String::from_utf8_lossy(&o.stdout))
    }

    /// `mdbx-oracle info PATH` as key=value pairs.
    pub fn info(&self, path: &Path) -> Result<std::collections::BTreeMap<String, u64>, String> {
        let o = self.run(&["info".as_ref(), path.as_os_str()]);
        if o.code != Some(0) {
            return Err(format!("libmdbx info of {path:?} failed (exit {:?}): {}", o.code, o.stderr));
        }
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| {
                let (k, v) = l.split_once('=').ok_or_else(|| format!("bad info line {l:?}"))?;
                Ok((k.to_string(), v.parse().map_err(|e| format!("{l}: {e}"))?))
            })
            .collect()
    }

    /// `mdbx-oracle write PATH SCRIPT [extra args]`.
    pub fn write(&self, path: &Path, ops: &[Op], extra: &[&str]) -> Result<String, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let script = dir.path().join("ops.txt");
        std::fs::write(&script, crate::ops::format_ops(ops)).map_err(|e| e.to_string())?;
        let mut args: Vec<&std::ffi::OsStr> = vec!["write".as_ref(), path.as_os_str(), script.as_os_str()];
        args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
        let o = self.run(&args);
        if o.code == Some(0) {
            Ok(String::from_utf8_lossy(&o.stdout).into_owned())
        } else {
            Err(format!("libmdbx write to {path:?} failed (exit {:?}): {}", o.code, o.stderr))
        }
    }
}
