//! Tree edits inside a write transaction: insert with page splits, delete with
//! merging and borrowing between siblings, large values, and clearing a tree.
//!
//! Every edit first finds the root-to-leaf path read-only, then copies the path
//! on write ("touch"), edits the leaf, and propagates splits upward or
//! underflow fixes upward. Pages are rebuilt through the node functions of
//! `format::node`, which keep the node area contiguous as libmdbx does.
//!
//! The edits see their transaction only as a [`TreeWriter`] (pages, the page
//! life cycle, limits, the table being edited), generic and statically
//! dispatched; `btree/mem.rs` runs them on pages in memory in unit tests.

use super::walk::{self, Kind, NodeEv, PageEv, Spec, Visitor, Walk};
use super::writer::{check_value_size, Counted, TreeWriter};
use super::{child_at, key_at, load, search_branch, search_leaf, Cmp, MAX_DEPTH};
use crate::error::{Error, Result};
use crate::flags::{DbFlags, PutFlags};
use crate::format::node::{self, N_BIG};
use crate::format::page::{self as fpage, flags as pflags, Page};
use crate::format::tree::Tree;
use crate::format::{even_ceil, put_u32, u32_at, NODESIZE, PAGEHDRSZ, P_INVALID};

/// A value to store.
pub(crate) enum Val<'a> {
    Bytes(&'a [u8]),
    /// Zero-filled space of this length, to be filled by the caller.
    Reserve(usize),
    /// Space of this length that the caller overwrites in full before the
    /// transaction commits (the GC's records): large pages are not zeroed
    /// first (a GC record of a page was zeroed and then written whole, at
    /// every commit of a blob workload: 2% of its instructions).
    Filled(usize),
}

impl Val<'_> {
    fn len(&self) -> usize {
        match self {
            Val::Bytes(b) => b.len(),
            Val::Reserve(n) | Val::Filled(n) => *n,
        }
    }
    fn copy_to(&self, dst: &mut [u8]) {
        match self {
            Val::Bytes(b) => dst.copy_from_slice(b),
            Val::Reserve(_) => dst.fill(0),
            Val::Filled(_) => {}
        }
    }
}

/// Where a stored value lives (a dirty page and a byte range of it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ValLoc {
    pub pgno: u32,
    pub off: usize,
    pub len: usize,
}

/// Root-to-leaf path: (page, index) per level; at branches the child index, at
/// the leaf the node index (a page holds fewer than 2^15 nodes: a `u16`). A
/// path is made zeroed for every tree edit: pages and indexes in two arrays
/// (128 and 64 bytes) are zeroed by a few inline stores, where one array of
/// 8-byte pairs (256 bytes) took a `memset` call (about 190 instructions of
/// a one-put commit's 11,400), and `usize` indexes twice that.
#[derive(Clone, Copy)]
pub(crate) struct Path {
    pgnos: [u32; MAX_DEPTH],
    idxs: [u16; MAX_DEPTH],
    pub len: usize,
}

impl Path {
    #[allow(clippy::new_without_default)]
    #[inline]
    pub fn new() -> Path {
        Path { pgnos: [0; MAX_DEPTH], idxs: [0; MAX_DEPTH], len: 0 }
    }
    pub fn leaf(&self) -> usize {
        self.len - 1
    }
    /// Level `l`'s page and index.
    #[inline]
    pub fn at(&self, l: usize) -> (u32, usize) {
        (self.pgnos[l], self.idxs[l] as usize)
    }
    /// The pages of the levels in use.
    #[inline]
    pub fn pgnos(&self) -> &[u32] {
        &self.pgnos[..self.len]
    }
    /// The indexes of the levels in use.
    #[inline]
    pub fn idxs(&self) -> &[u16] {
        &self.idxs[..self.len]
    }
    /// Sets level `l`'s page.
    #[inline]
    pub fn set_pgno(&mut self, l: usize, pgno: u32) {
        self.pgnos[l] = pgno;
    }
    /// Sets level `l`'s index (below 2^15: a page's entry count bounds it).
    #[inline]
    pub fn set_idx(&mut self, l: usize, i: usize) {
        self.idxs[l] = i as u16;
    }
    /// Appends a level.
    #[inline]
    pub fn push(&mut self, pgno: u32, i: usize) {
        self.pgnos[self.len] = pgno;
        self.idxs[self.len] = i as u16;
        self.len += 1;
    }
}

/// Inserts entry `i` of `src` (a pooled copy of page `src_pgno`) into the
/// page `buf` at `at`, under `key` instead of its own if given (a branch
/// entry taking its parent's separator). The entry is read from the copy,
/// so `buf` may be a page it came from.
fn copy_entry(buf: &mut [u8], at: usize, src: Page<'_>, i: usize, src_pgno: u32, key: Option<&[u8]>) -> Result<()> {
    if src.is_dupfix() {
        return p_insert(buf, at, key.map_or_else(|| key_at(src, i, src_pgno), Ok)?, 0, 0, &[]);
    }
    let n = node::node(src, i, src_pgno)?;
    p_insert(buf, at, key.unwrap_or(n.key), n.dsize, n.flags, n.data)
}

/// The stored bytes of node `i` (header, key, value, padding), bounds-checked.
fn raw_node<'a>(page: Page<'a>, i: usize, pgno: u32) -> Result<&'a [u8]> {
    let n = node::node(page, i, pgno)?;
    let off = PAGEHDRSZ + page.entry(i);
    let len =
        if page.is_branch() { node::branch_size(n.key.len()) } else { node::leaf_size(n.key.len(), n.data.len()) };
    page.buf.get(off..off + len).ok_or_else(|| Error::corrupted(pgno, "node overruns the page"))
}

/// Inserts into a node page or a DUPFIX page. The callers have computed that
/// the entry fits; a page whose header lies about its room (a damaged file)
/// gives `Corrupted` here instead of an edit past its free space.
// Inline: a one-put commit runs 30 more instructions without it
// (docs/design.md, "Inlining on the commit path").
#[inline(always)]
pub(crate) fn p_insert(buf: &mut [u8], i: usize, key: &[u8], hdr: u32, flags: u8, data: &[u8]) -> Result<()> {
    let page = Page { buf };
    let (lower, upper, pgno) = (page.lower(), page.upper(), page.pgno());
    let need = if page.is_dupfix() { key.len() } else { NODESIZE + even_ceil(key.len() + data.len()) + 2 };
    if upper < lower || need > upper - lower || i > page.num_entries() {
        return Err(Error::corrupted(pgno, "page has less free space than its neighbours' sizes promise"));
    }
    p_insert_sized(buf, i, key, hdr, flags, data);
    Ok(())
}

