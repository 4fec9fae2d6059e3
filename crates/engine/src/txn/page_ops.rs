//! The page life cycle of a write transaction: its dirty set (pages in
//! memory, or in the writable map with WRITEMAP), new pages and large
//! chunks, copy-on-write ("touch"), and freeing (reusable at once if this
//! transaction allocated the page, else retired to the GC). Allocation
//! itself, which consults the GC, is `gc::alloc`.

use crate::error::Result;
use crate::format::page as fpage;
use crate::gc::alloc;
use crate::pool::PageBuf;
use crate::txn::RwTxn;

/// How far [`RwTxn::map_page`] populates the map ahead of a fresh tail
/// page (on in-memory file systems).
const PREFAULT_AHEAD: usize = 256 << 10;

impl RwTxn<'_> {
    /// A dirty page (first page of a chunk) by number. Internal invariant: it is dirty.
    pub(crate) fn dirty_ref(&self, pgno: u32) -> &[u8] {
        &self.st.dirty.get(&pgno).expect("page is dirty")[..self.env.page_size]
    }
    pub(crate) fn dirty_mut(&mut self, pgno: u32) -> &mut [u8] {
        let ps = self.env.page_size;
        &mut self.dirty_mut_full(pgno)[..ps]
    }
    pub(crate) fn dirty_mut_full(&mut self, pgno: u32) -> &mut [u8] {
        self.note_undo(pgno);
        self.st.dirty.get_mut(&pgno).expect("page is dirty")
    }
    /// Adds a dirty page (nested transactions remember that it was absent).
    /// Inline: each copy-on-write and new page ends here, and the call
    /// itself cost 17 instructions (the buffer handle passed by value).
    #[inline(always)]
    pub(crate) fn dirty_insert(&mut self, pgno: u32, buf: impl Into<PageBuf>) {
        self.dirty_replace(pgno, buf);
    }
    /// Replaces the buffer of a dirty page.
    #[inline(always)]
    pub(crate) fn dirty_replace(&mut self, pgno: u32, buf: impl Into<PageBuf>) {
        let buf = buf.into();
        self.note_undo(pgno);
        self.dirty_extra += buf.pages(self.env.page_size) - 1;
        if let Some(old) = self.st.dirty.insert(pgno, buf) {
            self.replaced(old);
        }
    }

    /// The buffer a dirty page had before [`RwTxn::dirty_replace`] (apart:
    /// a new page or a copy never replaces one).
    #[inline(never)]
    fn replaced(&mut self, old: PageBuf) {
        let ps = self.env.page_size;
        self.dirty_extra -= old.pages(ps) - 1;
        self.st.pool.recycle(old, ps);
    }
    /// Removes a dirty page; whether it was there.
    pub(crate) fn dirty_remove(&mut self, pgno: u32) -> bool {
        if !self.st.dirty.contains_key(&pgno) {
            return false;
        }
        self.note_undo(pgno);
        match self.st.dirty.remove(&pgno) {
            Some(buf) => {
                self.dirty_extra -= buf.pages(self.env.page_size) - 1;
                self.st.pool.recycle(buf, self.env.page_size);
                true
            }
            None => false,
        }
    }
    /// Inside a nested transaction: keeps the page's state before the child
    /// first changes it, so that aborting the child can restore it. (Inline
    /// the test only: a dozen calls a one-put commit.)
    #[inline(always)]
    fn note_undo(&mut self, pgno: u32) {
        if !self.st.frames.is_empty() {
            self.note_undo_in_child(pgno);
        }
    }

    #[inline(never)]
    fn note_undo_in_child(&mut self, pgno: u32) {
        let st = &mut *self.st;
        if let Some(f) = st.frames.last_mut() {
            let (dirty, ops) = (&st.dirty, &mut st.ops);
            f.undo.entry(pgno).or_insert_with(|| {
                let copy = dirty.get(&pgno).cloned();
                ops.clone += u64::from(copy.is_some());
                copy
            });
        }
    }
    pub(crate) fn page_is_dirty(&self, pgno: u32) -> bool {
        self.st.dirty.contains_key(&pgno)
    }

    /// Whether `pgno` is a page of the base snapshot this transaction has
    /// not changed: neither dirty nor spilled (a spilled page is changed in
    /// place when it is taken back). An edit of a tree copies its root
    /// first, so a root still unchanged means the tree is as it was.
    pub(crate) fn page_unchanged(&self, pgno: u32) -> bool {
        !self.page_is_dirty(pgno) && !self.st.spilled.contains(&pgno)
    }

    /// With WRITEMAP: the `n` pages at `pgno`, which this transaction
    /// allocated, to be edited in place in the map. `None` without WRITEMAP,
    /// outside the file or the map, and where an open parent transaction
    /// still relies on the pages' file contents (see `spill`).
    ///
    /// This and the calls under it (`PagePool::map_page`,
    /// `MapClaims::page_mut`, `HandedBits::word`) are forced inline: left
    /// to the compiler, a change elsewhere in the crate made it stop
    /// inlining them into `touch` (+130 instructions a one-put commit).
    #[inline(always)]
    pub(crate) fn map_page(&mut self, pgno: u32, n: usize) -> Option<crate::os::mmap::MapPage> {
        if !self.env.writemap {
            return None;
        }
        let ps = self.env.page_size;
        let (off, len) = (pgno as usize * ps, n * ps);
        if (off + len) as u64 > self.env.file_len.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        if self.st.frames.iter().any(|f| (pgno..pgno + n as u32).any(|p| f.reserved.contains(&p))) {
            return None;
        }
        let st = &mut *self.st;
        let page = st.pool.map_page(&st.map, off, len)?;
        if self.env.in_memory_fs && pgno >= self.st.base.geo.first_unallocated {
            // A page from the tail (no snapshot has it): its first store
            // would take a page fault. Populate the page tables for the next
            // 256 KiB of the file in one call instead (the tail is allocated
            // in ascending order); nothing is written.
            let file_len = self.env.file_len.load(std::sync::atomic::Ordering::Acquire) as usize;
            let from = off & !(crate::os::page_size() - 1);
            let to = (off + len.max(PREFAULT_AHEAD)).min(file_len);
            self.st.map.prefault(from, to.saturating_sub(from));
        }
        Some(page)
    }

    /// Memory for `n` pages at `pgno`, which this transaction just
    /// allocated: with WRITEMAP the pages themselves, as the file holds them
    /// (a free page of this database, or zeros past its old end), as
    /// libmdbx's new map pages are; else a heap buffer, zeroed from byte
    /// `used` (libmdbx also zeroes its heap pages): the caller writes the
    /// bytes before it, the header (`init_page`, `init_large`) and for a
    /// large chunk its value (`PagePool::chunk`). Zeroing a map page took
    /// 15% of a one-put WRITEMAP commit's time at 64 KiB pages (alternating
    /// runs of the benchmark's small-commit row: +18% without it, +2% at 4
    /// KiB).
    fn fresh_buf(&mut self, pgno: u32, n: usize, used: usize) -> PageBuf {
        let ps = self.env.page_size;
        match self.map_page(pgno, n) {
            Some(m) => PageBuf::Map(m),
            None if n == 1 => self.st.pool.zeroed(ps).into(),
            None => self.st.pool.chunk(n * ps, used).into(),
        }
    }
}

