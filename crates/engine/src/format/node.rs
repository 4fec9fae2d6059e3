//! Nodes of branch and leaf pages (docs/format.md, "Nodes").
//!
//! | offset | size | leaf node | branch node |
//! |---|---|---|---|
//! | 0 | 4 | `dsize`: value size | `child_pgno` |
//! | 4 | 1 | `flags` (N_BIG, N_TREE, N_DUP) | 0 |
//! | 5 | 1 | `extra` = 0 | 0 |
//! | 6 | 2 | `ksize` | `ksize` (0 for entry 0) |
//! | 8 | ksize | key | key |
//! | 8+ksize | … | value, or u32 pgno of a large chunk (N_BIG) | — |
//!
//! Editing functions keep the node area contiguous at the end of the page, as
//! libmdbx does: a node is inserted at `upper - size` and a deletion shifts the
//! nodes below it up.

use super::page::Page;
use super::{even_ceil, put_u16, put_u32, u16_at, u32_at, NODESIZE, PAGEHDRSZ};
use crate::error::{Error, Result};

/// Value stored in a large chunk; the node holds its head page number.
pub const N_BIG: u8 = 0x01;
/// Value is a 48-byte tree descriptor.
pub const N_TREE: u8 = 0x02;
/// Value holds several values of a DUPSORT key (sub-page, or with N_TREE a nested tree).
pub const N_DUP: u8 = 0x04;

/// A parsed node. Slices borrow the page.
#[derive(Clone, Copy, Debug)]
pub struct Node<'a> {
    /// Node flags.
    pub flags: u8,
    /// Key bytes.
    pub key: &'a [u8],
    /// For leaves: value size (for N_BIG the large value's size); for branches: child pgno.
    pub dsize: u32,
    /// For leaves: the inline value bytes (for N_BIG: the 4-byte pgno). Empty for branches.
    pub data: &'a [u8],
}

impl<'a> Node<'a> {
    /// Child page of a branch node.
    #[inline]
    pub fn child(&self) -> u32 {
        self.dsize
    }
    /// Head page of the large chunk of an N_BIG node.
    #[inline]
    pub fn big_pgno(&self) -> u32 {
        u32_at(self.data, 0)
    }
}

/// Parses node `i` of a branch or leaf page, checking that it lies inside the page.
/// `pgno` is only used to name the page in errors.
#[inline(always)]
pub fn node<'a>(page: Page<'a>, i: usize, pgno: u32) -> Result<Node<'a>> {
    let buf = page.buf;
    let off = PAGEHDRSZ + page.entry(i);
    if off + NODESIZE > buf.len() || off < PAGEHDRSZ + page.upper() || off & 1 != 0 {
        return Err(Error::corrupted(pgno, "node offset outside the node area"));
    }
    let dsize = u32_at(buf, off);
    let flags = buf[off + 4];
    if flags & !(N_BIG | N_TREE | N_DUP) != 0 || (page.is_branch() && flags != 0) {
        return Err(Error::corrupted(pgno, "unknown node flags"));
    }
    let ksize = u16_at(buf, off + 6) as usize;
    let kstart = off + NODESIZE;
    let kend = kstart + ksize;
    if kend > buf.len() {
        return Err(Error::corrupted(pgno, "node key overruns the page"));
    }
    let key = &buf[kstart..kend];
    if page.is_branch() {
        return Ok(Node { flags, key, dsize, data: &[] });
    }
    let dlen = if flags & N_BIG != 0 { 4 } else { dsize as usize };
    let dend = kend + dlen;
    if dend > buf.len() {
        return Err(Error::corrupted(pgno, "node value overruns the page"));
    }
    Ok(Node { flags, key, dsize, data: &buf[kend..dend] })
}

/// Bytes a leaf node occupies (without its 2-byte entry).
#[inline]
pub fn leaf_size(ksize: usize, inline_dsize: usize) -> usize {
    NODESIZE + even_ceil(ksize + inline_dsize)
}

/// Bytes a branch node occupies (without its 2-byte entry).
#[inline]
pub fn branch_size(ksize: usize) -> usize {
    NODESIZE + even_ceil(ksize)
}

/// Size of node `i` on `buf` as stored (branch or leaf).
pub fn stored_size(buf: &[u8], i: usize) -> usize {
    let page = Page { buf };
    let off = PAGEHDRSZ + page.entry(i);
    let ksize = u16_at(buf, off + 6) as usize;
    if page.is_branch() {
        branch_size(ksize)
    } else {
        let flags = buf[off + 4];
        let d = if flags & N_BIG != 0 { 4 } else { u32_at(buf, off) as usize };
        leaf_size(ksize, d)
    }
}