/// [`p_insert`] into a page this code sized for the entry itself (a sub-page
/// being built or grown in place), where the room is known.
pub(crate) fn p_insert_sized(buf: &mut [u8], i: usize, key: &[u8], hdr: u32, flags: u8, data: &[u8]) {
    if (Page { buf }).is_dupfix() {
        node::dupfix_insert(buf, i, key);
    } else {
        node::insert(buf, i, key, hdr, flags, data);
    }
}

/// Removes from a node page or a DUPFIX page.
pub(crate) fn p_remove(buf: &mut [u8], i: usize) {
    if (Page { buf }).is_dupfix() {
        node::dupfix_remove(buf, i);
    } else {
        node::remove(buf, i);
    }
}

/// Room an entry needs on the page `buf`.
fn need(buf: &[u8], key: &[u8], data: &[u8]) -> usize {
    let p = Page { buf };
    if p.is_dupfix() {
        p.dupfix_ksize() as usize
    } else if p.is_branch() {
        NODESIZE + even_ceil(key.len()) + 2
    } else {
        NODESIZE + even_ceil(key.len() + data.len()) + 2
    }
}

/// Descends from the root recording the path; `pick` chooses the entry of
/// each page (`Ok((index, exact))`; `exact` only matters at the leaf).
fn walk_path<W: TreeWriter + ?Sized>(
    w: &W,
    tree: &Tree,
    path: &mut Path,
    mut pick: impl FnMut(Page<'_>, u32) -> Result<(usize, bool)>,
) -> Result<bool> {
    let pages = w.pages();
    path.len = 0;
    let mut pgno = tree.root;
    let mut from = tree.root;
    let mut front = pages.front;
    loop {
        if path.len >= MAX_DEPTH || path.len >= tree.height as usize {
            return Err(Error::corrupted(pgno, "tree deeper than its height (cycle?)"));
        }
        let page = load(&pages, pgno, front, from)?;
        if page.is_leaf() != (path.len + 1 == tree.height as usize) {
            return Err(Error::corrupted(pgno, "leaf at a depth that differs from the tree height"));
        }
        if page.is_leaf() {
            super::check_leaf_kind(page, tree, pgno)?;
        }
        let (i, exact) = pick(page, pgno)?;
        path.push(pgno, i);
        if page.is_leaf() {
            return Ok(exact);
        }
        front = page.txnid();
        from = pgno;
        pgno = child_at(page, i, pgno)?;
    }
}

/// Descends to the leaf for `key`, recording the path; whether `key` is there.
pub(crate) fn find_path<W: TreeWriter + ?Sized>(
    w: &W,
    tree: &Tree,
    key: &[u8],
    cmp: Cmp,
    path: &mut Path,
) -> Result<bool> {
    walk_path(
        w,
        tree,
        path,
        // Inline: the descent's only use of the search (a one-put commit: 37
        // instructions; docs/design.md, "Inlining on the commit path").
        #[inline(always)]
        |page, pgno| {
            if page.is_leaf() {
                search_leaf(page, key, cmp, pgno)
            } else {
                Ok((search_branch(page, key, cmp, pgno)?, false))
            }
        },
    )
}

/// The path to the end of the tree, for APPEND: the last entry of every page,
/// without binary searches. `Err(KeyMismatch)` when `key` is less than the
/// last key; `exact` when it equals it.
fn find_path_append<W: TreeWriter + ?Sized>(w: &W, tree: &Tree, key: &[u8], cmp: Cmp, path: &mut Path) -> Result<bool> {
    walk_path(w, tree, path, |page, pgno| {
        let n = page.num_entries();
        if !page.is_leaf() {
            return Ok((n - 1, false));
        }
        match cmp.cmp(key_at(page, n - 1, pgno)?, key) {
            std::cmp::Ordering::Less => Ok((n, false)),
            std::cmp::Ordering::Equal => Ok((n - 1, true)),
            std::cmp::Ordering::Greater => Err(Error::KeyMismatch("APPEND with a key less than the last key")),
        }
    })
}

/// Copies every page of the path on write and links the copies.
// Inline: a one-put commit runs 122 more instructions without it
// (docs/design.md, "Inlining on the commit path").
#[inline(always)]
pub(crate) fn touch_path<W: TreeWriter + ?Sized>(w: &mut W, tree: &mut Tree, path: &mut Path) -> Result<()> {
    for level in 0..path.len {
        let old = path.at(level).0;
        let new = w.touch(old)?;
        if new != old {
            if level == 0 {
                tree.root = new;
            } else {
                let (ppg, pidx) = path.at(level - 1);
                node::set_child(w.dirty_mut(ppg), pidx, new);
            }
            path.set_pgno(level, new);
        }
    }
    tree.mod_txnid = w.txnid();
    Ok(())
}

fn room(buf: &[u8]) -> usize {
    Page { buf }.room()
}

/// Inserts a node at `idx` of the page at `level`, splitting as needed.
/// `rightmost`: whether the insert is at the right edge of the tree (the
/// split policy for sequential inserts), `None` if not known yet: then
/// read from `path` only if a page splits (most inserts split nothing).
#[allow(clippy::too_many_arguments)]
pub(crate) fn insert_at<W: TreeWriter + ?Sized>(
    w: &mut W,
    tree: &mut Tree,
    path: &Path,
    level: usize,
    idx: usize,
    key: &[u8],
    hdr: u32,
    flags: u8,
    data: &[u8],
    rightmost: Option<bool>,
) -> Result<()> {
    let pgno = path.at(level).0;
    let buf = w.dirty_mut(pgno);
    if need(buf, key, data) <= room(buf) {
        p_insert(buf, idx, key, hdr, flags, data)?;
        return Ok(());
    }
    // (The path's pages, copied or not, have the entries they had.)
    let rightmost = match rightmost {
        Some(r) => r,
        None => is_rightmost(w, path)?,
    };
    let buf = w.dirty_mut(pgno);
    let page = Page { buf };
    let is_branch = page.is_branch();
    let dupfix_k = page.is_dupfix().then(|| page.dupfix_ksize() as usize);
    let page_flags = page.flags();
    let n = page.num_entries();
    // Split. Entries move as raw byte ranges of the old page (no decoding);
    // element `j` of the combined sequence is the new entry at `idx`, else
    // old entry `j` or `j - 1`.
    let ps = w.limits().page_size;
    let cap = ps - PAGEHDRSZ;
    if !is_branch && idx == n && rightmost && n >= 2 {
        // Appending at the right edge of the tree (sequential inserts): the
        // new entry alone starts the right page and the left one keeps its
        // bytes as they are, as the general split below would decide (a
        // leaf node always fits an empty page) without reading the old
        // entries, copying the page or rebuilding it.
        w.count(Counted::Split);
        let right = w.new_page(page_flags)?;
        let buf = w.dirty_mut(right);
        if let Some(k) = dupfix_k {
            fpage::set_dupfix_ksize(buf, k as u16);
        }
        p_insert(buf, 0, key, hdr, flags, data)?;
        tree.inc_leaf(1, pgno)?;
        return link_right(w, tree, path, level, pgno, right, key, rightmost);
    }
    // A pooled copy of the old page, given back after the split.
    let old = w.copy_dirty(pgno);
    let op = Page { buf: &old };
    let total = n + 1;
    let old_of = |j: usize| if j < idx { j } else { j - 1 };
    let new_size = need(&old, key, data);
    // Bytes the entries before each position take: `before[j]` for entries
    // `..j` (so each split point is weighed without summing again).
    let mut before = w.take_sizes();
    before.reserve(total + 1);
    before.push(0);
    for j in 0..total {
        let size = match (j == idx, dupfix_k) {
            (true, _) => new_size,
            (false, Some(k)) => k,
            (false, None) => raw_node(op, old_of(j), pgno)?.len() + 2,
        };
        before.push(before[j] + size);
    }
    let all = before[total];
    let key_len =
        |j: usize| -> Result<usize> { Ok(if j == idx { key.len() } else { key_at(op, old_of(j), pgno)?.len() }) };
    let fits = |sp: usize| -> Result<bool> {
        let left = before[sp];
        let mut right = all - left;
        if is_branch {
            right -= even_ceil(key_len(sp)?);
        }
        Ok(left <= cap && right <= cap)
    };
    // Each half keeps at least one entry (leaves) or two (branches).
    let min = if is_branch { 2 } else { 1 };
    let at_end = idx == n;
    // Prepending to the first leaf (keys in descending order): the left
    // page keeps the new entry alone and the right one the rest, full, as
    // libmdbx splits there; a middle split left every leaf half empty.
    // Branches keep the middle split: an insert at a first branch's
    // index 1 follows any split of its first child, not only a prepend
    // (descending loads take 6 branch pages at 4 KiB, libmdbx 4).
    let at_start = !is_branch && idx == 0 && (0..level).all(|l| path.at(l).1 == 0);
    // Appending at the right edge (sequential inserts): leave the left page
    // full and start the right one with the new entry (branches keep two).
    let sp = if at_end && rightmost && total > 2 * min && fits(total - min)? {
        total - min
    } else if at_start && total > 2 * min && fits(min)? {
        min
    } else {
        let valid = |sp: usize| -> Result<bool> { Ok(sp >= min && total - sp >= min && fits(sp)?) };
        best_split(&before, valid)?.ok_or_else(|| Error::Problem("no valid page split".into()))?
    };
    // (Borrowed from the copy, given back once the parent has it.)
    let sep = if sp == idx { key } else { key_at(op, old_of(sp), pgno)? };
    w.count(Counted::Split);
    let right = w.new_page(page_flags)?;
    // Both halves are built in place from the copy `old`: the right one in
    // its new page, the left one over the old page itself (which, with
    // WRITEMAP, is the map's own page: nothing to write back at commit).
    let fill = |buf: &mut [u8], range: std::ops::Range<usize>| -> Result<()> {
        if let Some(k) = dupfix_k {
            fpage::set_dupfix_ksize(buf, k as u16);
        }
        let first = range.start;
        for (at, j) in range.enumerate() {
            let drop_key = is_branch && j == first && first > 0;
            if j == idx {
                let k: &[u8] = if drop_key { &[] } else { key };
                p_insert(buf, at, k, hdr, flags, data)?;
            } else if dupfix_k.is_some() {
                node::dupfix_insert(buf, at, key_at(op, old_of(j), pgno)?);
            } else if drop_key {
                let child = child_at(op, old_of(j), pgno)?;
                node::insert(buf, at, &[], child, 0, &[]);
            } else {
                // The node's bytes, measured (and checked to lie in the
                // page) by `raw_node` for `before`: not parsed again.
                let off = PAGEHDRSZ + op.entry(old_of(j));
                node::append_raw(buf, &op.buf[off..off + before[j + 1] - before[j] - 2]);
            }
        }
        Ok(())
    };
    fill(w.dirty_mut(right), sp..total)?;
    // The header rewritten whole; the bytes between the halves' entries and
    // nodes keep what they held, as a new map page's and a copy's gap do
    // (zeroing the page was a 4 KiB `memset` a split).
    let left = w.dirty_mut(pgno);
    fpage::init_page(left, pgno, page_flags, op.txnid());
    fill(left, 0..sp)?;
    w.keep_sizes(before);
    if is_branch {
        tree.inc_branch(1, pgno)?;
    } else {
        tree.inc_leaf(1, pgno)?;
    }
    let linked = link_right(w, tree, path, level, pgno, right, sep, rightmost);
    w.recycle(old);
    linked
}

/// After page `pgno` at `level` split: links its new right sibling `right`,
/// whose first key is `sep`, into the parent (a new root at the top).
#[allow(clippy::too_many_arguments)]
fn link_right<W: TreeWriter + ?Sized>(
    w: &mut W,
    tree: &mut Tree,
    path: &Path,
    level: usize,
    pgno: u32,
    right: u32,
    sep: &[u8],
    rightmost: bool,
) -> Result<()> {
    if level == 0 {
        let root = w.new_page(pflags::BRANCH)?;
        let buf = w.dirty_mut(root);
        p_insert(buf, 0, &[], pgno, 0, &[])?;
        p_insert(buf, 1, sep, right, 0, &[])?;
        tree.root = root;
        tree.inc_height(root)?;
        tree.inc_branch(1, root)?;
        return Ok(());
    }
    let (_, pidx) = path.at(level - 1);
    insert_at(w, tree, path, level - 1, pidx + 1, sep, right, 0, &[], Some(rightmost))
}

/// The split point (`1..total`, where `before[sp]` is the bytes of the
/// entries before it and `before[total]` all of them) whose halves differ
/// least in bytes among those `valid` accepts, the lowest on a tie; `None`
/// if it accepts none. The sizes grow strictly, so the difference falls up
/// to where the left half reaches half the bytes and rises after it: the
/// best of all is one of the (at most) two points around there, and the
/// best valid one too if both are valid. Else every point is weighed (as
/// every split did before: 1,300 instructions a leaf split of 80 entries).
fn best_split(before: &[usize], mut valid: impl FnMut(usize) -> Result<bool>) -> Result<Option<usize>> {
    let total = before.len() - 1;
    let all = before[total];
    let diff = |sp: usize| before[sp].abs_diff(all - before[sp]);
    let mid = before[..total].partition_point(|&b| 2 * b < all);
    let mut best: Option<(usize, usize)> = None;
    let mut all_valid = true;
    for sp in [mid.wrapping_sub(1), mid].into_iter().filter(|&sp| sp >= 1 && sp < total) {
        if !valid(sp)? {
            all_valid = false;
        } else if best.is_none_or(|b| diff(sp) < b.1) {
            best = Some((sp, diff(sp)));
        }
    }
    if !all_valid || best.is_none() {
        best = None;
        for sp in 1..total {
            if valid(sp)? && best.is_none_or(|b| diff(sp) < b.1) {
                best = Some((sp, diff(sp)));
            }
        }
    }
    Ok(best.map(|b| b.0))
}

/// Whether the path follows the last entry of every branch.
pub(crate) fn is_rightmost<W: TreeWriter + ?Sized>(w: &W, path: &Path) -> Result<bool> {
    for l in 0..path.leaf() {
        let (pg, i) = path.at(l);
        if i + 1 != (Page { buf: w.pages().get(pg)? }).num_entries() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Gives the entry `path` leads to, the last of `tree` (the current tree of
/// `db`, not a multimap's, found with nothing changed since: [`is_last`]),
/// the key `key` if it holds its value inline and `key` is as long as its
/// own and greater (so the order holds: a branch's separator is a lower
/// bound of its child's keys), copying the path on write; the value stays
/// as it is. Returns where the value lives then, or `None` (nothing
/// changed) if the entry is not such.
pub(crate) fn rename_last<W: TreeWriter + ?Sized>(
    w: &mut W,
    db: W::Db,
    mut tree: Tree,
    cmp: Cmp,
    path: &mut Path,
    key: &[u8],
) -> Result<Option<ValLoc>> {
    let (lpg, idx) = path.at(path.leaf());
    {
        let page = Page { buf: w.pages().get(lpg)? };
        if page.is_dupfix() {
            return Ok(None);
        }
        let n = node::node(page, idx, lpg)?;
        if n.flags != 0 || n.key.len() != key.len() || cmp.cmp(n.key, key) != std::cmp::Ordering::Less {
            return Ok(None);
        }
    }
    touch_path(w, &mut tree, path)?;
    let lpg = path.at(path.leaf()).0;
    let buf = w.dirty_mut(lpg);
    let (off, len) = node::key_range(buf, idx);
    buf[off..off + len].copy_from_slice(key);
    let (off, len) = node::value_range(buf, idx);
    finish(w, db, tree);
    Ok(Some(ValLoc { pgno: lpg, off, len }))
}

/// Whether `path` leads to the last entry of its tree.
pub(crate) fn is_last<W: TreeWriter + ?Sized>(w: &W, path: &Path) -> Result<bool> {
    let (lpg, idx) = path.at(path.leaf());
    Ok(idx + 1 == (Page { buf: w.pages().get(lpg)? }).num_entries() && is_rightmost(w, path)?)
}

/// Frees the large chunk at `pgno` (reading its page count).
pub(crate) fn free_large<W: TreeWriter + ?Sized>(w: &mut W, tree: &mut Tree, pgno: u32) -> Result<()> {
    let n = {
        let pages = w.pages();
        let head = pages.get(pgno)?;
        let p = Page { buf: head };
        if p.flags() != pflags::LARGE || p.large_count() == 0 {
            return Err(Error::corrupted(pgno, "large value points to a page that is not a large page"));
        }
        p.large_count()
    };
    if pgno as u64 + n as u64 > w.pages().valid as u64 {
        return Err(Error::corrupted(pgno, "large chunk outside the allocated pages"));
    }
    tree.dec_large(n, pgno)?;
    w.free(pgno, n as usize);
    Ok(())
}

/// Zeros for reserved inline values.
static ZEROS: [u8; crate::format::MAX_PAGESIZE] = [0; crate::format::MAX_PAGESIZE];

/// Stores a value: inline bytes in `data`, or a new large chunk.
// Inline: a one-put commit runs 24 more instructions without it
// (docs/design.md, "Inlining on the commit path").
#[inline(always)]
fn make_value<'v, W: TreeWriter + ?Sized>(
    w: &mut W,
    tree: &mut Tree,
    klen: usize,
    val: &Val<'v>,
    nflags: u8,
) -> Result<(u32, u8, NodeData<'v>)> {
    let len = val.len();
    if w.limits().fits_inline(klen, len) {
        // Inline bytes are copied straight from the caller's slice.
        let data = match val {
            Val::Bytes(b) => NodeData::Inline(b),
            // A reserved value starts as zeros (no allocation: it is inline,
            // so shorter than a page).
            Val::Reserve(n) | Val::Filled(n) => NodeData::Inline(&ZEROS[..*n]),
        };
        return Ok((len as u32, nflags, data));
    }
    let n = w.limits().large_pages(len);
    let pgno = w.new_large(n, len)?;
    val.copy_to(&mut w.dirty_mut_full(pgno)[PAGEHDRSZ..PAGEHDRSZ + len]);
    tree.inc_large(n as u32, pgno)?;
    Ok((len as u32, nflags | N_BIG, NodeData::Large(pgno.to_le_bytes())))
}

/// The bytes a leaf node holds after its key: the value itself, or the
/// first page number of the large chunk holding it (kept here, not on the
/// heap: a large value's put allocated 4 bytes for it).
enum NodeData<'v> {
    Inline(&'v [u8]),
    Large([u8; 4]),
}

impl std::ops::Deref for NodeData<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            NodeData::Inline(b) => b,
            NodeData::Large(p) => p,
        }
    }
}

