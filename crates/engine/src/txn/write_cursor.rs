//! The write cursor: a cursor of a write transaction that can also put and
//! delete, keeping its position as a record rather than a page path. Between
//! moves that write nothing it also keeps the page path ([`Mark`]), so a walk
//! steps from page to page as a read cursor does instead of searching from
//! the root at every step.

use super::{Db, RwTxn};
use crate::btree::cursor::{Cursor, Mark};
use crate::btree::dupsort::{self, Removed};
use crate::btree::{write, Cmp};
use crate::error::{Error, Result};
use crate::flags::PutFlags;
use crate::format::node::{self, N_TREE};
use crate::format::page::Page;

/// A cursor of a write transaction that can also put and delete. It keeps its
/// position as the record it stands on, (key, value) on multimaps (DUP_SORT
/// tables), and finds it again after a change, so that every move visits each
/// value of each key as the read-only [`Cursor`] does.
///
/// After [`RwCursor::del`] (or [`RwCursor::del_all`]) the cursor stands on the
/// successor of what it deleted, as libmdbx's cursor does: `next()` and
/// `get_current()` return that successor, `prev()` its predecessor, and a
/// further `del()` or `put(.., CURRENT)` applies to it.
pub struct RwCursor<'t, 'env> {
    txn: &'t mut RwTxn<'env>,
    /// Where it stands (apart from the transaction, so that a move can
    /// lend out the transaction's pages and still update it).
    at: Spot,
}

/// Where a write cursor stands.
struct Spot {
    db: Db,
    /// The table is a multimap: the position includes the value.
    dupsort: bool,
    /// `key`/`val` hold a position (or the mark does: `lagging`).
    positioned: bool,
    /// Key of the current record (after a delete: of the deleted one).
    key: Vec<u8>,
    /// Multimaps: value of the current record (after a delete: of the deleted one).
    val: Vec<u8>,
    /// `key`/`val` lag behind the mark, which alone holds the position: a
    /// step within a leaf copies no record ([`Spot::own`] catches them up
    /// before anything that needs them or may change the pages). Only
    /// while `marked`.
    lagging: bool,
    /// The record at the position was deleted: the cursor stands on its successor.
    after_del: bool,
    /// The page path to the position, while nothing was written since it
    /// was taken (`RwCursor` holds the transaction exclusively, so only its
    /// own puts and deletes change pages; each drops it). Restoring it costs
    /// a page look-up per level, finding the key again a search per level.
    mark: Mark,
    /// `mark` holds the position.
    marked: bool,
}

type OwnedPair<'a> = Option<(&'a [u8], &'a [u8])>;

/// Where the remembered position is found again.
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    /// No position.
    Nowhere,
    /// On the remembered record.
    On,
    /// On its successor (it was deleted).
    Successor,
    /// Past the end (it was deleted and had no successor).
    End,
}

/// A read cursor over `db`, unpositioned. Built here and returned without
/// a `Result` around it, so that it is built in its caller's place: a
/// cursor holds two page paths (about 2 KiB), and a `Result` of one was
/// copied twice at each step of a walk.
#[inline(always)]
fn fresh<'a>(txn: &'a RwTxn<'_>, t: &crate::txn::View) -> Cursor<'a> {
    let mut c = Cursor::new(txn.pages(), t.tree.root, t.tree.height, t.cmp);
    c.set_dup_cmp(Cmp::for_dups(t.flags));
    c
}

/// Places `c` at the position `key`/`val` (see [`At`]).
fn locate(c: &mut Cursor<'_>, dupsort: bool, at: Option<(&[u8], &[u8])>, after_del: bool) -> Result<At> {
    let Some((key, val)) = at else { return Ok(At::Nowhere) };
    Ok(match c.set_lowerbound(key, dupsort.then_some(val))? {
        None => At::End,
        Some((true, _)) if !after_del => At::On,
        Some(_) => At::Successor,
    })
}

/// The table levels of `mark` as a write path: what a search for the
/// marked record finds, while nothing changed since the mark was taken.
fn marked_path(mark: &Mark) -> write::Path {
    let mut path = write::Path::new();
    let (pgnos, idxs) = mark.outer();
    for (&pgno, &idx) in pgnos.iter().zip(idxs) {
        path.push(pgno, idx as usize);
    }
    path
}

