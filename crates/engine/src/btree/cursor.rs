//! Read cursors: a stack of (page, index) from the root to a leaf. Pages have no
//! sibling links, so moving past the end of a leaf climbs until an index can move
//! and descends again (docs/format.md, "Searching").
//!
//! On a DUPSORT table the cursor holds a second, inner cursor over the values of
//! the current key: over the key's sub-page (an inline miniature leaf) or over
//! its nested tree, whose keys are the values (docs/format.md, "Multimap values").

use super::{check_subpage, child_at, key_at, load, node_value, search_branch, search_leaf, Cmp, MAX_DEPTH};
use crate::btree::pages::Pages;
use crate::error::{Error, Result};
use crate::format::node::{self, N_BIG, N_DUP, N_TREE};
use crate::format::page::{flags as pflags, Page};
use crate::format::tree::{Tree, TREE_SIZE};
use crate::format::{PAGEHDRSZ, P_INVALID};

#[derive(Clone, Copy)]
struct Level<'t> {
    page: Page<'t>,
    pgno: u32,
    idx: usize,
}

/// Where a cursor's tree starts.
#[derive(Clone, Copy)]
enum Root<'t> {
    Empty,
    /// A tree of pages.
    Page(u32),
    /// A sub-page inside the leaf node of page `host`.
    Inline(Page<'t>, u32),
}

/// A cursor over one table of a transaction. Keys and values borrow the
/// transaction (zero-copy from the memory map for read-only transactions).
pub struct Cursor<'t> {
    pages: Pages<'t>,
    root: Root<'t>,
    height: u16,
    cmp: Cmp,
    /// Largest txnid allowed on the root page.
    front: u64,
    stack: [Option<Level<'t>>; MAX_DEPTH],
    depth: usize,
    eof: bool,
    /// DUPSORT tables: comparator of the values.
    dup_cmp: Option<Cmp>,
    /// DUPSORT tables: cursor over the current key's values (`None`: the key has
    /// a single plain value).
    dup: Option<Box<Cursor<'t>>>,
    /// The inner cursor's box while the current key has a plain value, kept
    /// for the next key with several (a walk over a multimap of plain and
    /// multi-value keys allocated one per change between them).
    spare_dup: Option<Box<Cursor<'t>>>,
}

type Pair<'t> = (&'t [u8], &'t [u8]);

impl<'t> Cursor<'t> {
    pub(crate) fn new(pages: Pages<'t>, root: u32, height: u16, cmp: Cmp) -> Cursor<'t> {
        let root = if root == P_INVALID { Root::Empty } else { Root::Page(root) };
        Cursor {
            pages,
            root,
            height,
            cmp,
            front: pages.front,
            stack: [None; MAX_DEPTH],
            depth: 0,
            eof: false,
            dup_cmp: None,
            dup: None,
            spare_dup: None,
        }
    }

    /// Makes this a cursor over a DUPSORT table whose values compare with `cmp`.
    pub(crate) fn set_dup_cmp(&mut self, cmp: Option<Cmp>) {
        self.dup_cmp = cmp;
    }

    /// Order of two keys under this table's key comparator.
    #[inline]
    pub(crate) fn key_order(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        self.cmp.cmp(a, b)
    }

    /// Order of two records in this table: by key, then (multimaps) by value.
    pub(crate) fn pair_order(&self, a: Pair<'_>, b: Pair<'_>) -> std::cmp::Ordering {
        self.cmp.cmp(a.0, b.0).then_with(|| self.dup_cmp.map_or(std::cmp::Ordering::Equal, |c| c.cmp(a.1, b.1)))
    }

    /// Whether the cursor is not positioned on a record.
    pub fn eof(&self) -> bool {
        self.depth == 0 || self.eof
    }

    fn top(&self) -> Level<'t> {
        self.stack[self.depth - 1].expect("positioned cursor has a leaf")
    }

