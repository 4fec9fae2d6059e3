//! `chk`: presents [`rdbx::Env::check`] like `mdbx_chk` (stages, summary line,
//! problems on stderr, exit codes 0..5), or as JSON for cron jobs.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::{ArgAction, Args};
use rdbx::{CheckOptions, CheckProgress, CheckReport, Severity, Stage};
use serde_json::json;

use crate::common::{self, locate, open_env, percent, ToolError, PROG};

const CHK_HELP: &str = "\
EXIT STATUS (as mdbx_chk):
    0  no problem found
    1  only minor problems found (e.g. a lost fallback meta, a torn newest meta)
    2  major problems found (meta pages, GC, B-trees, page accounting)
    3  database/engine error: the check could not run (no usable meta, the
       newest meta is corrupted: use -0/-1/-2, not a database, needs recovery)
    4  system error (missing file, empty file, locked exclusively, I/O)
    5  usage error, invalid option combination, or interrupted by a signal

Problems go to stderr (one line each: table, page, what), results to stdout.
With --json a single JSON object goes to stdout (and nothing else).

Beyond mdbx_chk: a bad table root is reported, not a crash; a torn or lost
newest meta is reported (exit 1 or 2) instead of silently checking an older
snapshot; pages of orphaned subtrees and leaked pages are listed; a bad
large-page run is one problem, not one per page; a DUPSORT table without a
single multi-value is valid and no problem (-v mentions it: the flags may be
wrong); a wrong -s table is an error (5).

