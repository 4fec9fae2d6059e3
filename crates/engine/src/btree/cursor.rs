//! Read cursors: a stack of (page, index) from the root to a leaf. Pages have no
//! sibling links, so moving past the end of a leaf climbs until an index can move
//! and descends again (docs/format.md, "Searching").
//!
//! On a DUPSORT table the cursor holds a second, inner path over the values of
//! the current key: over the key's sub-page (an inline miniature leaf) or over
//! its nested tree, whose keys are the values (docs/format.md, "Multimap values").
//! The inner path lives inside the cursor, not in a box of its own: a cursor
//! allocates nothing, and a write cursor can build one at every step
//! (`txn::write_cursor`).

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

/// Where a path's tree starts.
#[derive(Clone, Copy)]
enum Root<'t> {
    Empty,
    /// A tree of pages.
    Page(u32),
    /// A sub-page inside the leaf node of page `host`.
    Inline(Page<'t>, u32),
}

/// A position in one tree: the pages and indexes from its root to a leaf
/// entry. A cursor moves one over the table and, on a multimap key with
/// several values, a second over those values.
struct Path<'t> {
    pages: Pages<'t>,
    root: Root<'t>,
    height: u16,
    cmp: Cmp,
    /// Largest txnid allowed on the root page.
    front: u64,
    stack: [Option<Level<'t>>; MAX_DEPTH],
    depth: usize,
    eof: bool,
}

/// A cursor over one table of a transaction. Keys and values borrow the
/// transaction (zero-copy from the memory map for read-only transactions).
pub struct Cursor<'t> {
    p: Path<'t>,
    /// DUPSORT tables: comparator of the values.
    dup_cmp: Option<Cmp>,
    /// DUPSORT tables: the path over the current key's values, when `in_dup`
    /// (otherwise the key has a single plain value). Kept from key to key, so
    /// that entering a key with several values only resets it.
    dup: Option<Path<'t>>,
    in_dup: bool,
}

type Pair<'t> = (&'t [u8], &'t [u8]);

/// A position of a cursor without its borrows: the page numbers and indexes
/// of its paths. It stays valid as long as none of those pages changes: a
/// write cursor keeps one between its moves and restores it when it has
/// written nothing since (`txn::write_cursor`).
pub(crate) struct Mark {
    pgnos: [u32; MAX_DEPTH],
    idxs: [u16; MAX_DEPTH],
    depth: u8,
    /// Levels `depth..depth + dup_depth` are the inner path's (a multimap
    /// key with several values); `in_dup` says whether there is one.
    dup_depth: u8,
    in_dup: bool,
}

/// The record `by` entries from entry `idx` of leaf `page` (page `pgno`)
/// when its key and value are both on the page (a node with none of the
/// flags `skip`), with its index: the in-leaf step of a cursor
/// ([`Cursor::neighbour_in_leaf`]) and of a mark ([`Mark::step_in_leaf`]).
/// `None` (beyond the leaf, a damaged node) sends the caller to its
/// general path, which also reports damage.
#[inline(always)]
fn plain_record<'t>(page: Page<'t>, pgno: u32, idx: usize, by: isize, skip: u8) -> Option<(usize, Pair<'t>)> {
    let idx = idx.checked_add_signed(by)?;
    if idx >= page.num_entries() || page.flags() & (pflags::DUPFIX | pflags::SUBP) != 0 {
        return None;
    }
    let n = node::node(page, idx, pgno).ok()?;
    if n.flags & skip != 0 {
        return None;
    }
    Some((idx, (n.key, n.data)))
}

impl Mark {
    /// A mark of no position yet.
    pub(crate) const NONE: Mark =
        Mark { pgnos: [0; MAX_DEPTH], idxs: [0; MAX_DEPTH], depth: 0, dup_depth: 0, in_dup: false };