    #[inline]
    fn current_pair(&self) -> Result<Pair<'t>> {
        let l = self.top();
        if l.page.is_dupfix() || l.page.is_subpage() {
            // A page of values (nested tree leaf or sub-page): keys only.
            return Ok((key_at(l.page, l.idx, l.pgno)?, &[]));
        }
        let n = node::node(l.page, l.idx, l.pgno)?;
        if self.dup_cmp.is_some() {
            if let Some(d) = &self.dup {
                return Ok((n.key, d.current_pair()?.0));
            }
        }
        if n.flags & N_DUP != 0 {
            return Err(Error::corrupted(l.pgno, "multi-value node in a table without DUPSORT"));
        }
        let v = node_value(&self.pages, &n, l.pgno, l.page.txnid())?;
        Ok((n.key, v))
    }

    /// The neighbour of the current record in the same leaf (`forward`: the
    /// next one), on a table without multi-value keys, when it is a plain
    /// record (key and value on the page); `None` sends the caller to the
    /// general path, which also reports any damage found here. Returning
    /// the pair by value rather than through the general path's `Result`
    /// matters: merged with it, the pair was copied field by field and the
    /// caller's load of it stalled on store forwarding, once per record.
    #[inline(always)]
    pub(crate) fn neighbour_in_leaf(&mut self, forward: bool) -> Option<Pair<'t>> {
        if self.dup_cmp.is_some() || self.depth == 0 || (forward && self.eof) {
            return None;
        }
        let l = self.stack[self.depth - 1].as_mut()?;
        let idx = if forward {
            l.idx + 1
        } else {
            // After running off the end the position is still the last record.
            l.idx.checked_sub(1)?
        };
        if idx >= l.page.num_entries() || l.page.flags() & (pflags::DUPFIX | pflags::SUBP) != 0 {
            return None;
        }
        let n = node::node(l.page, idx, l.pgno).ok()?;
        if n.flags & (N_DUP | N_BIG) != 0 {
            return None;
        }
        l.idx = idx;
        if !forward {
            self.eof = false;
        }
        Some((n.key, n.data))
    }

    /// Sets up the inner cursor for the node under the cursor (DUPSORT tables).
    fn enter_dup(&mut self, last: bool) -> Result<()> {
        let Some(dcmp) = self.dup_cmp else {
            return Ok(());
        };
        let l = self.top();
        let n = node::node(l.page, l.idx, l.pgno)?;
        let inner = if n.flags == N_DUP {
            let sp = Page { buf: n.data };
            check_subpage(sp, l.pgno)?;
            let mut c = Cursor::new(self.pages, P_INVALID, 1, dcmp);
            c.root = Root::Inline(sp, l.pgno);
            Some(c)
        } else if n.flags == N_DUP | N_TREE {
            if n.data.len() != TREE_SIZE {
                return Err(Error::corrupted(l.pgno, "nested tree descriptor has a bad size"));
            }
            let t = Tree::read(n.data);
            if t.root == P_INVALID || t.height == 0 {
                return Err(Error::corrupted(l.pgno, "empty nested tree"));
            }
            if t.root < crate::format::NUM_METAS
                || t.root >= self.pages.valid && !self.pages.dirty.is_some_and(|d| d.contains_key(&t.root))
            {
                return Err(Error::corrupted(l.pgno, "nested tree root outside the allocated pages"));
            }
            let mut c = Cursor::new(self.pages, t.root, t.height, dcmp);
            c.front = l.page.txnid();
            Some(c)
        } else if n.flags & (N_DUP | N_TREE) != 0 {
            return Err(Error::corrupted(l.pgno, "bad node flags in a DUPSORT table"));
        } else {
            None
        };
        match inner {
            Some(c) => {
                let mut b = match self.dup.take().or_else(|| self.spare_dup.take()) {
                    Some(mut b) => {
                        *b = c;
                        b
                    }
                    None => Box::new(c),
                };
                b.edge(last)?;
                self.dup = Some(b);
            }
            None => {
                if let Some(b) = self.dup.take() {
                    self.spare_dup = Some(b);
                }
            }
        }
        Ok(())
    }

    fn push(&mut self, pgno: u32, front: u64, mut idx_of: impl FnMut(Page<'t>) -> Result<usize>) -> Result<Page<'t>> {
        if self.depth >= MAX_DEPTH || self.depth >= self.height as usize {
            return Err(Error::corrupted(pgno, "tree deeper than its height (cycle?)"));
        }
        let page = match (self.root, self.depth) {
            (Root::Inline(sp, _), 0) => sp,
            _ => {
                let from = if self.depth == 0 { pgno } else { self.top().pgno };
                load(&self.pages, pgno, front, from)?
            }
        };
        let is_last_level = self.depth + 1 == self.height as usize;
        if page.is_leaf() != is_last_level {
            return Err(Error::corrupted(pgno, "leaf at a depth that differs from the tree height"));
        }
        let idx = idx_of(page)?;
        self.stack[self.depth] = Some(Level { page, pgno, idx });
        self.depth += 1;
        Ok(page)
    }

    fn root_pgno(&self) -> u32 {
        match self.root {
            Root::Page(p) => p,
            Root::Inline(_, host) => host,
            Root::Empty => P_INVALID,
        }
    }

    /// Descends from the current top (or the root) always taking the first (or last) entry.
    fn descend_edge(&mut self, last: bool) -> Result<()> {
        loop {
            let (pgno, front) = if self.depth == 0 {
                (self.root_pgno(), self.front)
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
        if matches!(self.root, Root::Empty) {
            self.eof = true;
            return Ok(None);
        }
        self.descend_edge(last)?;
        self.enter_dup(last)?;
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

    /// Moves one key; returns false at the end (position unchanged).
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
                if level < self.depth && self.depth >= 2 {
                    // A new leaf: a scan will go on to the one after it.
                    // Start loading that leaf's header and entries now
                    // (their loads would otherwise come one after the other
                    // when the scan gets there): scans of trees whose leaves
                    // lie all over the file were 20% faster. A bad child
                    // number is left for the descent to report.
                    let p = self.stack[self.depth - 2].expect("parent on stack");
                    let sib = if forward { p.idx + 1 } else { p.idx.wrapping_sub(1) };
                    if sib < p.page.num_entries() {
                        if let Ok(buf) = child_at(p.page, sib, p.pgno).and_then(|c| self.pages.get(c)) {
                            for off in [0, 64, 128] {
                                crate::os::prefetch(buf, off);
                            }
                        }
                    }
                }
                self.enter_dup(!forward)?;
                return Ok(true);
            }
            level -= 1;
        }
        Ok(false)
    }

    /// Moves within the current key's values; false when there is no further value.
    fn step_dup(&mut self, forward: bool) -> Result<bool> {
        match &mut self.dup {
            Some(d) => d.step(forward),
            None => Ok(false),
        }
    }

    /// Next record (the next value of the key on DUPSORT tables); on an
    /// unpositioned cursor the first.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Result<Option<Pair<'t>>> {
        match self.neighbour_in_leaf(true) {
            Some(p) => Ok(Some(p)),
            None => self.next_general(),
        }
    }

    #[inline(never)]
    fn next_general(&mut self) -> Result<Option<Pair<'t>>> {
        if self.depth == 0 {
            return self.first();
        }
        if self.eof {
            return Ok(None);
        }
        if self.step_dup(true)? || self.step(true)? {
            self.current_pair().map(Some)
        } else {
            self.eof = true;
            Ok(None)
        }
    }

    /// Previous record; on an unpositioned cursor the last.
    #[inline]
    pub fn prev(&mut self) -> Result<Option<Pair<'t>>> {
        match self.neighbour_in_leaf(false) {
            Some(p) => Ok(Some(p)),
            None => self.prev_general(),
        }
    }

    #[inline(never)]
    fn prev_general(&mut self) -> Result<Option<Pair<'t>>> {
        if self.depth == 0 {
            return self.last();
        }
        // After running off the end the position is still the last record, so
        // stepping back from it gives its predecessor (as libmdbx does).
        self.eof = false;
        if self.step_dup(false)? || self.step(false)? {
            self.current_pair().map(Some)
        } else {
            Ok(None)
        }
    }

    /// First value of the next key (DUPSORT); `next` on other tables.
    pub fn next_nodup(&mut self) -> Result<Option<Pair<'t>>> {
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

    /// Last value of the previous key (DUPSORT); `prev` on other tables.
    pub fn prev_nodup(&mut self) -> Result<Option<Pair<'t>>> {
        if self.depth == 0 {
            return self.last();
        }
        self.eof = false;
        if self.step(false)? {
            self.current_pair().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Next value of the current key; `None` at its last value (position kept).
    pub fn next_dup(&mut self) -> Result<Option<Pair<'t>>> {
        if self.depth == 0 || self.eof {
            return Ok(None);
        }
        if self.step_dup(true)? {
            self.current_pair().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Previous value of the current key; `None` at its first value.
    pub fn prev_dup(&mut self) -> Result<Option<Pair<'t>>> {
        if self.depth == 0 || self.eof {
            return Ok(None);
        }
        if self.step_dup(false)? {
            self.current_pair().map(Some)
        } else {
            Ok(None)
        }
    }

    /// First value of the current key.
    pub fn first_dup(&mut self) -> Result<Option<Pair<'t>>> {
        if self.depth == 0 {
            return Err(Error::NoData);
        }
        if let Some(d) = &mut self.dup {
            d.edge(false)?;
        }
        self.current_pair().map(Some)
    }

    /// Last value of the current key.
    pub fn last_dup(&mut self) -> Result<Option<Pair<'t>>> {
        if self.depth == 0 {
            return Err(Error::NoData);
        }
        if let Some(d) = &mut self.dup {
            d.edge(true)?;
        }
        self.current_pair().map(Some)
    }

    /// Number of values of the current key (1 on other tables).
    pub fn count(&self) -> Result<u64> {
        if self.depth == 0 || !self.at_valid_leaf_entry() {
            return Err(Error::NoData);
        }
        let Some(_) = self.dup_cmp else { return Ok(1) };
        let l = self.top();
        let n = node::node(l.page, l.idx, l.pgno)?;
        Ok(match n.flags {
            N_DUP => Page { buf: n.data }.num_entries() as u64,
            f if f == N_DUP | N_TREE => Tree::read(n.data).items,
            _ => 1,
        })
    }

    fn at_valid_leaf_entry(&self) -> bool {
        let l = self.top();
        l.idx < l.page.num_entries()
    }

    /// Positions at the first key `>= key` in the leaf; returns whether it matched exactly.
    fn seek(&mut self, key: &[u8]) -> Result<Option<bool>> {
        self.depth = 0;
        self.eof = false;
        if matches!(self.root, Root::Empty) {
            self.eof = true;
            return Ok(None);
        }
        let cmp = self.cmp;
        let mut pgno = self.root_pgno();
        let mut front = self.front;
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

    /// Positions at exactly `key` (its first value); `None` (and unpositioned) if absent.
    pub fn set(&mut self, key: &[u8]) -> Result<Option<Pair<'t>>> {
        match self.seek(key)? {
            Some(true) => {
                self.enter_dup(false)?;
                self.current_pair().map(Some)
            }
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
            self.enter_dup(false)?;
            return self.current_pair().map(Some);
        }
        // Past the last key of this leaf: step back onto it, then forward.
        let l = self.top();
        self.stack[self.depth - 1] = Some(Level { idx: l.idx - 1, ..l });
        if self.step(true)? {
            self.current_pair().map(Some)
        } else {
            self.enter_dup(true)?;
            self.eof = true;
            Ok(None)
        }
    }

    /// DUPSORT: positions at exactly (`key`, `val`).
    pub fn get_both(&mut self, key: &[u8], val: &[u8]) -> Result<Option<Pair<'t>>> {
        self.need_dups()?;
        match self.get_both_range(key, val)? {
            Some((k, v)) if self.dup_cmp.expect("dupsort").cmp(v, val).is_eq() => Ok(Some((k, v))),
            _ => {
                self.depth = 0;
                Ok(None)
            }
        }
    }

    /// DUPSORT: `key` exactly, first value `>= val`.
    pub fn get_both_range(&mut self, key: &[u8], val: &[u8]) -> Result<Option<Pair<'t>>> {
        self.need_dups()?;
        if self.set(key)?.is_none() {
            return Ok(None);
        }
        match &mut self.dup {
            Some(d) => {
                if d.set_range(val)?.is_none() {
                    self.depth = 0;
                    return Ok(None);
                }
                self.current_pair().map(Some)
            }
            None => {
                let (k, v) = self.current_pair()?;
                if self.dup_cmp.expect("dupsort").cmp(v, val).is_ge() {
                    Ok(Some((k, v)))
                } else {
                    self.depth = 0;
                    Ok(None)
                }
            }
        }
    }

    /// First pair `>= (key, val)` (`val` only matters on multimaps). Returns
    /// whether it matched exactly (libmdbx's `MDBX_SET_LOWERBOUND`).
    pub fn set_lowerbound(&mut self, key: &[u8], val: Option<&[u8]>) -> Result<Option<(bool, Pair<'t>)>> {
        let Some((k, v)) = self.set_range(key)? else { return Ok(None) };
        let key_eq = self.cmp.cmp(k, key).is_eq();
        match (val, self.dup_cmp) {
            (Some(want), Some(dc)) if key_eq => {
                if let Some(d) = &mut self.dup {
                    if d.set_range(want)?.is_some() {
                        let (k, v) = self.current_pair()?;
                        return Ok(Some((dc.cmp(v, want).is_eq(), (k, v))));
                    }
                } else if dc.cmp(v, want).is_ge() {
                    return Ok(Some((dc.cmp(v, want).is_eq(), (k, v))));
                }
                // Every value of the key is smaller: the next key.
                Ok(self.next_nodup()?.map(|p| (false, p)))
            }
            _ => Ok(Some((key_eq && val.is_none_or(|w| self.dup_cmp.is_some() || v == w), (k, v)))),
        }
    }

    /// First pair `> (key, val)` (`MDBX_SET_UPPERBOUND`); without `val` the
    /// first key greater than `key`.
    pub fn set_upperbound(&mut self, key: &[u8], val: Option<&[u8]>) -> Result<Option<Pair<'t>>> {
        match self.set_lowerbound(key, val)? {
            None => Ok(None),
            Some((true, _)) if val.is_some() && self.dup_cmp.is_some() => self.next(),
            Some((_, (k, _))) if val.is_none() && self.cmp.cmp(k, key).is_eq() => self.next_nodup(),
            Some((true, _)) => self.next(),
            Some((false, p)) => Ok(Some(p)),
        }
    }

    /// DUPFIXED: the values of the current key on the inner page under the
    /// cursor, as one buffer of `n × size` bytes; the cursor moves to the last
    /// of them (libmdbx's `MDBX_GET_MULTIPLE`).
    pub fn get_multiple(&mut self) -> Result<Option<&'t [u8]>> {
        self.need_dups()?;
        if self.depth == 0 || !self.at_valid_leaf_entry() {
            return Err(Error::NoData);
        }
        match &mut self.dup {
            None => Ok(Some(self.current_pair()?.1)),
            Some(d) => {
                let l = d.top();
                if !l.page.is_dupfix() {
                    return Err(Error::Incompatible("GET_MULTIPLE needs a DUP_FIXED table".into()));
                }
                let k = l.page.dupfix_ksize() as usize;
                let n = l.page.num_entries();
                let bytes = l
                    .page
                    .buf
                    .get(PAGEHDRSZ..PAGEHDRSZ + n * k)
                    .ok_or_else(|| Error::corrupted(l.pgno, "DUPFIX items outside the page"))?;
                let depth = d.depth;
                d.stack[depth - 1] = Some(Level { idx: n - 1, ..l });
                Ok(Some(bytes))
            }
        }
    }

    /// DUPFIXED: the next page of values of the current key.
    pub fn next_multiple(&mut self) -> Result<Option<&'t [u8]>> {
        self.need_dups()?;
        if self.depth == 0 {
            return Err(Error::NoData);
        }
        if self.step_dup(true)? {
            self.get_multiple()
        } else {
            Ok(None)
        }
    }

    /// DUPFIXED: the previous page of values of the current key.
    pub fn prev_multiple(&mut self) -> Result<Option<&'t [u8]>> {
        self.need_dups()?;
        if self.depth == 0 {
            return Err(Error::NoData);
        }
        let Some(d) = &mut self.dup else { return Ok(None) };
        let l = d.top();
        let depth = d.depth;
        d.stack[depth - 1] = Some(Level { idx: 0, ..l });
        if d.step(false)? {
            self.get_multiple()
        } else {
            Ok(None)
        }
    }

    fn need_dups(&self) -> Result<()> {
        if self.dup_cmp.is_none() {
            return Err(Error::Incompatible("the table is not a multimap (DUP_SORT)".into()));
        }
        Ok(())
    }

    /// The record at the cursor; `Err(NoData)` when unpositioned.
    pub fn get_current(&self) -> Result<Option<Pair<'t>>> {
        if self.depth == 0 || !self.at_valid_leaf_entry() {
            return Err(Error::NoData);
        }
        self.current_pair().map(Some)
    }

    /// Whether the cursor is on the first key of the table.
    pub fn on_first(&self) -> bool {
        self.depth > 0 && (0..self.depth).all(|i| self.stack[i].is_some_and(|l| l.idx == 0))
    }

    /// Whether the cursor is on the last key of the table.
    pub fn on_last(&self) -> bool {
        self.depth > 0 && (0..self.depth).all(|i| self.stack[i].is_some_and(|l| l.idx + 1 == l.page.num_entries()))
    }

    /// First node as (key, node flags), without resolving its value.
    pub(crate) fn first_node(&mut self) -> Result<Option<(&'t [u8], u8)>> {
        self.depth = 0;
        self.eof = false;
        if matches!(self.root, Root::Empty) {
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
