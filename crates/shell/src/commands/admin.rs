//! The database as a whole: info, geometry, readers, check, copy, dump, load.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::Ordering;

use rdbx::{CheckOptions, CheckProgress, CopyOptions, CopyProgress, Geometry, Severity, Stage};
use rdbx_dump::{guard, DumpOptions, DumpReader, LoadOptions};

use super::{describe, Action, Ctx, Fail, Result};
use crate::access::{self, label};
use crate::output::Cell;
use crate::spec::Invocation;
use crate::values::{human_size, parse_size, path_of};

fn size(b: u64) -> Cell {
    Cell::Size(b)
}

pub fn info(cx: &mut Ctx<'_, '_>) -> Result<Action> {
    let db = cx.db()?;
    let env = &db.env;
    let i = env.info()?;
    let file_size = std::fs::metadata(env.data_path()).map(|m| m.len()).ok();
    let tables = env.begin_ro_txn().and_then(|t| t.table_names()).map(|n| n.len() as u64).ok();
    let meta = |k: usize| {
        let (txnid, steady) = i.metas[k];
        let state = if steady { "steady" } else { "weak" };
        let recent = if k == i.recent_meta { ", current" } else { "" };
        Cell::text(format!("txn {txnid}, {state}{recent}"))
    };
    let ps = i.page_size as u64;
    cx.s.out.record(&[
        ("path", Cell::text(db.path.display().to_string())),
        ("data_file", Cell::text(env.data_path().display().to_string())),
        ("mode", Cell::text(if db.read_only { "read-only" } else { "read-write" })),
        ("page_size", Cell::Int(ps)),
        ("file_size", file_size.map_or(Cell::Absent, size)),
        ("used", size(i.first_unallocated * ps)),
        ("geometry_lower", size(i.size_lower)),
        ("geometry_now", size(i.size_now)),
        ("geometry_upper", size(i.size_upper)),
        ("growth_step", size(i.growth_step)),
        ("shrink_threshold", size(i.shrink_threshold)),
        ("last_txnid", Cell::Int(i.last_txnid)),
        ("pages_retired", Cell::Int(i.pages_retired)),
        ("readers_used", Cell::Int(i.readers_used as u64)),
        ("max_readers", Cell::Int(i.max_readers as u64)),
        ("lock_format", env.lock_format().map_or(Cell::Absent, |f| Cell::text(f.to_string()))),
        ("meta_0", meta(0)),
        ("meta_1", meta(1)),
        ("meta_2", meta(2)),
        ("tables", Cell::opt(tables)),
        ("max_key_size", Cell::Int(env.max_key_size(rdbx::DbFlags::empty()) as u64)),
    ])?;
    Ok(Action::Done)
}

pub fn geometry(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let opt = |name: &str| -> Result<Option<usize>> {
        match inv.value(name) {
            Some(w) => Ok(Some(parse_size(&w.text()).map_err(|e| format!("--{name}: {e}"))?)),
            None => Ok(None),
        }
    };
    let g = Geometry {
        page_size: None,
        size_lower: opt("lower")?,
        size_now: opt("now")?,
        size_upper: opt("upper")?,
        growth_step: opt("growth")?,
        shrink_threshold: opt("shrink")?,
    };
    let db = cx.db()?;
    let set = g != Geometry::default();
    if set {
        if db.read_only {
            return Err(super::READ_ONLY.into());
        }
        match cx.txn.as_deref_mut() {
            Some(t) => {
                t.set_geometry(&g)?;
                cx.s.note("the new geometry takes effect when the transaction commits")?;
            }
            None => db.env.set_geometry(&g)?,
        }
    }
    let i = db.env.info()?;
    let ps = i.page_size as u64;
    cx.s.out.record(&[
        ("page_size", Cell::Int(ps)),
        ("lower", size(i.size_lower)),
        ("current", size(i.size_now)),
        ("upper", size(i.size_upper)),
        ("growth", size(i.growth_step)),
        ("shrink", size(i.shrink_threshold)),
        ("used", size(i.first_unallocated * ps)),
    ])?;
    Ok(Action::Done)
}

