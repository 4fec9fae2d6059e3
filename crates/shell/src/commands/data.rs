//! Records: get, put, del, scan, count, estimate-range.

use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtomicOrdering;

use rdbx::{Cursor, DbFlags, PutFlags};

use super::{table_cell, Action, Ctx, Fail, Result};
use crate::access::{key_width, open_table, value_width, ReadTxn, TableRef};
use crate::db::Opened;
use crate::output::{Cell, Format};
use crate::session::Session;
use crate::spec::Invocation;
use crate::values::{compare_keys, parse_item, quoted_item, Word};

/// Checks the width of an integer `item` ("key" or "value") against the
/// width of the stored ones (`stored`: none stored yet, then 4 and 8 fit).
fn check_int_width(t: &TableRef, item: &str, stored: Option<usize>, len: usize) -> Result<()> {
    let fits = match stored {
        Some(w) => len == w,
        None => len == 4 || len == 8,
    };
    if fits {
        return Ok(());
    }
    let want = match stored {
        Some(4) => format!("4-byte integer {item}s: give a number or u32:N"),
        Some(w) => format!("{w}-byte integer {item}s: give a number or u64:N"),
        None => format!("integer {item}s: give a number, u32:N or u64:N"),
    };
    Err(format!("table {} has {want} (this {item} has {len} bytes)", t.label()).into())
}

/// Checks a key against what the table accepts, with a message saying what
/// fits. The keys of an integerkey table that holds records all have the
/// width of its first key (4 or 8 bytes).
fn check_key(db: &Opened, r: &dyn ReadTxn, t: &TableRef, key: &[u8]) -> Result<()> {
    if t.flags.contains(DbFlags::INTEGER_KEY) {
        let stored = r.cursor(t.db)?.first()?.map(|(k, _)| k.len());
        check_int_width(t, "key", stored, key.len())?;
    }
    let max = db.env.max_key_size(t.flags);
    if key.len() > max {
        return Err(format!(
            "key too large: {} bytes, table {} takes keys of at most {max} bytes",
            key.len(),
            t.label()
        )
        .into());
    }
    Ok(())
}

fn check_value(db: &Opened, r: &dyn ReadTxn, t: &TableRef, val: &[u8]) -> Result<()> {
    if t.flags.contains(DbFlags::INTEGER_DUP) {
        let stored = r.cursor(t.db)?.first()?.map(|(_, v)| v.len());
        check_int_width(t, "value", stored, val.len())?;
    } else if t.flags.contains(DbFlags::DUP_FIXED) {
        if let Some((_, v)) = r.cursor(t.db)?.first()? {
            if v.len() != val.len() {
                return Err(format!(
                    "table {} is dupfixed: its values have {} bytes (this value has {} bytes)",
                    t.label(),
                    v.len(),
                    val.len()
                )
                .into());
            }
        }
    }
    let max = db.env.max_value_size(t.flags);
    if val.len() > max {
        return Err(format!(
            "value too large: {} bytes, table {} takes values of at most {max} bytes",
            val.len(),
            t.label()
        )
        .into());
    }
    Ok(())
}

fn key_of(r: &dyn ReadTxn, t: &TableRef, w: &Word) -> Result<Vec<u8>> {
    Ok(parse_item(w, key_width(r, t)?)?)
}

fn value_of(r: &dyn ReadTxn, t: &TableRef, w: &Word) -> Result<Vec<u8>> {
    Ok(parse_item(w, value_width(r, t)?)?)
}

fn not_found(t: &TableRef, key: &[u8]) -> Fail {
    format!("key {} not found in table {}", quoted_item(key, t.key_kind()), t.label()).into()
}

pub fn get(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let name = cx.target(inv)?;
    let db = cx.db()?;
    let kw = inv.arg(0).cloned().ok_or("get needs a KEY")?;
    cx.read(|s, r, _| {
        let t = open_table(r, name.as_deref())?;
        let key = key_of(r, &t, &kw)?;
        check_key(db, r, &t, &key)?;
        let mut c = r.cursor(t.db)?;
        let Some((k, v)) = c.set(&key)? else { return Err(not_found(&t, &key)) };
        let kc = [("key", Cell::item(k, t.key_kind()))];
        s.out.value(&kc, "value", &Cell::item(v, t.value_kind()))?;
        if t.dupsort() {
            while let Some((_, v)) = c.next_dup()? {
                s.out.value(&kc, "value", &Cell::item(v, t.value_kind()))?;
                if s.interrupted() {
                    break;
                }
            }
        }
        Ok(Action::Done)
    })
}

