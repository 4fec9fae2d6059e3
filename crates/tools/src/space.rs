//! `space`: why the data file is as big as it is ([`rdbx::Env::space`]).

use std::path::PathBuf;

use clap::Args;
use rdbx::Retainer;
use serde_json::json;

use crate::common::{self, locate, open_env, ToolError, PROG};

const HELP: &str = "\
One answer to 'why is the database this big / growing': the geometry and
the file, the pages in use per table (largest first), the GC tree and its
records with the free pages they list (reclaimable now, or retained because
a reader's snapshot, or in the lazy modes the last steady commit, still
needs them), every reader (pid, snapshot txnid, lag in commits, the pages
it retains), and the free tail of the file. The same figures as
`mdbx_stat -efr`. Readers' age in time is not recorded by MDBX: the lag
(commits since the reader's snapshot) is its age. Read-only.

EXIT STATUS: 0 success, 1 any failure.";

/// Arguments of `space`.
#[derive(Args, Debug)]
#[command(after_help = HELP)]
pub struct SpaceArgs {
    /// List every GC record (default: the 10 oldest)
    #[arg(long)]
    all: bool,
    /// Print one JSON object
    #[arg(long)]
    json: bool,
    /// Database directory or data file
    path: PathBuf,
}

pub fn run(a: SpaceArgs) -> u8 {
    match space(&a) {
        Ok(()) => 0,
        Err(e) => {
            if a.json {
                common::json_error(json!({}), e.code, &e.msg);
            }
            eprintln!("{PROG} space: {e}");
            1
        }
    }
}

fn space(a: &SpaceArgs) -> Result<(), ToolError> {
    let t = locate(&a.path)?;
    let env = open_env(&t, true)?;
    let r = env.space().map_err(|e| ToolError::engine(&e, a.path.display()))?;
    let ps = r.info.page_size as u64;
    let i = &r.info;
    let mut tables = r.tables.clone();
    tables.sort_by_key(|t| std::cmp::Reverse(t.pages()));
    let table_pages: u64 = r.tables.iter().map(|t| t.pages()).sum();
    let listed: u64 = r.gc_records.iter().map(|g| g.pages).sum();
    let retained_by = match r.gc.retained_by {
        Some(Retainer::Reader { pid, txnid, lag }) => json!({"kind": "reader", "pid": pid, "txnid": txnid, "lag": lag}),
        Some(Retainer::SteadyCommit { txnid }) => json!({"kind": "steady_commit", "txnid": txnid}),
        None => serde_json::Value::Null,
    };
    if a.json {
        println!(
            "{}",
            json!({
                "path": a.path.display().to_string(),
                "page_size": ps,
                "file_size": r.file_size,
                "txnid": i.last_txnid,
                "geometry": {"lower": i.size_lower, "now": i.size_now, "upper": i.size_upper, "growth": i.growth_step, "shrink": i.shrink_threshold},
                "pages": {"total": i.size_upper / ps, "backed": i.size_now / ps, "allocated": i.first_unallocated,
                          "tables": table_pages, "gc_tree": r.gc_tree_pages, "gc_listed": listed,
                          "reclaimable": r.gc.pages_reclaimable, "retained": r.retained_pages, "free_tail": r.free_tail_pages},
                "tables": tables.iter().map(|t| json!({
                    "name": t.name.as_ref().map(|n| String::from_utf8_lossy(n).into_owned()), "main": t.name.is_none(),
                    "pages": t.pages(), "branch_pages": t.branch_pages, "leaf_pages": t.leaf_pages, "large_pages": t.large_pages, "records": t.entries,
                })).collect::<Vec<_>>(),
                "gc_records": r.gc_records.iter().map(|g| json!({"txnid": g.txnid, "pages": g.pages, "reclaimable": g.reclaimable})).collect::<Vec<_>>(),
                "oldest_reader_txnid": r.gc.oldest_reader,
                "retained_by": retained_by,
                "readers": r.readers.iter().map(|x| json!({
                    "slot": x.slot, "pid": x.pid, "txnid": x.txnid, "lag": x.lag,
                    "pages_used": x.bytes_used / ps, "pages_retained": x.bytes_retained / ps,
                })).collect::<Vec<_>>(),
            })
        );
        return Ok(());
    }
    let pct = |v: u64, w: u64| common::percent(v, w);
    let alloc = i.first_unallocated;
    println!(
        "file {} ({} pages of {ps} bytes), txn {}; geometry: lower {}, upper {}, grow by {}, shrink beyond {}",
        common::human(r.file_size),
        r.file_size / ps,
        i.last_txnid,
        common::human(i.size_lower),
        common::human(i.size_upper),
        common::human(i.growth_step),
        common::human(i.shrink_threshold)
    );
    println!(
        "allocated {alloc} pages ({}% of the file); free tail {} pages ({})",
        pct(alloc, i.size_now / ps),
        r.free_tail_pages,
        common::human(r.free_tail_pages * ps)
    );
    println!("  in tables:  {table_pages} pages ({}%)", pct(table_pages, alloc));
    println!("  GC tree:    {} pages", r.gc_tree_pages);
    println!(
        "  free in GC: {listed} pages ({}%): {} reclaimable now, {} retained by readers",
        pct(listed, alloc),
        r.gc.pages_reclaimable,
        r.retained_pages
    );
    match r.gc.retained_by {
        Some(Retainer::Reader { pid, txnid, lag }) => println!(
            "  retained by: the reader of pid {pid} on txn {txnid}, {lag} commits behind (end or restart that reader to free them)"
        ),
        Some(Retainer::SteadyCommit { txnid }) => {
            println!("  retained by: the last steady commit, txn {txnid} (the next sync frees them)")
        }
        None => {}
    }
    println!("tables (largest first):");
    for t in &tables {
        println!(
            "  {:<24} {:>10} pages ({} branch, {} leaf, {} large), {} records",
            common::table_label(t.name.as_deref()),
            t.pages(),
            t.branch_pages,
            t.leaf_pages,
            t.large_pages,
            t.entries
        );
    }
    let n = if a.all { r.gc_records.len() } else { r.gc_records.len().min(10) };
    println!(
        "GC records: {} (oldest first{})",
        r.gc_records.len(),
        if n < r.gc_records.len() { ", --all lists all" } else { "" }
    );
    for g in &r.gc_records[..n] {
        println!(
            "  txn {:<12} {:>8} pages  {}",
            g.txnid,
            g.pages,
            if g.reclaimable { "reclaimable" } else { "retained" }
        );
    }
    if r.readers.is_empty() {
        println!("readers: none");
    } else {
        println!("readers:");
        for x in &r.readers {
            match x.txnid {
                Some(t) => println!(
                    "  slot {:<4} pid {:<8} txn {t:<10} lag {:<6} retains {} pages",
                    x.slot,
                    x.pid,
                    x.lag,
                    x.bytes_retained / ps
                ),
                None => println!("  slot {:<4} pid {:<8} (no snapshot)", x.slot, x.pid),
            }
        }
    }
    Ok(())
}