pub fn readers(cx: &mut Ctx<'_, '_>) -> Result<Action> {
    let db = cx.db()?;
    let info = db.env.info()?;
    let ps = info.page_size as u64;
    let list = db.env.readers()?;
    let me = std::process::id();
    let mut l = cx.s.out.listing(&["slot", "pid", "tid", "txnid", "lag", "pages_used", "pages_retained", "who"], 1000);
    for r in &list {
        let tid = match r.tid {
            u64::MAX => Cell::text("ousted"),
            t if t == u64::MAX - 1 => Cell::text("parked"),
            t => Cell::Int(t),
        };
        l.push(&[
            Cell::Int(r.slot as u64),
            Cell::Int(r.pid as u64),
            tid,
            Cell::opt(r.txnid),
            r.txnid.map_or(Cell::Absent, |_| Cell::Int(r.lag)),
            r.txnid.map_or(Cell::Absent, |_| Cell::Int(r.bytes_used / ps)),
            r.txnid.map_or(Cell::Absent, |_| Cell::Int(r.bytes_retained / ps)),
            Cell::text(if r.pid == me { "this shell" } else { "" }),
        ])?;
    }
    l.flush()?;
    drop(l);
    cx.s.out.footer(&format!(
        "{} slot(s) in use of {}; last committed txn {}",
        list.len(),
        info.max_readers,
        info.last_txnid
    ))?;
    Ok(Action::Done)
}

/// Progress on standard error, interactive sessions only, one line redrawn.
struct Progress {
    on: bool,
    last: u64,
}

impl Progress {
    /// `done` of `total` pages.
    fn pages(&mut self, what: &str, done: u64, total: u64) {
        if total == 0 {
            return;
        }
        self.show_with(what, done, total, || format!("({done} of {total} pages)"));
    }

    /// Like `show`, with `detail` (in human units) after the percentage.
    /// Without a `total` (input from a pipe) only the detail is shown, at
    /// each change of `done`.
    fn show_with(&mut self, what: &str, done: u64, total: u64, detail: impl FnOnce() -> String) {
        if !self.on {
            return;
        }
        let key = done.saturating_mul(100).checked_div(total).unwrap_or(done);
        if key != self.last {
            self.last = key;
            let d = detail();
            match total {
                0 if d.is_empty() => {}
                0 => eprint!("\r{what}: {d}\x1b[K"),
                _ => eprint!("\r{what}: {key:>3}% {d}\x1b[K"),
            }
        }
    }
    fn clear(&self) {
        if self.on && self.last != u64::MAX {
            eprint!("\r\x1b[K");
        }
    }
}

/// Bytes in MiB with one decimal, for progress lines.
fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

