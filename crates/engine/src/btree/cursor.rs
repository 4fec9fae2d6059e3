//! Read cursors: a stack of (page, index) from the root to a leaf. Pages have no
//! sibling links, so moving past the end of a leaf climbs until an index can move
//! and descends again (format doc §5.6).

use super::{child_at, key_at, load, node_value, search_branch, search_leaf, Cmp, MAX_DEPTH};
use crate::error::{Error, Result};
use crate::format::node;
use crate::format::page::Page;
use crate::format::P_INVALID;
use crate::txn::Pages;

#[derive(Clone, Copy)]
struct Level<'t> {
    page: Page<'t>,
    pgno: u32,
    idx: usize,
}

/// A cursor over one table of a transaction. Keys and values borrow the
/// transaction (zero-copy from the memory map for read-only transactions).
pub struct Cursor<'t> {
    pages: Pages<'t>,
    root: u32,
    height: u16,
    cmp: Cmp,
    stack: [Option<Level<'t>>; MAX_DEPTH],
    depth: usize,
    eof: bool,
}

type Pair<'t> = (&'t [u8], &'t [u8]);

impl<'t> Cursor<'t> {
    pub(crate) fn new(pages: Pages<'t>, root: u32, height: u16, cmp: Cmp) -> Cursor<'t> {
        Cursor { pages, root, height, cmp, stack: [None; MAX_DEPTH], depth: 0, eof: false }
    }

    /// Whether the cursor is not positioned on a record.
    pub fn eof(&self) -> bool {
        self.depth == 0 || self.eof
    }

    fn top(&self) -> Level<'t> {
        self.stack[self.depth - 1].expect("positioned cursor has a leaf")
    }

