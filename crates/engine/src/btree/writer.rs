//! The write context of the tree editors (`write`, `dupsort`): everything
//! they need from a write transaction, and nothing more. The editors are
//! generic over [`TreeWriter`], so they never see the transaction, the GC or
//! the environment; `txn` implements it for `RwTxn` (`txn/tree_writer.rs`),
//! and the unit tests for an in-memory page store (`btree/mem.rs`).
//!
//! The calls are static (generics, no `dyn`): the editors are monomorphised
//! for `RwTxn` and each call inlines as the field access it replaced.

use super::pages::Pages;
use super::walk::Kind;
use super::Cmp;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::format::limits::{Limits, MAX_VALUE_SIZE};
use crate::format::tree::Tree;

/// The parts of a table an edit needs (copied out without allocating).
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    pub tree: Tree,
    pub flags: DbFlags,
    pub cmp: Cmp,
}

/// Page operations counted for the lock file's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counted {
    /// A page was split in two.
    Split,
    /// Two pages were merged into one.
    Merge,
}

/// What a tree edit needs from its transaction: page access, the page life
/// cycle (allocate, copy on write, free), size limits, and the state of the
/// table being edited.
///
/// Page numbers handed to `dirty_*` are dirty (allocated or touched by this
/// transaction); asking for another one is a bug and panics.
pub(crate) trait TreeWriter {
    /// A table handle, opaque to the editors.
    type Db: Copy;

    // Pages.

    /// Read access to the pages: dirty pages first, then the snapshot.
    fn pages(&self) -> Pages<'_>;
    /// Size limits of the page size.
    fn limits(&self) -> Limits;
    /// The transaction id (stamped on new pages and edited trees).
    fn txnid(&self) -> u64;
    /// A dirty page (the first page of a large chunk), `page_size` bytes.
    fn dirty_ref(&self, pgno: u32) -> &[u8];
    /// A dirty page to edit, `page_size` bytes.
    fn dirty_mut(&mut self, pgno: u32) -> &mut [u8];
    /// A dirty page or whole large chunk to edit.
    fn dirty_mut_full(&mut self, pgno: u32) -> &mut [u8];
    /// Whether `pgno` is dirty in this transaction.
    fn page_is_dirty(&self, pgno: u32) -> bool;
    /// A copy of dirty page `pgno` in a buffer of the page pool (give it
    /// back with `recycle`).
    fn copy_dirty(&mut self, pgno: u32) -> Box<[u8]>;
    /// Gives a buffer from `copy_dirty` back to the pool.
    fn recycle(&mut self, buf: Box<[u8]>);
    /// An empty list kept for a page split's entry sizes (give it back with
    /// `keep_sizes`, so splits allocate nothing once it has grown).
    fn take_sizes(&mut self) -> Vec<usize> {
        Vec::new()
    }
    /// Gives back the list of `take_sizes`.
    fn keep_sizes(&mut self, _sizes: Vec<usize>) {}
    /// An empty buffer kept for building a node's content (a multimap
    /// key's sub-page), given back with `keep_bytes`.
    fn take_bytes(&mut self) -> Vec<u8> {
        Vec::new()
    }
    /// Gives back the buffer of `take_bytes`.
    fn keep_bytes(&mut self, _bytes: Vec<u8>) {}

    // The page life cycle.

    /// A new zeroed branch or leaf page with `flags`, dirty.
    fn new_page(&mut self, flags: u16) -> Result<u32>;
    /// A new large chunk of `n` pages, dirty, for a value of `value_len`
    /// bytes that the caller writes after the header: the bytes after it
    /// are zeros, except with WRITEMAP (the pages as the file held them).
    fn new_large(&mut self, n: usize, value_len: usize) -> Result<u32>;
    /// Copy-on-write: a dirty copy of `pgno` (`pgno` itself if it is dirty).
    fn touch(&mut self, pgno: u32) -> Result<u32>;
    /// Frees `n` pages at `pgno` (a page or a large chunk).
    fn free(&mut self, pgno: u32, n: usize);
    /// Counts a page operation.
    fn count(&mut self, op: Counted);

    // Tables.

    /// The state of table `db`.
    fn table(&self, db: Self::Db) -> Result<View>;
    /// Stores the edited tree of `db` (the table's record must then be
    /// rewritten) with the APPEND hint for its next put (`None`: forgotten).
    /// Fails only as `table` does.
    fn set_tree(&mut self, db: Self::Db, tree: Tree, append_leaf: Option<u32>) -> Result<()>;
    /// The APPEND hint of `db`: its rightmost leaf, dirty, after an APPEND
    /// put that did not split.
    fn append_leaf(&self, db: Self::Db) -> Option<u32>;
    /// What kind of tree `db` is (the GC, the main table or a named table).
    fn kind(&self, db: Self::Db) -> Kind;
}

/// `Err(BadValSize)` when a value of `len` bytes is too large for a table
/// with `flags` (libmdbx's limit on 64-bit builds).
pub(crate) fn check_value_size(limits: &Limits, flags: DbFlags, len: usize) -> Result<()> {
    if len > MAX_VALUE_SIZE.min(limits.max_value(flags)) {
        return Err(Error::BadValSize(format!("value of {len} bytes is too large")));
    }
    Ok(())
}