/// A new zeroed branch/leaf page in the dirty set.
pub(crate) fn new_page(txn: &mut RwTxn<'_>, flags: u16) -> Result<u32> {
    let pgno = alloc(txn, 1)?;
    let mut buf = txn.fresh_buf(pgno, 1, 0);
    txn.st.ops.newly += 1;
    fpage::init_page(&mut buf, pgno, flags, txn.txnid);
    txn.dirty_insert(pgno, buf);
    Ok(pgno)
}

/// A new large chunk of `n` pages in the dirty set, for a value of
/// `value_len` bytes (see [`TreeWriter::new_large`]).
///
/// [`TreeWriter::new_large`]: crate::btree::writer::TreeWriter::new_large
pub(crate) fn new_large(txn: &mut RwTxn<'_>, n: usize, value_len: usize) -> Result<u32> {
    let pgno = alloc(txn, n)?;
    let mut buf = txn.fresh_buf(pgno, n, crate::format::PAGEHDRSZ + value_len);
    txn.st.ops.newly += n as u64;
    fpage::init_large(&mut buf, pgno, n as u32, txn.txnid);
    txn.dirty_insert(pgno, buf);
    Ok(pgno)
}

/// Copy-on-write: a dirty copy of `pgno` (itself if already dirty).
///
/// The test for a dirty page is inline: a walk deleting at a write cursor
/// touches the paths it edits again at every delete, and a call spent more
/// on saving and restoring registers than on the test.
#[inline(always)]
pub(crate) fn touch(txn: &mut RwTxn<'_>, pgno: u32) -> Result<u32> {
    if txn.st.dirty.contains_key(&pgno) {
        return Ok(pgno);
    }
    touch_clean(txn, pgno)
}