/// Inserts a node at index `i` of `buf`. `hdr_dsize` is the node header's first
/// field (value size or child pgno), `data` the inline bytes after the key.
/// The caller has checked that `size + 2 <= room`.
pub fn insert(buf: &mut [u8], i: usize, key: &[u8], hdr_dsize: u32, flags: u8, data: &[u8]) {
    let page = Page { buf };
    let n = page.num_entries();
    let (lower, upper) = (page.lower(), page.upper());
    let size = NODESIZE + even_ceil(key.len() + data.len());
    debug_assert!(size + 2 <= upper - lower);
    let new_upper = upper - size;
    // Shift entries [i, n) one slot right.
    let e0 = PAGEHDRSZ + 2 * i;
    buf.copy_within(e0..PAGEHDRSZ + 2 * n, e0 + 2);
    put_u16(buf, e0, new_upper as u16);
    let off = PAGEHDRSZ + new_upper;
    put_u32(buf, off, hdr_dsize);
    buf[off + 4] = flags;
    buf[off + 5] = 0;
    put_u16(buf, off + 6, key.len() as u16);
    buf[off + NODESIZE..off + NODESIZE + key.len()].copy_from_slice(key);
    let d0 = off + NODESIZE + key.len();
    buf[d0..d0 + data.len()].copy_from_slice(data);
    put_u16(buf, 12, (lower + 2) as u16);
    put_u16(buf, 14, new_upper as u16);
}

/// Appends a node given as its raw stored bytes (header, key, value, padding)
/// after the last entry of `buf`. The caller has checked the room.
// Inline: a one-put commit runs 20 more instructions without it
// (docs/design.md, "Inlining on the commit path").
#[inline]
pub fn append_raw(buf: &mut [u8], raw: &[u8]) {
    let page = Page { buf };
    let (lower, upper) = (page.lower(), page.upper());
    let new_upper = upper - raw.len();
    buf[PAGEHDRSZ + new_upper..PAGEHDRSZ + upper].copy_from_slice(raw);
    put_u16(buf, PAGEHDRSZ + lower, new_upper as u16);
    put_u16(buf, 12, (lower + 2) as u16);
    put_u16(buf, 14, new_upper as u16);
}

/// Applies `f` to the first `n` entries (node offsets) of the page `buf`.
/// One pass over the entry array: no bounds check per entry, and the
/// compiler vectorises the usual `f` (a compare and an add), with no branch
/// per entry (a branch on `e < ptr` mispredicts about every other entry).
#[inline]
pub fn map_entries(buf: &mut [u8], n: usize, f: impl Fn(u16) -> u16) {
    // As `[u8; 2]` arrays (not `chunks_exact_mut(2)` slices, which LLVM
    // leaves as a scalar loop with a branch per entry).
    let (entries, _) = buf[PAGEHDRSZ..PAGEHDRSZ + 2 * n].as_chunks_mut::<2>();
    for e in entries {
        *e = f(u16::from_le_bytes(*e)).to_le_bytes();
    }
}

/// Removes node `i` from `buf`, compacting the node area.
pub fn remove(buf: &mut [u8], i: usize) {
    let page = Page { buf };
    let n = page.num_entries();
    let (lower, upper) = (page.lower(), page.upper());
    let size = stored_size(buf, i);
    let ptr = Page { buf }.entry(i);
    // Drop entry i.
    buf.copy_within(PAGEHDRSZ + 2 * (i + 1)..PAGEHDRSZ + 2 * n, PAGEHDRSZ + 2 * i);
    // Shift nodes that lie below the removed node up by `size`.
    buf.copy_within(PAGEHDRSZ + upper..PAGEHDRSZ + ptr, PAGEHDRSZ + upper + size);
    let (ptr16, size16) = (ptr as u16, size as u16);
    map_entries(buf, n - 1, |e| if e < ptr16 { e.wrapping_add(size16) } else { e });
    put_u16(buf, 12, (lower - 2) as u16);
    put_u16(buf, 14, (upper + size) as u16);
}

/// Sets the child pgno of branch node `i`.
pub fn set_child(buf: &mut [u8], i: usize, child: u32) {
    let off = PAGEHDRSZ + Page { buf }.entry(i);
    put_u32(buf, off, child);
}

/// Offset and length of the inline value of leaf node `i` (for in-place overwrite).
pub fn value_range(buf: &[u8], i: usize) -> (usize, usize) {
    let off = PAGEHDRSZ + Page { buf }.entry(i);
    let ksize = u16_at(buf, off + 6) as usize;
    let flags = buf[off + 4];
    let d = if flags & N_BIG != 0 { 4 } else { u32_at(buf, off) as usize };
    (off + NODESIZE + ksize, d)
}

