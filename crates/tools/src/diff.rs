//! `diff`: the records that differ between two databases or two tables
//! ([`rdbx::diff_tables`]); counts first, then the records, streamed.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use rdbx::{DiffCounts, DiffOptions, DiffRecord, RoTxn};
use serde_json::{json, Map, Value};

use crate::common::{self, locate, open_env, Interruptible, ToolError, INTERRUPTED_MSG, PROG};

const HELP: &str = "\
Compares two databases (every table, or --table), or two tables of one
database (A and B the same PATH, --table T --table-b U), each in one read
snapshot. First the counts (per table: added = only in B, removed = only in
A, changed = other value), then every differing record, in key order:
    + TABLE KEY = VALUE     only in B
    - TABLE KEY = VALUE     only in A
    ~ TABLE KEY = OLD -> NEW
Multimap (DUPSORT) tables are compared value by value (a pair only on one
side is added or removed). Tables on one side only, or with other flags,
are reported by name with their record counts (their records are not
listed). The main table's records that describe named tables are left out.
Keys and values are text when printable, else 0x and hex.

--json writes JSON lines: first {\"type\": \"summary\", ...}, then one
{\"type\": \"record\", ...} per difference (schemas in crates/tools/README.md).

EXIT STATUS (as diff(1)): 0 no difference, 1 differences found, 2 trouble
(bad arguments, a database that cannot be read, interrupted by Ctrl-C).";

/// Arguments of `diff`.
#[derive(Args, Debug)]
#[command(after_help = HELP)]
pub struct DiffArgs {
    /// Only this table (@MAIN is the main table)
    #[arg(short = 's', long = "table", value_name = "TABLE")]
    table: Option<String>,
    /// The table of B to compare with --table (default: the same name)
    #[arg(long = "table-b", value_name = "TABLE", requires = "table")]
    table_b: Option<String>,
    /// Compare keys only (values are ignored)
    #[arg(short = 'k', long)]
    keys_only: bool,
    /// Counts only, no records
    #[arg(long)]
    summary: bool,
    /// JSON lines: a summary object, then one object per difference
    #[arg(long)]
    json: bool,
    /// First database (directory or data file)
    a: PathBuf,
    /// Second database (may be A itself, with --table-b)
    b: PathBuf,
}

/// How one pair of tables compares.
struct Pair {
    a: Option<Option<Vec<u8>>>,
    b: Option<Option<Vec<u8>>>,
    records_a: Option<u64>,
    records_b: Option<u64>,
    flags_a: Option<u32>,
    flags_b: Option<u32>,
    counts: DiffCounts,
}

impl Pair {
    fn name(&self) -> Option<&[u8]> {
        self.a.as_ref().or(self.b.as_ref()).and_then(|n| n.as_deref())
    }
    fn status(&self) -> &'static str {
        match (&self.a, &self.b) {
            (Some(_), None) => "only_in_a",
            (None, Some(_)) => "only_in_b",
            _ if self.flags_a != self.flags_b => "flags_differ",
            _ => "compared",
        }
    }
    fn compared(&self) -> bool {
        self.status() == "compared"
    }
    fn differs(&self) -> bool {
        !self.compared() || self.counts.total() > 0
    }
}

pub fn run(a: DiffArgs) -> u8 {
    match diff(&a) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            if a.json {
                let msg = if e.code == libc::EINTR { INTERRUPTED_MSG } else { e.msg.as_str() };
                common::json_error(json!({"type": "error"}), e.code, msg);
            }
            if e.code == libc::EINTR {
                eprintln!("{PROG} diff: {INTERRUPTED_MSG}");
            } else {
                eprintln!("{PROG} diff: {e}");
            }
            2
        }
    }
}

fn same_file(x: &std::path::Path, y: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(x), std::fs::metadata(y)) {
        (Ok(m), Ok(n)) => m.dev() == n.dev() && m.ino() == n.ino(),
        _ => false,
    }
}

