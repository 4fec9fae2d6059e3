//! The 48-byte tree descriptor (docs/format.md, "Tree record"): in the meta (GC and main trees),
//! as the value of named-table records, and of nested DUPSORT trees.
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 2 | `flags` (persistent table flags) |
//! | 2 | 2 | `height` (0 = empty) |
//! | 4 | 4 | `dupfix_size` (GC in the meta: the page size) |
//! | 8 | 4 | `root` (`P_INVALID` when empty) |
//! | 12 | 4 | `branch_pages` |
//! | 16 | 4 | `leaf_pages` |
//! | 20 | 4 | `large_pages` |
//! | 24 | 8 | `sequence` |
//! | 32 | 8 | `items` |
//! | 40 | 8 | `mod_txnid` |

use super::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at, P_INVALID};
use crate::error::{Error, Result};

/// Size of a serialized tree descriptor.
pub const TREE_SIZE: usize = 48;

/// A tree descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tree {
    /// Persistent table flags.
    pub flags: u16,
    /// Number of levels.
    pub height: u16,
    /// Fixed value size (DUPFIXED) or, for the GC in a meta, the page size.
    pub dupfix_size: u32,
    /// Root page or `P_INVALID`.
    pub root: u32,
    /// Branch pages.
    pub branch_pages: u32,
    /// Leaf pages.
    pub leaf_pages: u32,
    /// Pages in large chunks.
    pub large_pages: u32,
    /// User sequence.
    pub sequence: u64,
    /// Number of records.
    pub items: u64,
    /// Last modifying transaction.
    pub mod_txnid: u64,
}

impl Tree {
    /// An empty tree with `flags`.
    pub const fn empty(flags: u16) -> Tree {
        Tree {
            flags,
            height: 0,
            dupfix_size: 0,
            root: P_INVALID,
            branch_pages: 0,
            leaf_pages: 0,
            large_pages: 0,
            sequence: 0,
            items: 0,
            mod_txnid: 0,
        }
    }

    /// Parses 48 bytes.
    pub fn read(b: &[u8]) -> Tree {
        Tree {
            flags: u16_at(b, 0),
            height: u16_at(b, 2),
            dupfix_size: u32_at(b, 4),
            root: u32_at(b, 8),
            branch_pages: u32_at(b, 12),
            leaf_pages: u32_at(b, 16),
            large_pages: u32_at(b, 20),
            sequence: u64_at(b, 24),
            items: u64_at(b, 32),
            mod_txnid: u64_at(b, 40),
        }
    }

    /// Serializes into 48 bytes.
    pub fn write(&self, b: &mut [u8]) {
        put_u16(b, 0, self.flags);
        put_u16(b, 2, self.height);
        put_u32(b, 4, self.dupfix_size);
        put_u32(b, 8, self.root);
        put_u32(b, 12, self.branch_pages);
        put_u32(b, 16, self.leaf_pages);
        put_u32(b, 20, self.large_pages);
        put_u64(b, 24, self.sequence);
        put_u64(b, 32, self.items);
        put_u64(b, 40, self.mod_txnid);
    }

    /// Serialized form.
    pub fn to_bytes(&self) -> [u8; TREE_SIZE] {
        let mut b = [0u8; TREE_SIZE];
        self.write(&mut b);
        b
    }

    /// Whether the tree has no pages.
    pub fn is_empty(&self) -> bool {
        self.root == P_INVALID
    }

    /// This tree with no pages and no records (flags, sequence and the
    /// rest kept): what removing or freeing its last page leaves.
    pub fn without_pages(&self) -> Tree {
        Tree { root: P_INVALID, height: 0, branch_pages: 0, leaf_pages: 0, large_pages: 0, items: 0, ..*self }
    }
}

/// Checked changes of the counters. A descriptor read from the file may hold
/// any numbers: an edit that would take a counter below zero (or past its
/// maximum) means the descriptor disagrees with the pages, so it fails with
/// `Corrupted` naming `at` (the page being edited) instead of wrapping or
/// panicking. Every change of `items`, the page counts and `height` by the
/// tree editors goes through these.
impl Tree {
    pub(crate) fn inc_items(&mut self, n: u64, at: u32) -> Result<()> {
        self.items = self.items.checked_add(n).ok_or_else(|| Error::corrupted(at, "record count overflows"))?;
        Ok(())
    }

