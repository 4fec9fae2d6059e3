//! Meta pages (docs/format.md, "Meta pages"): the 224-byte meta body at page offset 20, the
//! packed page counts of the geometry, and the choice of the current meta
//! ("troika").
//!
//! | page off | size | field |
//! |---|---|---|
//! | 20 | 8 | `magic_and_version` |
//! | 28 | 8 | `txnid_a` |
//! | 36 | 2 | `reserve16` |
//! | 38 | 1 | `validator_id` |
//! | 39 | 1 | `extra_pagehdr` |
//! | 40 | 2 | `grow_pv` |
//! | 42 | 2 | `shrink_pv` |
//! | 44 | 4 | `lower` (pages) |
//! | 48 | 4 | `upper` (pages) |
//! | 52 | 4 | `now` (pages) |
//! | 56 | 4 | `first_unallocated` |
//! | 60 | 48 | GC tree (its `dupfix_size` is the page size) |
//! | 108 | 48 | main tree |
//! | 156 | 32 | canary x, y, z, v |
//! | 188 | 8 | `sign` (0 none, 1 weak, all-ones steady) |
//! | 196 | 8 | `txnid_b` |
//! | 204 | 8 | `pages_retired` |
//! | 212 | 16 | `bootid` |
//! | 228 | 16 | `dxbid` |

use super::page::flags;
use super::tree::Tree;
use super::*;
use crate::error::{Error, Result};
use crate::flags::DbFlags;

/// Meta body offset inside the page.
pub const META_OFF: usize = PAGEHDRSZ;
/// Meta body length.
pub const META_LEN: usize = 224;
/// Offset of `txnid_b` in the body: a reader takes a meta only when it
/// equals `txnid_a`, so a writer in place writes it last.
pub const TXNID_B_AT: usize = 176;
/// Offset of `txnid_a` in the body.
pub const TXNID_A_AT: usize = 8;
/// Offset of `sign` in the body.
pub const SIGN_AT: usize = 168;
/// `sign` of a steady meta.
pub const SIGN_STEADY: u64 = u64::MAX;
/// `sign` of a weak meta.
pub const SIGN_WEAK: u64 = 1;

/// Geometry in pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaGeo {
    /// Growth step, packed.
    pub grow_pv: u16,
    /// Shrink threshold, packed.
    pub shrink_pv: u16,
    /// Minimal file size.
    pub lower: u32,
    /// Maximal file size.
    pub upper: u32,
    /// Current file size.
    pub now: u32,
    /// First never-allocated page.
    pub first_unallocated: u32,
}

/// A decoded meta page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// Magic and version.
    pub magic: u64,
    /// First txnid copy.
    pub txnid_a: u64,
    /// Geometry.
    pub geo: MetaGeo,
    /// GC tree (flags INTEGERKEY; `dupfix_size` = page size).
    pub gc: Tree,
    /// Main tree.
    pub main: Tree,
    /// Canary x, y, z, v.
    pub canary: [u64; 4],
    /// Signature.
    pub sign: u64,
    /// Second txnid copy.
    pub txnid_b: u64,
    /// Cumulative retired pages.
    pub pages_retired: u64,
    /// Boot id at commit.
    pub bootid: [u8; 16],
    /// Database id.
    pub dxbid: [u8; 16],
}