fn engine_err(e: rdbx::Error, what: &std::path::Path) -> ToolError {
    match &e {
        rdbx::Error::Io(io) if io.kind() == std::io::ErrorKind::Interrupted => {
            ToolError::sys(libc::EINTR, INTERRUPTED_MSG)
        }
        _ => ToolError::engine(&e, what.display()),
    }
}

fn tables(txn: &RoTxn<'_>) -> rdbx::Result<Vec<Option<Vec<u8>>>> {
    let mut v = vec![None];
    v.extend(txn.table_names()?.into_iter().map(Some));
    v.sort();
    Ok(v)
}

fn describe(txn: &RoTxn<'_>, name: Option<&[u8]>) -> rdbx::Result<(u64, u32)> {
    let db = txn.open_db_bytes(name)?;
    let mut n = txn.db_stat(db)?.entries;
    if name.is_none() {
        n = n.saturating_sub(txn.table_names()?.len() as u64);
    }
    Ok((n, txn.db_flags(db)?.bits()))
}

/// `Ok(true)`: equal.
fn diff(a: &DiffArgs) -> Result<bool, ToolError> {
    let ta = locate(&a.a)?;
    let tb = locate(&a.b)?;
    let env_a = open_env(&ta, true)?;
    let one = same_file(&ta.data, &tb.data);
    let env_b = if one { None } else { Some(open_env(&tb, true)?) };
    let txn_a = env_a.begin_ro_txn().map_err(|e| engine_err(e, &a.a))?;
    let txn_b_own = match &env_b {
        Some(e) => Some(e.begin_ro_txn().map_err(|e| engine_err(e, &a.b))?),
        None => None,
    };
    let txn_b = txn_b_own.as_ref().unwrap_or(&txn_a);
    if one && a.table_b.is_none() {
        eprintln!(
            "{PROG} diff: note: A and B are the same database (compare two of its tables with --table T --table-b U)"
        );
    }
    // The pairs of tables.
    let mut pairs: Vec<Pair> = Vec::new();
    let mut push = |an: Option<Option<Vec<u8>>>, bn: Option<Option<Vec<u8>>>| -> Result<(), ToolError> {
        let da = an.as_ref().map(|n| describe(&txn_a, n.as_deref())).transpose().map_err(|e| engine_err(e, &a.a))?;
        let db = bn.as_ref().map(|n| describe(txn_b, n.as_deref())).transpose().map_err(|e| engine_err(e, &a.b))?;
        pairs.push(Pair {
            a: an,
            b: bn,
            records_a: da.map(|d| d.0),
            records_b: db.map(|d| d.0),
            flags_a: da.map(|d| d.1),
            flags_b: db.map(|d| d.1),
            counts: DiffCounts::default(),
        });
        Ok(())
    };
    match &a.table {
        Some(t) => {
            let an = common::table_arg(t);
            let bn = a.table_b.as_deref().map_or(an.clone(), common::table_arg);
            for (txn, n, p) in [(&txn_a, &an, &a.a), (txn_b, &bn, &a.b)] {
                if let Some(n) = n {
                    if txn.open_db_bytes(Some(n)).is_err() {
                        return Err(ToolError::sys(
                            libc::EINVAL,
                            format!("{}: no table named '{}'", p.display(), common::render(n)),
                        ));
                    }
                }
            }
            push(Some(an), Some(bn))?;
        }
        None => {
            let la = tables(&txn_a).map_err(|e| engine_err(e, &a.a))?;
            let lb = tables(txn_b).map_err(|e| engine_err(e, &a.b))?;
            // Both lists are sorted (the main table first): merge.
            let (mut i, mut j) = (0, 0);
            while i < la.len() || j < lb.len() {
                let ord = match (la.get(i), lb.get(j)) {
                    (Some(x), Some(y)) => x.cmp(y),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    _ => std::cmp::Ordering::Greater,
                };
                match ord {
                    std::cmp::Ordering::Less => {
                        push(Some(la[i].clone()), None)?;
                        i += 1;
                    }
                    std::cmp::Ordering::Greater => {
                        push(None, Some(lb[j].clone()))?;
                        j += 1;
                    }
                    std::cmp::Ordering::Equal => {
                        push(Some(la[i].clone()), Some(lb[j].clone()))?;
                        i += 1;
                        j += 1;
                    }
                }
            }
        }
    }
    let opts = DiffOptions { keys_only: a.keys_only, interrupt: Some(common::interrupt_flag()) };
    // Pass 1: the counts.
    for p in pairs.iter_mut().filter(|p| p.compared()) {
        let (an, bn) = (p.a.clone().flatten(), p.b.clone().flatten());
        p.counts = rdbx::diff_tables(&txn_a, an.as_deref(), txn_b, bn.as_deref(), &opts, &mut |_| Ok(()))
            .map_err(|e| engine_err(e, &a.a))?;
    }
    let equal = !pairs.iter().any(Pair::differs);
    let mut total = DiffCounts::default();
    for p in &pairs {
        total.added += p.counts.added;
        total.removed += p.counts.removed;
        total.changed += p.counts.changed;
    }
    let out = common::raw_stdout().map_err(|e| ToolError::sys(libc::EIO, e.to_string()))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, Interruptible(out));
    let io_err = |e: std::io::Error| {
        if common::interrupted() {
            ToolError::sys(libc::EINTR, INTERRUPTED_MSG)
        } else {
            ToolError::sys(e.raw_os_error().unwrap_or(libc::EIO), format!("writing the output: {e}"))
        }
    };
    if a.json {
        let tables: Vec<Value> = pairs
            .iter()
            .map(|p| {
                let mut m = Map::new();
                name_json(&mut m, p.name());
                m.insert("status".into(), p.status().into());
                m.insert("records_a".into(), p.records_a.into());
                m.insert("records_b".into(), p.records_b.into());
                m.insert("flags_a".into(), p.flags_a.into());
                m.insert("flags_b".into(), p.flags_b.into());
                m.insert("added".into(), p.counts.added.into());
                m.insert("removed".into(), p.counts.removed.into());
                m.insert("changed".into(), p.counts.changed.into());
                m.into()
            })
            .collect();
        let summary = json!({
            "type": "summary",
            "a": a.a.display().to_string(),
            "b": a.b.display().to_string(),
            "a_txnid": txn_a.id(),
            "b_txnid": txn_b.id(),
            "keys_only": a.keys_only,
            "equal": equal,
            "added": total.added,
            "removed": total.removed,
            "changed": total.changed,
            "tables": tables,
        });
        writeln!(out, "{summary}").map_err(io_err)?;
    } else {
        let count = |s: &str| pairs.iter().filter(|p| p.status() == s).count();
        writeln!(
            out,
            "A {} (txn {}), B {} (txn {}){}",
            a.a.display(),
            txn_a.id(),
            a.b.display(),
            txn_b.id(),
            if a.keys_only { ", keys only" } else { "" }
        )
        .map_err(io_err)?;
        writeln!(
            out,
            "tables: {} compared, {} only in A, {} only in B, {} with other flags",
            count("compared"),
            count("only_in_a"),
            count("only_in_b"),
            count("flags_differ")
        )
        .map_err(io_err)?;
        for p in &pairs {
            let label = match (&p.a, &p.b) {
                (Some(x), Some(y)) if x != y => {
                    format!("{} / {}", common::table_label(x.as_deref()), common::table_label(y.as_deref()))
                }
                _ => common::table_label(p.name()),
            };
            let line = match p.status() {
                "only_in_a" => format!("only in A ({} records)", p.records_a.unwrap_or(0)),
                "only_in_b" => format!("only in B ({} records)", p.records_b.unwrap_or(0)),
                "flags_differ" => format!(
                    "other flags: {} in A, {} in B (records not compared)",
                    common::flags_text(p.flags_a.unwrap_or(0) as u16),
                    common::flags_text(p.flags_b.unwrap_or(0) as u16)
                ),
                _ if p.counts.total() == 0 => "equal".to_string(),
                _ => format!("{} added, {} removed, {} changed", p.counts.added, p.counts.removed, p.counts.changed),
            };
            writeln!(out, "{label}: {line}").map_err(io_err)?;
        }
        writeln!(
            out,
            "total: {} added, {} removed, {} changed{}",
            total.added,
            total.removed,
            total.changed,
            if equal { " (equal)" } else { "" }
        )
        .map_err(io_err)?;
    }
    // Pass 2: the records.
    if !a.summary && total.total() > 0 {
        for p in pairs.iter().filter(|p| p.compared() && p.counts.total() > 0) {
            let (an, bn) = (p.a.clone().flatten(), p.b.clone().flatten());
            let table = p.name();
            let mut failed: Option<std::io::Error> = None;
            let mut sink = |r: &DiffRecord<'_>| -> rdbx::Result<()> {
                let res = if a.json { write_json(&mut out, table, r) } else { write_text(&mut out, table, r) };
                res.map_err(|e| {
                    failed = Some(e);
                    rdbx::Error::Io(std::io::Error::new(std::io::ErrorKind::Interrupted, "output"))
                })
            };
            let r = rdbx::diff_tables(&txn_a, an.as_deref(), txn_b, bn.as_deref(), &opts, &mut sink);
            if let Some(e) = failed {
                return Err(io_err(e));
            }
            r.map_err(|e| engine_err(e, &a.a))?;
        }
    }
    out.flush().map_err(io_err)?;
    Ok(equal)
}

