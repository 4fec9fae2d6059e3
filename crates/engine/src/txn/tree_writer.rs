//! The write transaction as the tree editors' write context
//! (`btree::writer::TreeWriter`): each method is the page operation or table
//! access of `RwTxn` that the editors used to call directly.

use super::{page_ops, Db, RwTxn, View};
use crate::btree::pages::Pages;
use crate::btree::walk::Kind;
use crate::btree::writer::{Counted, TreeWriter};
use crate::error::Result;
use crate::format::limits::Limits;
use crate::format::tree::Tree;

impl TreeWriter for RwTxn<'_> {
    type Db = Db;

    #[inline]
    fn pages(&self) -> Pages<'_> {
        RwTxn::pages(self)
    }
    #[inline]
    fn limits(&self) -> Limits {
        self.env.limits
    }
    #[inline]
    fn txnid(&self) -> u64 {
        self.txnid
    }
    #[inline]
    fn dirty_ref(&self, pgno: u32) -> &[u8] {
        RwTxn::dirty_ref(self, pgno)
    }
    #[inline]
    fn dirty_mut(&mut self, pgno: u32) -> &mut [u8] {
        RwTxn::dirty_mut(self, pgno)
    }
    #[inline]
    fn dirty_mut_full(&mut self, pgno: u32) -> &mut [u8] {
        RwTxn::dirty_mut_full(self, pgno)
    }
    #[inline]
    fn page_is_dirty(&self, pgno: u32) -> bool {
        RwTxn::page_is_dirty(self, pgno)
    }
    #[inline]
    fn copy_dirty(&mut self, pgno: u32) -> Box<[u8]> {
        let ps = self.env.page_size;
        let st = &mut *self.st;
        st.pool.copy_of(&st.dirty.get(&pgno).expect("page is dirty")[..ps])
    }
    #[inline]
    fn recycle(&mut self, buf: Box<[u8]>) {
        self.st.pool.recycle(buf, self.env.page_size);
    }
    #[inline]
    fn take_sizes(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.st.split_sizes)
    }
    #[inline]
    fn keep_sizes(&mut self, mut sizes: Vec<usize>) {
        sizes.clear();
        self.st.split_sizes = sizes;
    }
    #[inline]
    fn take_bytes(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.st.node_bytes)
    }
    #[inline]
    fn keep_bytes(&mut self, mut bytes: Vec<u8>) {
        bytes.clear();
        self.st.node_bytes = bytes;
    }
    #[inline]
    fn new_page(&mut self, flags: u16) -> Result<u32> {
        page_ops::new_page(self, flags)
    }
    #[inline]
    fn new_large(&mut self, n: usize, value_len: usize) -> Result<u32> {
        page_ops::new_large(self, n, value_len)
    }
    #[inline]
    fn touch(&mut self, pgno: u32) -> Result<u32> {
        page_ops::touch(self, pgno)
    }
    #[inline]
    fn free(&mut self, pgno: u32, n: usize) {
        page_ops::free(self, pgno, n)
    }
    #[inline]
    fn count(&mut self, op: Counted) {
        match op {
            Counted::Split => self.st.ops.split += 1,
            Counted::Merge => self.st.ops.merge += 1,
        }
    }
    #[inline]
    fn table(&self, db: Db) -> Result<View> {
        RwTxn::table(self, db)
    }
    #[inline]
    fn set_tree(&mut self, db: Db, tree: Tree, append_leaf: Option<u32>) -> Result<()> {
        let t = self.table_mut(db)?;
        t.tree = tree;
        t.dirty = true;
        t.append_leaf = append_leaf;
        Ok(())
    }
    #[inline]
    fn append_leaf(&self, db: Db) -> Option<u32> {
        RwTxn::append_leaf(self, db)
    }
    fn kind(&self, db: Db) -> Kind {
        match db.dbi {
            0 => Kind::Gc,
            1 => Kind::Main,
            _ => Kind::Table,
        }
    }
}