pub fn exists(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let name = cx.target(inv)?;
    let db = cx.db()?;
    let kw = inv.arg(0).cloned().ok_or("exists needs a KEY")?;
    cx.read(|s, r, _| {
        let t = open_table(r, name.as_deref())?;
        let key = key_of(r, &t, &kw)?;
        check_key(db, r, &t, &key)?;
        let found = r.cursor(t.db)?.set(&key)?.is_some();
        s.out.value(&[("key", Cell::item(&key, t.key_kind()))], "exists", &Cell::Bool(found))?;
        Ok(Action::Done)
    })
}

/// An engine error in the shell's words: a key of the main table that
/// names a table is changed with the table commands.
fn names_table(e: rdbx::Error, key: &[u8]) -> Fail {
    match e {
        rdbx::Error::Incompatible(_) => {
            let name = crate::session::typed_form(key);
            format!(
                "key {name} of @MAIN is the table {name}: 'drop {name}' deletes it, 'put -t {name} KEY VALUE' \
                 writes into it"
            )
            .into()
        }
        e => e.into(),
    }
}

/// A value written `@FILE` (the bytes of FILE) or `-` (all of standard
/// input, when commands do not come from it); `None` for any other word.
/// Quoted words are always literal.
fn value_from_outside(w: &Word, stdin_free: bool) -> Result<Option<Vec<u8>>> {
    if w.quoted {
        return Ok(None);
    }
    if w.is("-") {
        if !stdin_free {
            return Err("put KEY -: standard input is where the commands come from; use put KEY @FILE, or \
                        give the commands with -c"
                .into());
        }
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut v)
            .map_err(|e| format!("reading the value from standard input: {e}"))?;
        return Ok(Some(v));
    }
    match w.bytes.strip_prefix(b"@") {
        Some(rest) if !rest.is_empty() => {
            let path = crate::values::path_of(&Word { bytes: rest.to_vec(), quoted: false });
            std::fs::read(&path).map(Some).map_err(|e| format!("{}: {e}", path.display()).into())
        }
        _ => Ok(None),
    }
}

pub fn put(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let name = cx.target(inv)?;
    let db = cx.db()?;
    let (kw, vw) = (inv.arg(0).cloned().ok_or("put needs a KEY")?, inv.arg(1).cloned().ok_or("put needs a VALUE")?);
    let mut flags = PutFlags::empty();
    if inv.flag("no-overwrite") {
        flags |= PutFlags::NO_OVERWRITE;
    }
    if inv.flag("no-dup") {
        flags |= PutFlags::NO_DUP_DATA;
    }
    let append = inv.flag("append");
    let from_outside = value_from_outside(&vw, cx.src.stdin_free())?;
    let msg = cx.write(|_, txn| {
        let t = open_table(&*txn, name.as_deref())?;
        let key = key_of(&*txn, &t, &kw)?;
        let val = match from_outside {
            Some(v) => v,
            None => value_of(&*txn, &t, &vw)?,
        };
        check_key(db, &*txn, &t, &key)?;
        check_value(db, &*txn, &t, &val)?;
        let mut f = flags;
        if append {
            f |= if t.dupsort() { PutFlags::APPEND_DUP } else { PutFlags::APPEND };
        }
        if inv.flag("no-dup") && !t.dupsort() {
            return Err(format!("--no-dup is for dupsort tables; {} is not one", t.label()).into());
        }
        txn.put(t.db, &key, &val, f).map_err(|e| -> Fail {
            match e {
                rdbx::Error::KeyExist if t.dupsort() && inv.flag("no-dup") => format!(
                    "the pair {} = {} already exists in table {}",
                    quoted_item(&key, t.key_kind()),
                    quoted_item(&val, t.value_kind()),
                    t.label()
                )
                .into(),
                rdbx::Error::KeyExist => format!(
                    "key {} already exists in table {} (--no-overwrite keeps it)",
                    quoted_item(&key, t.key_kind()),
                    t.label()
                )
                .into(),
                rdbx::Error::KeyMismatch(_) if append => {
                    "--append: the key must sort after the last key of the table".into()
                }
                e => names_table(e, &key),
            }
        })?;
        Ok(format!("stored {} in {}", quoted_item(&key, t.key_kind()), t.label()))
    })?;
    cx.s.note(&msg)?;
    Ok(Action::Done)
}