fn name_json(m: &mut Map<String, Value>, name: Option<&[u8]>) {
    match name {
        Some(n) => common::json_bytes(m, "table", n),
        None => {
            m.insert("table".into(), "@MAIN".into());
            m.insert("table_hex".into(), Value::Null);
        }
    }
    m.insert("main".into(), name.is_none().into());
}

fn opt_bytes(m: &mut Map<String, Value>, field: &str, b: Option<&[u8]>) {
    match b {
        Some(b) => common::json_bytes(m, field, b),
        None => {
            m.insert(field.into(), Value::Null);
            m.insert(format!("{field}_hex"), Value::Null);
        }
    }
}

fn write_json(out: &mut impl Write, table: Option<&[u8]>, r: &DiffRecord<'_>) -> std::io::Result<()> {
    let mut m = Map::new();
    m.insert("type".into(), "record".into());
    name_json(&mut m, table);
    m.insert("kind".into(), r.kind.as_str().into());
    common::json_bytes(&mut m, "key", r.key);
    opt_bytes(&mut m, "old", r.old);
    opt_bytes(&mut m, "new", r.new);
    writeln!(out, "{}", Value::from(m))
}

fn write_text(out: &mut impl Write, table: Option<&[u8]>, r: &DiffRecord<'_>) -> std::io::Result<()> {
    let t = common::table_label(table);
    let k = common::render(r.key);
    match (r.kind, r.old, r.new) {
        (rdbx::DiffKind::Changed, Some(o), Some(n)) => {
            writeln!(out, "~ {t} {k} = {} -> {}", common::render(o), common::render(n))
        }
        (rdbx::DiffKind::Added, _, Some(v)) => writeln!(out, "+ {t} {k} = {}", common::render(v)),
        (rdbx::DiffKind::Removed, Some(v), _) => writeln!(out, "- {t} {k} = {}", common::render(v)),
        (rdbx::DiffKind::Added, _, None) => writeln!(out, "+ {t} {k}"),
        (rdbx::DiffKind::Removed, None, _) => writeln!(out, "- {t} {k}"),
        (rdbx::DiffKind::Changed, _, _) => writeln!(out, "~ {t} {k}"),
    }
}