/// Deletes the record of a plain table (not a multimap) that `mark` stands
/// on, with nothing changed since it was taken: the path a search would
/// find. Returns whether the tree kept its shape; `mark` then stands where
/// the record was (see [`write::del_at`]).
fn del_marked(txn: &mut RwTxn<'_>, db: Db, mark: &mut Mark) -> Result<bool> {
    txn.guarded(|t| {
        if db.dbi == Db::GC.dbi {
            return Err(Error::BadDbi);
        }
        let view = t.table(db)?;
        let mut path = marked_path(mark);
        if db.dbi == Db::MAIN.dbi {
            let (lpg, idx) = path.at(path.leaf());
            let leaf = Page { buf: t.pages().get(lpg)? };
            if node::node(leaf, idx, lpg)?.flags & N_TREE != 0 {
                return Err(Error::Incompatible("the key names a table; use drop_db".into()));
            }
        }
        let kept = write::del_at(t, db, view.tree, &mut path)?;
        if kept {
            mark.set_outer(path.pgnos(), path.idxs());
        }
        Ok(kept)
    })
}

/// Deletes the multimap value that `mark` stands on (of key `key`) where it
/// lies, without a search (see [`dupsort::del_at_mark`]).
/// `None`, nothing changed, when it does not go so; else whether `mark`
/// still holds, standing where the value was (or, when the key went with
/// its last value, where the key was).
fn del_marked_value(txn: &mut RwTxn<'_>, db: Db, mark: &mut Mark, key: &[u8]) -> Result<Option<bool>> {
    let mut inner = write::Path::new();
    if let Some((pgnos, idxs)) = mark.inner() {
        for (&pgno, &idx) in pgnos.iter().zip(idxs) {
            inner.push(pgno, idx as usize);
        }
    }
    txn.guarded(|t| {
        let mut path = marked_path(mark);
        let Some(r) = dupsort::del_at_mark(t, db, &mut path, &mut inner, key)? else {
            return Ok(None);
        };
        match r {
            Removed { kept: false, .. } => {}
            Removed { key_gone: true, .. } => mark.set_outer(path.pgnos(), path.idxs()),
            Removed { key_gone: false, .. } => mark.move_to(path.pgnos(), inner.pgnos()),
        }
        Ok(Some(r.kept))
    })
}

/// Deletes the multimap key that `mark` stands on with all its values,
/// without a search; whether `mark` still holds, standing where the key
/// was.
fn del_marked_key(txn: &mut RwTxn<'_>, db: Db, mark: &mut Mark) -> Result<bool> {
    txn.guarded(|t| {
        let mut path = marked_path(mark);
        let kept = dupsort::del_key_at_mark(t, db, &mut path)?;
        if kept {
            mark.set_outer(path.pgnos(), path.idxs());
        }
        Ok(kept)
    })
}

/// Replaces the value of the plain table's record that `mark` stands on
/// (its key is `key`), with nothing changed since the mark was taken: the
/// path a search would find. Returns whether the leaf kept its place (no
/// split); `mark` then still stands on the record.
fn put_marked(txn: &mut RwTxn<'_>, db: Db, mark: &mut Mark, key: &[u8], val: &[u8], flags: PutFlags) -> Result<bool> {
    txn.guarded(|t| {
        if db.dbi == Db::GC.dbi {
            return Err(Error::BadDbi);
        }
        let mut path = marked_path(mark);
        // A put over a table record is refused inside `put_on`.
        write::put_on(t, db, key, write::Val::Bytes(val), flags, 0, Some(&mut path))?;
        let kept = path.len > 0;
        if kept {
            mark.set_outer(path.pgnos(), path.idxs());
        }
        Ok(kept)
    })
}

impl Spot {
    /// Remembers `pair` as the position.
    fn keep(&mut self, pair: (&[u8], &[u8])) {
        self.key.clear();
        self.key.extend_from_slice(pair.0);
        if self.dupsort {
            self.val.clear();
            self.val.extend_from_slice(pair.1);
        }
        self.lagging = false;
    }

    /// Makes `key`/`val` hold the position when only the mark does (see
    /// `lagging`): read where the mark stands, whose pages have not changed.
    fn own(&mut self, txn: &RwTxn<'_>) -> Result<()> {
        // (`keep` clears `lagging`: after an error it stays set, and the
        // next call tries again.)
        if !self.lagging {
            return Ok(());
        }
        // The record a step in a leaf found (it reads it again the same way).
        if let Some(p) = self.mark.step_in_leaf(&txn.pages(), 0) {
            self.keep(p);
            return Ok(());
        }
        let t = txn.table(self.db)?;
        let mut c = fresh(txn, &t);
        c.restore(&self.mark)?;
        let p = c.get_current()?.ok_or(Error::NoData)?;
        self.keep(p);
        Ok(())
    }

