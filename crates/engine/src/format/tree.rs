//! The 48-byte tree descriptor (format doc §9): in the meta (GC and main trees),
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
}
