//! The write cursor: a cursor of a write transaction that can also put and
//! delete, keeping its position as a record rather than a page path. Between
//! moves that write nothing it also keeps the page path ([`Mark`]), so a walk
//! steps from page to page as a read cursor does instead of searching from
//! the root at every step.

use super::{Db, RwTxn};
use crate::btree::cursor::{Cursor, Mark};
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
    db: Db,
    /// The table is a multimap: the position includes the value.
    dupsort: bool,
    /// `key`/`val` hold a position.
    positioned: bool,
    /// Key of the current record (after a delete: of the deleted one).
    key: Vec<u8>,
    /// Multimaps: value of the current record (after a delete: of the deleted one).
    val: Vec<u8>,
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

/// Deletes the multimap value that `mark` stands on where it lies, without
/// a search (see [`crate::btree::dupsort::del_at_mark`]). `None`, nothing
/// changed, when it does not go so; else whether `mark` still holds,
/// standing where the value was.
fn del_marked_value(txn: &mut RwTxn<'_>, db: Db, mark: &mut Mark) -> Result<Option<bool>> {
    let Some((pgnos, idxs)) = mark.inner() else { return Ok(None) };
    let mut inner = write::Path::new();
    for (&pgno, &idx) in pgnos.iter().zip(idxs) {
        inner.push(pgno, idx as usize);
    }
    txn.guarded(|t| {
        let mut path = marked_path(mark);
        let kept = crate::btree::dupsort::del_at_mark(t, db, &mut path, &mut inner)?;
        if kept == Some(true) {
            mark.move_to(path.pgnos(), inner.pgnos());
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

/// Remembers `pair` as the position.
fn keep(key: &mut Vec<u8>, val: &mut Vec<u8>, dupsort: bool, pair: (&[u8], &[u8])) {
    key.clear();
    key.extend_from_slice(pair.0);
    if dupsort {
        val.clear();
        val.extend_from_slice(pair.1);
    }
}

impl<'t, 'env> RwCursor<'t, 'env> {
    /// A cursor with no position yet.
    pub(super) fn new(txn: &'t mut RwTxn<'env>, db: Db, dupsort: bool) -> Self {
        RwCursor {
            txn,
            db,
            dupsort,
            positioned: false,
            key: Vec::new(),
            val: Vec::new(),
            after_del: false,
            mark: Mark::NONE,
            marked: false,
        }
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

    /// Finds the position again, runs `f` on a read cursor there and
    /// remembers where it ends (a `None` from `f` keeps the position).
    /// `f` also gets the remembered key (after a delete: the deleted key).
    ///
    /// `step`: `f` is `next` (`Some(true)`) or `prev` (`Some(false)`). While
    /// the mark holds, a step to a neighbour on the same leaf (or the same
    /// page of a key's values) then builds no cursor at all
    /// ([`Mark::step_in_leaf`]).
    fn moved<'a>(
        &'a mut self,
        step: Option<bool>,
        f: impl FnOnce(&mut Cursor<'a>, At, &[u8]) -> Result<OwnedPair<'a>>,
    ) -> Result<OwnedPair<'a>> {
        if let (Some(forward), true, true) = (step, self.marked, self.positioned) {
            // After a delete, `next` returns the successor the mark stands on.
            let by = match (forward, self.after_del) {
                (true, true) => Some(0),
                (true, false) => Some(1),
                (false, false) => Some(-1),
                (false, true) => None,
            };
            let pages = self.txn.pages();
            if let Some(p) = by.and_then(|by| self.mark.step_in_leaf(&pages, by)) {
                keep(&mut self.key, &mut self.val, self.dupsort, p);
                self.after_del = false;
                return Ok(Some(p));
            }
        }
        let after_del = std::mem::take(&mut self.after_del);
        let t = self.txn.table(self.db)?;
        let mut c = fresh(self.txn, &t);
        let at = self.place(&mut c, after_del)?;
        self.marked = false;
        let r = f(&mut c, at, &self.key)?;
        if let Some(p) = r {
            keep(&mut self.key, &mut self.val, self.dupsort, p);
            self.positioned = true;
            self.marked = c.mark_into(&mut self.mark);
        }
        Ok(r)
    }

    /// Positions anew (first, last, set, set_range): unpositioned if `f` finds nothing.
    fn seek<'a>(&'a mut self, f: impl FnOnce(&mut Cursor<'a>) -> Result<OwnedPair<'a>>) -> Result<OwnedPair<'a>> {
        self.positioned = false;
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
    pub fn prev(&mut self) -> Result<OwnedPair<'_>> {
        self.moved(Some(false), |c, at, _| match at {
            At::Nowhere | At::End => c.last(),
            At::On | At::Successor => c.prev(),
        })
    }
    /// First value of the next key (after a delete: of the first key after
    /// the deleted record's key); on an unpositioned cursor the first.
    pub fn next_nodup(&mut self) -> Result<OwnedPair<'_>> {
        let cmp = self.txn.table(self.db)?.cmp;
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
        let cmp = self.txn.table(self.db)?.cmp;
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
        let t = self.txn.table(self.db)?;
        let mut c = fresh(self.txn, &t);
        match self.place(&mut c, self.after_del)? {
            At::Nowhere => Err(Error::NoData),
            At::On | At::Successor => c.get_current(),
            At::End => Ok(None),
        }
    }

    /// Stores a record and positions the cursor on it. With `CURRENT` the key
    /// must equal the key at the cursor; on a multimap `CURRENT` replaces the
    /// value at the cursor (only that one) with `val`.
    pub fn put(&mut self, key: &[u8], val: &[u8], flags: PutFlags) -> Result<()> {
        // Whatever it writes, the mark may not hold afterwards.
        let marked = std::mem::take(&mut self.marked);
        if flags == PutFlags::CURRENT && !self.dupsort && marked && self.positioned && !self.after_del {
            // A plain table's record where the mark stands (`key` holds
            // its key): replaced at the marked path, with no search; the
            // mark still stands on it unless its leaf split.
            let t = self.txn.table(self.db)?;
            if !t.cmp.cmp(&self.key, key).is_eq() {
                self.marked = true;
                return Err(Error::KeyMismatch("the key differs from the key at the cursor"));
            }
            self.marked = put_marked(self.txn, self.db, &mut self.mark, key, val, flags)?;
            return Ok(());
        }
        if flags.contains(PutFlags::CURRENT) {
            let t = self.txn.table(self.db)?;
            let mut c = fresh(self.txn, &t);
            self.marked = marked;
            let at = self.place(&mut c, self.after_del);
            self.marked = false;
            let (k, v) = match at? {
                At::On | At::Successor => c.get_current()?.ok_or(Error::NoData)?,
                At::Nowhere | At::End => return Err(Error::NoData),
            };
            if !t.cmp.cmp(k, key).is_eq() {
                return Err(Error::KeyMismatch("the key differs from the key at the cursor"));
            }
            if let (true, Some(dcmp)) = (self.dupsort, Cmp::for_dups(t.flags)) {
                if !dcmp.cmp(v, val).is_eq() {
                    // The cursor stands on the record it replaces, whose
                    // value its own buffer keeps (the put may move it).
                    keep(&mut self.key, &mut self.val, true, (k, v));
                    self.after_del = false;
                    // The new value first: a refused put changes nothing.
                    self.txn.put(self.db, key, val, flags - PutFlags::CURRENT)?;
                    self.txn.del(self.db, key, Some(&self.val))?;
                }
                keep(&mut self.key, &mut self.val, true, (key, val));
                self.positioned = true;
                self.after_del = false;
                return Ok(());
            }
        }
        self.txn.put(self.db, key, val, flags)?;
        keep(&mut self.key, &mut self.val, self.dupsort, (key, val));
        self.positioned = true;
        self.after_del = false;
        Ok(())
    }

    /// The record a delete applies to: the one at the cursor (after a
    /// delete: the successor), remembered as the position (and marked).
    fn target(&mut self) -> Result<()> {
        if self.marked && self.positioned && !self.after_del {
            // On the record the mark stands on: `key`/`val` hold it.
            return Ok(());
        }
        let t = self.txn.table(self.db)?;
        let mut c = fresh(self.txn, &t);
        let p = match self.place(&mut c, self.after_del)? {
            At::On | At::Successor => c.get_current()?.ok_or(Error::NoData)?,
            At::Nowhere | At::End => return Err(Error::NoData),
        };
        keep(&mut self.key, &mut self.val, self.dupsort, p);
        self.marked = c.mark_into(&mut self.mark);
        self.after_del = false;
        Ok(())
    }

    /// Deletes the record at the cursor — on a multimap only the current
    /// value of the key (libmdbx's `mdbx_cursor_del` without `ALLDUPS`); the
    /// cursor then stands on the successor (see [`RwCursor`]).
    pub fn del(&mut self) -> Result<()> {
        self.target()?;
        if !self.dupsort && std::mem::take(&mut self.marked) {
            // A plain table's record: deleted where the mark stands, with
            // no search; the mark then stands where it was (on the
            // successor) unless the tree changed shape.
            self.marked = del_marked(self.txn, self.db, &mut self.mark)?;
            self.after_del = true;
            return Ok(());
        }
        if std::mem::take(&mut self.marked) {
            // A multimap value removed where the mark stands (if it can be:
            // else by search, below).
            if let Some(kept) = del_marked_value(self.txn, self.db, &mut self.mark)? {
                self.marked = kept;
                self.after_del = true;
                return Ok(());
            }
        }
        let val = self.dupsort.then_some(&self.val[..]);
        if !self.txn.del(self.db, &self.key, val)? {
            return Err(Error::NoData);
        }
        self.after_del = true;
        Ok(())
    }

    /// Deletes the key at the cursor with all its values (libmdbx's
    /// `MDBX_ALLDUPS`); the cursor then stands on the first value of the next key.
    pub fn del_all(&mut self) -> Result<()> {
        self.target()?;
        self.marked = false;
        if !self.txn.del(self.db, &self.key, None)? {
            return Err(Error::NoData);
        }
        self.after_del = true;
        Ok(())
    }
}