/// [`touch`] of a page not in the dirty set: spilled, or of the snapshot.
#[inline(never)]
fn touch_clean(txn: &mut RwTxn<'_>, pgno: u32) -> Result<u32> {
    if crate::txn::spill::unspill(txn, pgno)? {
        return Ok(pgno);
    }
    // From here `pgno` is a snapshot page: `get_clean` skips the dirty set.
    if txn.env.writemap {
        // Check the source before taking a page for its copy (the check
        // of `get_clean` below; the map covers the allocated pages).
        crate::btree::pages::check_allocated(pgno, txn.geo.first_unallocated)?;
        let new = alloc(txn, 1)?;
        let mut buf = match txn.map_page(new, 1) {
            Some(mut m) => {
                // Into a cold map page: skip the source's gap, reading it
                // and writing it (heap copies skip it too: `copy_of`). The
                // page keeps its own earlier bytes there, as libmdbx's
                // copies do.
                fpage::copy_used(&mut m, txn.pages().get_clean(pgno)?, false);
                PageBuf::Map(m)
            }
            None => {
                let (pages, pool) = txn.pages_and_pool();
                pages.get_clean(pgno).map(|src| pool.copy_of(src))?.into()
            }
        };
        txn.st.ops.cow += 1;
        fpage::set_pgno(&mut buf, new);
        fpage::set_txnid(&mut buf, txn.txnid);
        txn.dirty_insert(new, buf);
        txn.st.retired.push(pgno);
        return Ok(new);
    }
    let (pages, pool) = txn.pages_and_pool();
    let mut buf = pages.get_clean(pgno).map(|src| pool.copy_of(src))?;
    txn.st.ops.cow += 1;
    let new = alloc(txn, 1)?;
    fpage::set_pgno(&mut buf, new);
    fpage::set_txnid(&mut buf, txn.txnid);
    txn.dirty_insert(new, buf);
    txn.st.retired.push(pgno);
    Ok(new)
}

/// Frees `n` pages starting at `pgno`: reusable at once if this transaction
/// allocated them, else retired to the GC.
pub(crate) fn free(txn: &mut RwTxn<'_>, pgno: u32, n: usize) {
    let range = pgno..pgno + n as u32;
    if txn.dirty_remove(pgno) || crate::txn::spill::forget_spilled(txn, pgno, n) {
        txn.st.loose.extend(range);
        txn.st.loose.sort_unstable_by(|a, b| b.cmp(a));
    } else {
        txn.st.retired.extend(range);
    }
}

#[cfg(test)]
mod tests {
    use crate::{Db, Durability, Env, Geometry, PutFlags};

    /// The reserve set on the builder is the one the writer keeps: a large
    /// transaction leaves that many buffers (not the default 1024), and the
    /// next large one takes them all again before it allocates.
    #[test]
    fn the_builder_sets_the_reserve() {
        let kept_after = |reserve: Option<usize>| {
            let d = tempfile::tempdir().unwrap();
            let mut b = Env::builder().durability(Durability::SafeNoSync);
            if let Some(r) = reserve {
                b = b.page_buffer_reserve(r);
            }
            let env = b.open(d.path()).unwrap();
            let kept = || env.inner.writer_state.lock().unwrap().pool.kept_buffers();
            let mut counts = Vec::new();
            for round in 0..2u32 {
                let mut txn = env.begin_rw_txn().unwrap();
                // About 4,000 leaves of 4 KiB.
                for i in 0..30_000u32 {
                    let k = (round * 1_000_000 + i.wrapping_mul(2_654_435_761) % 1_000_000).to_be_bytes();
                    txn.put(Db::MAIN, &k, &[7u8; 400], PutFlags::empty()).unwrap();
                }
                if round == 1 {
                    // The second transaction has dirtied more pages than
                    // the first left: it took every kept buffer (1 here
                    // would mean 16 or more left; a page it dirtied and
                    // freed again may have given one back).
                    counts.push(usize::from(txn.st.pool.kept_buffers() >= 16));
                }
                txn.commit().unwrap();
                counts.push(kept());
            }
            counts
        };
        assert_eq!(kept_after(None), [crate::pool::POOL_LIMIT, 0, crate::pool::POOL_LIMIT]);
        assert_eq!(kept_after(Some(0)), [0, 0, 0]);
        let big = kept_after(Some(usize::MAX));
        assert!(big[0] > 2 * crate::pool::POOL_LIMIT, "every buffer of the first transaction kept: {big:?}");
        assert_eq!(big[1], 0, "taken by the second: {big:?}");
        assert!(big[2] >= big[0], "{big:?}");
    }

