//! `stat`: environment info, GC summary, reader table and table statistics in
//! `mdbx_stat`'s layout (or JSON).

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{ArgAction, Args};
use rdbx::{Db, Stat};
use serde_json::json;

use crate::common::{locate, open_env, percent, ToolError, PROG};

/// Arguments of `stat`.
#[derive(Args, Debug)]
#[command(after_help = "\
-p shows the page-operation counters kept in the lock file since it was
created (the session of every process that has had the database open,
rdbx and libmdbx alike). rdbx never spills, prefaults or calls mincore, and
writes with pwritev (no msync): those counters grow only with libmdbx
processes.

EXIT STATUS: 0 success, 1 any failure (as mdbx_stat).")]
pub struct StatArgs {
    /// Page-operation counters of the current session (see below)
    #[arg(short = 'p')]
    page_ops: bool,
    /// Environment info (geometry, txn ids, readers)
    #[arg(short = 'e')]
    env: bool,
    /// GC / page usage summary (-ff adds the reclaimable span histogram)
    #[arg(short = 'f', action = ArgAction::Count)]
    gc: u8,
    /// Reader table (-rr also clears stale readers)
    #[arg(short = 'r', action = ArgAction::Count)]
    readers: u8,
    /// The main table and every named table
    #[arg(short = 'a', conflicts_with = "table")]
    all: bool,
    /// This named table instead of the main table
    #[arg(short = 's', value_name = "TABLE")]
    table: Option<String>,
    /// No warnings
    #[arg(short = 'q')]
    quiet: bool,
    /// Ignored (legacy no-subdir flag; the layout is detected)
    #[arg(short = 'n')]
    no_sub_dir: bool,
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
    /// Database directory or data file
    path: PathBuf,
}

fn status(out: &mut String, title: &str, st: &Stat) {
    let _ = write!(
        out,
        "Status of {title}\n  Pagesize: {}\n  Tree depth: {}\n  Branch pages: {}\n  Leaf pages: {}\n  Large/Overflow pages: {}\n  Entries: {}\n",
        st.page_size, st.depth, st.branch_pages, st.leaf_pages, st.overflow_pages, st.entries
    );
}

/// `records` and `large_pages` are the toolkit's words (shell, chk, space);
/// `entries` and `overflow_pages`, the same figures, are mdbx_stat's.
fn stat_json(st: &Stat) -> serde_json::Value {
    json!({"page_size": st.page_size, "depth": st.depth, "branch_pages": st.branch_pages, "leaf_pages": st.leaf_pages,
           "large_pages": st.overflow_pages, "records": st.entries,
           "overflow_pages": st.overflow_pages, "entries": st.entries, "mod_txnid": st.mod_txnid})
}

fn pages_line(out: &mut String, caption: &str, value: u64, backed: u64, total: u64) {
    let _ = write!(out, "  {caption}: {value}");
    let mut suffix = " pages";
    if value != 0 && value < backed {
        let _ = write!(out, ", {}% of backed", percent(value, backed));
        suffix = "";
    }
    if value != 0 && value < total {
        let _ = write!(out, ", {}% of total", percent(value, total));
        suffix = "";
    }
    out.push_str(suffix);
    out.push('\n');
}

pub fn run(a: StatArgs) -> u8 {
    let _ = a.no_sub_dir;
    match stat(&a) {
        Ok(text) => {
            print!("{text}");
            0
        }
        Err(e) => {
            if a.json {
                crate::common::json_error(json!({}), e.code, &e.msg);
            }
            eprintln!("{PROG} stat: {e}");
            1
        }
    }
}