pub fn check(cx: &mut Ctx<'_, '_>) -> Result<Action> {
    let db = cx.db()?;
    let opts = CheckOptions { interrupt: Some(cx.s.interrupt.clone()), ..Default::default() };
    let _ = cx.s.out.flush();
    let mut p = Progress { on: cx.src.interactive(), last: u64::MAX };
    let r = db.env.check(&opts, &mut |c: CheckProgress| {
        let what = match c.stage {
            Stage::Metas => "checking metas",
            Stage::Trees => "walking trees",
            Stage::Gc => "checking the GC",
            Stage::Space => "accounting pages",
            Stage::Turn => "turning",
        };
        p.pages(what, c.done, c.total);
    });
    p.clear();
    let rep = match r {
        Ok(rep) => rep,
        Err(rdbx::Error::Io(e)) if e.kind() == std::io::ErrorKind::Interrupted || cx.s.interrupted() => {
            return Err("interrupted".into())
        }
        Err(e) => return Err(format!("the check could not run: {}", describe(&e)).into()),
    };
    // Records: those of the named tables, and the plain ones of the main table.
    let named: Vec<_> = rep.tables.iter().filter(|t| !t.is_gc && t.name.is_some()).collect();
    let main = rep.tables.iter().find(|t| !t.is_gc && t.name.is_none()).map_or(0, |t| t.entries);
    let records = named.iter().map(|t| t.entries).sum::<u64>() + main.saturating_sub(named.len() as u64);
    if !rep.problems.is_empty() {
        let mut l = cx.s.out.listing(&["severity", "area", "table", "page", "problem"], 1000);
        for pr in &rep.problems {
            l.push(&[
                Cell::text(if pr.severity == Severity::Major { "major" } else { "minor" }),
                Cell::text(pr.area.as_str()),
                pr.table.as_ref().map_or(Cell::Absent, |t| Cell::text(t.clone())),
                Cell::opt(pr.page.map(u64::from)),
                Cell::text(pr.message.clone()),
            ])?;
        }
        l.flush()?;
    }
    cx.s.out.record(&[
        ("checked_txnid", Cell::Int(rep.checked_txnid)),
        ("tables", Cell::Int(named.len() as u64)),
        ("records", Cell::Int(records)),
        ("pages_allocated", Cell::Int(rep.allocated_pages)),
        ("pages_walked", Cell::Int(rep.walked_pages)),
        ("pages_gc", Cell::Int(rep.gc_listed_pages + rep.gc_tree_pages)),
        ("pages_leaked", Cell::Int(rep.leaked_pages)),
        ("problems", Cell::Int(rep.problem_count())),
        ("major", Cell::Int(rep.major)),
        ("minor", Cell::Int(rep.minor)),
    ])?;
    if rep.problem_count() > 0 {
        return Err(format!(
            "{} problem(s) found ({} major, {} minor); 'rdbx-tools chk -vv {}' gives the full report",
            rep.problem_count(),
            rep.major,
            rep.minor,
            db.path.display()
        )
        .into());
    }
    cx.s.out.message("no problems found")?;
    Ok(Action::Done)
}

/// Refuses an output file on a file of the open database (under any name:
/// links, `DIR` vs `DIR/mdbx.dat`) or of another database (its lock file
/// always, its data file unless `--force`); see [`rdbx_dump::guard`].
fn check_output(cx: &Ctx<'_, '_>, dst: &Path, what: &str, force: bool) -> Result<()> {
    let db = cx.db()?;
    let own = [db.env.data_path(), db.env.lock_path()];
    let force = guard::Force::Flag { name: "--force", given: force };
    guard::check_output(dst, what, &own, "the open database", force).map_err(Fail::from)
}

pub fn copy(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let db = cx.db()?;
    let mut dst = path_of(inv.arg(0).ok_or("copy needs a DEST")?);
    if dst.is_dir() {
        dst = dst.join("mdbx.dat");
    }
    let force = inv.flag("force");
    check_output(cx, &dst, "the copy", force)?;
    if dst.exists() && !force {
        return Err(format!("{} exists (--force replaces it)", dst.display()).into());
    }
    let opts = CopyOptions {
        compact: inv.flag("compact"),
        overwrite: force,
        force_dynamic: false,
        interrupt: Some(cx.s.interrupt.clone()),
    };
    let _ = cx.s.out.flush();
    let mut p = Progress { on: cx.src.interactive(), last: u64::MAX };
    let r = db.env.copy_to(&dst, &opts, &mut |c: CopyProgress| p.pages("copying", c.done, c.total));
    p.clear();
    let st = r.map_err(|e| format!("{}: {}", dst.display(), describe(&e)))?;
    let how = if opts.compact { "compacted copy" } else { "copy" };
    cx.s.out.message(&format!(
        "{how} of transaction {} written to {}: {} pages in use; file size {}{}",
        st.txnid,
        dst.display(),
        st.copy_pages,
        human_size(st.file_size),
        rdbx_dump::diagnose::allocated(&dst)
            .map(|a| format!(", {} allocated on disk", human_size(a)))
            .unwrap_or_default()
    ))?;
    Ok(Action::Done)
}