    fn current_pair(&self) -> Result<Pair<'t>> {
        let l = self.top();
        let n = node::node(l.page, l.idx, l.pgno)?;
        let v = node_value(&self.pages, &n, l.pgno, l.page.txnid())?;
        Ok((n.key, v))
    }

    fn push(&mut self, pgno: u32, front: u64, mut idx_of: impl FnMut(Page<'t>) -> Result<usize>) -> Result<Page<'t>> {
        if self.depth >= MAX_DEPTH || self.depth >= self.height as usize {
            return Err(Error::corrupted(pgno, "tree deeper than its height (cycle?)"));
        }
        let page = load(&self.pages, pgno, front)?;
        let is_last_level = self.depth + 1 == self.height as usize;
        if page.is_leaf() != is_last_level {
            return Err(Error::corrupted(pgno, "leaf at a depth that differs from the tree height"));
        }
        let idx = idx_of(page)?;
        self.stack[self.depth] = Some(Level { page, pgno, idx });
        self.depth += 1;
        Ok(page)
    }

    /// Descends from the current top (or the root) always taking the first (or last) entry.
    fn descend_edge(&mut self, last: bool) -> Result<()> {
        loop {
            let (pgno, front) = if self.depth == 0 {
                (self.root, self.pages.front)
            } else {
                let l = self.top();
                if l.page.is_leaf() {
                    return Ok(());
                }
                (child_at(l.page, l.idx, l.pgno)?, l.page.txnid())
            };
            self.push(pgno, front, |p| Ok(if last { p.num_entries() - 1 } else { 0 }))?;
        }
    }

    fn edge(&mut self, last: bool) -> Result<Option<Pair<'t>>> {
        self.depth = 0;
        self.eof = false;
        if self.root == P_INVALID {
            self.eof = true;
            return Ok(None);
        }
        self.descend_edge(last)?;
        self.current_pair().map(Some)
    }

    /// First record.
    pub fn first(&mut self) -> Result<Option<Pair<'t>>> {
        self.edge(false)
    }

    /// Last record.
    pub fn last(&mut self) -> Result<Option<Pair<'t>>> {
        self.edge(true)
    }

    /// Moves one step; returns false at the end (position unchanged).
    fn step(&mut self, forward: bool) -> Result<bool> {
        let mut level = self.depth;
        while level > 0 {
            let l = self.stack[level - 1].expect("level on stack");
            let n = l.page.num_entries();
            let moved = if forward { l.idx + 1 < n } else { l.idx > 0 };
            if moved {
                let idx = if forward { l.idx + 1 } else { l.idx - 1 };
                self.stack[level - 1] = Some(Level { idx, ..l });
                self.depth = level;
                self.descend_edge(!forward)?;
                return Ok(true);
            }
            level -= 1;
        }
        Ok(false)
    }

    /// Next record; on an unpositioned cursor the first.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Pair<'t>>> {
        if self.depth == 0 {
            return self.first();
        }
        if self.eof {
            return Ok(None);
        }
        if self.step(true)? {
            self.current_pair().map(Some)
        } else {
            self.eof = true;
            Ok(None)
        }
    }

    /// Previous record; on an unpositioned cursor the last.
    pub fn prev(&mut self) -> Result<Option<Pair<'t>>> {
        if self.depth == 0 {
            return self.last();
        }
        // After running off the end the position is still the last record, so
        // stepping back from it gives its predecessor (as libmdbx does).
        self.eof = false;
        if self.step(false)? {
            self.current_pair().map(Some)
        } else {
            Ok(None)
        }
    }

    fn at_valid_leaf_entry(&self) -> bool {
        let l = self.top();
        l.idx < l.page.num_entries()
    }

    /// Positions at the first key `>= key` in the leaf; returns whether it matched exactly.
    fn seek(&mut self, key: &[u8]) -> Result<Option<bool>> {
        self.depth = 0;
        self.eof = false;
        if self.root == P_INVALID {
            self.eof = true;
            return Ok(None);
        }
        let cmp = self.cmp;
        let mut pgno = self.root;
        let mut front = self.pages.front;
        loop {
            let mut exact = false;
            let page = self.push(pgno, front, |p| {
                if p.is_leaf() {
                    let (i, e) = search_leaf(p, key, cmp, pgno)?;
                    exact = e;
                    Ok(i)
                } else {
                    search_branch(p, key, cmp, pgno)
                }
            })?;
            if page.is_leaf() {
                return Ok(Some(exact));
            }
            let l = self.top();
            front = page.txnid();
            pgno = child_at(page, l.idx, pgno)?;
        }
    }

    /// Positions at exactly `key`; `None` (and unpositioned) if absent.
    pub fn set(&mut self, key: &[u8]) -> Result<Option<Pair<'t>>> {
        match self.seek(key)? {
            Some(true) => self.current_pair().map(Some),
            _ => {
                self.depth = 0;
                Ok(None)
            }
        }
    }

    /// Positions at the first key `>= key` (lower bound).
    pub fn set_range(&mut self, key: &[u8]) -> Result<Option<Pair<'t>>> {
        if self.seek(key)?.is_none() {
            return Ok(None);
        }
        if self.at_valid_leaf_entry() {
            return self.current_pair().map(Some);
        }
        // Past the last key of this leaf: step back onto it, then forward.
        let l = self.top();
        self.stack[self.depth - 1] = Some(Level { idx: l.idx - 1, ..l });
        if self.step(true)? {
            self.current_pair().map(Some)
        } else {
            self.eof = true;
            Ok(None)
        }
    }

    /// The record at the cursor; `Err(NoData)` when unpositioned.
    pub fn get_current(&self) -> Result<Option<Pair<'t>>> {
        if self.depth == 0 {
            return Err(Error::NoData);
        }
        if !self.at_valid_leaf_entry() {
            return Err(Error::NoData);
        }
        self.current_pair().map(Some)
    }

    /// First node as (key, node flags), without resolving its value.
    pub(crate) fn first_node(&mut self) -> Result<Option<(&'t [u8], u8)>> {
        self.depth = 0;
        self.eof = false;
        if self.root == P_INVALID {
            return Ok(None);
        }
        self.descend_edge(false)?;
        self.current_node().map(Some)
    }

    /// Next node as (key, node flags).
    pub(crate) fn next_node(&mut self) -> Result<Option<(&'t [u8], u8)>> {
        if self.depth == 0 || self.eof {
            return Ok(None);
        }
        if self.step(true)? {
            self.current_node().map(Some)
        } else {
            self.eof = true;
            Ok(None)
        }
    }

    fn current_node(&self) -> Result<(&'t [u8], u8)> {
        let l = self.top();
        let n = node::node(l.page, l.idx, l.pgno)?;
        Ok((n.key, n.flags))
    }

    /// The key at the cursor, if positioned.
    pub(crate) fn current_key(&self) -> Option<&'t [u8]> {
        if self.depth == 0 || !self.at_valid_leaf_entry() {
            return None;
        }
        let l = self.top();
        key_at(l.page, l.idx, l.pgno).ok()
    }
}