pub fn del(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let name = cx.target(inv)?;
    let db = cx.db()?;
    let kw = inv.arg(0).cloned().ok_or("del needs a KEY")?;
    let vw = inv.arg(1).cloned();
    let msg = cx.write(|_, txn| {
        let t = open_table(&*txn, name.as_deref())?;
        let key = key_of(&*txn, &t, &kw)?;
        check_key(db, &*txn, &t, &key)?;
        let val = match &vw {
            Some(w) => Some(value_of(&*txn, &t, w)?),
            None => None,
        };
        let values = if t.dupsort() && val.is_none() {
            let mut c = txn.cursor(t.db)?;
            if c.set(&key)?.is_some() {
                c.count()?
            } else {
                0
            }
        } else {
            1
        };
        if !txn.del(t.db, &key, val.as_deref()).map_err(|e| names_table(e, &key))? {
            return Err(match &val {
                Some(v) => format!(
                    "no pair {} = {} in table {}",
                    quoted_item(&key, t.key_kind()),
                    quoted_item(v, t.value_kind()),
                    t.label()
                )
                .into(),
                None => not_found(&t, &key),
            });
        }
        let shown = quoted_item(&key, t.key_kind());
        Ok(if values > 1 { format!("deleted {shown} ({values} values)") } else { format!("deleted {shown}") })
    })?;
    cx.s.note(&msg)?;
    Ok(Action::Done)
}

/// A key range with an optional prefix, walked forwards or backwards.
struct Range {
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
    prefix: Option<Vec<u8>>,
    flags: DbFlags,
    reverse: bool,
    /// Each key once (dupsort tables).
    distinct: bool,
}

enum Verdict {
    Take,
    Skip,
    Stop,
}

type Pair<'t> = (&'t [u8], &'t [u8]);

impl Range {
    /// Keys with a prefix are next to each other in this table's order.
    fn contiguous(&self) -> bool {
        !self.flags.intersects(DbFlags::REVERSE_KEY | DbFlags::INTEGER_KEY)
    }

    fn cmp(&self, a: &[u8], b: &[u8]) -> Ordering {
        compare_keys(self.flags, a, b)
    }

    fn start<'t>(&self, c: &mut Cursor<'t>) -> rdbx::Result<Option<Pair<'t>>> {
        let prefix = self.prefix.as_ref().filter(|_| self.contiguous());
        if !self.reverse {
            let lo = match (&self.lo, prefix) {
                (Some(l), Some(p)) => Some(if self.cmp(l, p) == Ordering::Less { p } else { l }),
                (l, p) => l.as_ref().or(p),
            };
            return match lo {
                Some(k) => c.set_range(k),
                None => c.first(),
            };
        }
        let succ = prefix.and_then(|p| successor(p));
        let hi = match (&self.hi, &succ) {
            (Some(h), Some(s)) => Some(if self.cmp(h, s) == Ordering::Less { h } else { s }),
            (h, s) => h.as_ref().or(s.as_ref()),
        };
        match hi {
            Some(k) => {
                if c.set_range(k)?.is_some() {
                    c.prev()
                } else {
                    c.last()
                }
            }
            None => c.last(),
        }
    }

    fn step<'t>(&self, c: &mut Cursor<'t>) -> rdbx::Result<Option<Pair<'t>>> {
        match (self.reverse, self.distinct) {
            (false, false) => c.next(),
            (false, true) => c.next_nodup(),
            (true, false) => c.prev(),
            (true, true) => c.prev_nodup(),
        }
    }

    fn judge(&self, key: &[u8]) -> Verdict {
        if let Some(hi) = &self.hi {
            if self.cmp(key, hi) != Ordering::Less {
                return if self.reverse { Verdict::Skip } else { Verdict::Stop };
            }
        }
        if let Some(lo) = &self.lo {
            if self.cmp(key, lo) == Ordering::Less {
                return if self.reverse { Verdict::Stop } else { Verdict::Skip };
            }
        }
        if let Some(p) = &self.prefix {
            if !key.starts_with(p) {
                return if self.contiguous() { Verdict::Stop } else { Verdict::Skip };
            }
        }
        Verdict::Take
    }
}