    pub(crate) fn dec_items(&mut self, n: u64, at: u32) -> Result<()> {
        self.items = self
            .items
            .checked_sub(n)
            .ok_or_else(|| Error::corrupted(at, "record count of the tree is lower than its records"))?;
        Ok(())
    }

    pub(crate) fn inc_branch(&mut self, n: u32, at: u32) -> Result<()> {
        self.branch_pages =
            self.branch_pages.checked_add(n).ok_or_else(|| Error::corrupted(at, "branch page count overflows"))?;
        Ok(())
    }

    pub(crate) fn dec_branch(&mut self, n: u32, at: u32) -> Result<()> {
        self.branch_pages = self
            .branch_pages
            .checked_sub(n)
            .ok_or_else(|| Error::corrupted(at, "branch page count of the tree is lower than its branch pages"))?;
        Ok(())
    }

    pub(crate) fn inc_leaf(&mut self, n: u32, at: u32) -> Result<()> {
        self.leaf_pages =
            self.leaf_pages.checked_add(n).ok_or_else(|| Error::corrupted(at, "leaf page count overflows"))?;
        Ok(())
    }

    pub(crate) fn dec_leaf(&mut self, n: u32, at: u32) -> Result<()> {
        self.leaf_pages = self
            .leaf_pages
            .checked_sub(n)
            .ok_or_else(|| Error::corrupted(at, "leaf page count of the tree is lower than its leaf pages"))?;
        Ok(())
    }

    pub(crate) fn inc_large(&mut self, n: u32, at: u32) -> Result<()> {
        self.large_pages =
            self.large_pages.checked_add(n).ok_or_else(|| Error::corrupted(at, "large page count overflows"))?;
        Ok(())
    }

    pub(crate) fn dec_large(&mut self, n: u32, at: u32) -> Result<()> {
        self.large_pages = self
            .large_pages
            .checked_sub(n)
            .ok_or_else(|| Error::corrupted(at, "large page count of the tree is lower than its large pages"))?;
        Ok(())
    }

    /// The page counts follow a nested tree of this tree from `old` to `new`.
    pub(crate) fn follow_nested(&mut self, old: &Tree, new: &Tree, at: u32) -> Result<()> {
        self.dec_branch(old.branch_pages, at)?;
        self.dec_leaf(old.leaf_pages, at)?;
        self.inc_branch(new.branch_pages, at)?;
        self.inc_leaf(new.leaf_pages, at)
    }

    pub(crate) fn inc_height(&mut self, at: u32) -> Result<()> {
        self.height = self.height.checked_add(1).ok_or_else(|| Error::corrupted(at, "tree height overflows"))?;
        Ok(())
    }

    pub(crate) fn dec_height(&mut self, at: u32) -> Result<()> {
        self.height = self.height.checked_sub(1).ok_or_else(|| Error::corrupted(at, "tree height is zero"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let t = Tree {
            flags: 8,
            height: 2,
            dupfix_size: 4096,
            root: 22,
            branch_pages: 1,
            leaf_pages: 3,
            large_pages: 7,
            sequence: 42,
            items: 1003,
            mod_txnid: 13,
        };
        assert_eq!(Tree::read(&t.to_bytes()), t);
    }

    #[test]
    fn counters_never_wrap() {
        let mut t = Tree::empty(0);
        assert!(matches!(t.dec_items(1, 7), Err(Error::Corrupted { page: 7, .. })));
        assert!(matches!(t.dec_branch(1, 7), Err(Error::Corrupted { page: 7, .. })));
        assert!(matches!(t.dec_leaf(1, 7), Err(Error::Corrupted { page: 7, .. })));
        assert!(matches!(t.dec_large(1, 7), Err(Error::Corrupted { page: 7, .. })));
        assert!(matches!(t.dec_height(7), Err(Error::Corrupted { page: 7, .. })));
        assert_eq!(t, Tree::empty(0));
        t.items = u64::MAX;
        t.branch_pages = u32::MAX;
        t.height = u16::MAX;
        assert!(t.inc_items(1, 9).is_err() && t.inc_branch(1, 9).is_err() && t.inc_height(9).is_err());
        assert_eq!((t.items, t.branch_pages, t.height), (u64::MAX, u32::MAX, u16::MAX));
        t.dec_items(2, 9).unwrap();
        assert_eq!(t.items, u64::MAX - 2);
    }
}
