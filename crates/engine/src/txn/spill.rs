//! Spilling: a write transaction keeps its dirty pages in memory up to a
//! budget (libmdbx's `txn_dp_limit`); past it, some are written to their
//! places in the data file and dropped from memory, so one huge transaction
//! (a bulk import, a big `clear_db`) runs in bounded memory.
//!
//! Why writing early is safe: a dirty page sits at a page number this
//! transaction allocated, which no snapshot references (a page reclaimed
//! from the GC is older than every reader; a tail page is past every
//! snapshot), and no meta points at it until the commit. A crash leaves it
//! as unused space. The commit's data sync covers spilled pages with the
//! others.
//!
//! A spilled page is read through the memory map like a committed one (the
//! map is shared, so it sees the write), and it still belongs to the
//! transaction: changing it again takes it back into memory at the same page
//! number ("unspill", [`unspill`]) instead of copying it to a new one, and
//! freeing it makes it loose again.
//!
//! When: at the start of each mutating call (never inside a tree operation,
//! whose path pages must stay in memory) once the dirty pages exceed the
//! budget, down to three quarters of it. Leaves and large chunks go first;
//! branch pages, which nearly every operation touches, only if that is not
//! enough.
//!
//! Nested transactions: aborting a child must give the parent its pages
//! back as they were. So while children are open, a page is spilled only if
//! no open child changed it (its content is the parent's, wherever it is
//! kept) or a child allocated it (nothing to give back), and never onto a
//! page whose file content the parent still relies on: a chunk the parent
//! spilled and the child took back or freed. Such a chunk is remembered in
//! the child's frame and returns to the spilled set if the child aborts.

use crate::error::Result;
use crate::format::page::{flags as pflags, Page};
use crate::txn::RwTxn;

/// The default dirty-page budget in pages, as libmdbx sizes it from RAM
/// ((total + available) / 42), but also at most a quarter of the memory
/// limit set on this process (`ulimit -d`/`-v`, cgroup `memory.max`), which
/// libmdbx does not look at: a transaction should not be the reason the
/// process dies. Never below 1024 pages (libmdbx keeps that many free page
/// buffers anyway).
pub(crate) fn default_dirty_limit(page_size: usize) -> usize {
    let from_ram = crate::os::memory::ram().map(|(total, avail)| total.saturating_add(avail) / 42);
    let from_limit = crate::os::memory::process_limit().map(|l| l / 4);
    let bytes = [from_ram, from_limit].into_iter().flatten().min().unwrap_or(u64::MAX);
    clamp_limit((bytes / page_size as u64).min(usize::MAX as u64) as usize).max(1024)
}

/// A budget within what makes sense: at least one page (spilling happens
/// between operations, so even that is correct, only slow: every operation
/// takes its path back from the file), at most libmdbx's page-list limit.
pub(crate) fn clamp_limit(pages: usize) -> usize {
    pages.clamp(1, crate::format::MAX_PAGENO as usize / 2)
}

impl RwTxn<'_> {
    /// Pages held in memory (a large chunk counts its pages).
    pub(crate) fn dirty_pages(&self) -> usize {
        self.st.dirty.len() + self.dirty_extra
    }

    /// Spills when the dirty pages exceed the budget. Called between
    /// operations only.
    pub(crate) fn spill_if_needed(&mut self) -> Result<()> {
        if self.dirty_pages() <= self.env.dirty_limit {
            return Ok(());
        }
        let target = self.env.dirty_limit - self.env.dirty_limit / 4;
        spill(self, target)
    }

    /// Spills every dirty page it may (tests: to have a given page written
    /// out between two operations).
    #[cfg(test)]
    pub(crate) fn spill_all(&mut self) -> Result<()> {
        spill(self, 0)
    }

    /// Whether the page may be written out now (see the module doc on
    /// nested transactions).
    fn spillable(&self, pgno: u32, n: usize) -> bool {
        self.st.frames.iter().all(|f| {
            !matches!(f.undo.get(&pgno), Some(Some(_))) && (pgno..pgno + n as u32).all(|p| !f.reserved.contains(&p))
        })
    }
}