/// Put (upsert by default). `nflags` are node flags (N_TREE for table records).
#[inline]
pub(crate) fn put<W: TreeWriter + ?Sized>(
    w: &mut W,
    db: W::Db,
    key: &[u8],
    val: Val<'_>,
    flags: PutFlags,
    nflags: u8,
) -> Result<ValLoc> {
    put_on(w, db, key, val, flags, nflags, None)
}

/// [`put`], with `at` (when given) the path a search for `key` finds in
/// the table (not a multimap), which holds it: a write cursor standing on
/// the record replaces its value without a search (`CURRENT`). On return
/// `at` leads to the record (its pages now this transaction's copies), or
/// is emptied (`len` 0) when the record's leaf split. (One function for
/// both: a second copy of its body made the compiler stop inlining the
/// page copy's map claims into `touch`, +130 instructions a commit.)
pub(crate) fn put_on<W: TreeWriter + ?Sized>(
    w: &mut W,
    db: W::Db,
    key: &[u8],
    val: Val<'_>,
    flags: PutFlags,
    nflags: u8,
    at: Option<&mut Path>,
) -> Result<ValLoc> {
    let t = w.table(db)?;
    check_value_size(&w.limits(), t.flags, val.len())?;
    if t.flags.contains(DbFlags::DUP_SORT) {
        return match val {
            Val::Bytes(v) => super::dupsort::put(w, db, key, v, flags).map(|_| ValLoc { pgno: 0, off: 0, len: 0 }),
            Val::Reserve(_) | Val::Filled(_) => {
                Err(Error::Incompatible("RESERVE is not available on multimap (DUP_SORT) tables".into()))
            }
        };
    }
    let cmp = t.cmp;
    let mut tree = t.tree;
    if let (Some(lpg), Val::Bytes(v), true) = (w.append_leaf(db), &val, flags == PutFlags::APPEND && nflags == 0) {
        if append_fast(w, db, &mut tree, cmp, lpg, key, v)? {
            return Ok(ValLoc { pgno: 0, off: 0, len: 0 });
        }
    }
    // Where a reserved value lives, for a caller that asked (RESERVE); the
    // GC update reserves without it and finds its records once, at the end.
    let reserve = matches!(val, Val::Reserve(_) | Val::Filled(_)) && flags.contains(PutFlags::RESERVE);
    if tree.root == P_INVALID {
        if flags.contains(PutFlags::CURRENT) {
            return Err(Error::NotFound);
        }
        let pg = w.new_page(pflags::LEAF)?;
        let (hdr, fl, data) = make_value(w, &mut tree, key.len(), &val, nflags)?;
        p_insert(w.dirty_mut(pg), 0, key, hdr, fl, &data)?;
        tree.root = pg;
        tree.height = 1;
        tree.leaf_pages = 1;
        tree.items = 1;
        tree.mod_txnid = w.txnid();
        finish(w, db, tree);
        let loc = match (reserve, fl & N_BIG != 0) {
            (false, _) => ValLoc { pgno: 0, off: 0, len: 0 },
            (true, true) => ValLoc { pgno: u32_at(&data, 0), off: PAGEHDRSZ, len: val.len() },
            // The only node of a new page sits at its end (`node::insert`):
            // no lookup of the page again (the GC update reserves its record
            // in an emptied GC tree this way at most commits).
            (true, false) => {
                let node = NODESIZE + even_ceil(key.len() + data.len());
                ValLoc { pgno: pg, off: w.limits().page_size - node + NODESIZE + key.len(), len: data.len() }
            }
        };
        debug_assert!(
            !reserve || loc_at(w, pg, 0).is_ok_and(|l| (l.pgno, l.off, l.len) == (loc.pgno, loc.off, loc.len))
        );
        return Ok(loc);
    }
    let mut own_path = Path::new();
    let (path, exact) = match at {
        Some(p) => (p, true),
        None if flags.contains(PutFlags::APPEND) => {
            let exact = find_path_append(w, &tree, key, cmp, &mut own_path)?;
            (&mut own_path, exact)
        }
        None => {
            let exact = find_path(w, &tree, key, cmp, &mut own_path)?;
            (&mut own_path, exact)
        }
    };
    let leaf = path.leaf();
    let (lpg, idx) = path.at(leaf);
    if cmp == Cmp::Int {
        let k0 = key_at(Page { buf: w.pages().get(lpg)? }, 0, lpg)?;
        if k0.len() != key.len() {
            return Err(Error::BadValSize(format!("INTEGER_KEY table uses {}-byte keys, got {}", k0.len(), key.len())));
        }
    }
    if exact && flags.contains(PutFlags::NO_OVERWRITE) {
        return Err(Error::KeyExist);
    }
    if !exact && flags.contains(PutFlags::CURRENT) {
        return Err(Error::NotFound);
    }
    // Whether the insert is at the tree's right edge, for the split policy:
    // read only if the leaf splits. A value that grows out of its leaf there
    // (the last key rewritten bigger) splits off alone, as an append does,
    // and the leaf it leaves stays full: split in the middle, keys loaded in
    // order with each value rewritten bigger took twice libmdbx's pages.
    let rightmost = if flags.contains(PutFlags::APPEND) && !exact { Some(true) } else { None };
    touch_path(w, &mut tree, path)?;
    let lpg = path.at(leaf).0;
    if exact {
        let new_inline = w.limits().fits_inline(key.len(), val.len());
        // One dirty-set lookup for reading the node and, when it is
        // overwritten in place, writing it.
        let buf = w.dirty_mut(lpg);
        let (oflags, odata_len, big_pgno) = {
            let n = node::node(Page { buf: &*buf }, idx, lpg)?;
            (n.flags, n.data.len(), if n.flags & N_BIG != 0 { n.big_pgno() } else { 0 })
        };
        if nflags == 0 && oflags & !N_BIG != 0 {
            return Err(Error::Incompatible("the key names a table; write to the table instead".into()));
        }
        // Same-size inline value: overwrite in place.
        if oflags & N_BIG == 0 && new_inline && odata_len == val.len() && oflags == nflags {
            let (off, len) = node::value_range(buf, idx);
            val.copy_to(&mut buf[off..off + len]);
            finish(w, db, tree);
            return Ok(ValLoc { pgno: lpg, off, len });
        }
        // Large value of the same page count in a chunk this w wrote: in place.
        if oflags & N_BIG != 0 && !new_inline && w.page_is_dirty(big_pgno) {
            let n_old = Page { buf: w.dirty_ref(big_pgno) }.large_count() as usize;
            if n_old == w.limits().large_pages(val.len()) {
                let len = val.len();
                val.copy_to(&mut w.dirty_mut_full(big_pgno)[PAGEHDRSZ..PAGEHDRSZ + len]);
                let off = PAGEHDRSZ + Page { buf: w.dirty_ref(lpg) }.entry(idx);
                put_u32(w.dirty_mut(lpg), off, len as u32);
                finish(w, db, tree);
                return Ok(ValLoc { pgno: big_pgno, off: PAGEHDRSZ, len });
            }
        }
        if oflags & N_BIG != 0 {
            free_large(w, &mut tree, big_pgno)?;
        }
        // The record is replaced: a count without it is corruption.
        tree.dec_items(1, lpg)?;
        tree.inc_items(1, lpg)?;
        p_remove(w.dirty_mut(lpg), idx);
    }
    let (hdr, fl, data) = make_value(w, &mut tree, key.len(), &val, nflags)?;
    let leaves = tree.leaf_pages;
    if !exact {
        tree.inc_items(1, lpg)?;
    }
    insert_at(w, &mut tree, path, leaf, idx, key, hdr, fl, &data, rightmost)?;
    if tree.leaf_pages != leaves {
        // A split: the path no longer leads to the record.
        path.len = 0;
    }
    if flags == PutFlags::APPEND && nflags == 0 && !exact && tree.leaf_pages == leaves {
        // No split: the leaf is still the rightmost one, and dirty.
        finish_append(w, db, tree, lpg)?;
    } else {
        finish(w, db, tree);
    }
    if !reserve {
        Ok(ValLoc { pgno: 0, off: 0, len: 0 })
    } else if tree.leaf_pages == leaves {
        // No split: the entry is where it was inserted.
        loc_at(w, lpg, idx)
    } else {
        locate(w, db, key)
    }
}