impl Meta {
    /// Decodes meta page `i` (`buf` holds at least 244 bytes of it). Performs only
    /// the header checks; see [`Meta::validate`].
    pub fn read(buf: &[u8], i: u32) -> Result<Meta> {
        if buf.len() < META_OFF + META_LEN {
            return Err(Error::corrupted(i, "meta page is truncated"));
        }
        let b = &buf[META_OFF..META_OFF + META_LEN];
        let mut bootid = [0u8; 16];
        bootid.copy_from_slice(&b[192..208]);
        let mut dxbid = [0u8; 16];
        dxbid.copy_from_slice(&b[208..224]);
        Ok(Meta {
            magic: u64_at(b, 0),
            txnid_a: u64_at(b, TXNID_A_AT),
            geo: MetaGeo {
                grow_pv: u16_at(b, 20),
                shrink_pv: u16_at(b, 22),
                lower: u32_at(b, 24),
                upper: u32_at(b, 28),
                now: u32_at(b, 32),
                first_unallocated: u32_at(b, 36),
            },
            gc: Tree::read(&b[40..88]),
            main: Tree::read(&b[88..136]),
            canary: [u64_at(b, 136), u64_at(b, 144), u64_at(b, 152), u64_at(b, 160)],
            sign: u64_at(b, SIGN_AT),
            txnid_b: u64_at(b, TXNID_B_AT),
            pages_retired: u64_at(b, 184),
            bootid,
            dxbid,
        })
    }

    /// Encodes the 224-byte body.
    // Inline: without it here and on `troika`, a one-put commit runs
    // 129 more instructions (docs/design.md, "Inlining on the commit path").
    #[inline]
    pub fn body(&self) -> [u8; META_LEN] {
        let mut b = [0u8; META_LEN];
        put_u64(&mut b, 0, self.magic);
        put_u64(&mut b, TXNID_A_AT, self.txnid_a);
        put_u16(&mut b, 20, self.geo.grow_pv);
        put_u16(&mut b, 22, self.geo.shrink_pv);
        put_u32(&mut b, 24, self.geo.lower);
        put_u32(&mut b, 28, self.geo.upper);
        put_u32(&mut b, 32, self.geo.now);
        put_u32(&mut b, 36, self.geo.first_unallocated);
        self.gc.write(&mut b[40..88]);
        self.main.write(&mut b[88..136]);
        for (k, v) in self.canary.iter().enumerate() {
            put_u64(&mut b, 136 + 8 * k, *v);
        }
        put_u64(&mut b, SIGN_AT, self.sign);
        put_u64(&mut b, TXNID_B_AT, self.txnid_b);
        put_u64(&mut b, 184, self.pages_retired);
        b[192..208].copy_from_slice(&self.bootid);
        b[208..224].copy_from_slice(&self.dxbid);
        b
    }

    /// A whole meta page `i` of `page_size` bytes.
    pub fn page(&self, i: u32, page_size: usize) -> Vec<u8> {
        let mut p = vec![0u8; page_size];
        put_u16(&mut p, 10, flags::META);
        put_u32(&mut p, 16, i);
        p[META_OFF..META_OFF + META_LEN].copy_from_slice(&self.body());
        p
    }

    /// The page size stored in the GC descriptor.
    pub fn page_size(&self) -> usize {
        self.gc.dupfix_size as usize
    }

    /// The txnid if both copies agree, else 0 (torn or being written).
    pub fn txnid(&self) -> u64 {
        if self.txnid_a == self.txnid_b {
            self.txnid_a
        } else {
            0
        }
    }

    /// Steady: signed steady and with a usable txnid.
    pub fn is_steady(&self) -> bool {
        self.sign > SIGN_WEAK && self.txnid() >= 1
    }

