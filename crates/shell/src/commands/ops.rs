//! Operations commands (issue 14): checksum, diff, meta, page, space — the
//! engine's library calls shown in the shell's formats (the same numbers as
//! the `rdbx-tools` subcommands of the same names).

use super::{table_cell, Action, Ctx, Fail, Result};
use crate::access::{self, ReadTxn};
use crate::output::Cell;
use crate::spec::Invocation;
use crate::values::parse_item;

/// An interrupted library call, or its error in words.
fn engine(e: rdbx::Error, interrupted: bool) -> Fail {
    match e {
        rdbx::Error::Io(io) if io.kind() == std::io::ErrorKind::Interrupted || interrupted => "interrupted".into(),
        e => e.into(),
    }
}

/// The `--from` and `--to` keys.
type KeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// `--from` / `--to` of a command: keys in the table's key format.
fn range_keys(r: &dyn ReadTxn, table: Option<&[u8]>, inv: &Invocation) -> Result<KeyRange> {
    let t = access::open_table(r, table)?;
    let width = access::key_width(r, &t)?;
    let key = |name: &str| -> Result<Option<Vec<u8>>> {
        inv.value(name).map(|w| parse_item(w, width).map_err(Fail::from)).transpose()
    };
    Ok((key("from")?, key("to")?))
}

pub fn checksum(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let table = match inv.value("table") {
        Some(w) => Some(access::table_name(w)?),
        None => None,
    };
    let interrupt = cx.s.interrupt.clone();
    let sums = cx.read(|_, r, _| {
        let (from, to) = match &table {
            Some(t) => range_keys(r, t.as_deref(), inv)?,
            None if inv.value("from").is_some() || inv.value("to").is_some() => {
                let (f, t) = (inv.value("from"), inv.value("to"));
                let b = |w: Option<&crate::values::Word>| w.map(crate::values::parse_bytes).transpose();
                (b(f)?, b(t)?)
            }
            None => (None, None),
        };
        if let Some(t) = &table {
            access::open_table(r, t.as_deref())?;
        }
        let opts = rdbx::ChecksumOptions {
            tables: table.clone().into_iter().collect(),
            from,
            to,
            interrupt: Some(interrupt.clone()),
        };
        rdbx::checksums(r, &opts).map_err(|e| engine(e, interrupt.load(std::sync::atomic::Ordering::Relaxed)))
    })?;
    let mut l = cx.s.out.listing(&["table", "records", "flags", "sha256"], 1000);
    for t in &sums.tables {
        l.push(&[
            table_cell(t.name.as_deref()),
            Cell::Int(t.records),
            Cell::text(crate::values::flag_words(t.flags)),
            Cell::text(t.hex()),
        ])?;
    }
    l.flush()?;
    drop(l);
    cx.s.out.footer(&format!("database sha256 {} ({} tables, txn {})", sums.hex(), sums.tables.len(), sums.txnid))?;
    Ok(Action::Done)
}

fn same_file(x: &std::path::Path, y: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(x), std::fs::metadata(y)) {
        (Ok(m), Ok(n)) => m.dev() == n.dev() && m.ino() == n.ino(),
        _ => false,
    }
}

