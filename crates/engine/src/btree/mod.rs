//! B+tree algorithms over MDBX pages: key comparison and page search (here),
//! read cursors (`cursor`), and edits: insert, split, delete, rebalance and large
//! values (`write`).

pub mod cursor;
pub(crate) mod dupsort;
pub(crate) mod estimate;
#[cfg(test)]
pub(crate) mod mem;
pub(crate) mod pages;
pub(crate) mod verify;
pub(crate) mod walk;
pub(crate) mod write;
pub(crate) mod writer;

use std::cmp::Ordering;

use crate::btree::pages::Pages;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::format::node::{self, Node, N_BIG};
use crate::format::page::Page;
use crate::format::{u16_at, NODESIZE, PAGEHDRSZ};

/// Deepest tree a cursor follows (libmdbx's cursor stack depth on 64-bit).
pub(crate) const MAX_DEPTH: usize = 32;

/// Key comparator chosen by the table flags (format doc §10.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    /// memcmp, shorter first on a common prefix.
    Lex,
    /// Compare from the last byte backwards.
    Rev,
    /// Native-endian unsigned integers of equal width (4 or 8 bytes).
    Int,
}

impl Cmp {
    /// Comparator of the values of a DUPSORT table (None for other tables).
    pub(crate) fn for_dups(flags: DbFlags) -> Option<Cmp> {
        if !flags.contains(DbFlags::DUP_SORT) {
            None
        } else if flags.contains(DbFlags::INTEGER_DUP) {
            Some(Cmp::Int)
        } else if flags.contains(DbFlags::REVERSE_DUP) {
            Some(Cmp::Rev)
        } else {
            Some(Cmp::Lex)
        }
    }

    pub(crate) fn for_keys(flags: DbFlags) -> Cmp {
        if flags.contains(DbFlags::INTEGER_KEY) {
            Cmp::Int
        } else if flags.contains(DbFlags::REVERSE_KEY) {
            Cmp::Rev
        } else {
            Cmp::Lex
        }
    }

    #[inline]
    pub(crate) fn cmp(self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            Cmp::Lex => lex(a, b),
            Cmp::Rev => a.iter().rev().cmp(b.iter().rev()),
            Cmp::Int => match (a.len(), b.len()) {
                (8, 8) => u64::from_le_bytes(a.try_into().unwrap()).cmp(&u64::from_le_bytes(b.try_into().unwrap())),
                (4, 4) => u32::from_le_bytes(a.try_into().unwrap()).cmp(&u32::from_le_bytes(b.try_into().unwrap())),
                // Damaged data: any total order keeps searches safe.
                _ => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
            },
        }
    }
}

/// Lexicographic order (memcmp, then length), comparing 8 bytes at a time:
/// keys are mostly short, where a call to libc's memcmp costs more than the
/// comparison itself.
#[inline]
pub(crate) fn lex(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let (mut ca, mut cb) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    for (x, y) in (&mut ca).zip(&mut cb) {
        let (x, y) = (u64::from_be_bytes(x.try_into().unwrap()), u64::from_be_bytes(y.try_into().unwrap()));
        if x != y {
            return x.cmp(&y);
        }
    }
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// Key of node `i` (or item `i` of a DUPFIX page), bounds-checked.
#[inline]
pub(crate) fn key_at<'a>(page: Page<'a>, i: usize, pgno: u32) -> Result<&'a [u8]> {
    let buf = page.buf;
    if page.is_dupfix() {
        let k = page.dupfix_ksize() as usize;
        return buf
            .get(PAGEHDRSZ + i * k..PAGEHDRSZ + (i + 1) * k)
            .ok_or_else(|| Error::corrupted(pgno, "DUPFIX item outside the page"));
    }
    let off = PAGEHDRSZ + page.entry(i);
    if off + NODESIZE > buf.len() {
        return Err(Error::corrupted(pgno, "node offset outside the page"));
    }
    let ksize = u16_at(buf, off + 6) as usize;
    buf.get(off + NODESIZE..off + NODESIZE + ksize).ok_or_else(|| Error::corrupted(pgno, "node key overruns the page"))
}

/// Binary search in a leaf: index of the first key `>= key` and whether it is equal.
#[inline]
pub(crate) fn search_leaf(page: Page<'_>, key: &[u8], cmp: Cmp, pgno: u32) -> Result<(usize, bool)> {
    let (mut lo, mut hi) = (0usize, page.num_entries());
    while lo < hi {
        let mid = (lo + hi) / 2;
        match cmp.cmp(key_at(page, mid, pgno)?, key) {
            Ordering::Less => lo = mid + 1,
            Ordering::Equal => return Ok((mid, true)),
            Ordering::Greater => hi = mid,
        }
    }
    Ok((lo, false))
}

/// Binary search in a branch: index of the child whose subtree may hold `key`
/// (the last entry with key `<= key`; entry 0 is minus infinity).
#[inline]
pub(crate) fn search_branch(page: Page<'_>, key: &[u8], cmp: Cmp, pgno: u32) -> Result<usize> {
    let (mut lo, mut hi) = (1usize, page.num_entries());
    while lo < hi {
        let mid = (lo + hi) / 2;
        match cmp.cmp(key_at(page, mid, pgno)?, key) {
            Ordering::Less => lo = mid + 1,
            Ordering::Equal => return Ok(mid),
            Ordering::Greater => hi = mid,
        }
    }
    Ok(lo - 1)
}

/// Child page number of branch entry `i`.
#[inline]
pub(crate) fn child_at(page: Page<'_>, i: usize, pgno: u32) -> Result<u32> {
    let off = PAGEHDRSZ + page.entry(i);
    if off + NODESIZE > page.buf.len() || off < PAGEHDRSZ + page.upper() || page.buf[off + 4] != 0 {
        return Err(Error::corrupted(pgno, "bad branch node"));
    }
    Ok(crate::format::u32_at(page.buf, off))
}