/// The smallest key greater than every key starting with `p` (None: no such key).
fn successor(p: &[u8]) -> Option<Vec<u8>> {
    let mut s = p.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xff {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

/// A bound: `*` (unquoted) is an open end.
fn bound(r: &dyn ReadTxn, t: &TableRef, w: Option<&Word>) -> Result<Option<Vec<u8>>> {
    match w {
        None => Ok(None),
        Some(w) if w.is("*") => Ok(None),
        Some(w) => Ok(Some(key_of(r, t, w)?)),
    }
}

fn range_of(r: &dyn ReadTxn, t: &TableRef, inv: &Invocation, reverse: bool, distinct: bool) -> Result<Range> {
    let prefix = match inv.value("prefix") {
        Some(w) => {
            if t.flags.contains(DbFlags::INTEGER_KEY) {
                return Err(format!("--prefix does not apply to table {}: its keys are integers", t.label()).into());
            }
            Some(crate::values::parse_bytes(w)?)
        }
        None => None,
    };
    Ok(Range { lo: bound(r, t, inv.arg(0))?, hi: bound(r, t, inv.arg(1))?, prefix, flags: t.flags, reverse, distinct })
}

/// Why a listing ended early.
enum Cut {
    Limit,
    Interrupted,
    Stopped,
}

/// How one page of a scan ended.
enum PageEnd {
    /// The range is done (or the scan was cut).
    Done(Option<Cut>),
    /// The page is full and more records follow this one (the last shown).
    Full(Vec<u8>, Vec<u8>),
}

impl Range {
    /// Positions `c` just past the record (`key`, `val`) shown last, in the
    /// direction of the walk, in a snapshot that may have changed since.
    fn resume<'t>(&self, c: &mut Cursor<'t>, key: &[u8], val: &[u8], dupsort: bool) -> rdbx::Result<Option<Pair<'t>>> {
        let all_pairs = dupsort && !self.distinct;
        if !self.reverse {
            if !all_pairs {
                return match c.set_range(key)? {
                    Some((k, _)) if k == key => self.step(c),
                    other => Ok(other),
                };
            }
            return match c.get_both_range(key, val)? {
                Some((_, v)) if v == val => c.next(),
                Some(p) => Ok(Some(p)),
                None => match c.set_range(key)? {
                    Some((k, _)) if k == key => c.next_nodup(),
                    other => Ok(other),
                },
            };
        }
        if !all_pairs {
            return match c.set_range(key)? {
                Some(_) => self.step(c),
                None => c.last(),
            };
        }
        match c.get_both_range(key, val)? {
            Some(_) => c.prev(),
            None => match c.set_range(key)? {
                Some((k, _)) if k == key => c.last_dup(),
                Some(_) => c.prev(),
                None => c.last(),
            },
        }
    }
}

/// Settings of a scan that stay the same from page to page.
struct ScanOpts {
    limit: Option<u64>,
    keys_only: bool,
    /// A value_size column.
    sizes: bool,
    reverse: bool,
    /// Rows per page (0: no pages).
    page: usize,
}

