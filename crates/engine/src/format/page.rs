//! The 20-byte page header and whole-page views (docs/format.md, "Page header", "Page kinds").
//!
//! | offset | size | field | meaning |
//! |---|---|---|---|
//! | 0 | 8 | `txnid` | transaction that wrote the page (metas: 0) |
//! | 8 | 2 | `dupfix_ksize` | item size on DUPFIX pages, else 0 |
//! | 10 | 2 | `flags` | page type, see [`flags`] |
//! | 12 | 2 | `lower` | end of the entries array, relative to offset 20 |
//! | 14 | 2 | `upper` | start of the node area, relative to offset 20 |
//! | 12 | 4 | `pages` | large pages only: number of pages in the chunk |
//! | 16 | 4 | `pgno` | the page's own number |
//! | 20 | … | entries | u16 node offsets, relative to offset 20 |

use super::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at, PAGEHDRSZ};
use crate::error::{Error, Result};

/// Page type flags.
pub mod flags {
    /// Interior B-tree page.
    pub const BRANCH: u16 = 0x01;
    /// Leaf B-tree page.
    pub const LEAF: u16 = 0x02;
    /// Head page of a large value.
    pub const LARGE: u16 = 0x04;
    /// Meta page.
    pub const META: u16 = 0x08;
    /// Leaf with packed fixed-size items (LEAF2).
    pub const DUPFIX: u16 = 0x20;
    /// Sub-page inside a leaf node.
    pub const SUBP: u16 = 0x40;
    /// Left on sub-pages by old libmdbx versions (`P_LEGACY_DIRTY`); readers
    /// ignore it.
    pub const LEGACY_DIRTY: u16 = 0x10;

    /// Leaf of packed fixed-size items: the leaves of the nested trees of
    /// DUPFIXED tables.
    pub const DUPFIX_LEAF: u16 = LEAF | DUPFIX;
    /// Sub-page of node items (the values of a DUPSORT key, inline).
    pub const SUBPAGE_LEAF: u16 = LEAF | SUBP;
    /// Sub-page of packed fixed-size items (the values of a DUPFIXED key,
    /// inline).
    pub const SUBPAGE_DUPFIX: u16 = LEAF | DUPFIX | SUBP;
    /// The page kinds that carry a B-tree page header with a txnid written
    /// by a transaction: branch, leaf, DUPFIX leaf and large.
    pub const TREE_KINDS: [u16; 4] = [BRANCH, LEAF, DUPFIX_LEAF, LARGE];

    /// A name for the page kind `f` (as the integrity check reports it).
    pub fn kind_name(f: u16) -> &'static str {
        match f {
            BRANCH => "branch",
            LEAF => "leaf",
            DUPFIX_LEAF => "dupfix-leaf",
            LARGE => "large",
            META => "meta",
            _ => "unknown",
        }
    }
}

const _: () = assert!(PAGEHDRSZ == 20);
// The combinations libmdbx writes (docs/format.md, "Page kinds").
const _: () = assert!(flags::DUPFIX_LEAF == 0x22 && flags::SUBPAGE_LEAF == 0x42 && flags::SUBPAGE_DUPFIX == 0x62);

/// Read-only view of one page (or a sub-page: then `buf` is the node value).
#[derive(Clone, Copy)]
pub struct Page<'a> {
    /// The page bytes.
    pub buf: &'a [u8],
}