/// APPEND into the rightmost leaf `lpg` remembered by the previous APPEND put
/// of this transaction, without a descent: a sequential load then costs one
/// dirty-page lookup and a key comparison per put. Returns false, having
/// changed nothing, when the slow path must decide (a value not inline, a key
/// not greater than the last key, a full leaf).
fn append_fast<W: TreeWriter + ?Sized>(
    w: &mut W,
    db: W::Db,
    tree: &mut Tree,
    cmp: Cmp,
    lpg: u32,
    key: &[u8],
    val: &[u8],
) -> Result<bool> {
    if !w.limits().fits_inline(key.len(), val.len()) || !w.page_is_dirty(lpg) {
        return Ok(false);
    }
    let buf = w.dirty_ref(lpg);
    let page = Page { buf };
    let n = page.num_entries();
    if n == 0 || page.is_dupfix() || need(buf, key, val) > room(buf) {
        return Ok(false);
    }
    let last = key_at(page, n - 1, lpg)?;
    if (cmp == Cmp::Int && last.len() != key.len()) || !cmp.cmp(last, key).is_lt() {
        return Ok(false);
    }
    tree.inc_items(1, lpg)?;
    p_insert(w.dirty_mut(lpg), n, key, val.len() as u32, 0, val)?;
    finish_append(w, db, *tree, lpg)?;
    Ok(true)
}