    /// The neighbour of the marked record in its leaf (`forward`: the next
    /// one) when it is a plain record (key and value on the page), or on a
    /// multimap key with several values the neighbouring value on the
    /// values' leaf; the mark then stands on it. `None` (mark unchanged)
    /// sends the caller to a cursor's general path, which also reports any
    /// damage found here. A write cursor's walk takes this way: a page
    /// look-up or two a step rather than a path restored level by level.
    ///
    /// `by`: 1 the next record, -1 the previous one, 0 the record at the
    /// mark itself (after a delete at the cursor, on a plain table: the
    /// successor, if it is on the same leaf).
    ///
    /// Always inline: called, it returned the pair (four words) through
    /// memory, which the write cursor's step copied on as 16-byte words, a
    /// failed store-to-load forward each step (9% of the benchmark's prune
    /// walk on the AMD EPYC VM, forty-third session).
    #[inline(always)]
    pub(crate) fn step_in_leaf<'t>(&mut self, pages: &Pages<'t>, by: i8) -> Option<Pair<'t>> {
        if self.in_dup {
            return self.step_in_values(pages, by);
        }
        if self.depth == 0 {
            return None;
        }
        let leaf = self.depth as usize - 1;
        let pgno = self.pgnos[leaf];
        let page = Page { buf: pages.get(pgno).ok()? };
        // A node with a tree is a table's record or (a multimap's) a key's
        // values: the general path reads or reports it.
        let (idx, pair) = plain_record(page, pgno, self.idxs[leaf] as usize, by as isize, N_DUP | N_BIG | N_TREE)?;
        self.idxs[leaf] = idx as u16;
        Some(pair)
    }

    /// [`Mark::step_in_leaf`] among a multimap key's values: the
    /// neighbouring value on the same page of values (the key's sub-page, or
    /// a leaf of its nested tree), or with `by` 0 the value at the mark.
    ///
    /// Inline, as `read_repr` (btree/dupsort.rs) and for the same reason: a
    /// call returned the pair through memory, stored word by word and
    /// copied on as 16-byte words (a failed store-to-load forward, 8% of
    /// the multimap prune walk's time on the AMD EPYC VM).
    #[inline(always)]
    fn step_in_values<'t>(&mut self, pages: &Pages<'t>, by: i8) -> Option<Pair<'t>> {
        let (outer, inner) = (self.depth as usize, self.dup_depth as usize);
        if outer == 0 || inner == 0 {
            return None;
        }
        let lpg = self.pgnos[outer - 1];
        let leaf = Page { buf: pages.get(lpg).ok()? };
        let n = node::node(leaf, self.idxs[outer - 1] as usize, lpg).ok()?;
        let at = outer + inner - 1;
        let (page, pgno) = if n.flags == N_DUP && inner == 1 && n.data.len() >= PAGEHDRSZ {
            (Page { buf: n.data }, lpg)
        } else if n.flags == N_DUP | N_TREE {
            let pgno = self.pgnos[at];
            (Page { buf: pages.get(pgno).ok()? }, pgno)
        } else {
            return None;
        };
        let idx = (self.idxs[at] as usize).checked_add_signed(by as isize)?;
        if idx >= page.num_entries() {
            return None;
        }
        // A value is a node's key; a nested tree's leaf node must have no
        // flags (one parse of it for both: reading its key again cost a
        // prune walk about 10 instructions a value).
        let v = if page.is_dupfix() || page.is_subpage() {
            key_at(page, idx, pgno).ok()?
        } else {
            let vn = node::node(page, idx, pgno).ok()?;
            if vn.flags != 0 {
                return None;
            }
            vn.key
        };
        self.idxs[at] = idx as u16;
        Some((n.key, v))
    }

    /// The table's levels (pages and indexes from the root): what a search
    /// for the record at the mark finds.
    pub(crate) fn outer(&self) -> (&[u32], &[u16]) {
        let d = self.depth as usize;
        (&self.pgnos[..d], &self.idxs[..d])
    }

    /// Stands on the place the table's levels `pgnos`/`idxs` lead to (a
    /// record with a single value, or past a leaf's end).
    pub(crate) fn set_outer(&mut self, pgnos: &[u32], idxs: &[u16]) {
        let d = pgnos.len().min(idxs.len()).min(MAX_DEPTH);
        self.pgnos[..d].copy_from_slice(&pgnos[..d]);
        self.idxs[..d].copy_from_slice(&idxs[..d]);
        self.depth = d as u8;
        self.dup_depth = 0;
        self.in_dup = false;
    }

    /// On a multimap key with several values: the levels of the path among
    /// them (for a sub-page one level, whose page is the key's leaf).
    pub(crate) fn inner(&self) -> Option<(&[u32], &[u16])> {
        let (d, dd) = (self.depth as usize, self.dup_depth as usize);
        self.in_dup.then(|| (&self.pgnos[d..d + dd], &self.idxs[d..d + dd]))
    }

    /// Both paths moved to the pages `outer` and `inner` (the same levels
    /// and indexes, the pages copied on write).
    pub(crate) fn move_to(&mut self, outer: &[u32], inner: &[u32]) {
        let (d, dd) = (self.depth as usize, self.dup_depth as usize);
        let (n, m) = (d.min(outer.len()), dd.min(inner.len()));
        self.pgnos[..n].copy_from_slice(&outer[..n]);
        self.pgnos[d..d + m].copy_from_slice(&inner[..m]);
    }
}