impl<'a> Page<'a> {
    /// Transaction id in the header.
    #[inline]
    pub fn txnid(&self) -> u64 {
        u64_at(self.buf, 0)
    }
    /// Item size on DUPFIX pages.
    #[inline]
    pub fn dupfix_ksize(&self) -> u16 {
        u16_at(self.buf, 8)
    }
    /// Page flags.
    #[inline]
    pub fn flags(&self) -> u16 {
        u16_at(self.buf, 10)
    }
    /// `lower` field.
    #[inline]
    pub fn lower(&self) -> usize {
        u16_at(self.buf, 12) as usize
    }
    /// `upper` field.
    #[inline]
    pub fn upper(&self) -> usize {
        u16_at(self.buf, 14) as usize
    }
    /// Number of pages of a large chunk (large pages only).
    #[inline]
    pub fn large_count(&self) -> u32 {
        u32_at(self.buf, 12)
    }
    /// The page's own number.
    #[inline]
    pub fn pgno(&self) -> u32 {
        u32_at(self.buf, 16)
    }
    /// Number of entries (keys).
    #[inline]
    pub fn num_entries(&self) -> usize {
        self.lower() / 2
    }
    /// Free space between the entries array and the node area.
    #[inline]
    pub fn room(&self) -> usize {
        self.upper() - self.lower()
    }
    /// Whether this is a leaf page (including DUPFIX leaves).
    #[inline]
    pub fn is_leaf(&self) -> bool {
        self.flags() & flags::LEAF != 0
    }
    /// Whether this is a branch page.
    #[inline]
    pub fn is_branch(&self) -> bool {
        self.flags() & flags::BRANCH != 0
    }
    /// Whether this is a DUPFIX page.
    #[inline]
    pub fn is_dupfix(&self) -> bool {
        self.flags() & flags::DUPFIX != 0
    }
    /// Whether this page heads a large chunk (a value too big for a leaf).
    #[inline]
    pub fn is_large(&self) -> bool {
        self.flags() & flags::LARGE != 0
    }
    /// Whether this is a sub-page (the value of an N_DUP node).
    #[inline]
    pub fn is_subpage(&self) -> bool {
        self.flags() & flags::SUBP != 0
    }
    /// The flags without [`flags::LEGACY_DIRTY`], which old libmdbx
    /// versions left on sub-pages.
    #[inline]
    pub fn kind(&self) -> u16 {
        self.flags() & !flags::LEGACY_DIRTY
    }
    /// Offset (relative to offset 20) of node `i`.
    #[inline]
    pub fn entry(&self, i: usize) -> usize {
        u16_at(self.buf, PAGEHDRSZ + 2 * i) as usize
    }

    /// Validates the header of a branch or leaf page loaded as `pgno`, whose
    /// parent says it was written no later than `front_txnid`.
    #[inline(always)]
    pub fn check_tree_page(&self, pgno: u32, front_txnid: u64) -> Result<()> {
        let ps = self.buf.len();
        let f = self.flags();
        if !matches!(f, flags::BRANCH | flags::LEAF | flags::DUPFIX_LEAF) {
            return Err(Error::corrupted(pgno, "unexpected page type flags"));
        }
        if self.pgno() != pgno {
            return Err(Error::corrupted(pgno, "page number in header does not match its position"));
        }
        if self.txnid() > front_txnid {
            return Err(Error::corrupted(pgno, "page txnid is newer than its parent"));
        }
        let (lower, upper) = (self.lower(), self.upper());
        if f & flags::DUPFIX == 0 {
            if lower & 1 != 0 || lower > upper || PAGEHDRSZ + upper > ps {
                return Err(Error::corrupted(pgno, "bad lower/upper bounds"));
            }
        } else {
            let k = self.dupfix_ksize() as usize;
            if k == 0 || lower & 1 != 0 || PAGEHDRSZ + (lower / 2) * k > ps {
                return Err(Error::corrupted(pgno, "bad DUPFIX page bounds"));
            }
        }
        let n = lower / 2;
        if n == 0 || (f & flags::BRANCH != 0 && n < 2) {
            return Err(Error::corrupted(pgno, "page has too few entries"));
        }
        Ok(())
    }
}

/// Copies the page `src` into `dst` (same length) as copy-on-write needs
/// it: the header, the entries and the nodes (for a DUPFIX leaf, the
/// items), not the free gap between them (but for the few bytes that round
/// its edges to 8), as libmdbx's `page_copy` skips the gap. With
/// `zero_gap` the gap becomes zeros; without, `dst` keeps what it held
/// there (for a page of the map: earlier bytes of the same file, which no
/// reader looks at). Not reading the gap saves memory traffic on the cold
/// source page, and not writing it on the destination. A header whose
/// bounds do not fit the page (damaged) gets a plain full copy; the reader
/// of the copy reports it.
// Not inlined: always inline (at both of `touch_clean`'s copies) a one-put
// commit ran 105 fewer instructions but took 3.5% more time against LMDB's
// (`scripts/ab_time.py`, 14 alternating runs; docs/design.md, "Inlining on
// the commit path").
pub fn copy_used(dst: &mut [u8], src: &[u8], zero_gap: bool) {
    let ps = src.len();
    debug_assert_eq!(dst.len(), ps);
    let p = Page { buf: src };
    // The used prefix and the start of the used suffix, rounded to 8 bytes
    // (the copies then move whole words), if the gap is worth skipping.
    let (lo, hi) = match p.flags() & !flags::LEGACY_DIRTY {
        flags::BRANCH | flags::LEAF if ps >= PAGEHDRSZ => {
            let (lower, upper) = (p.lower(), p.upper());
            (PAGEHDRSZ + lower, (PAGEHDRSZ + upper) & !7)
        }
        flags::DUPFIX_LEAF if ps >= PAGEHDRSZ => (PAGEHDRSZ + p.num_entries() * p.dupfix_ksize() as usize, ps),
        _ => (ps, ps),
    };
    let lo = (lo + 7) & !7;
    if lo + 192 > hi || hi > ps {
        dst.copy_from_slice(src);
        return;
    }
    dst[..lo].copy_from_slice(&src[..lo]);
    if zero_gap {
        dst[lo..hi].fill(0);
    }
    dst[hi..].copy_from_slice(&src[hi..]);
}