/// Stores the edited tree of `db` (which forgets its APPEND hint).
// Inline: a one-put commit runs 24 more instructions without it
// (docs/design.md, "Inlining on the commit path").
#[inline]
pub(crate) fn finish<W: TreeWriter + ?Sized>(w: &mut W, db: W::Db, mut tree: Tree) {
    tree.mod_txnid = w.txnid();
    // Fails only for a handle the edit has already used successfully. (The
    // error is dropped out of line: `let _ =` dropped every result through
    // a call, 11 instructions each, 4 a one-put commit.)
    if let Err(e) = w.set_tree(db, tree, None) {
        drop_cold(e);
    }
}

#[cold]
#[inline(never)]
fn drop_cold(_: Error) {}

/// [`finish`] after an APPEND put that left `lpg` the rightmost leaf: the
/// next APPEND of the transaction may insert there directly.
fn finish_append<W: TreeWriter + ?Sized>(w: &mut W, db: W::Db, mut tree: Tree, lpg: u32) -> Result<()> {
    tree.mod_txnid = w.txnid();
    w.set_tree(db, tree, Some(lpg))
}

/// Finds where the value of `key` lives (after a RESERVE put: its leaf is
/// dirty, and so is its large chunk if it has one).
pub(crate) fn locate<W: TreeWriter + ?Sized>(w: &W, db: W::Db, key: &[u8]) -> Result<ValLoc> {
    let t = w.table(db)?;
    let mut path = Path::new();
    let exact = find_path(w, &t.tree, key, t.cmp, &mut path)?;
    let (lpg, idx) = path.at(path.leaf());
    if !exact {
        return Err(Error::Problem("reserved value vanished".into()));
    }
    loc_at(w, lpg, idx)
}