/// `diff [PATH] [--table T] [--table-b U] [--keys-only]`: the open database
/// (its current table, or T) against PATH (the same table, or U), or two
/// tables of the open database.
pub fn diff(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let db = cx.db()?;
    let a_name = cx.target(inv)?;
    let b_name = match inv.value("table-b") {
        Some(w) => access::table_name(w)?,
        None => a_name.clone(),
    };
    let other = match inv.arg(0) {
        Some(w) => {
            let p = crate::values::path_of(w);
            let data = if p.is_dir() { p.join("mdbx.dat") } else { p.clone() };
            if same_file(&data, db.env.data_path()) {
                None
            } else {
                let env = crate::db::builder()
                    .read_only(true)
                    .max_dbs(32_000)
                    .no_sub_dir(!p.is_dir())
                    .open(&p)
                    .map_err(|e| format!("{}: {}", p.display(), super::describe(&e)))?;
                Some((p, env))
            }
        }
        None if inv.value("table-b").is_none() => {
            return Err("diff needs a database PATH to compare with, or --table-b to compare two tables".into())
        }
        None => None,
    };
    let keys_only = inv.flag("keys-only");
    let interrupt = cx.s.interrupt.clone();
    let opts = rdbx::DiffOptions { keys_only, interrupt: Some(interrupt.clone()) };
    let label_a = access::label(a_name.as_deref());
    let label_b = access::label(b_name.as_deref());
    let other_txn = match &other {
        Some((_, env)) => Some(env.begin_ro_txn()?),
        None => None,
    };
    let stopped = |e: rdbx::Error| engine(e, interrupt.load(std::sync::atomic::Ordering::Relaxed));
    cx.read(|s, a, _| {
        let b: &dyn ReadTxn = match &other_txn {
            Some(t) => t,
            None => a,
        };
        let ta = access::open_table(a, a_name.as_deref())?;
        access::open_table(b, b_name.as_deref()).map_err(|m| match &other {
            Some((p, _)) => format!("{}: {m}", p.display()),
            None => m,
        })?;
        // Counts first (one pass), then the records (a second pass).
        let counts =
            rdbx::diff_tables(a, a_name.as_deref(), b, b_name.as_deref(), &opts, &mut |_| Ok(())).map_err(stopped)?;
        s.out.record(&[
            ("a", Cell::text(label_a.clone())),
            (
                "b",
                Cell::text(match &other {
                    Some((p, _)) => format!("{} of {}", label_b, p.display()),
                    None => label_b.clone(),
                }),
            ),
            ("added", Cell::Int(counts.added)),
            ("removed", Cell::Int(counts.removed)),
            ("changed", Cell::Int(counts.changed)),
        ])?;
        if counts.total() == 0 {
            return Ok(());
        }
        let (kk, vk) = (ta.key_kind(), ta.value_kind());
        let mut l = s.out.listing(&["change", "key", "old", "new"], 1000);
        let mut failed = None;
        let r = rdbx::diff_tables(a, a_name.as_deref(), b, b_name.as_deref(), &opts, &mut |r| {
            let sign = match r.kind {
                rdbx::DiffKind::Added => "+",
                rdbx::DiffKind::Removed => "-",
                rdbx::DiffKind::Changed => "~",
            };
            let cell = |v: Option<&[u8]>| v.map_or(Cell::Absent, |v| Cell::item(v, vk));
            l.push(&[Cell::text(sign), Cell::item(r.key, kk), cell(r.old), cell(r.new)]).map_err(|e| {
                failed = Some(e);
                rdbx::Error::Io(std::io::Error::new(std::io::ErrorKind::Interrupted, "output"))
            })
        });
        if let Some(e) = failed {
            return Err(e.into());
        }
        r.map_err(stopped)?;
        l.flush()?;
        Ok(())
    })?;
    Ok(Action::Done)
}

/// `meta`: the three meta pages of the open database's data file.
pub fn meta(cx: &mut Ctx<'_, '_>) -> Result<Action> {
    let db = cx.db()?;
    let l = rdbx::inspect::read_metas(db.env.data_path())?;
    let mut t = cx.s.out.listing(
        &["meta", "role", "txnid", "signature", "valid", "first_unallocated", "now", "gc_root", "main_root", "problem"],
        10,
    );
    let root = |r: u32| if r == rdbx::format::P_INVALID { Cell::Absent } else { Cell::Int(r as u64) };
    for s in &l.slots {
        let m = &s.meta;
        t.push(&[
            Cell::Int(s.index as u64),
            Cell::text(s.role),
            if s.valid { Cell::Int(m.txnid()) } else { Cell::text(format!("{}/{}", m.txnid_a, m.txnid_b)) },
            Cell::text(s.signature),
            Cell::text(if s.valid { "yes" } else { "no" }),
            Cell::Int(m.geo.first_unallocated as u64),
            Cell::Int(m.geo.now as u64),
            root(m.gc.root),
            root(m.main.root),
            s.error.clone().map_or(Cell::Absent, Cell::text),
        ])?;
    }
    t.flush()?;
    drop(t);
    if let Some(d) = l.damaged_newer() {
        cx.s.out.footer(&format!(
            "meta {} is damaged and may have held a newer commit than meta {} (txn {}): 'rdbx-tools meta --use {} PATH' \
             makes meta {} steady and current",
            d.index,
            l.head,
            l.slots[l.head].meta.txnid(),
            l.head,
            l.head
        ))?;
    } else {
        cx.s.out.footer(&format!("page size {}, current meta {}", l.page_size, l.head))?;
    }
    Ok(Action::Done)
}

fn owner_words(o: &rdbx::inspect::PageOwner) -> String {
    use rdbx::inspect::PageOwner as O;
    let t = |n: &Option<Vec<u8>>| access::label(n.as_deref());
    match o {
        O::Meta(i) => format!("meta page {i}"),
        O::Tree { gc: true, level, height, .. } => format!("GC tree, level {level} of {height}"),
        O::Tree { table, level, height, nested_key: None, .. } => {
            format!("table {}, level {level} of {height}", t(table))
        }
        O::Tree { table, level, height, nested_key: Some(k), .. } => {
            format!("table {}, nested tree of key {}, level {level} of {height}", t(table), crate::values::render(k))
        }
        O::Large { table, key, head, pages } => {
            format!(
                "table {}, large value of key {} (pages {head}..{})",
                t(table),
                crate::values::render(key),
                head + pages - 1
            )
        }
        O::Free { txnid } => format!("free (GC record of txn {txnid})"),
        O::Unallocated => "unallocated tail".into(),
        O::Unreferenced => "unreferenced (lost or leaked; see 'check')".into(),
    }
}