/// Where the key of node `i` of a branch or leaf page lies: (offset in the
/// page, length).
pub fn key_range(buf: &[u8], i: usize) -> (usize, usize) {
    let off = PAGEHDRSZ + Page { buf }.entry(i);
    (off + NODESIZE, u16_at(buf, off + 6) as usize)
}

/// Inserts item `item` at index `i` of a DUPFIX page (packed fixed-size items,
/// docs/format.md, "DUPFIX pages"). The caller has checked that `item.len() <= room`.
pub fn dupfix_insert(buf: &mut [u8], i: usize, item: &[u8]) {
    let page = Page { buf };
    let k = page.dupfix_ksize() as usize;
    let n = page.num_entries();
    let (lower, upper) = (page.lower(), page.upper());
    debug_assert_eq!(item.len(), k);
    let at = PAGEHDRSZ + i * k;
    buf.copy_within(at..PAGEHDRSZ + n * k, at + k);
    buf[at..at + k].copy_from_slice(item);
    put_u16(buf, 12, (lower + 2) as u16);
    put_u16(buf, 14, (upper + 2 - k) as u16);
}

/// Removes item `i` of a DUPFIX page.
pub fn dupfix_remove(buf: &mut [u8], i: usize) {
    let page = Page { buf };
    let k = page.dupfix_ksize() as usize;
    let n = page.num_entries();
    let (lower, upper) = (page.lower(), page.upper());
    let at = PAGEHDRSZ + i * k;
    buf.copy_within(at + k..PAGEHDRSZ + n * k, at);
    put_u16(buf, 12, (lower - 2) as u16);
    put_u16(buf, 14, (upper + k - 2) as u16);
}

/// The integrity check's view of a branch or leaf page's node area: every
/// node lies in `[upper, end)`, no two nodes overlap, and together they fill
/// the area exactly (libmdbx and rdbx keep it contiguous, so a gap or an
/// overlap means a damaged `upper` or node). Linear in the entries (one
/// sort of their offsets); called by the checker, not on read paths.
pub fn check_node_area(page: Page<'_>, pgno: u32) -> Result<()> {
    let buf = page.buf;
    let n = page.num_entries();
    let start = PAGEHDRSZ + page.upper();
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(n);
    for i in 0..n {
        let off = PAGEHDRSZ + page.entry(i);
        if off < start || off + NODESIZE > buf.len() {
            return Err(Error::corrupted(pgno, "node offset outside the node area"));
        }
        let end = off + stored_size(buf, i);
        if end > buf.len() {
            return Err(Error::corrupted(pgno, "node overruns the page"));
        }
        spans.push((off, end));
    }
    spans.sort_unstable();
    let mut at = start;
    for (off, end) in spans {
        if off < at {
            return Err(Error::corrupted(pgno, "nodes overlap"));
        }
        if off > at {
            return Err(Error::corrupted(
                pgno,
                "unused bytes inside the node area (page upper does not match the nodes)",
            ));
        }
        at = end;
    }
    if at != buf.len() {
        return Err(Error::corrupted(pgno, "unused bytes inside the node area (page upper does not match the nodes)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::page::{flags, init_page};

    #[test]
    fn insert_remove_roundtrip() {
        let mut buf = vec![0u8; 256];
        init_page(&mut buf, 5, flags::LEAF, 1);
        insert(&mut buf, 0, b"b", 2, 0, b"vb");
        insert(&mut buf, 0, b"a", 3, 0, b"vva");
        insert(&mut buf, 2, b"c", 0, 0, b"");
        let p = Page { buf: &buf };
        assert_eq!(p.num_entries(), 3);
        let keys: Vec<_> = (0..3).map(|i| node(p, i, 5).unwrap().key.to_vec()).collect();
        assert_eq!(keys, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(node(p, 0, 5).unwrap().data, b"vva");
        remove(&mut buf, 1);
        let p = Page { buf: &buf };
        assert_eq!(p.num_entries(), 2);
        assert_eq!(node(p, 0, 5).unwrap().data, b"vva");
        assert_eq!(node(p, 1, 5).unwrap().key, b"c");
        assert_eq!(p.upper(), 256 - 20 - 12 - 10);
        check_node_area(p, 5).unwrap();
        // A damaged upper: a gap, or nodes outside the area.
        for upper in [p.upper() - 2, p.upper() + 2] {
            let mut bad = buf.clone();
            put_u16(&mut bad, 14, upper as u16);
            assert!(check_node_area(Page { buf: &bad }, 5).is_err(), "upper {upper}");
        }
        // Two entries naming one node: an overlap.
        let mut bad = buf.clone();
        let e0 = u16_at(&bad, PAGEHDRSZ);
        put_u16(&mut bad, PAGEHDRSZ + 2, e0);
        assert!(check_node_area(Page { buf: &bad }, 5).is_err());
    }
}
