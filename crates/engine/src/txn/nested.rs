//! Nested write transactions: a child's changes join its parent when it
//! commits and vanish when it aborts. The parent's state at the child's start
//! is kept in a [`Frame`]: small values by copy, the append-only page lists by
//! length, and each dirty page as it was before the child first changed it.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::{MetaGeo, PgnoHasher, PgnoSet, RwTxn, Table};
use crate::error::{Error, Result};

/// What a nested transaction must restore when it aborts: the parent's state
/// at its start, and each dirty page as it was before the child changed it
/// (`None`: the page was not dirty).
pub(crate) struct Frame {
    saved: Saved,
    pub(crate) undo: HashMap<u32, Option<crate::pool::PageBuf>, BuildHasherDefault<PgnoHasher>>,
    /// Pages (heads of chunks) the child took out of the spilled set
    /// (unspilled or freed); an abort puts them back.
    pub(crate) unspilled: PgnoSet,
    /// Every page of those chunks: their file contents are the parent's, so
    /// the child must not spill anything onto them.
    pub(crate) reserved: PgnoSet,
}

struct Saved {
    geo: MetaGeo,
    tables: Vec<Option<Table>>,
    /// `retired` and `consumed` only grow until the commit: their lengths
    /// are enough to undo a child (a copy would cost the parent's size).
    retired_len: usize,
    loose: Vec<u32>,
    reclaimed: crate::run_list::RunList,
    consumed_len: usize,
    partly_taken_len: usize,
    detent: Option<u64>,
    gc_exhausted: bool,
    stale_gc: Option<crate::gc::StaleGc>,
    gc_spent: bool,
    retired_count: u64,
    canary: [u64; 4],
}

impl<'env> RwTxn<'env> {
    /// Begins a nested (child) transaction: its changes become part of this
    /// transaction when it commits and vanish when it aborts (or is dropped).
    /// Children nest to any depth; the parent is unusable while a child lives.
    pub fn begin_nested_txn(&mut self) -> Result<NestedTxn<'_, 'env>> {
        self.check_usable()?;
        // The child starts without APPEND hints (and an abort restores none).
        for t in self.st.tables.iter_mut().flatten() {
            t.append_leaf = None;
        }
        let saved = Saved {
            geo: self.geo,
            tables: self.st.tables.clone(),
            retired_len: self.st.retired.len(),
            loose: self.st.loose.clone(),
            reclaimed: self.st.reclaimed.clone(),
            consumed_len: self.st.consumed.len(),
            partly_taken_len: self.st.partly_taken.len(),
            detent: self.detent,
            gc_exhausted: self.gc_exhausted,
            stale_gc: self.st.stale_gc,
            gc_spent: self.gc_spent,
            retired_count: self.st.retired_count,
            canary: self.st.canary,
        };
        self.st.frames.push(Frame {
            saved,
            undo: Default::default(),
            unspilled: Default::default(),
            reserved: Default::default(),
        });
        let depth = self.st.frames.len();
        Ok(NestedTxn { txn: self, depth, done: false })
    }

    fn end_nested(&mut self, depth: usize, commit: bool) {
        debug_assert_eq!(self.st.frames.len(), depth);
        let Some(f) = self.st.frames.pop() else { return };
        if commit {
            if let Some(parent) = self.st.frames.last_mut() {
                for (pgno, orig) in f.undo {
                    parent.undo.entry(pgno).or_insert(orig);
                }
                parent.unspilled.extend(f.unspilled);
                parent.reserved.extend(f.reserved);
            }
            return;
        }
        let ps = self.env.page_size;
        for (pgno, orig) in f.undo {
            // The page is back to its state before the child: in memory as
            // it was, or not the transaction's at all.
            self.st.spilled.remove(&pgno);
            let old = match orig {
                Some(buf) => {
                    self.dirty_extra += buf.pages(ps) - 1;
                    self.st.dirty.insert(pgno, buf)
                }
                None => self.st.dirty.remove(&pgno),
            };
            if let Some(old) = old {
                self.dirty_extra -= old.pages(ps) - 1;
                self.st.pool.recycle(old, ps);
            }
        }
        // Spilled before the child, and taken back or freed by it.
        self.st.spilled.extend(f.unspilled);
        let s = f.saved;
        self.geo = s.geo;
        self.st.tables = s.tables;
        self.st.read_loaded.get_mut().clear();
        debug_assert!(self.st.retired.len() >= s.retired_len, "retired pages only grow in a transaction");
        self.st.retired.truncate(s.retired_len);
        self.st.loose = s.loose;
        self.st.reclaimed = s.reclaimed;
        self.st.consumed.truncate(s.consumed_len);
        self.st.partly_taken.truncate(s.partly_taken_len);
        self.detent = s.detent;
        self.gc_exhausted = s.gc_exhausted;
        self.st.stale_gc = s.stale_gc;
        self.gc_spent = s.gc_spent;
        self.st.retired_count = s.retired_count;
        self.st.canary = s.canary;
        self.poisoned = false;
    }
}

/// A nested write transaction. It dereferences to [`RwTxn`], so every read and
/// write method is available; `commit` merges it into the parent, `abort` (or
/// dropping it) discards its changes alone.
pub struct NestedTxn<'p, 'env> {
    txn: &'p mut RwTxn<'env>,
    depth: usize,
    done: bool,
}

impl<'env> NestedTxn<'_, 'env> {
    /// Merges the child's changes into its parent. A child left unusable by an
    /// earlier error is aborted instead and `Err(BadTxn)` returned.
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        if self.txn.poisoned {
            self.txn.end_nested(self.depth, false);
            return Err(Error::BadTxn("the nested transaction had failed and was aborted"));
        }
        self.txn.end_nested(self.depth, true);
        Ok(())
    }

    /// Discards the child's changes.
    pub fn abort(mut self) {
        self.done = true;
        self.txn.end_nested(self.depth, false);
    }
}

impl<'env> std::ops::Deref for NestedTxn<'_, 'env> {
    type Target = RwTxn<'env>;
    fn deref(&self) -> &RwTxn<'env> {
        self.txn
    }
}

impl<'env> std::ops::DerefMut for NestedTxn<'_, 'env> {
    fn deref_mut(&mut self) -> &mut RwTxn<'env> {
        self.txn
    }
}

impl Drop for NestedTxn<'_, '_> {
    fn drop(&mut self) {
        if !self.done {
            self.txn.end_nested(self.depth, false);
        }
    }
}