/// Loads tree page `pgno` and checks its header (`front` is the parent's
/// txnid). `from` is the page that refers to it (the page itself for a root):
/// a reference outside the allocated pages is reported on that page.
#[inline]
pub(crate) fn load<'t>(pages: &Pages<'t>, pgno: u32, front: u64, from: u32) -> Result<Page<'t>> {
    if (pgno >= pages.valid || pgno < crate::format::NUM_METAS) && !pages.dirty.is_some_and(|d| d.contains_key(&pgno)) {
        return Err(Error::corrupted(from, "child page number outside the allocated pages"));
    }
    let page = Page { buf: pages.get(pgno)? };
    page.check_tree_page(pgno, front)?;
    if page.is_branch() && !key_at(page, 0, pgno)?.is_empty() {
        return Err(Error::corrupted(pgno, "first key of a branch page is not empty"));
    }
    Ok(page)
}

/// The value of a leaf node: inline bytes or the contents of its large chunk.
#[inline]
pub(crate) fn node_value<'t>(pages: &Pages<'t>, n: &Node<'t>, leaf_pgno: u32, leaf_txnid: u64) -> Result<&'t [u8]> {
    if n.flags & N_BIG == 0 {
        return Ok(n.data);
    }
    pages.large(n.big_pgno(), n.dsize as usize, leaf_pgno, leaf_txnid)
}

/// Result of a root-to-leaf descent.
pub(crate) struct Found<'t> {
    pub leaf: Page<'t>,
    pub pgno: u32,
    pub idx: usize,
    pub exact: bool,
}

/// Descends from `root` to the leaf that may hold `key`.
pub(crate) fn descend<'t>(pages: &Pages<'t>, root: u32, height: u16, key: &[u8], cmp: Cmp) -> Result<Found<'t>> {
    let mut pgno = root;
    let mut from = root;
    let mut front = pages.front;
    let mut depth = 1usize;
    loop {
        let page = load(pages, pgno, front, from)?;
        if page.is_leaf() {
            if depth != height as usize {
                return Err(Error::corrupted(pgno, "leaf at a depth that differs from the tree height"));
            }
            let (idx, exact) = search_leaf(page, key, cmp, pgno)?;
            return Ok(Found { leaf: page, pgno, idx, exact });
        }
        if depth >= height as usize || depth >= MAX_DEPTH {
            return Err(Error::corrupted(pgno, "tree deeper than its height (cycle?)"));
        }
        let i = search_branch(page, key, cmp, pgno)?;
        front = page.txnid();
        from = pgno;
        pgno = child_at(page, i, pgno)?;
        depth += 1;
    }
}

/// Checks that leaf page `page` of `tree` has the layout the tree's flags
/// call for: packed items of the tree's value size for the nested trees of
/// DUPFIXED tables (DUPFIXED without DUPSORT), nodes otherwise. Writers rely
/// on it before they insert into or merge leaves.
pub(crate) fn check_leaf_kind(page: Page<'_>, tree: &crate::format::tree::Tree, pgno: u32) -> Result<()> {
    let dupfix_tree = tree.flags & 0x10 != 0 && tree.flags & 0x04 == 0;
    let ok =
        if page.is_dupfix() { dupfix_tree && u32::from(page.dupfix_ksize()) == tree.dupfix_size } else { !dupfix_tree };
    if ok {
        Ok(())
    } else {
        Err(Error::corrupted(pgno, "leaf page layout does not match its tree"))
    }
}

/// Validates a sub-page (the value of an N_DUP node).
pub(crate) fn check_subpage(sp: Page<'_>, host: u32) -> Result<()> {
    let len = sp.buf.len();
    if len < PAGEHDRSZ {
        return Err(Error::corrupted(host, "sub-page shorter than a page header"));
    }
    let f = sp.flags() & !0x10;
    let (lower, upper) = (sp.lower(), sp.upper());
    if lower & 1 != 0 || lower / 2 == 0 {
        return Err(Error::corrupted(host, "sub-page has no entries"));
    }
    match f {
        0x42 => {
            if lower > upper || PAGEHDRSZ + upper > len {
                return Err(Error::corrupted(host, "bad sub-page bounds"));
            }
        }
        0x62 => {
            let k = sp.dupfix_ksize() as usize;
            if k == 0 || PAGEHDRSZ + (lower / 2) * k > len {
                return Err(Error::corrupted(host, "bad DUPFIX sub-page bounds"));
            }
        }
        _ => return Err(Error::corrupted(host, "bad sub-page flags")),
    }
    Ok(())
}

/// Looks `key` up in a tree: its (first) value if present.
pub(crate) fn get<'t>(pages: &Pages<'t>, root: u32, height: u16, key: &[u8], cmp: Cmp) -> Result<Option<&'t [u8]>> {
    if root == crate::format::P_INVALID {
        return Ok(None);
    }
    let f = descend(pages, root, height, key, cmp)?;
    if !f.exact {
        return Ok(None);
    }
    if f.leaf.is_dupfix() {
        // A nested tree of a DUPFIXED table: the items are the values.
        return key_at(f.leaf, f.idx, f.pgno).map(Some);
    }
    let n = node::node(f.leaf, f.idx, f.pgno)?;
    if n.flags & node::N_DUP != 0 {
        let mut c = cursor::Cursor::new(*pages, root, height, cmp);
        c.set_dup_cmp(Some(Cmp::Lex));
        return Ok(c.set(key)?.map(|p| p.1));
    }
    node_value(pages, &n, f.pgno, f.leaf.txnid()).map(Some)
}