/// Where the value of `key` lives now (`None`: no such key), in a dirty
/// page or not: a page the transaction spilled is read through the map.
pub(crate) fn find_value<W: TreeWriter + ?Sized>(w: &W, db: W::Db, key: &[u8]) -> Result<Option<ValLoc>> {
    let t = w.table(db)?;
    let mut path = Path::new();
    if !find_path(w, &t.tree, key, t.cmp, &mut path)? {
        return Ok(None);
    }
    let (lpg, idx) = path.at(path.leaf());
    loc_in(w.pages().get(lpg)?, lpg, idx).map(Some)
}

/// Where the value of entry `idx` of leaf `lpg` lives; the leaf must be
/// dirty (as a put leaves it).
fn loc_at<W: TreeWriter + ?Sized>(w: &W, lpg: u32, idx: usize) -> Result<ValLoc> {
    if !w.page_is_dirty(lpg) {
        return Err(Error::Problem("reserved value vanished".into()));
    }
    loc_in(w.dirty_ref(lpg), lpg, idx)
}

/// Where the value of entry `idx` of leaf `lpg` (in `buf`) lives.
fn loc_in(buf: &[u8], lpg: u32, idx: usize) -> Result<ValLoc> {
    let n = node::node(Page { buf }, idx, lpg)?;
    if n.flags & N_BIG != 0 {
        return Ok(ValLoc { pgno: n.big_pgno(), off: PAGEHDRSZ, len: n.dsize as usize });
    }
    let (off, len) = node::value_range(buf, idx);
    Ok(ValLoc { pgno: lpg, off, len })
}

/// Deletes `key` (only if its value equals `val`, when given).
pub(crate) fn del<W: TreeWriter + ?Sized>(w: &mut W, db: W::Db, key: &[u8], val: Option<&[u8]>) -> Result<bool> {
    let t = w.table(db)?;
    if t.flags.contains(DbFlags::DUP_SORT) {
        return super::dupsort::del(w, db, key, val);
    }
    let tree = t.tree;
    if tree.root == P_INVALID {
        return Ok(false);
    }
    let mut path = Path::new();
    let exact = find_path(w, &tree, key, t.cmp, &mut path)?;
    if !exact {
        return Ok(false);
    }
    if let Some(v) = val {
        let (lpg, idx) = path.at(path.leaf());
        let pages = w.pages();
        let lp = Page { buf: pages.get(lpg)? };
        let n = node::node(lp, idx, lpg)?;
        if super::node_value(&pages, &n, lpg, lp.txnid())? != v {
            return Ok(false);
        }
    }
    del_at(w, db, tree, &mut path)?;
    Ok(true)
}