/// Writes dirty pages to the data file until at most `target` pages are left
/// in memory.
fn spill(txn: &mut RwTxn<'_>, target: usize) -> Result<()> {
    let ps = txn.env.page_size;
    let mut excess = txn.dirty_pages().saturating_sub(target);
    let mapped = txn.st.map.len();
    let mut chosen: Vec<(u32, usize)> = Vec::new();
    for pass_branches in [false, true] {
        for (&pgno, buf) in txn.st.dirty.iter() {
            if excess == 0 {
                break;
            }
            let branch = Page { buf }.flags() & pflags::BRANCH != 0;
            // Only pages the map covers can be read back.
            let inside = pgno as usize * ps + buf.len() <= mapped;
            let n = buf.pages(ps);
            if branch != pass_branches || !inside || !txn.spillable(pgno, n) {
                continue;
            }
            chosen.push((pgno, n));
            excess = excess.saturating_sub(n);
        }
        if excess == 0 {
            break;
        }
    }
    if chosen.is_empty() {
        return Ok(());
    }
    // Write in runs of consecutive page numbers (pages edited in place in
    // the map, with WRITEMAP, are already there).
    chosen.sort_unstable();
    let mut i = 0;
    while i < chosen.len() {
        if txn.st.dirty[&chosen[i].0].in_map() {
            i += 1;
            continue;
        }
        let start = chosen[i].0;
        let mut next = start;
        let mut bufs: Vec<&[u8]> = Vec::new();
        while i < chosen.len() && chosen[i].0 == next && !txn.st.dirty[&chosen[i].0].in_map() {
            bufs.push(&txn.st.dirty[&chosen[i].0]);
            next += chosen[i].1 as u32;
            i += 1;
        }
        txn.env.write_at(&bufs, start as u64 * ps as u64)?;
    }
    // Written: drop them from memory.
    for &(pgno, n) in &chosen {
        if let Some(buf) = txn.st.dirty.remove(&pgno) {
            txn.dirty_extra -= n - 1;
            txn.st.pool.recycle(buf, ps);
        }
        txn.st.spilled.insert(pgno);
        txn.st.ops.spill += n as u64;
    }
    // Spilled pages are written and not yet synced, as libmdbx counts them.
    let pages: u64 = chosen.iter().map(|&(_, n)| n as u64).sum();
    txn.env.lck.add_unsynced_pages(pages);
    Ok(())
}

/// Takes a spilled page back into memory at the same page number; false if
/// `pgno` is not spilled.
/// (Inline: the test that nothing is spilled, on every page a transaction
/// touches or frees; the rest out of line.)
#[inline(always)]
pub(crate) fn unspill(txn: &mut RwTxn<'_>, pgno: u32) -> Result<bool> {
    if txn.st.spilled.is_empty() {
        return Ok(false);
    }
    unspill_if_spilled(txn, pgno)
}

#[inline(never)]
fn unspill_if_spilled(txn: &mut RwTxn<'_>, pgno: u32) -> Result<bool> {
    if !txn.st.spilled.contains(&pgno) {
        return Ok(false);
    }
    // With WRITEMAP the page is edited where it is, unless a child is open:
    // an abort must find the parent's version in the file.
    if txn.st.frames.is_empty() {
        if let Some(m) = txn.map_page(pgno, 1) {
            forget_spilled(txn, pgno, 1);
            txn.dirty_insert(pgno, crate::pool::PageBuf::Map(m));
            txn.st.ops.unspill += 1;
            return Ok(true);
        }
    }
    let (pages, pool) = txn.pages_and_pool();
    let buf = pages.get(pgno).map(|src| pool.copy_of(src))?;
    forget_spilled(txn, pgno, 1);
    txn.dirty_insert(pgno, buf);
    txn.st.ops.unspill += 1;
    Ok(true)
}

/// Takes the chunk of `n` pages at `pgno` out of the spilled set (it is being
/// unspilled or freed), remembering it in the innermost child so an abort
/// can put it back.
#[inline(always)]
pub(crate) fn forget_spilled(txn: &mut RwTxn<'_>, pgno: u32, n: usize) -> bool {
    !txn.st.spilled.is_empty() && forget_if_spilled(txn, pgno, n)
}

#[inline(never)]
fn forget_if_spilled(txn: &mut RwTxn<'_>, pgno: u32, n: usize) -> bool {
    if !txn.st.spilled.remove(&pgno) {
        return false;
    }
    if let Some(f) = txn.st.frames.last_mut() {
        f.unspilled.insert(pgno);
        f.reserved.extend(pgno..pgno + n as u32);
    }
    true
}