/// Initialises a fresh branch or leaf page in `buf`.
pub fn init_page(buf: &mut [u8], pgno: u32, flags: u16, txnid: u64) {
    let ps = buf.len();
    put_u64(buf, 0, txnid);
    put_u16(buf, 8, 0);
    put_u16(buf, 10, flags);
    put_u16(buf, 12, 0);
    put_u16(buf, 14, (ps - PAGEHDRSZ) as u16);
    put_u32(buf, 16, pgno);
}

/// Initialises the head page of a large chunk of `count` pages.
pub fn init_large(buf: &mut [u8], pgno: u32, count: u32, txnid: u64) {
    put_u64(buf, 0, txnid);
    put_u16(buf, 8, 0);
    put_u16(buf, 10, flags::LARGE);
    put_u32(buf, 12, count);
    put_u32(buf, 16, pgno);
}

// Header editors: the only writers of header fields outside `init_page`
// and `init_large`, so the offsets of the table above live in this file.

/// Sets the header txnid.
#[inline]
pub fn set_txnid(buf: &mut [u8], txnid: u64) {
    put_u64(buf, 0, txnid);
}

/// Sets the item size of a DUPFIX page (`0xFFFF` marks a sub-page of nodes,
/// as libmdbx writes it).
#[inline]
pub fn set_dupfix_ksize(buf: &mut [u8], ksize: u16) {
    put_u16(buf, 8, ksize);
}

/// Sets the `lower` field (end of the entries array, relative to offset 20;
/// truncated to 16 bits as the field is).
#[inline]
pub fn set_lower(buf: &mut [u8], lower: usize) {
    put_u16(buf, 12, lower as u16);
}

/// Sets the `upper` field (start of the node area, relative to offset 20).
#[inline]
pub fn set_upper(buf: &mut [u8], upper: usize) {
    put_u16(buf, 14, upper as u16);
}

/// Sets the page count of a large chunk's head page.
#[inline]
pub fn set_large_count(buf: &mut [u8], count: u32) {
    put_u32(buf, 12, count);
}

/// Sets the header page number.
#[inline]
pub fn set_pgno(buf: &mut [u8], pgno: u32) {
    put_u32(buf, 16, pgno);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_used_keeps_the_used_areas_and_zeroes_the_gap() {
        let ps = 4096;
        let mut src = vec![0xAAu8; ps];
        init_page(&mut src, 9, flags::LEAF, 5);
        set_lower(&mut src, 8);
        set_upper(&mut src, ps - PAGEHDRSZ - 100);
        let mut dst = vec![0x55u8; ps];
        copy_used(&mut dst, &src, true);
        assert_eq!(dst[..PAGEHDRSZ + 8], src[..PAGEHDRSZ + 8]);
        assert_eq!(dst[ps - 100..], src[ps - 100..]);
        assert!(dst[PAGEHDRSZ + 8 + 8..ps - 104].iter().all(|&b| b == 0), "the gap is zeros");
        // Damaged bounds, a large page, a nearly full page: a full copy.
        for (lower, upper) in [(200, 100), (8, 5000), (8, 200)] {
            set_lower(&mut src, lower);
            set_upper(&mut src, upper);
            copy_used(&mut dst, &src, true);
            assert_eq!(dst, src);
        }
        init_large(&mut src, 9, 1, 5);
        copy_used(&mut dst, &src, true);
        assert_eq!(dst, src);
        // DUPFIX leaf: header and items, then zeros.
        let mut src = vec![0xAAu8; ps];
        init_page(&mut src, 9, flags::DUPFIX_LEAF, 5);
        set_dupfix_ksize(&mut src, 8);
        set_lower(&mut src, 2 * 10);
        copy_used(&mut dst, &src, true);
        assert_eq!(dst[..PAGEHDRSZ + 80], src[..PAGEHDRSZ + 80]);
        assert!(dst[PAGEHDRSZ + 80 + 8..].iter().all(|&b| b == 0));
        // Without zeroing, the destination's gap stays as it was.
        let mut dst = vec![0x55u8; ps];
        copy_used(&mut dst, &src, false);
        assert_eq!(dst[..PAGEHDRSZ + 80], src[..PAGEHDRSZ + 80]);
        assert!(dst[PAGEHDRSZ + 80 + 8..].iter().all(|&b| b == 0x55));
    }
}