/// Deletes the entry `path` leads to in `tree`, the current tree of `db`
/// (not a multimap's), as found by a descent with nothing changed since.
/// Returns whether the tree kept its shape: then `path` (its pages now this
/// transaction's copies) leads to where the entry was, which holds its
/// successor, or is one past the leaf's end if it was the leaf's last.
pub(crate) fn del_at<W: TreeWriter + ?Sized>(w: &mut W, db: W::Db, mut tree: Tree, path: &mut Path) -> Result<bool> {
    let leaf = path.leaf();
    let (lpg, idx) = path.at(leaf);
    let (big, entries) = {
        let lp = Page { buf: w.pages().get(lpg)? };
        let n = node::node(lp, idx, lpg)?;
        (if n.flags & N_BIG != 0 { Some(n.big_pgno()) } else { None }, lp.num_entries())
    };
    tree.dec_items(1, lpg)?;
    // The last entry of a tree that is one leaf: the tree becomes empty, and
    // the leaf is freed as it is, not copied first only to be freed (each
    // small commit empties the GC tree this way when it consumes its one
    // record, and then writes a new one).
    if leaf == 0 && entries == 1 {
        if let Some(b) = big {
            free_large(w, &mut tree, b)?;
        }
        w.free(lpg, 1);
        finish(w, db, tree.without_pages());
        return Ok(false);
    }
    touch_path(w, &mut tree, path)?;
    if let Some(b) = big {
        free_large(w, &mut tree, b)?;
    }
    let changed = remove_at(w, &mut tree, path, leaf)?;
    finish(w, db, tree);
    Ok(!changed)
}

/// Removes the entry `path` leads to on the page at `level` (this
/// transaction's copy) and restores the tree's invariants; whether that
/// changed anything but the page ([`rebalance`]). The page is looked up
/// once when it [`stays`], as after most removals: a walk deleting
/// multimap values spent 6% of its time calling `rebalance` to look the
/// page up again and find that.
pub(crate) fn remove_at<W: TreeWriter + ?Sized>(
    w: &mut W,
    tree: &mut Tree,
    path: &mut Path,
    level: usize,
) -> Result<bool> {
    let cap = w.limits().page_size - PAGEHDRSZ;
    let (pgno, idx) = path.at(level);
    let buf = w.dirty_mut(pgno);
    p_remove(buf, idx);
    if stays(buf, level, cap) {
        return Ok(false);
    }
    rebalance(w, tree, path, level)
}

fn used(buf: &[u8]) -> usize {
    buf.len() - PAGEHDRSZ - room(buf)
}

/// Whether the tree page `buf` at `level` (0: the root) stays as it is
/// after a removal from it: [`rebalance`] changes nothing then. A root
/// changes when it is an empty leaf or a branch of one child; another page
/// when it is nearly empty (no entry, or a branch of one child) or less than
/// a quarter full (of `cap` bytes).
fn stays(buf: &[u8], level: usize, cap: usize) -> bool {
    let p = Page { buf };
    let n = p.num_entries();
    if level == 0 {
        return if p.is_branch() { n != 1 } else { n != 0 };
    }
    let minimal = if p.is_branch() { n < 2 } else { n == 0 };
    !minimal && used(buf) * 4 >= cap
}