/// `page N`: one page decoded, with what it belongs to.
pub fn page(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    use rdbx::inspect::NodeValue as V;
    let db = cx.db()?;
    let w = inv.arg(0).ok_or("page needs a page number N")?;
    let pgno: u32 = w.text().parse().map_err(|_| format!("bad page number '{}'", w.text()))?;
    let ps = db.env.page_size();
    let buf = rdbx::inspect::read_page(db.env.data_path(), ps, pgno)?;
    let info = rdbx::inspect::decode_page(&buf, pgno);
    let owner = db.env.page_owner(pgno)?;
    let in_large = matches!(&owner, rdbx::inspect::PageOwner::Large { head, .. } if *head != pgno);
    let (kk, vk) = match &owner {
        rdbx::inspect::PageOwner::Tree { table, gc: false, nested_key, .. } => {
            let r = db.env.begin_ro_txn()?;
            let f = r.open_db_bytes(table.as_deref()).and_then(|d| r.db_flags(d)).unwrap_or_default();
            let kk = if nested_key.is_some() {
                crate::values::ItemKind::of_values(f)
            } else {
                crate::values::ItemKind::of_keys(f)
            };
            (kk, crate::values::ItemKind::of_values(f))
        }
        _ => Default::default(),
    };
    cx.s.out.record(&[
        ("page", Cell::Int(pgno as u64)),
        ("type", Cell::text(if in_large { "large value data" } else { info.kind })),
        ("txnid", if in_large { Cell::Absent } else { Cell::Int(info.txnid) }),
        ("entries", Cell::Int(info.entries as u64)),
        ("free_bytes", Cell::Int(info.free as u64)),
        ("belongs_to", Cell::text(owner_words(&owner))),
        ("problem", info.problem.clone().map_or(Cell::Absent, Cell::text)),
    ])?;
    if info.nodes.is_empty() || in_large {
        return Ok(Action::Done);
    }
    let mut l = cx.s.out.listing(&["#", "key", "value"], 1000);
    for n in &info.nodes {
        let v = match &n.value {
            V::Child(c) => Cell::text(format!("-> page {c}")),
            V::Inline(v) => Cell::item(v, vk),
            V::Large { size, pgno } => Cell::text(format!("large value, {size} bytes at page {pgno}")),
            V::Table(t) => Cell::text(format!("table: root {}, {} records", t.root as i64, t.items)),
            V::SubPage(items) => Cell::text(format!("{} values (sub-page)", items.len())),
            V::NestedTree(t) => Cell::text(format!("{} values (nested tree, root {})", t.items, t.root)),
            V::Item => Cell::Absent,
            V::Bad(e) => Cell::text(format!("cannot decode: {e}")),
        };
        l.push(&[Cell::Int(n.index as u64), Cell::item(&n.key, kk), v])?;
    }
    l.flush()?;
    Ok(Action::Done)
}

/// `space`: why the file is as big as it is.
pub fn space(cx: &mut Ctx<'_, '_>) -> Result<Action> {
    let db = cx.db()?;
    let r = db.env.space()?;
    let ps = r.info.page_size as u64;
    let listed: u64 = r.gc_records.iter().map(|g| g.pages).sum();
    let by = match r.gc.retained_by {
        Some(rdbx::Retainer::Reader { pid, txnid, lag }) => format!("reader pid {pid} on txn {txnid}, lag {lag}"),
        Some(rdbx::Retainer::SteadyCommit { txnid }) => format!("last steady commit, txn {txnid}"),
        None => "-".into(),
    };
    cx.s.out.record(&[
        ("file_size", Cell::Size(r.file_size)),
        ("allocated_pages", Cell::Int(r.info.first_unallocated)),
        ("table_pages", Cell::Int(r.tables.iter().map(|t| t.pages()).sum())),
        ("gc_tree_pages", Cell::Int(r.gc_tree_pages)),
        ("gc_free_pages", Cell::Int(listed)),
        ("reclaimable_pages", Cell::Int(r.gc.pages_reclaimable)),
        ("retained_pages", Cell::Int(r.retained_pages)),
        ("retained_by", Cell::text(by)),
        ("free_tail", Cell::Size(r.free_tail_pages * ps)),
        ("upper_bound", Cell::Size(r.info.size_upper)),
    ])?;
    let mut tables = r.tables.clone();
    tables.sort_by_key(|t| std::cmp::Reverse(t.pages()));
    let mut l = cx.s.out.listing(&["table", "pages", "branch", "leaf", "large", "records"], 1000);
    for t in &tables {
        l.push(&[
            table_cell(t.name.as_deref()),
            Cell::Int(t.pages()),
            Cell::Int(t.branch_pages),
            Cell::Int(t.leaf_pages),
            Cell::Int(t.large_pages),
            Cell::Int(t.entries),
        ])?;
    }
    l.flush()?;
    Ok(Action::Done)
}