    /// Full validation of meta `i` (docs/format.md, "Meta validation"). `file_pages`
    /// is the data file size in pages (None when unknown).
    pub fn validate(&self, page_hdr: &[u8], i: u32, file_pages: Option<u64>) -> Result<()> {
        if self.magic >> 8 != MAGIC {
            return Err(Error::Invalid(format!("meta {i}: bad magic")));
        }
        if !matches!(self.magic, DATA_MAGIC | DATA_MAGIC_LEGACY_COMPAT | DATA_MAGIC_LEGACY_DEVEL) {
            return Err(Error::VersionMismatch(format!("meta {i}: data format version {}", self.magic & 0xFF)));
        }
        let bad = |what: &'static str| Err(Error::corrupted(i, what));
        if u16_at(page_hdr, 10) != flags::META || u32_at(page_hdr, 16) != i {
            return bad("meta page header is wrong");
        }
        let ps = self.page_size();
        if !ps.is_power_of_two() || !(MIN_PAGESIZE..=MAX_PAGESIZE).contains(&ps) {
            return bad("meta page size is invalid");
        }
        let t = self.txnid();
        if t == 0 || t > MAX_TXNID {
            return bad("meta txnid is torn or out of range");
        }
        if self.sign > SIGN_WEAK && self.sign != SIGN_STEADY {
            return bad("meta has an invalid steady checksum");
        }
        if self.gc.flags != DbFlags::INTEGER_KEY.bits() as u16 {
            return bad("GC tree flags are wrong");
        }
        if !DbFlags::from_bits_truncate(self.main.flags as u32).is_valid_persistent() || self.main.flags & !0x7E != 0 {
            return bad("main tree flags are invalid");
        }
        let g = &self.geo;
        if g.lower < NUM_METAS
            || g.lower > g.upper
            || g.upper > MAX_PAGENO + 1
            || g.first_unallocated < NUM_METAS
            || g.first_unallocated > MAX_PAGENO + 1
            || (g.lower as usize) * ps < 768
        {
            return bad("meta geometry is invalid");
        }
        if let Some(fp) = file_pages {
            if g.first_unallocated as u64 > fp {
                return bad("data file is shorter than the allocated pages");
            }
        }
        for tree in [&self.gc, &self.main] {
            if tree.root == P_INVALID {
                if tree.height != 0
                    || tree.branch_pages != 0
                    || tree.leaf_pages != 0
                    || tree.large_pages != 0
                    || tree.items != 0
                {
                    return bad("empty tree has non-zero counters");
                }
            } else if tree.root < NUM_METAS || tree.root >= g.first_unallocated || tree.height == 0 {
                return bad("tree root is out of range");
            } else if tree.mod_txnid > t || tree.mod_txnid == 0 && self.magic == DATA_MAGIC {
                return bad("tree mod_txnid is invalid");
            }
        }
        Ok(())
    }
}

/// Whether the head of a data file (its first `min(len, 3 * MAX_PAGESIZE)`
/// bytes) is what an interrupted
/// creation leaves: for some page size, every meta slot is past the end of
/// the file, all zeros, or an initial meta (txnid 1 to 3, both trees empty),
/// and at least one slot is not an initial meta. Returns that page size: the
/// caller must still check that the file holds nothing but zeros after the
/// three slots. A file that has held a commit has a meta with a later txnid
/// or a non-empty tree, so it never qualifies.
pub fn unfinished_creation(head: &[u8]) -> Option<usize> {
    let mut ps = MIN_PAGESIZE;
    while ps <= MAX_PAGESIZE {
        let mut initial = 0;
        let mut ok = true;
        for i in 0..NUM_METAS as usize {
            let start = (i * ps).min(head.len());
            let end = ((i + 1) * ps).min(head.len());
            let slot = &head[start..end];
            if slot.iter().all(|&b| b == 0) {
                continue; // past the end of the file, or never written
            }
            let is_initial = Meta::read(slot, i as u32).is_ok_and(|m| {
                m.validate(slot, i as u32, None).is_ok()
                    && m.page_size() == ps
                    && m.txnid() <= NUM_METAS as u64
                    && m.gc.root == P_INVALID
                    && m.main.root == P_INVALID
            });
            if !is_initial {
                ok = false;
                break;
            }
            initial += 1;
        }
        if ok && initial < NUM_METAS as usize {
            return Some(ps);
        }
        ps *= 2;
    }
    None
}

/// Selections among the three metas ("troika"; docs/format.md, "Choosing the meta").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Troika {
    /// The head: newest meta (weak or steady).
    pub recent: usize,
    /// The best steady meta.
    pub prefer_steady: usize,
    /// The slot the next commit overwrites.
    pub tail: usize,
}