/// Restores the invariants after a removal from the page at `level`.
/// Returns whether it changed anything: false when that page [`stays`],
/// and `path` then still leads to it.
pub(crate) fn rebalance<W: TreeWriter + ?Sized>(
    w: &mut W,
    tree: &mut Tree,
    path: &mut Path,
    mut level: usize,
) -> Result<bool> {
    let ps = w.limits().page_size;
    let cap = ps - PAGEHDRSZ;
    let first = level;
    loop {
        let pgno = path.at(level).0;
        let (n, is_branch) = {
            let buf = w.dirty_ref(pgno);
            if stays(buf, level, cap) {
                // Unchanged only if this is the page the removal was from;
                // a parent the loop came up to counts as a change (safe:
                // the caller then searches again).
                return Ok(level != first);
            }
            let p = Page { buf };
            (p.num_entries(), p.is_branch())
        };
        if level == 0 {
            if !is_branch {
                // An empty leaf.
                w.free(pgno, 1);
                *tree = tree.without_pages();
            } else {
                // A branch of one child.
                let child = child_at(Page { buf: w.dirty_ref(pgno) }, 0, pgno)?;
                w.free(pgno, 1);
                tree.root = child;
                tree.dec_height(pgno)?;
                tree.dec_branch(1, pgno)?;
            }
            return Ok(true);
        }
        let minimal = if is_branch { n < 2 } else { n == 0 };
        let (ppg, pidx) = path.at(level - 1);
        let pn = Page { buf: w.dirty_ref(ppg) }.num_entries();
        let sidx = if pidx + 1 < pn {
            pidx + 1
        } else if pidx > 0 {
            pidx - 1
        } else {
            // A parent with a single child: fix the parent first.
            level -= 1;
            continue;
        };
        let spg_old = child_at(Page { buf: w.dirty_ref(ppg) }, sidx, ppg)?;
        let spg = w.touch(spg_old)?;
        if spg != spg_old {
            node::set_child(w.dirty_mut(ppg), sidx, spg);
        }
        {
            let sp = Page { buf: w.dirty_ref(spg) };
            sp.check_tree_page(spg, w.txnid())?;
            if sp.is_branch() != is_branch {
                return Err(Error::corrupted(spg, "sibling pages of different kinds"));
            }
            if !is_branch {
                super::check_leaf_kind(sp, tree, spg)?;
            }
        }
        let (left, right, ridx) = if sidx > pidx { (pgno, spg, sidx) } else { (spg, pgno, pidx) };
        // Entries move between pages read from pooled copies of the pages
        // they come from (no entry is copied out on its own: each one cost
        // two allocations, a merge of a leaf of 45 entries 90), and a
        // branch's separator from a copy of the parent.
        let parent = if is_branch { Some(w.copy_dirty(ppg)) } else { None };
        let sep = match &parent {
            Some(pc) => key_at(Page { buf: pc }, ridx, ppg)?,
            None => &[],
        };
        let extra = if is_branch { even_ceil(sep.len()) } else { 0 };
        if used(w.dirty_ref(left)) + used(w.dirty_ref(right)) + extra <= cap {
            // Merge right into left.
            let src = w.copy_dirty(right);
            let sp = Page { buf: &src };
            let base = Page { buf: w.dirty_ref(left) }.num_entries();
            let lb = w.dirty_mut(left);
            for i in 0..sp.num_entries() {
                copy_entry(lb, base + i, sp, i, right, (is_branch && i == 0).then_some(sep))?;
            }
            w.recycle(src);
            if let Some(pc) = parent {
                w.recycle(pc);
            }
            w.free(right, 1);
            w.count(Counted::Merge);
            if is_branch {
                tree.dec_branch(1, right)?;
            } else {
                tree.dec_leaf(1, right)?;
            }
            p_remove(w.dirty_mut(ppg), ridx);
            level -= 1;
            continue;
        }
        if !minimal {
            if let Some(pc) = parent {
                w.recycle(pc);
            }
            return Ok(true);
        }
        // Borrow one entry from the sibling (which then still has enough).
        let sib_n = Page { buf: w.dirty_ref(spg) }.num_entries();
        if sib_n <= if is_branch { 2 } else { 1 } {
            return Err(Error::Problem("cannot rebalance: neither merge nor borrow fits".into()));
        }
        // The sibling as it was: the moved entry and the new separator
        // (a key of the sibling's) are read from it.
        let src = w.copy_dirty(spg);
        let sp = Page { buf: &src };
        let new_sep;
        #[cfg(test)]
        BORROWS.with(|b| {
            let (l, r) = b.get();
            b.set(if sidx > pidx { (l, r + 1) } else { (l + 1, r) });
        });
        if sidx > pidx {
            // From the right sibling's front to our end.
            p_remove(w.dirty_mut(right), 0);
            if is_branch {
                // Its second entry becomes its first, without a key.
                p_remove(w.dirty_mut(right), 0);
                p_insert(w.dirty_mut(right), 0, &[], child_at(sp, 1, right)?, 0, &[])?;
            }
            new_sep = key_at(sp, 1, right)?;
            let at = Page { buf: w.dirty_ref(left) }.num_entries();
            copy_entry(w.dirty_mut(left), at, sp, 0, right, is_branch.then_some(sep))?;
        } else {
            // From the left sibling's end to our front.
            let ln = sp.num_entries();
            p_remove(w.dirty_mut(left), ln - 1);
            if is_branch {
                // Our first entry takes the separator; the moved one comes
                // before it without a key.
                let c0 = child_at(Page { buf: w.dirty_ref(right) }, 0, right)?;
                p_remove(w.dirty_mut(right), 0);
                p_insert(w.dirty_mut(right), 0, sep, c0, 0, &[])?;
            }
            new_sep = key_at(sp, ln - 1, left)?;
            copy_entry(w.dirty_mut(right), 0, sp, ln - 1, left, is_branch.then_some(&[][..]))?;
        }
        // Replace the separator in the parent (may split the parent).
        let child = child_at(Page { buf: w.dirty_ref(ppg) }, ridx, ppg)?;
        p_remove(w.dirty_mut(ppg), ridx);
        let mut ppath = *path;
        ppath.len = level;
        let r = insert_at(w, tree, &ppath, level - 1, ridx, new_sep, child, 0, &[], Some(false));
        w.recycle(src);
        if let Some(pc) = parent {
            w.recycle(pc);
        }
        return r.map(|()| true);
    }
}

/// Collects every page of a tree (and of its nested trees and large chunks) as
/// (first page, count) runs, checking its structure with the shared walk
/// (`walk`): the first fault is `Corrupted`, before anything was freed.
/// `kind` and `flags` are the tree's (for a nested tree: its host table's
/// flags); `host` is the page holding the descriptor.
pub(crate) fn collect_pages<W: TreeWriter + ?Sized>(
    w: &W,
    tree: &Tree,
    kind: Kind,
    flags: DbFlags,
    host: Option<u32>,
    out: &mut Vec<(u32, usize)>,
) -> Result<()> {
    struct Collect<'a>(&'a mut Vec<(u32, usize)>);
    impl<'t> Visitor<'t> for Collect<'_> {
        fn page(&mut self, _w: &mut Walk<'t>, ev: &PageEv<'t>) -> Result<()> {
            self.0.push((ev.pgno, 1));
            Ok(())
        }
        fn large(&mut self, _ev: &NodeEv<'t>, head: u32, pages: u32, _v: &'t [u8]) -> Result<()> {
            self.0.push((head, pages as usize));
            Ok(())
        }
    }
    let pages = w.pages();
    let spec = Spec { kind, flags, tree: *tree, front: pages.front, host };
    walk::walk_txn(pages, &spec, &mut Collect(out)).map(|_| ())
}

/// Frees every page of `db` and empties it.
pub(crate) fn clear<W: TreeWriter + ?Sized>(w: &mut W, db: W::Db) -> Result<()> {
    let t = w.table(db)?;
    let mut runs = Vec::new();
    let kind = w.kind(db);
    collect_pages(w, &t.tree, kind, t.flags, None, &mut runs)?;
    for (pg, n) in runs {
        w.free(pg, n);
    }
    finish(w, db, Tree { sequence: 0, ..t.tree.without_pages() });
    Ok(())
}

// Borrows between siblings made by `rebalance` on this thread: (from the
// left sibling, from the right one).
#[cfg(test)]
thread_local! {
    pub(crate) static BORROWS: std::cell::Cell<(u32, u32)> = const { std::cell::Cell::new((0, 0)) };
}

#[cfg(test)]
mod split_tests {
    use proptest::prelude::*;

    use super::best_split;

    proptest! {
        /// The split point is the one a scan of every point picks: the
        /// least difference among the valid points, the lowest on a tie.
        #[test]
        fn best_split_is_the_full_scans(
            sizes in prop::collection::vec(1usize..300, 2..120),
            valid in prop::collection::vec(prop::bool::weighted(0.9), 120),
        ) {
            let mut before = vec![0];
            for s in &sizes {
                before.push(before.last().unwrap() + s);
            }
            let total = sizes.len();
            let all = before[total];
            let mut want: Option<(usize, usize)> = None;
            for sp in 1..total {
                let d = before[sp].abs_diff(all - before[sp]);
                if valid[sp] && want.is_none_or(|w| d < w.1) {
                    want = Some((sp, d));
                }
            }
            let got = best_split(&before, |sp| Ok(valid[sp])).unwrap();
            prop_assert_eq!(got, want.map(|w| w.0));
        }
    }
}