/// Shows one page of a scan (all of it without pages) from a snapshot of its
/// own, starting after `after`. `n` counts the records shown so far.
fn scan_page(
    s: &mut Session,
    r: &dyn ReadTxn,
    name: Option<&[u8]>,
    inv: &Invocation,
    o: &ScanOpts,
    after: Option<&(Vec<u8>, Vec<u8>)>,
    n: &mut u64,
) -> Result<PageEnd> {
    let t = open_table(r, name)?;
    let range = range_of(r, &t, inv, o.reverse, o.keys_only && t.dupsort())?;
    let batch = if o.page > 0 {
        o.page
    } else if s.out.format == Format::Table {
        1000
    } else {
        1
    };
    let interrupt = s.interrupt.clone();
    let columns: &[&str] = match (o.keys_only, o.sizes) {
        (true, _) => &["key"],
        (false, false) => &["key", "value"],
        (false, true) => &["key", "value", "value_size"],
    };
    let mut listing = s.out.listing(columns, batch);
    let mut c = r.cursor(t.db)?;
    let mut rec = match after {
        None => range.start(&mut c)?,
        Some((k, v)) => range.resume(&mut c, k, v, t.dupsort())?,
    };
    let mut shown = 0usize;
    let mut end = PageEnd::Done(None);
    while let Some((k, v)) = rec {
        match range.judge(k) {
            Verdict::Stop => break,
            Verdict::Skip => {
                rec = range.step(&mut c)?;
                continue;
            }
            Verdict::Take => {}
        }
        if o.limit.is_some_and(|l| *n >= l) {
            end = PageEnd::Done(Some(Cut::Limit));
            break;
        }
        if interrupt.load(AtomicOrdering::Relaxed) {
            end = PageEnd::Done(Some(Cut::Interrupted));
            break;
        }
        if o.page > 0 && shown == o.page {
            end = PageEnd::Full(Vec::new(), Vec::new());
            break;
        }
        let key = Cell::item(k, t.key_kind());
        if o.keys_only {
            listing.push(&[key])?;
        } else if o.sizes {
            listing.push(&[key, Cell::item(v, t.value_kind()), Cell::Int(v.len() as u64)])?;
        } else {
            listing.push(&[key, Cell::item(v, t.value_kind())])?;
        }
        shown += 1;
        *n += 1;
        rec = range.step(&mut c)?;
    }
    listing.flush()?;
    // The cursor stands on the first record not shown: the next page resumes
    // after the one before it (the last one shown or skipped).
    if let PageEnd::Full(..) = end {
        end = match range_step_back(&range, &mut c)? {
            Some((k, v)) => PageEnd::Full(k.to_vec(), v.to_vec()),
            None => PageEnd::Done(None),
        };
    }
    Ok(end)
}

/// Moves the cursor one record against the walk (to the last record shown).
fn range_step_back<'t>(range: &Range, c: &mut Cursor<'t>) -> rdbx::Result<Option<Pair<'t>>> {
    match (range.reverse, range.distinct) {
        (false, false) => c.prev(),
        (false, true) => c.prev_nodup(),
        (true, false) => c.next(),
        (true, true) => c.next_nodup(),
    }
}

pub fn scan(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let name = cx.target(inv)?;
    let limit = match inv.value("limit") {
        Some(w) => Some(w.text().parse::<u64>().map_err(|_| format!("bad --limit '{}': give a number", w.text()))?),
        None => None,
    };
    let o = ScanOpts {
        limit,
        keys_only: inv.flag("keys-only"),
        sizes: inv.flag("sizes"),
        reverse: inv.flag("reverse"),
        page: cx.s.page_rows(cx.src),
    };
    let mut n = 0u64;
    let mut after: Option<(Vec<u8>, Vec<u8>)> = None;
    // Each page is read from a snapshot of its own, so no snapshot is held
    // while the shell waits at the "more" prompt.
    let cut = loop {
        let end = cx.read(|s, r, _| scan_page(s, r, name.as_deref(), inv, &o, after.as_ref(), &mut n))?;
        match end {
            PageEnd::Done(cut) => break cut,
            PageEnd::Full(k, v) => {
                // Show the page (through the pager, which may be told to
                // stop) before the next snapshot is taken.
                if cx.s.out.paging() {
                    if !cx.s.out.release()? {
                        break Some(Cut::Stopped);
                    }
                    cx.s.out.hold();
                }
                if cx.s.interrupted() {
                    break Some(Cut::Interrupted);
                }
                after = Some((k, v));
            }
        }
    };
    let what = if o.keys_only { "key" } else { "record" };
    let plural = if n == 1 { "" } else { "s" };
    match cut {
        None => cx.s.out.footer(&format!("{n} {what}{plural}"))?,
        Some(Cut::Limit) => cx.s.out.footer(&format!("{n} {what}{plural} (--limit reached; there are more)"))?,
        // The pager said so.
        Some(Cut::Stopped) => {}
        Some(Cut::Interrupted) => {
            if cx.s.out.format == Format::Table {
                cx.s.out.footer(&format!("{n} {what}{plural} shown (interrupted)"))?;
            } else {
                cx.s.warn(&format!("scan interrupted after {n} {what}{plural}"));
            }
        }
    }
    Ok(Action::Done)
}