impl<'t> Path<'t> {
    fn new(pages: Pages<'t>, root: Root<'t>, height: u16, cmp: Cmp, front: u64) -> Path<'t> {
        Path { pages, root, height, cmp, front, stack: [None; MAX_DEPTH], depth: 0, eof: false }
    }

    /// The same path object over another tree, unpositioned (its stack's
    /// old levels are never read: only `..depth` is).
    fn reset(&mut self, root: Root<'t>, height: u16, cmp: Cmp, front: u64) {
        self.root = root;
        self.height = height;
        self.cmp = cmp;
        self.front = front;
        self.depth = 0;
        self.eof = false;
    }

    fn top(&self) -> Level<'t> {
        self.stack[self.depth - 1].expect("positioned cursor has a leaf")
    }

    /// The record under the path on a table without multi-value keys, or
    /// the value under an inner path (as its key, with an empty value).
    #[inline]
    fn pair(&self) -> Result<Pair<'t>> {
        if self.depth == 0 {
            // An inner path whose positioning failed (a damaged page).
            return Err(Error::NoData);
        }
        let l = self.top();
        if l.page.is_dupfix() || l.page.is_subpage() {
            // A page of values (nested tree leaf or sub-page): keys only.
            return Ok((key_at(l.page, l.idx, l.pgno)?, &[]));
        }
        let n = node::node(l.page, l.idx, l.pgno)?;
        if n.flags & N_DUP != 0 {
            return Err(Error::corrupted(l.pgno, "multi-value node in a table without DUPSORT"));
        }
        let v = node_value(&self.pages, &n, l.pgno, l.page.txnid())?;
        Ok((n.key, v))
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

    /// Positions on the first (or last) entry; false on an empty tree.
    fn edge(&mut self, last: bool) -> Result<bool> {
        self.depth = 0;
        self.eof = false;
        if matches!(self.root, Root::Empty) {
            self.eof = true;
            return Ok(false);
        }
        self.descend_edge(last)?;
        Ok(true)
    }

    /// Moves one entry; returns false at the end (position unchanged).
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
                return Ok(true);
            }
            level -= 1;
        }
        Ok(false)
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

    /// Positions at the first entry `>= key`; false (at the end) if there is none.
    fn lower_bound(&mut self, key: &[u8]) -> Result<bool> {
        if self.seek(key)?.is_none() {
            return Ok(false);
        }
        if self.at_valid_leaf_entry() {
            return Ok(true);
        }
        // Past the last key of this leaf: step back onto it, then forward.
        self.back_onto_leaf();
        self.step(true)
    }

    /// From one past a leaf's last entry (after a seek) back onto it.
    fn back_onto_leaf(&mut self) {
        let l = self.top();
        self.stack[self.depth - 1] = Some(Level { idx: l.idx - 1, ..l });
    }

    /// The levels of this path, written into `m` from level `at`; their number.
    fn save(&self, m: &mut Mark, at: usize) -> Option<u8> {
        if at + self.depth > MAX_DEPTH {
            return None;
        }
        for i in 0..self.depth {
            let l = self.stack[i]?;
            m.pgnos[at + i] = l.pgno;
            // Entries of a page are fewer than 2^15 (a page is at most 64 KiB).
            m.idxs[at + i] = u16::try_from(l.idx).ok()?;
        }
        Some(self.depth as u8)
    }

    /// Takes back levels saved by [`Path::save`]: each page comes from its
    /// number (unchanged since, so not checked again), the first from the
    /// root for a sub-page.
    fn restore(&mut self, m: &Mark, levels: std::ops::Range<usize>) -> Result<()> {
        self.depth = 0;
        self.eof = false;
        let n = levels.len();
        for (i, (&pgno, &idx)) in m.pgnos[levels.clone()].iter().zip(&m.idxs[levels]).enumerate() {
            let page = match (self.root, i) {
                (Root::Inline(sp, _), 0) => sp,
                _ => Page { buf: self.pages.get(pgno)? },
            };
            self.stack[i] = Some(Level { page, pgno, idx: idx as usize });
        }
        self.depth = n;
        Ok(())
    }
}