impl Troika {
    /// What slot `i` is, as the checker and the meta listing name it: an
    /// unusable meta, the head, the tail (the next commit overwrites it),
    /// or the one that stays.
    pub fn role(&self, i: usize, valid: bool) -> &'static str {
        if !valid {
            "invalid"
        } else if i == self.recent {
            "head"
        } else if i == self.tail {
            "tail"
        } else {
            "stay"
        }
    }
}

/// Chooses recent / prefer-steady / tail from per-meta (txnid, steady) with
/// unusable metas given txnid 0.
// Inline: without it here and on `Meta::body`, a one-put commit runs
// 129 more instructions (docs/design.md, "Inlining on the commit path").
#[inline]
pub fn troika(m: [(u64, bool); 3]) -> Troika {
    let recent_better = |a: usize, b: usize| m[a].0 > m[b].0 || (m[a].0 == m[b].0 && m[a].1 && !m[b].1);
    let steady_better = |a: usize, b: usize| (m[a].1 && !m[b].1) || (m[a].1 == m[b].1 && m[a].0 > m[b].0);
    let recent = if recent_better(0, 1) {
        if recent_better(0, 2) {
            0
        } else {
            2
        }
    } else if recent_better(1, 2) {
        1
    } else {
        2
    };
    let prefer_steady = if steady_better(0, 1) {
        if steady_better(0, 2) {
            0
        } else {
            2
        }
    } else if steady_better(1, 2) {
        1
    } else {
        2
    };
    let tail = match recent {
        0 => {
            if steady_better(1, 2) {
                2
            } else {
                1
            }
        }
        1 => {
            if steady_better(0, 2) {
                2
            } else {
                0
            }
        }
        _ => {
            if steady_better(0, 1) {
                1
            } else {
                0
            }
        }
    };
    Troika { recent, prefer_steady, tail }
}

/// Decodes a packed 16-bit page count (docs/format.md, "Packed page counts").
pub fn pv2pages(pv: u16) -> u32 {
    if pv & 0x8001 != 0x8001 {
        return pv as u32;
    }
    if pv == 0xFFFF {
        return 65536;
    }
    let e = ((pv >> 12) & 7) as u32;
    let m = ((pv >> 1) & 2047) as u32;
    32768 + ((m + 1) << (e + 8))
}

/// Encodes a page count as a packed 16-bit value, rounding up (docs/format.md, "Packed page counts").
pub fn pages2pv(pages: u32) -> u16 {
    if pages < 32769 || (pages < 65536 && pages & 1 == 0) {
        return pages as u16;
    }
    let mut e = 0u32;
    while e < 7 && pages as u64 > 32768 + (2048u64 << (e + 8)) {
        e += 1;
    }
    if e == 7 && pages as u64 >= 32768 + (2047u64 << 15) {
        return 0xFFFD;
    }
    let mut m = ((pages as u64 - 32768 + (1u64 << (e + 8)) - 1) >> (e + 8)) as u32;
    m = m.saturating_sub(1);
    (0x8001 + (e << 12) + (m << 1)) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pv_roundtrip() {
        assert_eq!(pages2pv(16), 16);
        assert_eq!(pv2pages(160), 160);
        for pv in 0..=u16::MAX {
            let p = pv2pages(pv);
            let c = pages2pv(p);
            assert_eq!(pv2pages(c), p, "pv {pv:#x}");
        }
        for pages in (0..2_000_000u32).step_by(7) {
            assert!(pv2pages(pages2pv(pages)) >= pages.min(pv2pages(0xFFFD)));
        }
    }

    #[test]
    fn troika_rules() {
        let t = troika([(4, true), (2, true), (3, true)]);
        assert_eq!((t.recent, t.prefer_steady, t.tail), (0, 0, 1));
        let t = troika([(4, false), (2, true), (3, true)]);
        assert_eq!((t.recent, t.prefer_steady, t.tail), (0, 2, 1));
        let t = troika([(0, false), (2, true), (3, true)]);
        assert_eq!((t.recent, t.prefer_steady, t.tail), (2, 2, 0));
    }
}