    /// Places `c` at the position: restored from the mark when there is
    /// one, else found again from the remembered record.
    fn place(&self, c: &mut Cursor<'_>, after_del: bool) -> Result<At> {
        if self.marked && self.positioned {
            c.restore(&self.mark)?;
            if !after_del {
                return Ok(At::On);
            }
            // After a delete at the cursor the mark stands where the record
            // was: on its successor, or past its leaf's last entry.
            return Ok(if c.settle()? { At::Successor } else { At::End });
        }
        let at = self.positioned.then_some((&self.key[..], &self.val[..]));
        locate(c, self.dupsort, at, after_del)
    }

    /// A step (`forward`: `next`, else `prev`) to a neighbour on the same
    /// leaf (or the same page of a key's values) while the mark holds,
    /// straight from the page ([`Mark::step_in_leaf`]), with no cursor
    /// built and no record copied (`lagging`); `None` when the step needs
    /// the general path.
    #[inline(always)]
    fn step_in_leaf<'a>(&mut self, txn: &'a RwTxn<'_>, forward: bool) -> Option<Pair<'a>> {
        if !(self.marked && self.positioned) {
            return None;
        }
        // After a delete, `next` returns the successor the mark stands on.
        let by = match (forward, self.after_del) {
            (true, true) => 0,
            (true, false) => 1,
            (false, false) => -1,
            (false, true) => return None,
        };
        let p = self.mark.step_in_leaf(&txn.pages(), by)?;
        self.after_del = false;
        self.lagging = true;
        Some(p)
    }

    /// Finds the position again, runs `f` on a read cursor there and
    /// remembers where it ends (a `None` from `f` keeps the position).
    /// `f` also gets the remembered key (after a delete: the deleted key).
    #[inline(never)]
    fn moved<'a>(
        &mut self,
        txn: &'a RwTxn<'_>,
        f: impl FnOnce(&mut Cursor<'a>, At, &[u8]) -> Result<OwnedPair<'a>>,
    ) -> Result<OwnedPair<'a>> {
        self.own(txn)?;
        let after_del = std::mem::take(&mut self.after_del);
        let t = txn.table(self.db)?;
        let mut c = fresh(txn, &t);
        let at = self.place(&mut c, after_del)?;
        self.marked = false;
        let r = f(&mut c, at, &self.key)?;
        if let Some(p) = r {
            self.keep(p);
            self.positioned = true;
            self.marked = c.mark_into(&mut self.mark);
        }
        Ok(r)
    }
}

type Pair<'a> = (&'a [u8], &'a [u8]);

impl<'t, 'env> RwCursor<'t, 'env> {
    /// A cursor with no position yet.
    pub(super) fn new(txn: &'t mut RwTxn<'env>, db: Db, dupsort: bool) -> Self {
        let at = Spot {
            db,
            dupsort,
            positioned: false,
            key: Vec::new(),
            val: Vec::new(),
            lagging: false,
            after_del: false,
            mark: Mark::NONE,
            marked: false,
        };
        RwCursor { txn, at }
    }