impl<'t> Cursor<'t> {
    pub(crate) fn new(pages: Pages<'t>, root: u32, height: u16, cmp: Cmp) -> Cursor<'t> {
        let root = if root == P_INVALID { Root::Empty } else { Root::Page(root) };
        Cursor { p: Path::new(pages, root, height, cmp, pages.front), dup_cmp: None, dup: None, in_dup: false }
    }

    /// Makes this a cursor over a DUPSORT table whose values compare with `cmp`.
    pub(crate) fn set_dup_cmp(&mut self, cmp: Option<Cmp>) {
        self.dup_cmp = cmp;
    }

    /// Order of two keys under this table's key comparator.
    #[inline]
    pub(crate) fn key_order(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        self.p.cmp.cmp(a, b)
    }

    /// Order of two records in this table: by key, then (multimaps) by value.
    pub(crate) fn pair_order(&self, a: Pair<'_>, b: Pair<'_>) -> std::cmp::Ordering {
        self.p.cmp.cmp(a.0, b.0).then_with(|| self.dup_cmp.map_or(std::cmp::Ordering::Equal, |c| c.cmp(a.1, b.1)))
    }

    /// Whether the cursor is not positioned on a record.
    pub fn eof(&self) -> bool {
        self.p.depth == 0 || self.p.eof
    }

    /// The inner path, when the current key has several values.
    fn dup(&mut self) -> Option<&mut Path<'t>> {
        if self.in_dup {
            self.dup.as_mut()
        } else {
            None
        }
    }

