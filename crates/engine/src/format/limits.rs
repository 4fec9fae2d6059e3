//! Key and value size limits as libmdbx computes them for a page size
//! (docs/format.md, "Size limits").

use super::{even_ceil, NODESIZE, PAGEHDRSZ};
use crate::flags::DbFlags;

/// Size limits derived from one page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Page size in bytes.
    pub page_size: usize,
    /// Largest branch node.
    pub branch_nodemax: usize,
    /// Largest leaf node (a pair stays inline iff its node fits this).
    pub leaf_nodemax: usize,
}

/// Largest value of a non-DUPSORT table on 64-bit builds.
pub const MAX_VALUE_SIZE: usize = 0x7FF0_0000;

impl Limits {
    /// Limits for `page_size` (a power of two in 256..=65536).
    pub const fn new(page_size: usize) -> Limits {
        let space = page_size - PAGEHDRSZ;
        Limits {
            page_size,
            branch_nodemax: ((space - 2 - NODESIZE) / 2 - 2) & !1,
            leaf_nodemax: ((space / 2) & !1) - 2,
        }
    }

    /// Largest key for a table with `flags`.
    pub fn max_key(&self, flags: DbFlags) -> usize {
        if flags.contains(DbFlags::INTEGER_KEY) {
            return 8;
        }
        let plain = self.branch_nodemax - NODESIZE;
        if flags.contains(DbFlags::DUP_SORT) {
            plain.min(self.leaf_nodemax - NODESIZE - 48)
        } else {
            plain
        }
    }

    /// Largest value for a table with `flags`.
    pub fn max_value(&self, flags: DbFlags) -> usize {
        if flags.contains(DbFlags::INTEGER_DUP) {
            8
        } else if flags.contains(DbFlags::DUP_SORT) {
            self.branch_nodemax - NODESIZE
        } else {
            MAX_VALUE_SIZE
        }
    }

    /// Whether a (key, value) pair stays inline in a leaf node.
    #[inline]
    pub fn fits_inline(&self, ksize: usize, dsize: usize) -> bool {
        NODESIZE + even_ceil(ksize + dsize) <= self.leaf_nodemax
    }

    /// Number of pages of a large chunk holding `dsize` bytes.
    #[inline]
    pub fn large_pages(&self, dsize: usize) -> usize {
        (PAGEHDRSZ - 1 + dsize) / self.page_size + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_of_format_doc() {
        let rows = [
            (256, 110, 116, 102, 60),
            (512, 238, 244, 230, 188),
            (1024, 494, 500, 486, 444),
            (4096, 2030, 2036, 2022, 1980),
            (16384, 8174, 8180, 8166, 8124),
            (65536, 32750, 32756, 32742, 32700),
        ];
        for (ps, b, l, k, kd) in rows {
            let lim = Limits::new(ps);
            assert_eq!(lim.branch_nodemax, b, "ps {ps}");
            assert_eq!(lim.leaf_nodemax, l, "ps {ps}");
            assert_eq!(lim.max_key(DbFlags::empty()), k);
            assert_eq!(lim.max_key(DbFlags::DUP_SORT), kd);
        }
        assert_eq!(Limits::new(4096).large_pages(5120), 2);
    }
}