fn stat(a: &StatArgs) -> Result<String, ToolError> {
    let t = locate(&a.path)?;
    let env = open_env(&t, true)?;
    let p = a.path.display();
    let eng = |e: rdbx::Error| ToolError::engine(&e, &p);
    let txn = env.begin_ro_txn().map_err(eng)?;
    let info = env.info().map_err(eng)?;
    let ps = info.page_size as u64;
    let readers = env.readers().map_err(eng)?;
    let oldest = readers.iter().filter_map(|r| r.txnid).min().unwrap_or(info.last_txnid).min(info.last_txnid);
    let mut out = String::new();
    let mut j = serde_json::Map::new();
    if a.page_ops {
        let o = env.page_ops();
        let rows: [(&str, u64, &str); 12] = [
            ("New", o.newly, "quantity of a new pages added"),
            ("CoW", o.cow, "quantity of pages copied for altering"),
            ("Clone", o.clone, "quantity of parent's dirty pages clones for nested transactions"),
            ("Split", o.split, "page splits during insertions or updates"),
            ("Merge", o.merge, "page merges during deletions or updates"),
            ("Spill", o.spill, "quantity of spilled/ousted `dirty` pages during large transactions"),
            ("Unspill", o.unspill, "quantity of unspilled/redone `dirty` pages during large transactions"),
            ("WOP", o.wops, "number of explicit write operations (not a pages) to a disk"),
            ("PreFault", o.prefault, "number of prefault write operations (not a pages)"),
            ("mInCore", o.mincore, "number of mincore() calls"),
            ("mSync", o.msync, "number of explicit msync-to-disk operations (not a pages)"),
            ("fSync", o.fsync, "number of explicit fsync-to-disk operations (not a pages)"),
        ];
        out.push_str("Page Operations (for current session):\n");
        for (name, v, what) in rows {
            let _ = writeln!(out, "{:>9}: {v:>8}\t// {what}", name);
        }
        j.insert(
            "page_operations".into(),
            json!({"newly": o.newly, "cow": o.cow, "clone": o.clone, "split": o.split, "merge": o.merge,
                   "spill": o.spill, "unspill": o.unspill, "wops": o.wops, "prefault": o.prefault,
                   "mincore": o.mincore, "msync": o.msync, "fsync": o.fsync}),
        );
    }
    if a.env {
        let (l, u, g, s, now) =
            (info.size_lower, info.size_upper, info.growth_step, info.shrink_threshold, info.size_now);
        out.push_str("Environment Info\n");
        let _ = writeln!(out, "  Pagesize: {ps}");
        if l != u {
            let _ = writeln!(
                out,
                "  Dynamic datafile: {l}..{u} bytes (+{g}/-{s}), {}..{} pages (+{}/-{})",
                l / ps,
                u / ps,
                g / ps,
                s / ps
            );
            let _ = writeln!(out, "  Current mapsize: {u} bytes, {} pages ", u / ps);
            let _ = writeln!(out, "  Current datafile: {now} bytes, {} pages", now / ps);
        } else {
            let _ = writeln!(out, "  Fixed datafile: {now} bytes, {} pages", now / ps);
        }
        let _ = writeln!(out, "  Last transaction ID: {}", info.last_txnid);
        let _ = writeln!(out, "  Latter reader transaction ID: {oldest} ({})", oldest as i64 - info.last_txnid as i64);
        let _ = writeln!(out, "  Max readers: {}", info.max_readers);
        let _ = writeln!(out, "  Number of reader slots uses: {}", info.readers_used);
        j.insert(
            "environment".into(),
            json!({"page_size": ps, "lower": l, "upper": u, "growth": g, "shrink": s, "now": now, "last_txnid": info.last_txnid,
                   "latter_reader_txnid": oldest, "max_readers": info.max_readers, "readers_used": info.readers_used,
                   "first_unallocated": info.first_unallocated, "pages_retired": info.pages_retired,
                   "metas": info.metas.iter().map(|m| json!({"txnid": m.0, "steady": m.1})).collect::<Vec<_>>(), "recent_meta": info.recent_meta}),
        );
    }
    if a.readers > 0 {
        let print_table = |out: &mut String, rs: &[rdbx::ReaderInfo]| {
            if rs.is_empty() {
                out.push_str("Reader Table is absent\n");
                return;
            }
            let _ = writeln!(
                out,
                "Reader Table\n   #\tslot\t{:>10} {:>16} {:>20} {:>10} {:>13} {:>13}",
                "pid", "thread", "txnid", "lag", "used", "retained"
            );
            for (i, r) in rs.iter().enumerate() {
                let thread = match r.tid {
                    u64::MAX => "ousted".to_string(),
                    x if x == u64::MAX - 1 => "parked".to_string(),
                    x => format!("{x:x}"),
                };
                let _ = write!(out, " {:>3})\t[{}]\t{:>10} {:>16}", i + 1, r.slot, r.pid, thread);
                match r.txnid {
                    Some(t) => {
                        let _ = writeln!(
                            out,
                            " {t:>20} {:>10} {:>12.1}M {:>12.1}M",
                            r.lag,
                            r.bytes_used as f64 / 1048576.0,
                            r.bytes_retained as f64 / 1048576.0
                        );
                    }
                    None => {
                        let _ = writeln!(out, " {:>20} {:>10} {:>13} {:>13}", "-", "0", "0", "0");
                    }
                }
            }
        };
        print_table(&mut out, &readers);
        let mut jr: Vec<serde_json::Value> = readers
            .iter()
            .map(|r| json!({"slot": r.slot, "pid": r.pid, "thread": r.tid, "txnid": r.txnid, "lag": r.lag, "bytes_used": r.bytes_used, "bytes_retained": r.bytes_retained}))
            .collect();
        if a.readers > 1 && !readers.is_empty() {
            let dead = env.reader_check().map_err(eng)?;
            if dead > 0 {
                let _ = writeln!(out, "  {dead} stale readers cleared.");
                let now = env.readers().map_err(eng)?;
                if now.is_empty() {
                    out.push_str("  Now Reader Table is empty\n");
                } else {
                    print_table(&mut out, &now);
                }
                jr = now
                    .iter()
                    .map(|r| json!({"slot": r.slot, "pid": r.pid, "thread": r.tid, "txnid": r.txnid, "lag": r.lag}))
                    .collect();
            } else {
                out.push_str("  No stale readers.\n");
            }
            j.insert("stale_readers_cleared".into(), json!(dead));
        }
        j.insert("readers".into(), json!(jr));
        if !(a.gc > 0 || a.all || a.table.is_some()) {
            return Ok(finish(a, out, j));
        }
    }
    if a.gc > 0 {
        let g = env.gc_info().map_err(eng)?;
        let _ = writeln!(
            out,
            "Page Usage & Garbage Collection{}",
            if a.gc > 1 { " (please use `rdbx-tools chk` for detailed GC information instead)" } else { "" }
        );
        let (total, backed) = (g.pages_total, g.pages_backed);
        let remained = total.saturating_sub(g.pages_allocated);
        let used = g.pages_allocated.saturating_sub(g.pages_gc);
        let retained = g.pages_gc.saturating_sub(g.pages_reclaimable);
        let available = g.pages_reclaimable + remained;
        pages_line(&mut out, "Total", total, backed, total);
        pages_line(&mut out, "Backed", backed, backed, total);
        pages_line(&mut out, "Allocated", g.pages_allocated, backed, total);
        pages_line(&mut out, "Remained", remained, backed, total);
        pages_line(&mut out, "Used", used, backed, total);
        pages_line(&mut out, "GC|whole", g.pages_gc, backed, total);
        pages_line(&mut out, "GC|reclaimable", g.pages_reclaimable, backed, total);
        if a.gc > 1 {
            out.push_str("  GC|reclaimable span-length distribution: ");
            if g.reclaimable_spans.is_empty() {
                out.push_str("empty\n");
            } else {
                let single = g.reclaimable_spans.iter().find(|s| s.0 == 1).map_or(0, |s| s.1);
                let _ = write!(out, "single {single}");
                for (len, n) in g.reclaimable_spans.iter().filter(|s| s.0 > 1) {
                    let _ = write!(out, ", {len}x{n}");
                }
                out.push_str(" pages\n");
            }
        }
        pages_line(&mut out, "GC|retained", retained, backed, total);
        pages_line(&mut out, "Available", available, backed, total);
        if g.max_reader_lag > 0 {
            let _ = writeln!(out, "  max reader lag {}", g.max_reader_lag);
            let _ = writeln!(out, "  max retained pages {}", g.max_retained_pages);
        }
        match g.retained_by {
            Some(rdbx::Retainer::Reader { pid, txnid, lag }) => {
                let _ = writeln!(out, "  GC|retained by: reader pid {pid} (snapshot txnid {txnid}, lag {lag})");
            }
            Some(rdbx::Retainer::SteadyCommit { txnid }) => {
                let _ = writeln!(
                    out,
                    "  GC|retained by: the last steady commit (txnid {txnid}; the next sync makes it reusable)"
                );
            }
            None => {}
        }
        let retained_by = match g.retained_by {
            Some(rdbx::Retainer::Reader { pid, txnid, lag }) => {
                json!({"kind": "reader", "pid": pid, "txnid": txnid, "lag": lag})
            }
            Some(rdbx::Retainer::SteadyCommit { txnid }) => json!({"kind": "steady_commit", "txnid": txnid}),
            None => serde_json::Value::Null,
        };
        j.insert(
            "gc".into(),
            json!({"total": total, "backed": backed, "allocated": g.pages_allocated, "remained": remained, "used": used,
                   "gc_whole": g.pages_gc, "gc_reclaimable": g.pages_reclaimable, "gc_retained": retained, "available": available,
                   "reclaimable_spans": g.reclaimable_spans, "free_tail": backed.saturating_sub(g.pages_allocated),
                   "max_reader_lag": g.max_reader_lag, "max_retained_pages": g.max_retained_pages,
                   "retained_by": retained_by}),
        );
    }
    let mut tables = Vec::new();
    match &a.table {
        Some(name) => {
            let db = txn.open_db(Some(name)).map_err(|e| match e {
                rdbx::Error::NotFound => ToolError { code: e.code(), msg: format!("{p}: no table named '{name}'") },
                e => ToolError::engine(&e, format!("{p}: table '{name}'")),
            })?;
            let st = txn.db_stat(db).map_err(eng)?;
            status(&mut out, name, &st);
            tables.push(json!({"name": name, "stat": stat_json(&st)}));
        }
        None => {
            let st = txn.db_stat(Db::MAIN).map_err(eng)?;
            status(&mut out, "Main DB", &st);
            tables.push(json!({"name": null, "stat": stat_json(&st)}));
        }
    }
    if a.all {
        for n in txn.table_names().map_err(eng)? {
            let name = String::from_utf8_lossy(&n).into_owned();
            let db = txn.open_db_bytes(Some(&n)).map_err(|e| ToolError::engine(&e, format!("{p}: table '{name}'")))?;
            let st = txn.db_stat(db).map_err(eng)?;
            status(&mut out, &name, &st);
            tables.push(json!({"name": name, "stat": stat_json(&st)}));
        }
    }
    j.insert("tables".into(), json!(tables));
    Ok(finish(a, out, j))
}

fn finish(a: &StatArgs, text: String, mut j: serde_json::Map<String, serde_json::Value>) -> String {
    if a.json {
        j.insert("path".into(), json!(a.path.display().to_string()));
        let _ = a.quiet;
        format!("{}\n", serde_json::Value::Object(j))
    } else {
        text
    }
}