    #[inline]
    fn current_pair(&self) -> Result<Pair<'t>> {
        if let (true, Some(d)) = (self.in_dup, &self.dup) {
            let l = self.p.top();
            let n = node::node(l.page, l.idx, l.pgno)?;
            return Ok((n.key, d.pair()?.0));
        }
        self.p.pair()
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
        if self.dup_cmp.is_some() || self.p.depth == 0 || (forward && self.p.eof) {
            return None;
        }
        let l = self.p.stack[self.p.depth - 1].as_mut()?;
        // (After running off the end the position is still the last record.)
        let (idx, pair) = plain_record(l.page, l.pgno, l.idx, if forward { 1 } else { -1 }, N_DUP | N_BIG)?;
        l.idx = idx;
        if !forward {
            self.p.eof = false;
        }
        Some(pair)
    }

    /// The inner tree of the node under the cursor (DUPSORT tables), as
    /// (root, height, front); `None` for a single plain value.
    fn inner_root(&self) -> Result<Option<(Root<'t>, u16, u64)>> {
        let l = self.p.top();
        let n = node::node(l.page, l.idx, l.pgno)?;
        if n.flags == N_DUP {
            let sp = Page { buf: n.data };
            check_subpage(sp, l.pgno)?;
            Ok(Some((Root::Inline(sp, l.pgno), 1, self.p.pages.front)))
        } else if n.flags == N_DUP | N_TREE {
            if n.data.len() != TREE_SIZE {
                return Err(Error::corrupted(l.pgno, "nested tree descriptor has a bad size"));
            }
            let t = Tree::read(n.data);
            if t.root == P_INVALID || t.height == 0 {
                return Err(Error::corrupted(l.pgno, "empty nested tree"));
            }
            let pages = &self.p.pages;
            if t.root < crate::format::NUM_METAS
                || t.root >= pages.valid && !pages.dirty.is_some_and(|d| d.contains_key(&t.root))
            {
                return Err(Error::corrupted(l.pgno, "nested tree root outside the allocated pages"));
            }
            Ok(Some((Root::Page(t.root), t.height, l.page.txnid())))
        } else if n.flags & (N_DUP | N_TREE) != 0 {
            Err(Error::corrupted(l.pgno, "bad node flags in a DUPSORT table"))
        } else {
            Ok(None)
        }
    }

    /// Sets up the inner path for the node under the cursor (DUPSORT
    /// tables), unpositioned; whether the key has several values.
    fn open_dup(&mut self) -> Result<bool> {
        let Some(dcmp) = self.dup_cmp else {
            return Ok(false);
        };
        self.in_dup = false;
        let Some((root, height, front)) = self.inner_root()? else {
            return Ok(false);
        };
        match &mut self.dup {
            Some(d) => d.reset(root, height, dcmp, front),
            None => self.dup = Some(Path::new(self.p.pages, root, height, dcmp, front)),
        }
        self.in_dup = true;
        Ok(true)
    }

    /// Sets up the inner path for the node under the cursor (DUPSORT
    /// tables), on its first (or last) value.
    fn enter_dup(&mut self, last: bool) -> Result<()> {
        if self.open_dup()? {
            if let Some(d) = self.dup() {
                if let Err(e) = d.edge(last) {
                    self.in_dup = false;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn edge(&mut self, last: bool) -> Result<Option<Pair<'t>>> {
        if !self.p.edge(last)? {
            return Ok(None);
        }
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
        if !self.p.step(forward)? {
            return Ok(false);
        }
        self.enter_dup(!forward)?;
        Ok(true)
    }

    /// Moves within the current key's values; false when there is no further value.
    fn step_dup(&mut self, forward: bool) -> Result<bool> {
        match self.dup() {
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
        if self.p.depth == 0 {
            return self.first();
        }
        if self.p.eof {
            return Ok(None);
        }
        if self.step_dup(true)? || self.step(true)? {
            self.current_pair().map(Some)
        } else {
            self.p.eof = true;
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
        if self.p.depth == 0 {
            return self.last();
        }
        // After running off the end the position is still the last record, so
        // stepping back from it gives its predecessor (as libmdbx does).
        self.p.eof = false;
        if self.step_dup(false)? || self.step(false)? {
            self.current_pair().map(Some)
        } else {
            Ok(None)
        }
    }

    /// First value of the next key (DUPSORT); `next` on other tables.
    pub fn next_nodup(&mut self) -> Result<Option<Pair<'t>>> {
        if self.p.depth == 0 {
            return self.first();
        }
        if self.p.eof {
            return Ok(None);
        }
        if self.step(true)? {
            self.current_pair().map(Some)
        } else {
            self.p.eof = true;
            Ok(None)
        }
    }

    /// Last value of the previous key (DUPSORT); `prev` on other tables.
    pub fn prev_nodup(&mut self) -> Result<Option<Pair<'t>>> {
        if self.p.depth == 0 {
            return self.last();
        }
        self.p.eof = false;
        if self.step(false)? {
            self.current_pair().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Next value of the current key; `None` at its last value (position kept).
    pub fn next_dup(&mut self) -> Result<Option<Pair<'t>>> {
        if self.p.depth == 0 || self.p.eof {
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
        if self.p.depth == 0 || self.p.eof {
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
        if self.p.depth == 0 {
            return Err(Error::NoData);
        }
        if let Some(d) = self.dup() {
            d.edge(false)?;
        }
        self.current_pair().map(Some)
    }

    /// Last value of the current key.
    pub fn last_dup(&mut self) -> Result<Option<Pair<'t>>> {
        if self.p.depth == 0 {
            return Err(Error::NoData);
        }
        if let Some(d) = self.dup() {
            d.edge(true)?;
        }
        self.current_pair().map(Some)
    }

    /// Number of values of the current key (1 on other tables).
    pub fn count(&self) -> Result<u64> {
        if self.p.depth == 0 || !self.p.at_valid_leaf_entry() {
            return Err(Error::NoData);
        }
        let Some(_) = self.dup_cmp else { return Ok(1) };
        let l = self.p.top();
        let n = node::node(l.page, l.idx, l.pgno)?;
        Ok(match n.flags {
            N_DUP => Page { buf: n.data }.num_entries() as u64,
            f if f == N_DUP | N_TREE => Tree::read(n.data).items,
            _ => 1,
        })
    }

    /// Positions at exactly `key` (its first value); `None` (and unpositioned) if absent.
    pub fn set(&mut self, key: &[u8]) -> Result<Option<Pair<'t>>> {
        match self.p.seek(key)? {
            Some(true) => {
                self.enter_dup(false)?;
                self.current_pair().map(Some)
            }
            _ => {
                self.p.depth = 0;
                Ok(None)
            }
        }
    }

    /// Positions at the first key `>= key` (lower bound).
    pub fn set_range(&mut self, key: &[u8]) -> Result<Option<Pair<'t>>> {
        if self.p.seek(key)?.is_none() {
            return Ok(None);
        }
        if self.p.at_valid_leaf_entry() {
            self.enter_dup(false)?;
            return self.current_pair().map(Some);
        }
        // Past the last key of this leaf: step back onto it, then forward.
        self.p.back_onto_leaf();
        if self.step(true)? {
            self.current_pair().map(Some)
        } else {
            self.enter_dup(true)?;
            self.p.eof = true;
            Ok(None)
        }
    }

    /// DUPSORT: positions at exactly (`key`, `val`).
    pub fn get_both(&mut self, key: &[u8], val: &[u8]) -> Result<Option<Pair<'t>>> {
        self.need_dups()?;
        match self.get_both_range(key, val)? {
            Some((k, v)) if self.dup_cmp.expect("dupsort").cmp(v, val).is_eq() => Ok(Some((k, v))),
            _ => {
                self.p.depth = 0;
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
        match self.dup() {
            Some(d) => {
                if !d.lower_bound(val)? {
                    self.p.depth = 0;
                    return Ok(None);
                }
                self.current_pair().map(Some)
            }
            None => {
                let (k, v) = self.current_pair()?;
                if self.dup_cmp.expect("dupsort").cmp(v, val).is_ge() {
                    Ok(Some((k, v)))
                } else {
                    self.p.depth = 0;
                    Ok(None)
                }
            }
        }
    }

    /// First pair `>= (key, val)` (`val` only matters on multimaps). Returns
    /// whether it matched exactly (libmdbx's `MDBX_SET_LOWERBOUND`).
    pub fn set_lowerbound(&mut self, key: &[u8], val: Option<&[u8]>) -> Result<Option<(bool, Pair<'t>)>> {
        let Some((k, v)) = self.set_range(key)? else { return Ok(None) };
        let key_eq = self.p.cmp.cmp(k, key).is_eq();
        match (val, self.dup_cmp) {
            (Some(want), Some(dc)) if key_eq => {
                if let Some(d) = self.dup() {
                    if d.lower_bound(want)? {
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
            Some((_, (k, _))) if val.is_none() && self.p.cmp.cmp(k, key).is_eq() => self.next_nodup(),
            Some((true, _)) => self.next(),
            Some((false, p)) => Ok(Some(p)),
        }
    }

    /// DUPFIXED: the values of the current key on the inner page under the
    /// cursor, as one buffer of `n × size` bytes; the cursor moves to the last
    /// of them (libmdbx's `MDBX_GET_MULTIPLE`).
    pub fn get_multiple(&mut self) -> Result<Option<&'t [u8]>> {
        self.need_dups()?;
        if self.p.depth == 0 || !self.p.at_valid_leaf_entry() {
            return Err(Error::NoData);
        }
        match self.dup() {
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
        if self.p.depth == 0 {
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
        if self.p.depth == 0 {
            return Err(Error::NoData);
        }
        let Some(d) = self.dup() else { return Ok(None) };
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
        if self.p.depth == 0 || !self.p.at_valid_leaf_entry() {
            return Err(Error::NoData);
        }
        self.current_pair().map(Some)
    }

    /// Whether the cursor is on the first key of the table.
    pub fn on_first(&self) -> bool {
        self.p.depth > 0 && (0..self.p.depth).all(|i| self.p.stack[i].is_some_and(|l| l.idx == 0))
    }

    /// Whether the cursor is on the last key of the table.
    pub fn on_last(&self) -> bool {
        self.p.depth > 0
            && (0..self.p.depth).all(|i| self.p.stack[i].is_some_and(|l| l.idx + 1 == l.page.num_entries()))
    }

    /// First node as (key, node flags), without resolving its value.
    pub(crate) fn first_node(&mut self) -> Result<Option<(&'t [u8], u8)>> {
        if !self.p.edge(false)? {
            self.p.eof = false;
            return Ok(None);
        }
        self.current_node().map(Some)
    }

    /// Next node as (key, node flags).
    pub(crate) fn next_node(&mut self) -> Result<Option<(&'t [u8], u8)>> {
        if self.p.depth == 0 || self.p.eof {
            return Ok(None);
        }
        if self.step(true)? {
            self.current_node().map(Some)
        } else {
            self.p.eof = true;
            Ok(None)
        }
    }

    fn current_node(&self) -> Result<(&'t [u8], u8)> {
        let l = self.p.top();
        let n = node::node(l.page, l.idx, l.pgno)?;
        Ok((n.key, n.flags))
    }

    /// The key at the cursor, if positioned.
    pub(crate) fn current_key(&self) -> Option<&'t [u8]> {
        if self.p.depth == 0 || !self.p.at_valid_leaf_entry() {
            return None;
        }
        let l = self.p.top();
        key_at(l.page, l.idx, l.pgno).ok()
    }

    /// Writes the position into `m`; false (and `m` unusable) when the
    /// cursor stands on no record. In place: a mark is a few hundred bytes,
    /// and a write cursor takes one at every step.
    pub(crate) fn mark_into(&self, m: &mut Mark) -> bool {
        if self.eof() || !self.p.at_valid_leaf_entry() {
            return false;
        }
        let Some(depth) = self.p.save(m, 0) else { return false };
        m.depth = depth;
        m.in_dup = false;
        if let (true, Some(d)) = (self.in_dup, &self.dup) {
            let Some(dd) = d.save(m, depth as usize) else { return false };
            m.dup_depth = dd;
            m.in_dup = true;
        }
        true
    }

    /// From a position where a record was deleted (on its successor, or
    /// past its leaf's last entry) onto the successor; false if there is
    /// none (the cursor is then at the end).
    pub(crate) fn settle(&mut self) -> Result<bool> {
        if self.p.depth == 0 {
            return Ok(false);
        }
        if self.in_dup {
            // A value deleted from a key's values: its successor is the
            // next value of the key (on the same page of values, or on the
            // next leaf of a nested tree), else the next key's first.
            if let Some(d) = self.dup.as_mut().filter(|d| d.depth > 0) {
                if d.at_valid_leaf_entry() {
                    return Ok(true);
                }
                if d.top().idx > 0 {
                    d.back_onto_leaf();
                    if d.step(true)? {
                        return Ok(true);
                    }
                }
            }
            if self.step(true)? {
                return Ok(true);
            }
            self.p.eof = true;
            return Ok(false);
        }
        if self.p.at_valid_leaf_entry() {
            // (On a multimap: the next key, on its first value.)
            self.enter_dup(false)?;
            return Ok(true);
        }
        let l = self.p.top();
        if l.idx == 0 {
            return Err(Error::corrupted(l.pgno, "empty leaf page"));
        }
        self.p.back_onto_leaf();
        if self.step(true)? {
            return Ok(true);
        }
        self.p.eof = true;
        Ok(false)
    }

    /// Stands on a position taken by [`Cursor::mark_into`] from a cursor over the
    /// same table, none of whose pages has changed since.
    pub(crate) fn restore(&mut self, m: &Mark) -> Result<()> {
        let depth = m.depth as usize;
        self.p.restore(m, 0..depth)?;
        self.in_dup = false;
        if m.in_dup && self.open_dup()? {
            if let Some(d) = self.dup() {
                if let Err(e) = d.restore(m, depth..depth + m.dup_depth as usize) {
                    self.in_dup = false;
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}