/// Counts the records of a range by walking it. `None` when interrupted.
fn walk_count(c: &mut Cursor<'_>, range: &Range, interrupt: &std::sync::atomic::AtomicBool) -> Result<Option<u64>> {
    let mut n = 0u64;
    let mut rec = range.start(c)?;
    while let Some((k, _)) = rec {
        match range.judge(k) {
            Verdict::Stop => break,
            Verdict::Skip => {}
            Verdict::Take => n += 1,
        }
        if n.is_multiple_of(4096) && interrupt.load(AtomicOrdering::Relaxed) {
            return Ok(None);
        }
        rec = range.step(c)?;
    }
    Ok(Some(n))
}

pub fn count(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let name = cx.target(inv)?;
    let interrupt = cx.s.interrupt.clone();
    cx.read(|s, r, _| {
        let t = open_table(r, name.as_deref())?;
        let n = if inv.args.is_empty() && inv.value("prefix").is_none() {
            r.db_stat(t.db)?.entries
        } else {
            let range = range_of(r, &t, inv, false, false)?;
            let mut c = r.cursor(t.db)?;
            walk_count(&mut c, &range, &interrupt)?.ok_or("interrupted")?
        };
        s.out.value(&[("table", table_cell(t.name.as_deref()))], "records", &Cell::Int(n))?;
        Ok(Action::Done)
    })
}

pub fn estimate(cx: &mut Ctx<'_, '_>, inv: &Invocation) -> Result<Action> {
    let name = cx.target(inv)?;
    let interrupt = cx.s.interrupt.clone();
    cx.read(|s, r, _| {
        let t = open_table(r, name.as_deref())?;
        let lo = bound(r, &t, inv.arg(0))?;
        let hi = bound(r, &t, inv.arg(1))?;
        let est = r.estimate_range(t.db, lo.as_deref(), hi.as_deref())?;
        let shown = |b: &Option<Vec<u8>>| match b {
            Some(k) => Cell::item(k, t.key_kind()),
            None => Cell::text("*"),
        };
        let mut fields = vec![
            ("table", table_cell(t.name.as_deref())),
            ("from", shown(&lo)),
            ("to", shown(&hi)),
            ("estimate", Cell::Int(est)),
        ];
        if inv.flag("exact") {
            let range =
                Range { lo: lo.clone(), hi: hi.clone(), prefix: None, flags: t.flags, reverse: false, distinct: false };
            let mut c = r.cursor(t.db)?;
            let exact = walk_count(&mut c, &range, &interrupt)?.ok_or("interrupted")?;
            fields.push(("exact", Cell::Int(exact)));
            if t.dupsort() {
                let keys = Range { distinct: true, ..range };
                let mut c = r.cursor(t.db)?;
                let k = walk_count(&mut c, &keys, &interrupt)?.ok_or("interrupted")?;
                fields.push(("exact_keys", Cell::Int(k)));
            }
        }
        if t.dupsort() && s.out.format == Format::Table {
            fields.push(("note", Cell::text("on dupsort tables the estimate counts keys, not values")));
        }
        s.out.record(&fields)?;
        Ok(Action::Done)
    })
}

#[cfg(test)]
mod tests {
    use super::successor;

    #[test]
    fn successors() {
        assert_eq!(successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(successor(b"\xff\xff"), None);
    }
}