    /// A move: `step` says it is `next` (`Some(true)`) or `prev`
    /// (`Some(false)`), which first try a step within the leaf
    /// ([`Spot::step_in_leaf`]); else `f` on a read cursor at the position
    /// ([`Spot::moved`]).
    #[inline(always)]
    fn moved<'a>(
        &'a mut self,
        step: Option<bool>,
        f: impl FnOnce(&mut Cursor<'a>, At, &[u8]) -> Result<OwnedPair<'a>>,
    ) -> Result<OwnedPair<'a>> {
        let txn: &'a RwTxn<'env> = self.txn;
        if let Some(forward) = step {
            if let Some(p) = self.at.step_in_leaf(txn, forward) {
                return Ok(Some(p));
            }
        }
        self.at.moved(txn, f)
    }

    /// Positions anew (first, last, set, set_range): unpositioned if `f` finds nothing.
    fn seek<'a>(&'a mut self, f: impl FnOnce(&mut Cursor<'a>) -> Result<OwnedPair<'a>>) -> Result<OwnedPair<'a>> {
        self.at.positioned = false;
        self.at.lagging = false;
        self.moved(None, |c, _, _| f(c))
    }

    /// First record.
    pub fn first(&mut self) -> Result<OwnedPair<'_>> {
        self.seek(|c| c.first())
    }
    /// Last record.
    pub fn last(&mut self) -> Result<OwnedPair<'_>> {
        self.seek(|c| c.last())
    }
    /// Next record: the next value of the key on multimaps, else the first
    /// value of the next key (after a delete: the successor of the deleted
    /// record); on an unpositioned cursor the first.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Result<OwnedPair<'_>> {
        self.moved(Some(true), |c, at, _| match at {
            At::Nowhere => c.first(),
            At::On => c.next(),
            At::Successor => c.get_current(),
            At::End => Ok(None),
        })
    }
    /// Previous record (the previous value of the key on multimaps); on an
    /// unpositioned cursor the last.
    #[inline]
    pub fn prev(&mut self) -> Result<OwnedPair<'_>> {
        self.moved(Some(false), |c, at, _| match at {
            At::Nowhere | At::End => c.last(),
            At::On | At::Successor => c.prev(),
        })
    }
    /// First value of the next key (after a delete: of the first key after
    /// the deleted record's key); on an unpositioned cursor the first.
    pub fn next_nodup(&mut self) -> Result<OwnedPair<'_>> {
        let cmp = self.txn.table(self.at.db)?.cmp;
        self.moved(None, |c, at, key| match at {
            At::Nowhere => c.first(),
            At::On => c.next_nodup(),
            // The successor may be a further value of the deleted record's key.
            At::Successor if c.current_key().is_some_and(|k| cmp.cmp(k, key).is_eq()) => c.next_nodup(),
            At::Successor => c.get_current(),
            At::End => Ok(None),
        })
    }
    /// Next value of the current key (after a delete: the value after the
    /// deleted one, if its key has one); `None` at the key's last value.
    pub fn next_dup(&mut self) -> Result<OwnedPair<'_>> {
        let cmp = self.txn.table(self.at.db)?.cmp;
        self.moved(None, |c, at, key| match at {
            At::On => c.next_dup(),
            At::Successor if c.current_key().is_some_and(|k| cmp.cmp(k, key).is_eq()) => c.get_current(),
            At::Nowhere | At::Successor | At::End => Ok(None),
        })
    }
    /// Exact key (its first value).
    pub fn set(&mut self, key: &[u8]) -> Result<OwnedPair<'_>> {
        self.seek(|c| c.set(key))
    }
    /// First key `>= key` (its first value).
    pub fn set_range(&mut self, key: &[u8]) -> Result<OwnedPair<'_>> {
        self.seek(|c| c.set_range(key))
    }
    /// The record at the cursor (after a delete: the successor of the deleted
    /// record, `None` if there is none); `Err(NoData)` when unpositioned.
    pub fn get_current(&mut self) -> Result<OwnedPair<'_>> {
        if self.at.marked && self.at.positioned {
            // Read where the mark stands, if it is a record in its leaf
            // (after a delete: the successor): no cursor built.
            let txn: &RwTxn<'env> = self.txn;
            if let Some(p) = self.at.mark.step_in_leaf(&txn.pages(), 0) {
                return Ok(Some(p));
            }
        }
        let t = self.txn.table(self.at.db)?;
        let mut c = fresh(self.txn, &t);
        match self.at.place(&mut c, self.at.after_del)? {
            At::Nowhere => Err(Error::NoData),
            At::On | At::Successor => c.get_current(),
            At::End => Ok(None),
        }
    }

    /// Stores a record and positions the cursor on it. With `CURRENT` the key
    /// must equal the key at the cursor; on a multimap `CURRENT` replaces the
    /// value at the cursor (only that one) with `val`.
    pub fn put(&mut self, key: &[u8], val: &[u8], flags: PutFlags) -> Result<()> {
        self.at.own(self.txn)?;
        let s = &mut self.at;
        // Whatever it writes, the mark may not hold afterwards.
        let marked = std::mem::take(&mut s.marked);
        if flags == PutFlags::CURRENT && !s.dupsort && marked && s.positioned && !s.after_del {
            // A plain table's record where the mark stands (`key` holds
            // its key): replaced at the marked path, with no search; the
            // mark still stands on it unless its leaf split.
            let t = self.txn.table(s.db)?;
            if !t.cmp.cmp(&s.key, key).is_eq() {
                s.marked = true;
                return Err(Error::KeyMismatch("the key differs from the key at the cursor"));
            }
            s.marked = put_marked(self.txn, s.db, &mut s.mark, key, val, flags)?;
            return Ok(());
        }
        if flags.contains(PutFlags::CURRENT) {
            let t = self.txn.table(s.db)?;
            let mut c = fresh(self.txn, &t);
            s.marked = marked;
            let at = s.place(&mut c, s.after_del);
            s.marked = false;
            let (k, v) = match at? {
                At::On | At::Successor => c.get_current()?.ok_or(Error::NoData)?,
                At::Nowhere | At::End => return Err(Error::NoData),
            };
            if !t.cmp.cmp(k, key).is_eq() {
                return Err(Error::KeyMismatch("the key differs from the key at the cursor"));
            }
            if let (true, Some(dcmp)) = (s.dupsort, Cmp::for_dups(t.flags)) {
                if !dcmp.cmp(v, val).is_eq() {
                    // The cursor stands on the record it replaces, whose
                    // value its own buffer keeps (the put may move it).
                    s.keep((k, v));
                    s.after_del = false;
                    // The new value first: a refused put changes nothing.
                    self.txn.put(s.db, key, val, flags - PutFlags::CURRENT)?;
                    self.txn.del(s.db, key, Some(&s.val))?;
                }
                s.keep((key, val));
                s.positioned = true;
                s.after_del = false;
                return Ok(());
            }
        }
        self.txn.put(s.db, key, val, flags)?;
        s.keep((key, val));
        s.positioned = true;
        s.after_del = false;
        Ok(())
    }

    /// The record a delete applies to: the one at the cursor (after a
    /// delete: the successor), remembered as the position (and marked).
    fn target(&mut self) -> Result<()> {
        self.at.own(self.txn)?;
        let s = &mut self.at;
        if s.marked && s.positioned && !s.after_del {
            // On the record the mark stands on: `key`/`val` hold it.
            return Ok(());
        }
        let t = self.txn.table(s.db)?;
        let mut c = fresh(self.txn, &t);
        let p = match s.place(&mut c, s.after_del)? {
            At::On | At::Successor => c.get_current()?.ok_or(Error::NoData)?,
            At::Nowhere | At::End => return Err(Error::NoData),
        };
        s.keep(p);
        s.marked = c.mark_into(&mut s.mark);
        s.after_del = false;
        Ok(())
    }

    /// Deletes the record at the cursor — on a multimap only the current
    /// value of the key (libmdbx's `mdbx_cursor_del` without `ALLDUPS`); the
    /// cursor then stands on the successor (see [`RwCursor`]).
    pub fn del(&mut self) -> Result<()> {
        self.target()?;
        let s = &mut self.at;
        if !s.dupsort && std::mem::take(&mut s.marked) {
            // A plain table's record: deleted where the mark stands, with
            // no search; the mark then stands where it was (on the
            // successor) unless the tree changed shape.
            s.marked = del_marked(self.txn, s.db, &mut s.mark)?;
            s.after_del = true;
            return Ok(());
        }
        if std::mem::take(&mut s.marked) {
            // A multimap value removed where the mark stands (if it can be:
            // else by search, below).
            if let Some(kept) = del_marked_value(self.txn, s.db, &mut s.mark, &s.key)? {
                s.marked = kept;
                s.after_del = true;
                return Ok(());
            }
        }
        let val = s.dupsort.then_some(&s.val[..]);
        if !self.txn.del(s.db, &s.key, val)? {
            return Err(Error::NoData);
        }
        s.after_del = true;
        Ok(())
    }

    /// Deletes the key at the cursor with all its values (libmdbx's
    /// `MDBX_ALLDUPS`); the cursor then stands on the first value of the next key.
    pub fn del_all(&mut self) -> Result<()> {
        self.target()?;
        let s = &mut self.at;
        if std::mem::take(&mut s.marked) {
            // Removed where the mark stands (a plain table's record: as `del`).
            s.marked = if s.dupsort {
                del_marked_key(self.txn, s.db, &mut s.mark)?
            } else {
                del_marked(self.txn, s.db, &mut s.mark)?
            };
            s.after_del = true;
            return Ok(());
        }
        if !self.txn.del(s.db, &s.key, None)? {
            return Err(Error::NoData);
        }
        s.after_del = true;
        Ok(())
    }
}