pub fn dump(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let db = cx.db()?;
    let all = inv.flag("all");
    let table = if all { None } else { cx.target(inv)? };
    if inv.value("table").is_some() && all {
        return Err("--all and --table exclude each other".into());
    }
    let opts = DumpOptions {
        format: if inv.flag("print") { rdbx_dump::Format::Print } else { rdbx_dump::Format::ByteValue },
        concise: false,
        all,
        table: table.clone(),
        ..DumpOptions::default()
    };
    let interrupt = cx.s.interrupt.clone();
    let mut warnings = Vec::new();
    let (stats, done) = match inv.arg(0) {
        None => {
            let w = cx.s.out.writer();
            let r = rdbx_dump::dump(&db.env, &opts, w, &mut |m| warnings.push(m), &mut |_| {
                !interrupt.load(Ordering::Relaxed)
            });
            (r, None)
        }
        Some(f) => {
            let path = path_of(f);
            check_output(cx, &path, "the dump", inv.flag("force"))?;
            let file = if inv.flag("force") {
                File::create(&path)
            } else {
                OpenOptions::new().write(true).create_new(true).open(&path)
            }
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => format!("{} exists (--force replaces it)", path.display()),
                _ => format!("{}: {e}", path.display()),
            })?;
            let mut w = BufWriter::new(file);
            let r = rdbx_dump::dump(&db.env, &opts, &mut w, &mut |m| warnings.push(m), &mut |_| {
                !interrupt.load(Ordering::Relaxed)
            })
            .and_then(|s| {
                w.flush().map_err(|e| rdbx_dump::DumpError::Io { context: "writing the dump".into(), error: e })?;
                Ok(s)
            });
            if r.is_err() {
                drop(w);
                let _ = std::fs::remove_file(&path);
            }
            let what = if all { "every table".to_string() } else { format!("table {}", label(table.as_deref())) };
            let done = r.as_ref().ok().map(|s| {
                format!("dumped {what}: {} record(s) in {} section(s) to {}", s.records, s.sections, path.display())
            });
            (r, done)
        }
    };
    for w in warnings {
        cx.s.warn(&w);
    }
    stats.map_err(|e| -> Fail {
        match e {
            rdbx_dump::DumpError::Io { error, .. } if error.kind() == std::io::ErrorKind::BrokenPipe => Fail::Io(error),
            e => e.to_string().into(),
        }
    })?;
    if let Some(m) = done {
        cx.s.out.message(&m)?;
    }
    Ok(Action::Done)
}

pub fn load(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let db = cx.db()?;
    let path = path_of(inv.arg(0).ok_or("load needs a FILE")?);
    let file = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = DumpReader::new(BufReader::new(file));
    let first = match inv.value("into") {
        Some(w) => {
            let into = access::table_name(w)?;
            let mut h = reader
                .next_header()
                .map_err(|e| format!("{}: {e}", path.display()))?
                .ok_or_else(|| format!("{}: no dump in this file", path.display()))?;
            h.name = into;
            Some(h)
        }
        None => None,
    };
    let opts = LoadOptions {
        append: inv.flag("append"),
        no_overwrite: inv.flag("no-overwrite"),
        purge: inv.flag("purge"),
        ..LoadOptions::default()
    };
    let interrupt = cx.s.interrupt.clone();
    let mut warnings = Vec::new();
    let total = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let _ = cx.s.out.flush();
    let mut p = Progress { on: cx.src.interactive(), last: u64::MAX };
    let mut kept = 0;
    let r = rdbx_dump::load(&db.env, &mut reader, first, &opts, &mut |m| warnings.push(m), &mut |lp| {
        kept = lp.kept;
        p.show_with("loading", lp.bytes, total, || match total {
            0 => format!("{} records, {} read", lp.records, mib(lp.bytes)),
            _ => format!("{} records, {} of {}", lp.records, mib(lp.bytes), mib(total)),
        });
        !interrupt.load(Ordering::Relaxed)
    });
    p.clear();
    for w in warnings {
        cx.s.warn(&w);
    }
    let st = r.map_err(|e| match e {
        rdbx_dump::DumpError::Interrupted => format!(
            "{}: interrupted: {kept} records kept (the batches committed before stay; the current one was rolled back)",
            path.display()
        ),
        e => format!("{}: {e} (the records of the failed batch were rolled back; {kept} records kept)", path.display()),
    })?;
    let skipped = if st.skipped > 0 { format!(", {} skipped", st.skipped) } else { String::new() };
    cx.s.out.message(&format!(
        "loaded {} record(s) in {} section(s) from {}{skipped}",
        st.records,
        st.sections,
        path.display()
    ))?;
    Ok(Action::Done)
}