    /// With WRITEMAP every map page a transaction edits goes back to the
    /// map's claims when it ends (committed, aborted, after a nested abort
    /// or a spill): a page that did not would stay claimed for good (that
    /// page never edited in place again) and its map never unmapped.
    #[test]
    fn map_pages_come_back_when_a_transaction_ends() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder()
            .write_map(true)
            .dirty_page_limit(64)
            .durability(Durability::SafeNoSync)
            .open(d.path())
            .unwrap();
        let out = || env.inner.writer_state.lock().unwrap().pool.map_pages_out();
        let put = |txn: &mut crate::RwTxn<'_>, from: u32, n: u32| {
            for i in from..from + n {
                txn.put(Db::MAIN, &i.wrapping_mul(2_654_435_761).to_be_bytes(), &[7u8; 100], PutFlags::empty())
                    .unwrap();
            }
        };
        for round in 0..3u32 {
            // Committed, with spills (far more pages than the dirty limit).
            let mut txn = env.begin_rw_txn().unwrap();
            put(&mut txn, round * 10_000, 5_000);
            assert!(txn.st.pool.map_pages_out() > 0, "the transaction edits map pages");
            txn.commit().unwrap();
            assert_eq!(out(), 0, "after a commit");
            // Aborted.
            let mut txn = env.begin_rw_txn().unwrap();
            put(&mut txn, 100_000, 50);
            txn.abort();
            assert_eq!(out(), 0, "after an abort");
            // A nested transaction aborted, then one committed.
            let mut txn = env.begin_rw_txn().unwrap();
            put(&mut txn, 200_000 + round * 1000, 20);
            {
                let mut child = txn.begin_nested_txn().unwrap();
                put(&mut child, 300_000, 200);
                child.abort();
            }
            {
                let mut child = txn.begin_nested_txn().unwrap();
                put(&mut child, 400_000 + round * 1000, 20);
                child.commit().unwrap();
            }
            txn.commit().unwrap();
            assert_eq!(out(), 0, "after nested transactions");
        }
        let stats = env.stat().unwrap();
        assert_eq!(stats.entries, 3 * 5_000 + 3 * 20 + 3 * 20);
        assert!(env.page_ops().spill > 0, "the big transactions spilled");
    }

    /// A transaction that spilled more pages than the kept lists hold
    /// leaves no table of them behind for the next one (the state stays in
    /// the environment between transactions).
    #[test]
    fn a_huge_spill_is_not_kept() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder()
            .dirty_page_limit(64)
            .durability(Durability::SafeNoSync)
            .geometry(Geometry { page_size: Some(256), ..Default::default() })
            .open(d.path())
            .unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0u32..40_000 {
            txn.put(Db::MAIN, &i.to_be_bytes(), &[9u8; 100], PutFlags::APPEND).unwrap();
        }
        let spilled = txn.st.spilled.len();
        assert!(spilled > crate::pool::LIST_KEEP, "{spilled} pages spilled");
        txn.commit().unwrap();
        let st = env.inner.writer_state.lock().unwrap();
        assert!(st.spilled.is_empty() && st.spilled.capacity() <= crate::pool::LIST_KEEP);
    }

    /// Without WRITEMAP a large value's chunk is a heap buffer, reused from
    /// one transaction to the next: the file gets the value and zeros after
    /// it, never bytes of the value the buffer held before (here longer
    /// ones of the same number of pages, filled with another byte).
    #[test]
    fn a_reused_chunk_writes_zeros_after_its_value() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().durability(Durability::SafeNoSync).open(d.path()).unwrap();
        let ps = env.inner.page_size;
        // Lengths of 3-page chunks, falling: each reused buffer held a
        // longer value.
        let len = |round: usize| 3 * ps - 64 - 97 * (round % 9);
        let mut checked = 0;
        for round in 0..40 {
            let mut txn = env.begin_rw_txn().unwrap();
            for k in 0..4u64 {
                txn.put(Db::MAIN, &k.to_be_bytes(), &vec![round as u8 + 1; len(round)], PutFlags::empty()).unwrap();
            }
            txn.commit().unwrap();
            let txn = env.begin_rw_txn().unwrap();
            let file = std::fs::read(d.path().join("mdbx.dat")).unwrap();
            for k in 0..4u64 {
                let loc = crate::btree::write::find_value(&txn, Db::MAIN, &k.to_be_bytes()).unwrap().unwrap();
                assert_eq!(loc.len, len(round));
                let chunk = &file[loc.pgno as usize * ps..(loc.pgno as usize + 3) * ps];
                let (value, after) = chunk[loc.off..].split_at(loc.len);
                assert!(value.iter().all(|&b| b == round as u8 + 1), "round {round}, key {k}: the value");
                assert!(after.iter().all(|&b| b == 0), "round {round}, key {k}: bytes after the value");
                checked += 1;
            }
            txn.abort();
        }
        assert_eq!(checked, 160);
    }
}