On SIGINT/SIGTERM/SIGHUP (Ctrl-C) the check stops where it is and exits 5
(\" = interrupted by signal\" with the pages walked so far).";

/// Arguments of `chk`.
#[derive(Args, Debug)]
#[command(after_help = CHK_HELP)]
pub struct ChkArgs {
    /// More details (repeat up to 9 times; 2: per-table summaries, 3: metas and trees)
    #[arg(short = 'v', action = ArgAction::Count)]
    verbose: u8,
    /// Print nothing at all (the exit code still tells)
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
    /// Open read-write: allows -t/-T and recovery (a weak head meta is synced or rolled back, the file size is rounded up)
    #[arg(short = 'w', long = "write")]
    write: bool,
    /// Cooperative mode (accepted for compatibility: rdbx always opens cooperatively)
    #[arg(short = 'c')]
    cooperative: bool,
    /// Skip the page accounting (lost or doubly used pages are not detected)
    #[arg(short = 'd')]
    skip_space: bool,
    /// Ignore key-order violations (custom comparators)
    #[arg(short = 'i')]
    ignore_order: bool,
    /// Show details only for this table
    #[arg(short = 's', value_name = "TABLE")]
    table: Option<String>,
    /// Check the snapshot of meta page 0
    #[arg(short = '0', group = "metasel")]
    meta0: bool,
    /// Check the snapshot of meta page 1
    #[arg(short = '1', group = "metasel")]
    meta1: bool,
    /// Check the snapshot of meta page 2
    #[arg(short = '2', group = "metasel")]
    meta2: bool,
    /// Check the snapshot of meta page N (0, 1 or 2)
    #[arg(long = "meta", value_name = "N", group = "metasel", value_parser = clap::value_parser!(u8).range(0..3))]
    meta: Option<u8>,
    /// After a clean check, make the selected meta the head (needs -w and -0/-1/-2)
    #[arg(short = 't', long = "turn")]
    turn: bool,
    /// Like -t, but turn even if problems were found
    #[arg(short = 'T')]
    force_turn: bool,
    /// Warm up (accepted for compatibility, no effect)
    #[arg(short = 'u')]
    warmup: bool,
    /// Warm up and lock (accepted for compatibility, no effect)
    #[arg(short = 'U')]
    warmup_lock: bool,
    /// Ignored (legacy no-subdir flag; the layout is detected)
    #[arg(short = 'n')]
    no_sub_dir: bool,
    /// Print the report as one JSON object
    #[arg(long)]
    json: bool,
    /// Database directory or data file
    path: PathBuf,
}

fn usage_error(a: &ChkArgs, lines: &[&str]) -> u8 {
    if a.json {
        let context = json!({"path": a.path.display().to_string(), "exit_code": 5});
        common::json_error(context, libc::EINVAL, &lines.join("; "));
    }
    if !a.quiet {
        for l in lines {
            eprintln!(" ! {l}");
        }
    }
    5
}

pub fn run(a: ChkArgs) -> u8 {
    let _ = (a.cooperative, a.warmup, a.warmup_lock, a.no_sub_dir);
    if a.verbose > 9 {
        return usage_error(&a, &["verbosity is limited to 9 levels (-vvvvvvvvv)"]);
    }
    let meta = a.meta.map(usize::from).or(if a.meta0 {
        Some(0)
    } else if a.meta1 {
        Some(1)
    } else if a.meta2 {
        Some(2)
    } else {
        None
    });
    let turn = a.turn || a.force_turn;
    if turn {
        let mut errs = Vec::new();
        if meta.is_none() {
            errs.push("meta-page must be specified (by -0, -1 or -2 options) to turn to it.");
        }
        if !a.write {
            errs.push("write-mode must be enabled to turn to the specified meta-page.");
        }
        if a.table.is_some() || a.skip_space {
            errs.push("whole database checking with b-tree traversal are required to turn to the specified meta-page.");
        }
        if !errs.is_empty() {
            return usage_error(&a, &errs);
        }
    }
    let quiet = a.quiet && !a.force_turn;
    let started = Instant::now();
    let mode = if a.write { "read-write" } else { "read-only" };
    if !quiet && !a.json {
        println!("{PROG} chk v{}", env!("CARGO_PKG_VERSION"));
        println!("Running for {} in '{mode}' mode with verbosity level {} (of 0..9)...", a.path.display(), a.verbose);
    }
    let fail = |e: ToolError| -> u8 {
        let code = e.chk_exit();
        if a.json {
            common::json_error(json!({"path": a.path.display().to_string(), "exit_code": code}), e.code, &e.msg);
            if !quiet {
                eprintln!(" ! {e}");
            }
        } else if !quiet {
            if code == 5 && e.code == libc::EINTR {
                println!(" = {}", e.msg);
            } else {
                eprintln!(" ! {e}");
            }
        }
        code
    };
    let target = match locate(&a.path) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let env = match open_env(&target, !a.write) {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    if !quiet && !a.json && a.verbose >= 1 {
        println!(" - Taking lock... done");
    }
    let table = a.table.as_ref().map(|s| s.as_bytes().to_vec());
    if let Some(t) = &table {
        // A wrong table name is an error (mdbx_chk silently accepts it).
        let ok = env.begin_ro_txn().and_then(|txn| txn.table_names()).map(|names| names.iter().any(|n| n == t));
        match ok {
            Ok(true) => {}
            Ok(false) => {
                let msg = format!("{}: no table named '{}'", a.path.display(), String::from_utf8_lossy(t));
                if a.json {
                    println!(
                        "{}",
                        json!({"path": a.path.display().to_string(), "exit_code": 5, "error": {"code": libc::EINVAL, "message": msg}})
                    );
                } else if !quiet {
                    eprintln!(" ! {msg}");
                }
                return 5;
            }
            Err(e) => return fail(ToolError::engine(&e, a.path.display())),
        }
    }
    let opts = CheckOptions {
        meta,
        turn,
        force_turn: a.force_turn,
        skip_space: a.skip_space,
        ignore_order: a.ignore_order,
        table,
        repair: a.write,
        interrupt: Some(common::interrupt_flag()),
    };
    let pb = common::progress_bar(!quiet && !a.json, 0, "chk", common::Unit::Pages);
    let mut cb = |p: CheckProgress| {
        if let Some(pb) = &pb {
            if p.total > 0 {
                pb.set_length(p.total);
            }
            pb.set_position(p.done.min(p.total.max(p.done)));
            pb.set_message(match p.stage {
                Stage::Metas => "checking the metas",
                Stage::Trees => "walking the trees",
                Stage::Gc => "checking the GC",
                Stage::Space => "accounting the pages",
                Stage::Turn => "turning to the meta",
            });
        }
    };
    let r = env.check(&opts, &mut cb);
    common::finish(pb, None);
    let report = match r {
        Ok(r) => r,
        Err(e) => {
            let te = match &e {
                rdbx::Error::WannaRecovery => ToolError {
                    code: e.code(),
                    msg: format!("{}: the data file size is not a multiple of the system page: recovery is needed; run `{PROG} chk -w` to extend it", a.path.display()),
                },
                rdbx::Error::Io(io) if io.kind() == std::io::ErrorKind::Interrupted => ToolError::sys(libc::EINTR, format!("interrupted by signal ({io})")),
                _ => ToolError::engine(&e, a.path.display()),
            };
            return fail(te);
        }
    };
    let elapsed = started.elapsed().as_secs_f64();
    let code = report.exit_code() as u8;
    if a.json {
        println!("{}", to_json(&a, &report, code, elapsed));
        return code;
    }
    if !quiet {
        print_report(&a, &env, &report, elapsed);
    }
    code
}

fn sev(s: Severity) -> &'static str {
    match s {
        Severity::Major => "major",
        Severity::Minor => "minor",
    }
}

fn to_json(a: &ChkArgs, r: &CheckReport, code: u8, elapsed: f64) -> serde_json::Value {
    json!({
        "path": a.path.display().to_string(),
        "data_path": r.data_path.display().to_string(),
        "exit_code": code,
        "elapsed_seconds": elapsed,
        "problems": {"total": r.problem_count(), "major": r.major, "minor": r.minor},
        "page_size": r.page_size,
        "file_size": r.file_size,
        "metas": r.metas.iter().map(|m| json!({
            "index": m.index, "txnid_a": m.txnid_a, "txnid_b": m.txnid_b, "valid": m.valid,
            "steady": m.steady, "role": m.role, "error": m.error,
        })).collect::<Vec<_>>(),
        "recent_meta": r.recent_meta,
        "checked_meta": r.checked_meta,
        "recent_txnid": r.recent_txnid,
        "checked_txnid": r.checked_txnid,
        "oldest_reader_txnid": r.oldest_reader_txnid,
        "geometry_pages": {"lower": r.geo_lower, "now": r.geo_now, "upper": r.geo_upper, "grow": r.geo_grow, "shrink": r.geo_shrink},
        "space": {
            "checked": r.space_checked,
            "backed_pages": r.backed_pages,
            "allocated_pages": r.allocated_pages,
            "used_pages": r.walked_pages,
            "gc_tree_pages": r.gc_tree_pages,
            "gc_listed_pages": r.gc_listed_pages,
            "gc_reclaimable_pages": r.gc_reclaimable_pages,
            "leaked_pages": r.leaked_pages,
        },
        "tables": r.tables.iter().map(|t| json!({
            "name": t.display_name(), "flags": t.flags, "depth": t.depth, "root": t.root,
            "branch_pages": t.branch_pages, "leaf_pages": t.leaf_pages, "large_pages": t.large_pages,
            "records": t.entries, "entries": t.entries, "keys": t.keys, "dups": t.dups(), "key_bytes": t.key_bytes, "data_bytes": t.data_bytes,
            "sequence": t.sequence, "mod_txnid": t.mod_txnid, "problems": t.problems,
        })).collect::<Vec<_>>(),
        "problem_list": r.problems.iter().map(|p| json!({
            "severity": sev(p.severity), "area": p.area.as_str(), "table": p.table, "page": p.page, "message": p.message,
        })).collect::<Vec<_>>(),
        "notes": r.notes,
        "info": info(r),
        "repairs": r.repairs,
        "turned": r.turned,
    })
}

/// Facts worth a mention that are not problems (printed with -v, listed as
/// "info" in JSON; they do not change the exit code).
fn info(r: &CheckReport) -> Vec<String> {
    r.tables
        .iter()
        .filter(|t| {
            !t.is_gc && t.flags & rdbx::DbFlags::DUP_SORT.bits() as u16 != 0 && t.entries >= 2 && t.dups() == 0 && t.problems == 0
        })
        .map(|t| {
            format!(
                "{}: table is flagged DUPSORT (flags {:#x}) but none of its {} keys has more than one value (valid; if no key is meant to, the flags may be wrong)",
                t.display_name(),
                t.flags,
                t.keys
            )
        })
        .collect()
}

fn print_report(a: &ChkArgs, env: &rdbx::Env, r: &CheckReport, elapsed: f64) {
    let v = a.verbose;
    let out = std::io::stdout();
    let mut o = out.lock();
    let ps = r.page_size as u64;
    for n in &r.notes {
        let _ = writeln!(o, " ~ {n}");
    }
    if v >= 1 {
        let txn = r.checked_txnid;
        let lag = r.recent_txnid.saturating_sub(r.oldest_reader_txnid);
        if v >= 2 {
            let _ = writeln!(o, " - Peek the meta-pages...");
            let kmax = env.max_key_size(rdbx::DbFlags::empty());
            let kmin = env.max_key_size(rdbx::DbFlags::DUP_SORT);
            let _ = writeln!(
                o,
                "      pagesize {} ({} system), max keysize {kmin}..{kmax}",
                r.page_size, r.system_page_size
            );
            let _ = writeln!(o, "      mapsize {} ({})", r.geo_now * ps, common::human(r.geo_now * ps));
            if r.geo_lower != r.geo_upper {
                let _ = writeln!(
                    o,
                    "      dynamic datafile: {} ({}) .. {} ({}), +{} ({}), -{} ({})",
                    r.geo_lower * ps,
                    common::human(r.geo_lower * ps),
                    r.geo_upper * ps,
                    common::human(r.geo_upper * ps),
                    r.geo_grow * ps,
                    common::human(r.geo_grow * ps),
                    r.geo_shrink * ps,
                    common::human(r.geo_shrink * ps)
                );
            } else {
                let _ = writeln!(o, "      fixed datafile: {} ({})", r.geo_upper * ps, common::human(r.geo_upper * ps));
            }
            let _ = writeln!(
                o,
                "      current datafile: {} ({}), {} pages",
                r.file_size,
                common::human(r.file_size),
                r.backed_pages
            );
            if v >= 3 {
                for m in &r.metas {
                    let state = if !m.valid {
                        format!("invalid ({})", m.error.clone().unwrap_or_default())
                    } else {
                        format!("{}, {} txn#{}", m.role, if m.steady { "steady" } else { "weak" }, m.txnid_a)
                    };
                    let forced = a.meta.is_some() || a.meta0 || a.meta1 || a.meta2;
                    let sel = if m.index == r.checked_meta && forced { ", forced for checking" } else { "" };
                    let _ = writeln!(o, "      meta-{}: {state}{sel}", m.index);
                }
            }
            if r.checked_meta != r.recent_meta || a.meta.is_some() || a.meta0 || a.meta1 || a.meta2 {
                let _ = writeln!(
                    o,
                    "    = transactions: recent {}, selected for verification {txn}, lag {}",
                    r.recent_txnid,
                    r.recent_txnid.saturating_sub(txn)
                );
            } else {
                let _ = writeln!(
                    o,
                    "    = transactions: recent {}, latter reader {}, lag {lag}",
                    r.recent_txnid, r.oldest_reader_txnid
                );
            }
        } else {
            let _ = writeln!(
                o,
                " - Peek the meta-pages... transactions: recent {}, latter reader {}, lag {lag}",
                r.recent_txnid, r.oldest_reader_txnid
            );
        }
        let tree_p = r.count_in(rdbx::Area::Tree);
        let _ = writeln!(
            o,
            " - Traversal B-Trees by txn#{txn}... {}",
            if tree_p == 0 { "done".to_string() } else { format!("{tree_p} error(s)") }
        );
        let gc_p = r.count_in(rdbx::Area::Gc);
        let _ = writeln!(
            o,
            " - Processing @GC by txn#{txn}... {}",
            if gc_p == 0 { "done".to_string() } else { format!("{gc_p} error(s)") }
        );
        let total = r.geo_upper;
        let backed = r.backed_pages.max(r.geo_now);
        let alloc = r.allocated_pages;
        let avail = total.saturating_sub(alloc) + r.gc_reclaimable_pages;
        if v >= 2 {
            let _ = writeln!(o, " - Page allocation:");
            let _ = writeln!(
                o,
                "      backed by file: {backed} pages ({}% of boundary), {} pages ({}%) left to boundary",
                percent(backed, total),
                total.saturating_sub(backed),
                percent(total.saturating_sub(backed), total)
            );
            if r.space_checked {
                let _ = writeln!(
                    o,
                    "      used: {} pages ({}% of backed, {}% of boundary)",
                    r.walked_pages,
                    percent(r.walked_pages, backed),
                    percent(r.walked_pages, total)
                );
            }
            let _ = writeln!(
                o,
                "      remained: {} pages ({}%) of backed, left {} pages ({}%) to boundary",
                backed.saturating_sub(alloc),
                percent(backed.saturating_sub(alloc), backed),
                total.saturating_sub(alloc),
                percent(total.saturating_sub(alloc), total)
            );
            let _ = writeln!(
                o,
                "      reclaimable: {} pages ({}% of backed, {}% of boundary), within GC {} pages ({}% of backed, {}% of boundary)",
                r.gc_reclaimable_pages,
                percent(r.gc_reclaimable_pages, backed),
                percent(r.gc_reclaimable_pages, total),
                r.gc_listed_pages,
                percent(r.gc_listed_pages, backed),
                percent(r.gc_listed_pages, total)
            );
            let detained = r.gc_listed_pages - r.gc_reclaimable_pages.min(r.gc_listed_pages);
            let _ = writeln!(
                o,
                "      detained by reader(s): {detained} pages ({}% of backed, {}% of boundary), lag {lag}",
                percent(detained, backed),
                percent(detained, total)
            );
            let _ = writeln!(
                o,
                "      allocated: {alloc} pages ({}% of backed, {}% of boundary)",
                percent(alloc, backed),
                percent(alloc, total)
            );
            let a2b = backed.saturating_sub(alloc) + r.gc_reclaimable_pages;
            let _ = writeln!(
                o,
                "      available: {a2b} pages ({}% of backed), left {avail} pages ({}%) to boundary",
                percent(a2b, backed),
                percent(avail, total)
            );
            if r.space_checked && r.leaked_pages > 0 {
                let _ = writeln!(o, "      leaked: {} pages", r.leaked_pages);
            }
            let _ = writeln!(
                o,
                "    = upto {total} pages, backed {backed} pages ({}%), allocated {alloc} pages ({}%), available {avail} pages ({}%)",
                percent(backed, total),
                percent(alloc, total),
                percent(avail, total)
            );
        } else {
            let _ = writeln!(
                o,
                " - Page allocation: upto {total} pages, backed {backed} pages ({}%), allocated {alloc} pages ({}%), available {avail} pages ({}%)",
                percent(backed, total),
                percent(alloc, total),
                percent(avail, total)
            );
        }
        let only = a.table.as_ref().map(|s| s.as_bytes());
        for t in &r.tables {
            if t.is_gc {
                continue;
            }
            let summary = |t: &rdbx::TableReport| {
                let mut s = format!("summary: {} records, ", t.entries);
                if t.name.is_none() {
                    s.push_str(&format!("{} tables, ", t.subtables));
                } else if t.flags & 0x04 != 0 {
                    s.push_str(&format!("{} dups, ", t.dups()));
                }
                s.push_str(&format!(
                    "{} key's bytes, {} data's bytes, {} problem(s)",
                    t.key_bytes, t.data_bytes, t.problems
                ));
                s
            };
            let details = |o: &mut dyn Write, t: &rdbx::TableReport, ind: &str| {
                if v >= 3 {
                    let _ = writeln!(o, "{ind}   flags: {} ({:#x})", common::flags_text(t.flags), t.flags);
                    let _ = writeln!(
                        o,
                        "{ind}   entries {}, sequence {}, last modification txn#{}, root #{}",
                        t.entries, t.sequence, t.mod_txnid, t.root
                    );
                    let _ = writeln!(
                        o,
                        "{ind}   b-tree depth {}, pages: branch {}, leaf {}, large {}",
                        t.depth, t.branch_pages, t.leaf_pages, t.large_pages
                    );
                }
            };
            if t.name.is_none() {
                if v >= 2 {
                    let _ = writeln!(o, " - Processing @MAIN... {}", summary(t));
                    details(&mut o, t, " ");
                } else {
                    let _ = writeln!(
                        o,
                        " - Processing @MAIN... {}",
                        if t.problems == 0 { "done".to_string() } else { format!("{} error(s)", t.problems) }
                    );
                }
                let _ = writeln!(o, " - Processing table(s) by txn#{txn}...{}", if v >= 2 { "" } else { " done" });
                continue;
            }
            if v >= 2 {
                if only.is_some_and(|n| Some(n) != t.name.as_deref()) {
                    continue;
                }
                let _ = writeln!(o, "    - Processing table {}... {}", t.display_name(), summary(t));
                details(&mut o, t, "    ");
            }
        }
    }
    if v >= 1 {
        for i in info(r) {
            let _ = writeln!(o, " - info: {i}");
        }
    }
    drop(o);
    let mut err = std::io::stderr().lock();
    for p in &r.problems {
        let where_ = match (&p.table, p.page) {
            (Some(t), _) => format!("{t}: "),
            (None, _) => String::new(),
        };
        let sev = if p.severity == Severity::Minor { " (minor)" } else { "" };
        let _ = writeln!(err, " ! {where_}{}{sev}", p.message);
    }
    if r.problems.len() as u64 > 0 && (r.problems.len() as u64) < r.problem_count() {
        let _ = writeln!(err, " ! ... {} more problem(s) not listed", r.problem_count() - r.problems.len() as u64);
    }
    drop(err);
    for rep in &r.repairs {
        println!(" = repaired: {rep}");
    }
    if r.turned {
        println!(" = meta-{} (txn {}) is now the head", r.checked_meta, r.checked_txnid);
    }
    let n = r.problem_count();
    if n == 0 {
        println!("No error is detected, elapsed {elapsed:.3} seconds.");
    } else if n == 1 {
        println!("Total 1 error is detected, elapsed {elapsed:.3} seconds.");
    } else {
        println!("Total {n} errors are detected ({} major, {} minor), elapsed {elapsed:.3} seconds.", r.major, r.minor);
    }
}
