//! The GC (free-page records) seen from a write transaction: page allocation
//! (loose pages, pages reclaimed from the GC newest-first, then the
//! unallocated tail, growing the file; ousting parked readers and asking the
//! slow-reader callback first) as libmdbx's gc-get, and writing the
//! transaction's GC records at commit (`save_gc`) as its gc-put. The page
//! life cycle is `txn::pages`, the commit `txn::commit`.

use crate::btree::write::{self, Val};
use crate::btree::writer::TreeWriter;
use crate::error::{Error, Result};
use crate::flags::PutFlags;
use crate::format::meta::META_OFF;
use crate::format::meta::{pv2pages, SIGN_STEADY};
use crate::format::pnl::Pnl;
use crate::format::MAX_PAGENO;
use crate::pool::GcScratch;
use crate::readers::{SlowReader, SlowReaderAction};
use crate::run_list::{self, RunList};
use crate::txn::{Db, RwTxn};

/// Pages per OS page (sizes are rounded to whole OS pages).
pub(crate) fn os_unit(ps: usize) -> u32 {
    (crate::os::page_size() / ps).max(1) as u32
}

pub(crate) fn round_up_pages(x: u64, unit: u32) -> u64 {
    x.div_ceil(unit as u64) * unit as u64
}

/// Takes `n` contiguous pages from a descending-sorted list: the lowest page
/// for one, else the top `n` of the highest run of `n` or more.
fn take_run(list: &mut Vec<u32>, n: usize) -> Option<u32> {
    if n == 1 {
        return list.pop();
    }
    if list.len() < n {
        return None;
    }
    for i in 0..=list.len() - n {
        if list[i] - list[i + n - 1] == (n - 1) as u32 {
            let low = list[i + n - 1];
            list.drain(i..i + n);
            return Some(low);
        }
    }
    None
}

/// `n` contiguous pages from the reclaimed pages: the lowest page for one,
/// else the lowest pages of the run that fits them best
/// ([`RunList::take_fit`]).
fn take_reclaimed(list: &mut RunList, n: usize) -> Option<u32> {
    if n == 1 {
        list.pop_lowest()
    } else {
        list.take_fit(n)
    }
}

/// Allocates `n` contiguous page numbers. Single pages continue the run the
/// previous allocation started where they can (see [`next_in_run`]), so a
/// commit writes a few long extents rather than many scattered pages.
#[inline]
pub(crate) fn alloc(txn: &mut RwTxn<'_>, n: usize) -> Result<u32> {
    // With WRITEMAP on tmpfs no page is ever written by a call: where a
    // page lies costs nothing, so no commit-locality policy.
    let no_page_writes = txn.env.writemap && txn.env.in_memory_fs;
    let found = if n == 1 && !txn.saving_gc && !txn.in_reclaim && !no_page_writes { next_in_run(txn)? } else { None };
    let p = match found {
        Some(p) => p,
        None => alloc_any(txn, n)?,
    };
    txn.run_next = p.saturating_add(n as u32);
    Ok(p)
}

/// Fewest dirty pages for which a transaction consumes GC records to find
/// runs: a smaller one writes few extents anyway, and a record consumed
/// costs its parsing and its leftovers written back (a one-put commit
/// consumed a second record at its third page). The random-UUID workload
/// (100 puts a transaction) wrote 54.1 extents a commit gathering from the
/// first page, 52.8 from the eighth, 54.9 from the sixteenth.
const GATHER_MIN_DIRTY: usize = 8;

/// Shortest run of free pages worth starting an extent in while the file
/// has unused room at its tail or the GC has more records to look through.
/// (Measured on the random-UUID workload: 2 gave 56.7 extents per commit, 3
/// gave 53.0, 4 gave 51.0.)
const MIN_RUN: usize = 4;
// The reclaimed pages index the runs the policy may start.
const _: () = assert!(MIN_RUN >= run_list::INDEXED as usize);

/// How many reclaimed pages per page this transaction holds dirty the search
/// for a run may gather from the GC: enough for runs to exist, while a small
/// transaction consumes (and writes back) no more GC records than before.
const RUN_POOL_PER_DIRTY: usize = 8;

/// Free-page lists longer than this are used lowest page first, as before
/// commit locality. (It was first set because taking pages from the middle
/// of a sorted list moved the entries after them; the reclaimed pages are
/// runs now (`run_list`), and the limit stays because it also bounds the
/// GC records the policy gathers, and lifting it changes which pages big
/// transactions take.)
const RUN_LIST_MAX: usize = 2048;

/// Dirty pages (128 KiB at 4 KiB pages) from which a transaction takes runs
/// from the unallocated room inside the file rather than scattered free
/// pages. Smaller commits (the steady small updates of most applications)
/// keep reusing free pages first, so their high-water mark stays near
/// libmdbx's (`tests/page_reuse.rs`: with 16, transactions of up to 19
/// updates raised it to 1.33x libmdbx's). Random-UUID extents per commit
/// by threshold: 8: 53.9, 16: 52.8, 32: 54.0, 64: 59.3.
const TAIL_RUN_MIN_DIRTY: usize = 32;

/// What the commit-locality policy ([`next_in_run`]) needs from a write
/// transaction: a trait so that the policy is unit-tested on plain lists.
pub(crate) trait RunPool {
    /// The loose pages (sorted descending) and the reclaimed ones.
    fn free_lists(&mut self) -> (&mut Vec<u32>, &mut RunList);
    /// The page after the last one allocated (0: none).
    fn run_next(&self) -> u32;
    /// `reclaimed.len()` when a scan last found no run worth starting.
    fn runs_scanned(&mut self) -> &mut usize;
    /// Pages the transaction holds dirty (in memory or spilled).
    fn dirty_pages(&self) -> usize;
    /// The first unallocated page and the file's current size in pages.
    fn tail(&self) -> (u32, u32);
    /// Takes the first unallocated page (inside the file: not growing it).
    fn take_tail(&mut self) -> Result<u32>;
    /// Moves one more reusable GC record into the reclaimed pages; false
    /// when there is none.
    fn reclaim_more(&mut self) -> Result<bool>;
    /// Whether locality is worth its costs: runs taking the unused room of
    /// the file while free pages remain, and GC records consumed to find
    /// runs (false where writes cost the same wherever the pages are).
    fn locality_pays(&self) -> bool {
        true
    }
}

impl RunPool for RwTxn<'_> {
    fn free_lists(&mut self) -> (&mut Vec<u32>, &mut RunList) {
        let st = &mut *self.st;
        (&mut st.loose, &mut st.reclaimed)
    }
    fn run_next(&self) -> u32 {
        self.run_next
    }
    fn runs_scanned(&mut self) -> &mut usize {
        &mut self.runs_scanned
    }
    fn dirty_pages(&self) -> usize {
        self.st.dirty.len() + self.st.spilled.len()
    }
    fn tail(&self) -> (u32, u32) {
        (self.geo.first_unallocated, self.geo.now)
    }
    fn take_tail(&mut self) -> Result<u32> {
        alloc_tail(self, 1)
    }
    fn reclaim_more(&mut self) -> Result<bool> {
        Ok(!self.gc_exhausted && reclaim_one(self, RUN_POOL_PER_DIRTY, 1)?)
    }
    fn locality_pays(&self) -> bool {
        // On tmpfs locality gains nothing, while a fresh page costs the
        // kernel an allocation (see `EnvInner::in_memory_fs`) and a GC
        // record consumed for its runs costs its parsing and its leftovers
        // written back. (The benchmark's pwrite random puts, transactions
        // of 1,000, ran at the same rate with and without the gathering.)
        !self.env.in_memory_fs
    }
}

/// Commit locality: the page after the one allocated last if it is free
/// (loose, reclaimed, or the unallocated tail inside the current file
/// size); otherwise the start of the longest run of free pages if it has at
/// least [`MIN_RUN`] pages, consuming more GC records to find one (where
/// locality pays: [`RunPool::locality_pays`]) while the
/// reclaimed pages are few for the transaction's size; otherwise, for a
/// transaction of [`TAIL_RUN_MIN_DIRTY`] pages or more, the tail if the file
/// has room there without growing. `None`: no run to follow,
/// and the caller takes the lowest free page, reclaiming or growing as
/// before. The file never grows for the sake of locality: it grows only
/// when no free page is left, as before.
///
/// Where locality does not pay, a transaction of fewer than
/// [`GATHER_MIN_DIRTY`] pages starts no run: its few single pages would
/// cut into the runs large values need (pwrite on tmpfs, values of 3 to 8
/// pages rewritten at random: 6,788 pages in use after 3,000 commits
/// starting at the longest run, 6,618 not).
fn next_in_run<P: RunPool + ?Sized>(p: &mut P) -> Result<Option<u32>> {
    let want = p.run_next();
    let (loose, reclaimed) = p.free_lists();
    // On long lists (a huge transaction's), the lowest page, as before.
    let short = reclaimed.len() + loose.len() <= RUN_LIST_MAX;
    if want != 0 {
        if short && (take_page(loose, want) || reclaimed.take(want)) {
            return Ok(Some(want));
        }
        if want == p.tail().0 && tail_run_allowed(p) {
            return p.take_tail().map(Some);
        }
    }
    if !short || (!p.locality_pays() && p.dirty_pages() < GATHER_MIN_DIRTY) {
        // (A long list: the lowest page, as before.)
        return Ok(None);
    }
    let (loose, reclaimed) = p.free_lists();
    if !loose.is_empty() {
        reclaimed.extend_desc(loose);
        loose.clear();
    }
    let pool_limit = ((p.dirty_pages() + 1) * RUN_POOL_PER_DIRTY).min(RUN_LIST_MAX);
    loop {
        let scanned = *p.runs_scanned();
        let reclaimed = p.free_lists().1;
        let pooled = reclaimed.len();
        if pooled > scanned {
            // The longest run (the lowest of the longest), from its first page.
            if let Some((start, _)) = reclaimed.longest().filter(|&(_, len)| len >= MIN_RUN) {
                reclaimed.take(start);
                return Ok(Some(start));
            }
            *p.runs_scanned() = pooled;
        }
        if pooled >= pool_limit || p.dirty_pages() < GATHER_MIN_DIRTY || !p.locality_pays() || !p.reclaim_more()? {
            break;
        }
    }
    if tail_run_allowed(p) {
        return p.take_tail().map(Some);
    }
    Ok(None)
}

/// Whether a run may take the unallocated tail while free pages remain: for
/// a transaction of [`TAIL_RUN_MIN_DIRTY`] pages or more, inside the file's
/// current size.
fn tail_run_allowed<P: RunPool + ?Sized>(p: &P) -> bool {
    p.locality_pays() && tail_room(p.dirty_pages(), p.tail())
}

/// The rule of [`tail_run_allowed`] on plain figures: the transaction's
/// dirty pages, and the file's first unallocated page and current size.
fn tail_room(dirty_pages: usize, (first_unallocated, now): (u32, u32)) -> bool {
    dirty_pages >= TAIL_RUN_MIN_DIRTY && first_unallocated < now
}

/// Removes `pgno` from a descending-sorted list; whether it was there.
fn take_page(list: &mut Vec<u32>, pgno: u32) -> bool {
    match list.binary_search_by(|x| pgno.cmp(x)) {
        Ok(i) => {
            list.remove(i);
            true
        }
        Err(_) => false,
    }
}

/// Allocates `n` contiguous page numbers: loose pages, then reclaimed ones
/// (the lowest first), then the tail. A single page from the pages at hand
/// is taken inline (most copies-on-write of a small commit); the rest is
/// [`alloc_any_slow`]. (Split so: a one-put commit ran 149 fewer
/// instructions; docs/design.md, "Inlining on the commit path".)
#[inline]
fn alloc_any(txn: &mut RwTxn<'_>, n: usize) -> Result<u32> {
    if n == 1 {
        if let Some(p) = txn.st.loose.pop() {
            return Ok(p);
        }
        if let Some(p) = txn.st.reclaimed.pop_lowest() {
            return Ok(p);
        }
    }
    alloc_any_slow(txn, n)
}

/// [`alloc_any`] beyond the pages at hand: reclaiming GC records, the
/// steady-commit and laggard-reader remedies, then the tail.
#[inline(never)]
fn alloc_any_slow(txn: &mut RwTxn<'_>, n: usize) -> Result<u32> {
    if let Some(p) = take_run(&mut txn.st.loose, n) {
        return Ok(p);
    }
    if n > 1 && !txn.st.loose.is_empty() && !txn.saving_gc {
        // A run may span both kinds of free pages.
        let st = &mut *txn.st;
        st.reclaimed.extend_desc(&st.loose);
        st.loose.clear();
    }
    let mut synced = false;
    loop {
        if let Some(p) = take_reclaimed(&mut txn.st.reclaimed, n) {
            return Ok(p);
        }
        if !(txn.saving_gc || txn.in_reclaim || txn.gc_exhausted) && reclaim_one(txn, n, n)? {
            // Bound the search for a long contiguous run.
            if n > 1 && txn.st.consumed.len() > 64 {
                break;
            }
            continue;
        }
        // In a lazy sync mode the last steady commit holds back reuse: if
        // making the last commit steady would free GC records for reuse, do
        // that before taking fresh pages (libmdbx does the same).
        if !synced
            && !txn.saving_gc
            && !txn.in_reclaim
            && txn.st.steady_txnid < txn.st.base.txnid()
            && sync_would_help(txn, n)?
        {
            force_steady(txn)?;
            synced = true;
            continue;
        }
        if !txn.saving_gc && !txn.in_reclaim && sweep_if_pinned(txn)? {
            continue;
        }
        if !txn.saving_gc && !txn.in_reclaim && tail_grows(txn, n) && kick_laggards(txn)? {
            continue;
        }
        break;
    }
    alloc_tail(txn, n)
}

/// Whether taking `n` pages from the unallocated tail would grow the file
/// (or fail with `MapFull`).
fn tail_grows(txn: &RwTxn<'_>, n: usize) -> bool {
    txn.geo.first_unallocated as u64 + n as u64 > txn.geo.now as u64
}

/// Before the file grows (or the allocation fails with `MapFull`) because
/// the oldest snapshot still in use holds GC records back, deals with the
/// readers of that snapshot as libmdbx's `mvcc_kick_laggards` does: parked
/// readers are ousted (a CAS of their slot's `tid` from parked to ousted,
/// then of the `txnid` to all-ones), dead processes' slots are cleared, and,
/// when [`crate::EnvBuilder::handle_slow_readers`] installed a callback, a
/// live reader that still holds it is handed to the callback, until the
/// oldest snapshot moves on or the callback gives up. Returns whether the
/// oldest snapshot moved (then the GC is worth another look).
fn kick_laggards(txn: &mut RwTxn<'_>) -> Result<bool> {
    let lck = &txn.env.lck;
    let limit = txn.txnid - 1;
    let straggler = match txn.detent {
        Some(d) => d,
        None => lck.oldest_reader(txn.st.steady_txnid).min(limit),
    };
    if straggler >= txn.st.base.txnid() {
        return Ok(false);
    }
    let callback = txn.env.slow_readers.clone();
    let mut retry = 0i32;
    let mut notify_end = false;
    loop {
        lck.force_refresh();
        let oldest = lck.oldest_reader(txn.st.steady_txnid).min(limit);
        if oldest == txn.st.steady_txnid || oldest > straggler {
            break;
        }
        lck.sweep_dead_readers()?;
        let (ousted, stuck) = lck.kick_scan(oldest);
        let Some(stuck) = stuck else {
            if ousted > 0 {
                continue;
            }
            break;
        };
        if !lck.stuck_still(&stuck) {
            continue;
        }
        let Some(cb) = &callback else { break };
        let ps = txn.env.page_size as u64;
        let reader = SlowReader {
            pid: stuck.pid,
            tid: stuck.tid,
            txnid: stuck.txnid,
            lag: txn.st.base.txnid().saturating_sub(stuck.txnid),
            retained_bytes: txn.st.base.pages_retired.saturating_sub(stuck.pages_retired).saturating_mul(ps),
            retry,
        };
        match cb(&reader) {
            SlowReaderAction::Grow => break,
            SlowReaderAction::Retry => notify_end = true,
            SlowReaderAction::ClearTxn => lck.stuck_reset_txn(&stuck),
            SlowReaderAction::ClearSlot => lck.stuck_clear_slot(&stuck),
        }
        retry = retry.saturating_add(1);
        if retry == i32::MAX {
            break;
        }
    }
    if notify_end {
        if let Some(cb) = &callback {
            lck.force_refresh();
            let oldest = lck.oldest_reader(txn.st.steady_txnid).min(limit);
            let _ = cb(&SlowReader {
                pid: 0,
                tid: 0,
                txnid: straggler,
                lag: oldest.saturating_sub(straggler),
                retained_bytes: 0,
                retry: -retry,
            });
        }
    }
    lck.force_refresh();
    let oldest = lck.oldest_reader(txn.st.steady_txnid).min(limit);
    if oldest > straggler {
        txn.detent = None;
        txn.gc_exhausted = false;
        return Ok(true);
    }
    Ok(false)
}

/// Before the file grows because a reader holds GC records back: clears the
/// reader slots of dead processes (once per transaction, as libmdbx's writer
/// runs its reader check), so a crashed reader costs one sweep, not a file
/// that grows for ever. Returns whether a slot was cleared (then the GC is
/// worth another look).
fn sweep_if_pinned(txn: &mut RwTxn<'_>) -> Result<bool> {
    if txn.readers_swept {
        return Ok(false);
    }
    let pinned = txn.env.lck.oldest_live_reader().is_some_and(|r| r < txn.txnid - 1);
    if !pinned {
        return Ok(false);
    }
    txn.readers_swept = true;
    if txn.env.lck.sweep_dead_readers()? == 0 {
        return Ok(false);
    }
    txn.detent = None;
    txn.gc_exhausted = false;
    Ok(true)
}

/// Whether making the last commit steady would free enough GC pages for
/// reuse to be worth a sync: the records that only the last steady commit
/// holds back must list at least half a growth step (and at least `n`), or
/// at least `n` when the tail cannot give `n` pages without growing the file
/// (libmdbx also makes a steady point rather than grow or fail), or on
/// tmpfs, where a sync is free (at least `n`, always).
fn sync_would_help(txn: &mut RwTxn<'_>, n: usize) -> Result<bool> {
    let readers = txn.env.lck.oldest_live_reader().unwrap_or(u64::MAX).min(txn.txnid - 1);
    if readers <= txn.st.steady_txnid {
        return Ok(false);
    }
    let tail_grows = txn.geo.first_unallocated as u64 + n as u64 > txn.geo.now as u64;
    // A sync costs nothing on tmpfs, a fresh page does
    // (`EnvInner::in_memory_fs`); elsewhere a sync is worth half a growth
    // step of reuse.
    let half_step = if tail_grows || txn.env.in_memory_fs { 0 } else { pv2pages(txn.geo.grow_pv) as usize / 2 };
    let want = half_step.max(n).max(1);
    let mut held = 0usize;
    let mut c = txn.cursor(Db::GC)?;
    let mut rec = c.set_range(&(txn.st.steady_txnid + 1).to_le_bytes())?;
    while let Some((k, v)) = rec {
        let Some(pnl) = Pnl::new(v) else { break };
        if k.len() != 8 || u64::from_le_bytes(k.try_into().expect("8 bytes")) > readers {
            break;
        }
        held += pnl.len();
        if held >= want {
            return Ok(true);
        }
        rec = c.next()?;
    }
    Ok(false)
}

/// Flushes the data file and rewrites the transaction's base meta as steady.
fn force_steady(txn: &mut RwTxn<'_>) -> Result<()> {
    let env = txn.env;
    env.sync_data()?;
    let mut m = txn.st.base.clone();
    m.sign = SIGN_STEADY;
    env.write_at(&[&m.body()], (txn.st.recent_slot * env.page_size + META_OFF) as u64)?;
    env.sync_data()?;
    env.lck.after_commit(m.txnid(), true, true);
    txn.st.base = m;
    txn.st.steady_txnid = txn.st.base.txnid();
    txn.detent = None;
    txn.gc_exhausted = false;
    Ok(())
}

fn alloc_tail(txn: &mut RwTxn<'_>, n: usize) -> Result<u32> {
    let ps = txn.env.page_size;
    // Free pages right below the high-water mark can start the run.
    let fu = txn.geo.first_unallocated;
    let touching = |list: &Vec<u32>| (0..n.min(list.len())).take_while(|&i| list[i] == fu - 1 - i as u32).count();
    let (from_loose, below) = match (touching(&txn.st.loose), txn.st.reclaimed.touching(fu, n)) {
        (l, r) if l >= r => (true, l),
        (_, r) => (false, r),
    };
    let start = fu - below as u32;
    let end = start as u64 + n as u64;
    if end > txn.geo.now as u64 {
        let step = pv2pages(txn.geo.grow_pv) as u64;
        if end > txn.geo.upper as u64 || step == 0 || end > MAX_PAGENO as u64 + 1 {
            return Err(Error::MapFull);
        }
        let want = round_up_pages(end + step - end % step, os_unit(ps)).min(txn.geo.upper as u64);
        txn.env.set_file_len(want * ps as u64)?;
        txn.geo.now = want as u32;
    }
    if from_loose {
        txn.st.loose.drain(..below);
    } else {
        txn.st.reclaimed.drain_top(below);
    }
    txn.geo.first_unallocated = end.max(fu as u64) as u32;
    Ok(start)
}

/// Consumes the newest GC record that no reader can still need (LIFO):
/// `need` pages are wanted, `run` of them contiguous (a large value's
/// chunk; 1: single pages). Returns false when there is none.
fn reclaim_one(txn: &mut RwTxn<'_>, need: usize, run: usize) -> Result<bool> {
    let detent = detent(txn);
    let gc = txn.table(Db::GC)?;
    if gc.tree.is_empty() {
        txn.gc_exhausted = true;
        return Ok(false);
    }
    let mut pages = std::mem::take(&mut txn.st.gc_scratch.parsed);
    pages.clear();
    let mut path = write::Path::new();
    // The debug check's list, kept (so a small commit allocates nothing).
    #[cfg(debug_assertions)]
    let mut check = std::mem::take(&mut txn.st.own_record.check);
    let own = &txn.st.own_record;
    let found = if own.reclaimable(txn.st.base.txnid(), &gc.tree, detent, &txn.st.consumed)
        && txn.page_unchanged(gc.tree.root)
    {
        // The last commit's own record, as it wrote it (`OwnRecord`).
        pages.extend_from_slice(&own.pages);
        path.push(gc.tree.root, gc.tree.items as usize - 1);
        #[cfg(test)]
        reclaim_tests::OWN_RECORD_HITS.with(|c| c.set(c.get() + 1));
        #[cfg(debug_assertions)]
        {
            let mut p = write::Path::new();
            check.clear();
            let found = newest_reclaimable(txn, detent, &gc, &mut p, &mut check);
            assert!(
                matches!(found, Ok(Some(f)) if f == (own.txnid, own.bytes))
                    && check == own.pages
                    && (p.pgnos(), p.idxs()) == (path.pgnos(), path.idxs()),
                "the kept own record is not what the GC holds: {found:?}"
            );
        }
        Ok(Some((own.txnid, own.bytes)))
    } else {
        newest_reclaimable(txn, detent, &gc, &mut path, &mut pages)
    };
    #[cfg(debug_assertions)]
    {
        txn.st.own_record.check = check;
    }
    let (key, bytes) = match found {
        Ok(Some(found)) => found,
        other => {
            txn.st.gc_scratch.parsed = pages;
            txn.gc_exhausted |= matches!(other, Ok(None));
            return other.map(|_| false);
        }
    };
    let take = partial_take(txn, need);
    txn.in_reclaim = true;
    // A chunk needs a run: a record that has none of its length anywhere
    // is consumed whole (its pages may join runs of other records' pages),
    // rather than taken from in part again and again.
    let partial = pages.len() >= PARTIAL_FACTOR * take && (run <= 1 || has_run_desc(&pages, run));
    let r = if partial {
        // A big record for what the transaction needs: its lowest `take`
        // pages, and the record keeps the rest (descending, `parse_pnl`).
        // For a chunk, also the lowest run of `run` pages the record holds
        // if the lowest pages have none: else a chunk took the lowest pages
        // of the same record again and again (rewriting it each time) until
        // the record was small enough to be consumed whole. The kept part
        // is never empty: it had 3 times `take`, more than `run` pages.
        let mut keep = pages.len() - take;
        if run > 1 && !has_run_desc(&pages[keep..], run) {
            // (The record has a run: `partial`. It starts in the kept part.)
            if let Some(i) = lowest_run_desc(&pages, run) {
                if i + run >= keep {
                    // It reaches the taken part: take from its start.
                    keep = i;
                } else {
                    // It moves to the end of the kept part, which stays
                    // descending (as the taken part, which now begins
                    // with it).
                    pages[i..keep].rotate_left(run);
                    keep -= run;
                }
            }
        }
        txn.st.reclaimed.extend_desc(&pages[keep..]);
        txn.st.partly_taken.push((key, bytes));
        rewrite_record(txn, key, bytes, &pages[..keep])
    } else {
        // A page already at hand would be listed twice by the GC: kept once.
        txn.st.reclaimed.extend_desc(&pages);
        if renamable(txn, bytes, &gc, &path) {
            // Left in place until the GC update, which gives it the own key
            // (or deletes it, if it is no longer the last record).
            let idx = path.at(0).1 as u16;
            txn.st.stale_gc = Some(StaleGc { key, root: gc.tree.root, idx });
            if gc.tree.items == 1 {
                // Nothing older than this transaction is left.
                txn.gc_spent = true;
                txn.gc_exhausted = true;
            }
            Ok(())
        } else {
            // The record goes at the place the search found (nothing changed since).
            write::del_at(txn, Db::GC, gc.tree, &mut path).map(drop)
        }
        .map(|()| txn.st.consumed.push(key))
    };
    txn.in_reclaim = false;
    txn.st.gc_scratch.parsed = pages;
    r?;
    Ok(true)
}

/// The largest GC record (bytes) a transaction turns into its own instead
/// of deleting it ([`renamable`]): the records of small commits. A renamed
/// record keeps its size while the update's pages fit (`plan_gc`), so a
/// bigger one would stay oversized for every small commit after it.
const STALE_MAX: usize = 64;

/// A GC record consumed whole and left in place (`WriteState::stale_gc`):
/// its key, and the GC's root (its one leaf) and its index there then.
#[derive(Clone, Copy)]
pub(crate) struct StaleGc {
    key: u64,
    root: u32,
    idx: u16,
}

/// Whether a record consumed whole (`bytes` long, at `path`) is left in the
/// GC for the update to make it this transaction's own record
/// ([`settle_stale`]): a small one, the last of a GC of one leaf not
/// changed yet, outside the GC update, and the first such. A small commit
/// consumes its predecessor's record, and deleting it (which emptied the GC
/// tree and freed its leaf) and then putting the own record into a new leaf
/// took about a tenth of a one-put commit. The record stays until the
/// update, rather than renamed at once, because renaming copies its leaf:
/// a page taken before the transaction's own edits free any, where the
/// update's put takes one after (on a full map that page decides).
fn renamable(txn: &RwTxn<'_>, bytes: usize, gc: &crate::txn::View, path: &write::Path) -> bool {
    // (One leaf holds every record: the last is at index `items - 1`.) The
    // leaf must be clean: the update knows the record is where it was if
    // the GC's root is still that clean page (an edit copies it first).
    let last = gc.tree.height == 1 && path.at(0).1 as u64 + 1 == gc.tree.items;
    !txn.saving_gc && txn.st.stale_gc.is_none() && bytes <= STALE_MAX && last && txn.page_unchanged(gc.tree.root)
}

/// Whether a list of distinct page numbers sorted descending holds a run
/// of `run` consecutive ones: some `pages[i] - pages[i + run - 1]` is
/// `run - 1` (it is never less). The differences are independent of each
/// other, so the test runs over blocks of [`RUN_BLOCK`] with no branch in
/// a block (the compiler vectorises it): a chunk's search tests every
/// record it reclaims, hundreds of pages each, where a running count of
/// the current run cost 4 instructions a page.
fn has_run_desc(pages: &[u32], run: usize) -> bool {
    if run <= 1 {
        return run == 0 || !pages.is_empty();
    }
    let Some(starts) = pages.len().checked_sub(run - 1) else { return false };
    let span = (run - 1) as u32;
    let (high, low) = (&pages[..starts], &pages[run - 1..]);
    high.chunks(RUN_BLOCK).zip(low.chunks(RUN_BLOCK)).any(|(h, l)| block_has_span(h, l, span))
}

/// Pages compared per block by [`has_run_desc`] and [`lowest_run_desc`].
const RUN_BLOCK: usize = 32;

/// Whether some `high[i] - low[i]` is `span` (in one branch-free pass).
#[inline(always)]
fn block_has_span(high: &[u32], low: &[u32], span: u32) -> bool {
    high.iter().zip(low).fold(false, |any, (&h, &l)| any | (h.wrapping_sub(l) == span))
}

/// Where the lowest run of `run` consecutive page numbers starts in a
/// descending list (its index: the run is `pages[i..i + run]`): the last
/// block with one found as [`has_run_desc`] does, then searched in it.
fn lowest_run_desc(pages: &[u32], run: usize) -> Option<usize> {
    let starts = pages.len().checked_sub(run.checked_sub(1)?)?;
    let span = (run - 1) as u32;
    let mut end = starts;
    while end > 0 {
        let begin = end.saturating_sub(RUN_BLOCK);
        if block_has_span(&pages[begin..end], &pages[begin + run - 1..end + run - 1], span) {
            return (begin..end).rev().find(|&i| pages[i].wrapping_sub(pages[i + run - 1]) == span);
        }
        end = begin;
    }
    None
}

/// The newest GC record this transaction may reclaim: the oldest snapshot a
/// reader holds (or the last steady commit, in a lazy mode), at most the
/// base snapshot. Read once per transaction.
fn detent(txn: &mut RwTxn<'_>) -> u64 {
    match txn.detent {
        Some(d) => d,
        None => {
            let d = txn.env.lck.oldest_reader(txn.st.steady_txnid).min(txn.txnid - 1);
            txn.detent = Some(d);
            d
        }
    }
}

/// A record at least this many times the pages a transaction takes from it
/// ([`partial_take`]) is taken from in part.
const PARTIAL_FACTOR: usize = 4;

/// Pages a transaction takes from a big GC record: what it needs now, twice
/// the pages it holds dirty (what a transaction of its size is about to
/// need), and some for the GC update. A small transaction that found a big
/// record (the pages a batch of updates freed) takes a few pages and leaves
/// the rest where they are, rather than consume the record and write
/// almost all of it back at its commit, and the next one again: a one-put
/// commit after a batch of 1,000-put transactions spent two thirds of its
/// time on a 913-page record that way.
fn partial_take(txn: &RwTxn<'_>, need: usize) -> usize {
    need + 2 * (txn.st.dirty.len() + txn.st.spilled.len()) + 16
}

/// Rewrites GC record `key` (`bytes` long) to list only `pages`, in place
/// (same size: the record's tail is zeros).
fn rewrite_record(txn: &mut RwTxn<'_>, key: u64, bytes: usize, pages: &[u32]) -> Result<()> {
    let loc = write::put(txn, Db::GC, &key.to_le_bytes(), Val::Filled(bytes), PutFlags::RESERVE, 0)?;
    if loc.len != bytes || 4 * (pages.len() + 1) > bytes {
        return Err(Error::Problem("a rewritten GC record changed size".into()));
    }
    let buf = txn.dirty_mut_full(loc.pgno);
    crate::format::pnl::encode_into(pages, &mut buf[loc.off..loc.off + loc.len]);
    Ok(())
}

/// The key of the newest GC record at or below `detent` that this
/// transaction has not consumed, its pages appended to `pages` and `path`
/// leading to it; `None` if there is none. One descent finds it where it
/// usually is, at or just before `detent`'s place in its leaf (a commit
/// consumes the newest record, often the only one); otherwise a cursor
/// walks back from there.
fn newest_reclaimable(
    txn: &RwTxn<'_>,
    detent: u64,
    gc: &crate::txn::View,
    path: &mut write::Path,
    pages: &mut Vec<u32>,
) -> Result<Option<(u64, usize)>> {
    let root = gc.tree.root;
    let exact = write::find_path(txn, &gc.tree, &detent.to_le_bytes(), gc.cmp, path)?;
    let leaf = path.leaf();
    let (lpg, idx) = path.at(leaf);
    if let Some(i) = if exact { Some(idx) } else { idx.checked_sub(1) } {
        let p = txn.pages();
        let page = crate::format::page::Page { buf: p.get(lpg)? };
        let n = crate::format::node::node(page, i, lpg)?;
        let key = gc_key(n.key, root)?;
        if key > detent {
            return Err(Error::corrupted(lpg, "GC keys out of order"));
        }
        if !txn.st.consumed.contains(&key) {
            let v = crate::btree::node_value(&p, &n, lpg, page.txnid())?;
            parse_pnl(v, txn.geo.first_unallocated, root, pages)?;
            path.set_idx(leaf, i);
            return Ok(Some((key, v.len())));
        }
    }
    if !exact && idx == 0 && path.idxs()[..leaf].iter().all(|&i| i == 0) {
        // Every key of the tree is newer than `detent`.
        return Ok(None);
    }
    // In an earlier leaf, or behind records this transaction consumed
    // (their keys are written back by the GC update itself: not a source).
    let mut c = txn.cursor(Db::GC)?;
    let probe = (detent.saturating_add(1)).to_le_bytes();
    let mut rec = match c.set_range(&probe)? {
        Some(_) => c.prev()?,
        None => c.last()?,
    };
    while let Some((k, v)) = rec {
        let key = gc_key(k, root)?;
        if key > detent {
            return Ok(None);
        }
        if txn.st.consumed.contains(&key) {
            rec = c.prev()?;
            continue;
        }
        parse_pnl(v, txn.geo.first_unallocated, root, pages)?;
        let bytes = v.len();
        if !write::find_path(txn, &gc.tree, k, gc.cmp, path)? {
            return Err(Error::corrupted(root, "GC record not found again"));
        }
        return Ok(Some((key, bytes)));
    }
    Ok(None)
}

/// A GC key (8 bytes) as a number; `root` is named in the error.
fn gc_key(k: &[u8], root: u32) -> Result<u64> {
    let k: [u8; 8] = k.try_into().map_err(|_| Error::corrupted(root, "GC key is not 8 bytes"))?;
    Ok(u64::from_le_bytes(k))
}

/// A GC record's page list, checked for allocation (`format::pnl`),
/// appended to `out`.
fn parse_pnl(v: &[u8], limit: u32, at: u32, out: &mut Vec<u32>) -> Result<()> {
    let pnl = Pnl::new(v).ok_or_else(|| Error::corrupted(at, "GC record has a bad length"))?;
    pnl.strict_into(limit, out).map_err(|why| Error::corrupted(at, why))
}

/// The free-page lists of a write transaction, borrowed together.
pub(crate) struct FreeLists<'a> {
    /// Pages of the base snapshot freed by the transaction.
    pub retired: &'a mut Vec<u32>,
    /// Pages the transaction allocated and freed again.
    pub loose: &'a mut Vec<u32>,
    /// Pages taken from consumed GC records and not used.
    pub reclaimed: &'a mut RunList,
    /// The high-water mark of allocated pages.
    pub first_unallocated: &'a mut u32,
    /// The radix sort's second buffer for these lists (kept, so sorting
    /// them allocates nothing once it has grown).
    pub sorting: &'a mut Vec<u32>,
}

/// What writing the GC records needs besides tree edits: the transaction's
/// free-page lists, the keys of the GC records it consumed, and a way to
/// reclaim more. `RwTxn` implements it (below); the unit tests implement it
/// for the in-memory writer of `btree/mem.rs`.
pub(crate) trait GcWriter: TreeWriter {
    /// The handle of the GC tree.
    fn gc_db(&self) -> Self::Db;
    /// The free-page lists.
    fn lists(&mut self) -> FreeLists<'_>;
    /// Keys of the GC records consumed by this transaction.
    fn consumed(&self) -> &[u64];
    /// The work lists kept for the update (see `pool::GcScratch`), and
    /// giving them back.
    fn take_scratch(&mut self) -> GcScratch {
        GcScratch::default()
    }
    fn keep_scratch(&mut self, _s: GcScratch) {}
    /// The copies the debug check `replan` plans on (kept between
    /// transactions by `RwTxn`, so the check allocates nothing either).
    #[cfg(debug_assertions)]
    fn take_replan(&mut self) -> ReplanLists {
        ReplanLists::default()
    }
    #[cfg(debug_assertions)]
    fn keep_replan(&mut self, _r: ReplanLists) {}
    /// Whether the update writes no records under spare keys any more.
    fn no_spare(&self) -> bool;
    /// From now on, no records under spare keys (see [`save_gc`]).
    fn set_no_spare(&mut self);
    /// Reclaims GC records until `want` pages are at hand or nothing more
    /// may be reclaimed; loose pages join the reclaimed ones. Returns
    /// whether it reclaimed anything. Runs only between tree operations.
    fn top_up(&mut self, want: usize) -> Result<bool>;
    /// Whether reclaimed pages left over may go into the transaction's own
    /// record rather than back under the consumed keys (see [`fold_pages`]).
    fn may_fold(&mut self) -> bool;
    /// Whether the update keeps the reclaimed pages it puts into the own
    /// records while [`GcWriter::may_fold`] is false (see
    /// `return_leftovers`): where it took pages from records in part.
    fn keeps_folded(&self) -> bool {
        false
    }
    /// Keeps those pages (when [`GcWriter::keeps_folded`]).
    fn keep_folded(&mut self, _pages: &[u32]) {}
    /// Notes the own record the update wrote in one step (see
    /// [`OwnRecord`]): in GC leaf `leaf`, `bytes` long, listing `pages`.
    fn note_own_record(&mut self, _leaf: u32, _bytes: usize, _pages: &[u32]) {}
}

impl GcWriter for RwTxn<'_> {
    fn gc_db(&self) -> Db {
        Db::GC
    }
    fn lists(&mut self) -> FreeLists<'_> {
        let st = &mut *self.st;
        FreeLists {
            retired: &mut st.retired,
            loose: &mut st.loose,
            reclaimed: &mut st.reclaimed,
            first_unallocated: &mut self.geo.first_unallocated,
            sorting: &mut st.sorting,
        }
    }
    fn consumed(&self) -> &[u64] {
        &self.st.consumed
    }
    fn take_scratch(&mut self) -> GcScratch {
        std::mem::take(&mut self.st.gc_scratch)
    }
    #[cfg(debug_assertions)]
    fn take_replan(&mut self) -> ReplanLists {
        std::mem::take(&mut self.st.replan)
    }
    #[cfg(debug_assertions)]
    fn keep_replan(&mut self, r: ReplanLists) {
        self.st.replan = r;
    }
    // Inline: a one-put commit runs 13 more instructions without it
    // (docs/design.md, "Inlining on the commit path").
    #[inline]
    fn keep_scratch(&mut self, s: GcScratch) {
        self.st.gc_scratch = s;
    }
    fn no_spare(&self) -> bool {
        self.no_spare
    }
    fn set_no_spare(&mut self) {
        self.no_spare = true;
    }
    fn top_up(&mut self, want: usize) -> Result<bool> {
        // The usual small commit consumed the GC's only record: nothing to
        // reclaim and no loose page to add (`top_up`'s own first test,
        // without the call).
        if self.st.loose.is_empty()
            && (self.gc_spent || self.st.tables.first().is_some_and(|g| g.as_ref().is_some_and(|g| g.tree.is_empty())))
        {
            return Ok(false);
        }
        top_up(self, want)
    }
    fn may_fold(&mut self) -> bool {
        // Only while no reader is older than the base snapshot: the next
        // transaction can then reclaim the own record as it could the
        // consumed keys. A reader that holds the base snapshot on keeps
        // one commit's folded pages out of reach (the next update sees it
        // as the detent and does not fold).
        detent(self) + 1 >= self.txnid
    }
    fn keeps_folded(&self) -> bool {
        !self.st.partly_taken.is_empty()
    }
    fn keep_folded(&mut self, pages: &[u32]) {
        self.st.folded.clear();
        self.st.folded.extend_from_slice(pages);
    }
    // Inline: a one-put commit runs 15 more instructions without it
    // (docs/design.md, "Inlining on the commit path").
    #[inline]
    fn note_own_record(&mut self, leaf: u32, bytes: usize, pages: &[u32]) {
        self.st.own_record.note(leaf, bytes, pages);
    }
}

/// The GC record the writer's last commit made its own in one step
/// ([`settle_renamed`], the usual small commit's update), as it wrote it.
/// The next write transaction reclaims it from here, with no descent to it
/// and no parse of its value, when its base snapshot is that commit (no
/// commit came between, of this process or another: each takes a new
/// txnid), the record is still the last entry of a GC of one leaf, and the
/// transaction has not edited that leaf (a one-put commit's reclaim of
/// its predecessor's record spent about 400 of its 9,700 instructions on
/// the descent and the parse). Debug builds check each use against the
/// search.
#[derive(Default)]
pub(crate) struct OwnRecord {
    /// The commit that wrote it, which is its key; 0: none.
    txnid: u64,
    /// Noted by the GC update of the commit under way (`leaf`, `bytes` and
    /// `pages` set; `txnid` is set once the commit's meta is written).
    noted: bool,
    /// The GC's one leaf (its root) holding the record as its last entry.
    leaf: u32,
    /// The value's length.
    bytes: usize,
    /// The pages it lists, descending (at most 15: a renamed record is at
    /// most `STALE_MAX` bytes).
    pages: Vec<u32>,
    /// The debug check's copy of the record as the GC holds it.
    #[cfg(debug_assertions)]
    check: Vec<u32>,
}

impl OwnRecord {
    /// Forgets the record: a commit is about to change the GC.
    pub(crate) fn forget(&mut self) {
        self.txnid = 0;
        self.noted = false;
    }

    fn note(&mut self, leaf: u32, bytes: usize, pages: &[u32]) {
        self.txnid = 0;
        self.noted = true;
        self.leaf = leaf;
        self.bytes = bytes;
        self.pages.clear();
        self.pages.extend_from_slice(pages);
    }

    /// After commit `txnid` wrote its meta, with `gc` its GC tree: keeps the
    /// record its update noted if the GC is one leaf, that one.
    pub(crate) fn committed(&mut self, txnid: u64, gc: &crate::format::tree::Tree) {
        let kept = self.noted && gc.height == 1 && gc.root == self.leaf && gc.items >= 1;
        self.txnid = if kept { txnid } else { 0 };
        self.noted = false;
    }

    /// Whether a transaction on the snapshot of commit `base`, whose GC tree
    /// is `gc` (the base's own: not edited by it), may reclaim the record
    /// from here: it is the newest at or below `detent` not `consumed`.
    fn reclaimable(&self, base: u64, gc: &crate::format::tree::Tree, detent: u64, consumed: &[u64]) -> bool {
        self.txnid != 0
            && self.txnid == base
            && gc.height == 1
            && gc.root == self.leaf
            && gc.items >= 1
            && self.txnid <= detent
            && !consumed.contains(&self.txnid)
    }
}

/// Writes this transaction's GC records and returns the txnid the new meta
/// carries (see [`write_gc`]).
pub(crate) fn save_gc(txn: &mut RwTxn<'_>) -> Result<u64> {
    txn.saving_gc = true;
    txn.st.own_record.forget();
    let stale = match txn.st.stale_gc.take() {
        Some(key) => settle_stale(txn, key)?,
        None => None,
    };
    let saved = write_gc_seeded(txn, stale)?;
    if !txn.st.folded.is_empty() {
        // (It may rewrite the own record.)
        txn.st.own_record.forget();
        return_leftovers(txn)?;
    }
    txn.st.retired_count = txn.st.retired_count.saturating_add(saved.retired as u64);
    Ok(saved.last_key)
}

/// After the GC update: moves the reclaimed pages it put into the own record
/// while a reader older than the base snapshot pins that record back into
/// the records this transaction took pages from in part, as far as they have
/// room (in place: a record keeps its size, and the pages taken out left
/// room). The update puts reclaimed pages it cannot write back under a
/// consumed key into the own record (`plan_gc`'s `over`), and a partial take
/// consumes no record: so the pages a small commit took from a big record
/// and did not use (about twice its dirty pages and 16 more) were free pages
/// that reader pinned, lost to every writer while it lasted; the file grew
/// by them instead (the stress runner found it with a libmdbx writer, whose
/// GC records are big). Without an older reader the next transaction
/// reclaims the own record, and the update keeps no pages for this. Only
/// values are rewritten, in pages this transaction already holds dirty:
/// nothing is allocated or freed (checked).
fn return_leftovers(txn: &mut RwTxn<'_>) -> Result<()> {
    let mut moved = std::mem::take(&mut txn.st.folded);
    // One own record (a bigger update splits it: left alone).
    let own = {
        let mut own = txn.st.gc_scratch.layout.iter().filter(|p| p.0 >= txn.txnid);
        match (own.next(), own.next()) {
            (Some(&(t, bytes, _)), None) => Some((t, bytes)),
            _ => None,
        }
    };
    let mut taken = std::mem::take(&mut txn.st.partly_taken);
    taken.sort_unstable();
    taken.dedup_by_key(|t| t.0);
    let lists = |t: &RwTxn<'_>| (t.st.retired.len(), t.st.loose.len(), t.st.reclaimed.len(), t.geo.first_unallocated);
    let before = lists(txn);
    let mut placed: Vec<u32> = Vec::new();
    let r = (|| -> Result<()> {
        let Some((t, own_bytes)) = own else { return Ok(()) };
        let mut pages = Vec::new();
        for &(key, bytes) in &taken {
            if moved.is_empty() {
                break;
            }
            // Consumed whole later on: its pages went back under its key.
            if txn.st.consumed.contains(&key) {
                continue;
            }
            // Dirty since the partial take rewrote it, or written out since
            // (spilled): a page comes back into memory with the rewrite, a
            // large chunk would be copied to a new one, so the pages stay
            // where they are then.
            let Some(loc) = write::find_value(txn, Db::GC, &key.to_le_bytes())? else { continue };
            if loc.len != bytes {
                return Err(Error::Problem("a GC record taken from in part changed size".into()));
            }
            let in_spilled_chunk = !txn.page_is_dirty(loc.pgno)
                && (crate::format::page::Page { buf: txn.pages().get(loc.pgno)? }).is_large();
            if in_spilled_chunk {
                continue;
            }
            read_record(txn, loc, &mut pages)?;
            let n = (bytes / 4).saturating_sub(1 + pages.len()).min(moved.len());
            if n == 0 {
                continue;
            }
            let back = moved.split_off(moved.len() - n);
            let want = pages.len() + n;
            crate::radix::merge_desc(&mut pages, &back);
            pages.dedup();
            if pages.len() != want {
                return Err(Error::Problem("a page taken from a GC record was still listed there".into()));
            }
            rewrite_record(txn, key, bytes, &pages)?;
            placed.extend_from_slice(&back);
        }
        if placed.is_empty() {
            return Ok(());
        }
        // The own record without them.
        let loc = write::locate(txn, Db::GC, &t.to_le_bytes())?;
        read_record(txn, loc, &mut pages)?;
        // (A rare path, whose lists are allocated anyway.)
        crate::radix::sort_desc(&mut placed, &mut Vec::new());
        let want = pages.len() - placed.len().min(pages.len());
        let mut out = placed.iter().peekable();
        pages.retain(|p| {
            let moved_out = out.peek() == Some(&p);
            if moved_out {
                out.next();
            }
            !moved_out
        });
        if out.next().is_some() || pages.len() != want {
            return Err(Error::Problem("pages moved out of the own GC record were not there".into()));
        }
        rewrite_record(txn, t, own_bytes, &pages)
    })();
    taken.clear();
    txn.st.partly_taken = taken;
    moved.clear();
    txn.st.folded = moved;
    r?;
    if lists(txn) != before {
        return Err(Error::Problem("returning GC leftovers allocated or freed pages".into()));
    }
    Ok(())
}

/// The pages of the GC record whose value is at `loc`: in a dirty page, a
/// dirty chunk of several pages (libmdbx writes records that long), or a
/// page spilled since it was rewritten (read through the map).
fn read_record(txn: &RwTxn<'_>, loc: write::ValLoc, out: &mut Vec<u32>) -> Result<()> {
    out.clear();
    let root = txn.table(Db::GC)?.tree.root;
    let v = match txn.st.dirty.get(&loc.pgno) {
        Some(b) => b.get(loc.off..loc.off + loc.len),
        None => {
            #[cfg(test)]
            multi_page_record_tests::SPILLED_READS.with(|n| n.set(n.get() + 1));
            txn.pages().get(loc.pgno)?.get(loc.off..loc.off + loc.len)
        }
    };
    let v = v.ok_or_else(|| Error::corrupted(loc.pgno, "GC record overruns its page"))?;
    parse_pnl(v, txn.geo.first_unallocated, root, out)
}

/// Writes the GC records of the transaction; returns the last key used
/// under its own id (the txnid the new meta carries), how many retired
/// pages they list, and how many rounds the update took.
///
/// Retired pages go under the transaction's own id `T`; unused reclaimed pages
/// go back under the keys of the records consumed in this transaction (they
/// stay immediately reusable). A list that does not fit one small inline
/// record is split into records of exactly one page each (so no contiguous run
/// of pages is ever needed for the GC), under keys `T, T+1, …` for retired
/// pages — the meta then carries the last key used, as libmdbx's "bigfoot"
/// commits do (docs/format.md, "Bigfoot").
///
/// Updating the GC changes the GC (pages are copied, allocated and freed), so
/// records are reserved in a loop until the layout is stable, and the page
/// lists are written last into the reserved space (same sizes: in place).
/// A small record is reserved at the size its pages need, rounded up to 16
/// bytes as libmdbx does (see [`plan_gc`]); a record never shrinks during the
/// update (unused trailing slots are allowed by the format) and grows at least
/// twofold, so small changes of the lists do not move records and each record
/// changes size only a few times. Pages the loop needs come from the unused
/// reclaimed pages, then the tail. (The engine calls [`write_gc_seeded`].)
#[cfg(test)]
pub(crate) fn write_gc<W: GcWriter + ?Sized>(w: &mut W) -> Result<GcSaved> {
    write_gc_seeded(w, None)
}

/// [`write_gc`] when the GC already holds a record under the transaction's
/// own key, stale, at `stale` (its leaf dirty): the update plans with it as
/// one of its records, and fills it.
fn write_gc_seeded<W: GcWriter + ?Sized>(w: &mut W, stale: Option<write::ValLoc>) -> Result<GcSaved> {
    let mut s = w.take_scratch();
    let r = write_gc_with(w, &mut s, stale);
    w.keep_scratch(s);
    r
}

/// At the start of the GC update: the record under `key`, consumed whole and
/// left in place (`WriteState::stale_gc`), becomes the own record if it is still
/// the last one of the GC, stale until the update fills it (returned: where
/// its value lives); else it is deleted.
fn settle_stale(txn: &mut RwTxn<'_>, stale: StaleGc) -> Result<Option<write::ValLoc>> {
    // Renaming copies the record's leaf: pages at hand first, as the update
    // has before its first edit (its puts would have taken that page).
    let want = gc_edit_pages(txn, 1);
    if txn.st.reclaimed.len() < want {
        txn.top_up(want)?;
    }
    let gc = txn.table(Db::GC)?;
    let StaleGc { key, root, idx } = stale;
    let mut path = write::Path::new();
    // An edit of the tree copies its root first: a root that is the same
    // clean page as then means the record is where it was.
    let last = if gc.tree.root == root && txn.page_unchanged(root) {
        path.push(root, idx as usize);
        true
    } else {
        if !write::find_path(txn, &gc.tree, &key.to_le_bytes(), gc.cmp, &mut path)? {
            return Err(Error::Problem("a consumed GC record vanished".into()));
        }
        write::is_last(txn, &path)?
    };
    let own = txn.txnid.to_le_bytes();
    let renamed = if last { write::rename_last(txn, Db::GC, gc.tree, gc.cmp, &mut path, &own)? } else { None };
    match renamed {
        Some(loc) => Ok(Some(loc)),
        None => write::del_at(txn, Db::GC, gc.tree, &mut path).map(|_| None),
    }
}

/// [`write_gc_seeded`] with its work lists (`s`, emptied on the way in).
fn write_gc_with<W: GcWriter + ?Sized>(w: &mut W, s: &mut GcScratch, stale: Option<write::ValLoc>) -> Result<GcSaved> {
    let gc = w.gc_db();
    {
        let l = w.lists();
        l.reclaimed.extend_desc(l.loose);
        l.loose.clear();
        refund(l.first_unallocated, l.reclaimed);
    }
    // Decided once, so the layout does not flap between two ways (plan_gc
    // folds only into room the own records have anyway).
    let may_fold = w.may_fold();
    let fold = if may_fold { fold_pages(w) } else { 0 };
    let keep_folded = !may_fold && w.keeps_folded();
    let limits = w.limits();
    let ps = limits.page_size;
    // Pages per one-page record, and per record kept inline in a GC leaf.
    let page_cap = (ps - crate::format::PAGEHDRSZ) / 4 - 1;
    let inline_cap = ((limits.leaf_nodemax - crate::format::NODESIZE - 8) / 4).saturating_sub(1).min(page_cap);
    let t = w.txnid();
    if let Some(loc) = stale {
        if let Some(saved) = settle_renamed(w, s, loc, fold, keep_folded, Caps { page: page_cap, inline: inline_cap })?
        {
            return Ok(saved);
        }
    }
    // (key, reserved bytes, pages it holds): the records written so far,
    // and what the lists need now.
    let (layout, plan, spare) = (&mut s.layout, &mut s.plan, &mut s.spare);
    layout.clear();
    let mut rounds = 0;
    let mut stable = false;
    // Where the last reservation's value lives, while no GC edit came after
    // it (a later edit may move it: a split, a removal): the fill needs no
    // search for it.
    let mut last_put: Option<(u64, write::ValLoc)> = None;
    if let Some(loc) = stale {
        // A record of the update's, holding none of its pages yet.
        layout.push((t, loc.len, 0));
        last_put = Some((t, loc));
    }
    while rounds < MAX_ROUNDS {
        rounds += 1;
        spare_keys(w, spare);
        // Putting the record under `T` copies the pages of its path that are
        // not dirty yet, which then join the retired pages: reserve room for
        // them at once rather than grow the record in the next round.
        let slack = if layout.iter().any(|p| p.0 == t) { 0 } else { clean_path_pages(w, t)? };
        {
            let l = w.lists();
            let c = Caps { page: page_cap, inline: inline_cap };
            plan_gc(l.reclaimed, l.retired, t, spare, c, slack, fold, layout, plan);
        }
        if plan.iter().map(|p| (p.0, p.1)).eq(layout.iter().map(|p| (p.0, p.1))) {
            std::mem::swap(layout, plan);
            stable = true;
            break;
        }
        let quiet_before = (!plan.iter().chain(layout.iter()).any(|p| p.0 < t)).then(|| list_lens(w));
        // The edits below copy GC pages and may split them: have the pages
        // for that at hand, reclaimed from the GC between tree operations
        // (never from inside one), before falling back to the file's tail.
        let edits = layout.iter().filter(|p| !plan.iter().any(|q| q.0 == p.0)).count()
            + plan.iter().filter(|p| !layout.iter().any(|q| q.0 == p.0 && q.1 == p.1)).count();
        let want = gc_edit_pages(w, edits);
        last_put = None;
        if w.lists().reclaimed.len() < want && w.top_up(want)? {
            // plan_gc moved what the spare keys could not hold to the
            // retired list; with more spare keys, plan again.
            continue;
        }
        // The records under the own keys change first, alone in their round:
        // their puts take pages (a first GC leaf, copied paths) from the
        // reclaimed ones, which the plan of this round had left for records
        // under spare keys; those are planned again with what is left
        // (otherwise, in the usual small commit, a spare record for one page
        // was created, then dropped in a third round when that page went).
        let own = |p: &&(u64, usize, usize)| p.0 >= t;
        let own_only = plan.iter().filter(own).map(|p| (p.0, p.1)).ne(layout.iter().filter(own).map(|p| (p.0, p.1)));
        let edits_now = |k: u64| !own_only || k >= t;
        for &(k, _, _) in layout.iter() {
            if edits_now(k) && !plan.iter().any(|p| p.0 == k) {
                last_put = None;
                write::del(w, gc, &k.to_le_bytes(), None)?;
            }
        }
        for &(k, bytes, _) in plan.iter() {
            if edits_now(k) && !layout.iter().any(|p| p.0 == k && p.1 == bytes) {
                let loc = write::put(w, gc, &k.to_le_bytes(), Val::Filled(bytes), PutFlags::RESERVE, 0)?;
                last_put = Some((k, loc));
            }
        }
        if own_only {
            layout.retain(|p| p.0 < t);
            layout.extend(plan.iter().filter(own));
        } else {
            std::mem::swap(layout, plan);
        }
        // Pages freed while saving were never visible to anyone: reusable
        // at once if a spare key can hold them, else retired.
        let l = w.lists();
        if spare.is_empty() && fold == 0 {
            l.retired.append(l.loose);
        } else {
            crate::radix::sort_desc(l.loose, l.sorting);
            l.reclaimed.extend_desc(l.loose);
            l.loose.clear();
            if l.reclaimed.is_empty() && layout.iter().any(|p| spare.contains(&p.0)) && {
                last_put = None;
                !w.top_up(1)?
            } {
                // Creating a record used up the last reclaimed page and the
                // GC has nothing more to reclaim. Deleting the record could
                // free a page again and so flap; taking one from the tail
                // would grow the file (or fail on a full one). Instead, stop
                // writing pages back under spare keys: from now on they join
                // this transaction's own record, reusable by the next one.
                w.set_no_spare();
            }
        }
        // A round with no record under a spare key (their count is an input
        // of the plan) whose edits left the lists as long as they were
        // (their lengths are the other inputs) would be planned the same
        // again: settled without a checking round. The usual small commit's
        // update is such a round when its record's put took its leaf from
        // the file's tail. Settled too (`settled_own_inline`): a round that
        // wrote only the own record, one kept inline, and left no reclaimed
        // or loose pages. The next plan would be that record holding the
        // retired pages, at the size it has if they fit (a record never
        // shrinks). Every other one-put commit
        // ends so: it folds the one leftover reclaimed page into its
        // record, whose put then takes that page for the GC's new leaf (a
        // checking round cost about 200 instructions).
        if quiet_before.is_some_and(|b| b == list_lens(w))
            || (quiet_before.is_some() && settled_own_inline(w.lists(), t, inline_cap, layout))
        {
            #[cfg(debug_assertions)]
            assert!(
                replan(w, t, spare, Caps { page: page_cap, inline: inline_cap }, fold, layout),
                "the GC update's last round was not settled: {layout:?}"
            );
            stable = true;
            break;
        }
    }
    if !stable {
        return Err(Error::Problem("GC update did not converge".into()));
    }
    // The own records list the folded pages with the retired ones: as
    // many as the final plan gave them.
    let own: usize = s.layout.iter().filter(|p| p.0 >= t).map(|p| p.2).sum();
    let n_retired = w.lists().retired.len();
    let retired = own_pages(w, &mut s.pages, own, keep_folded)?;
    let reclaimed = &s.pages;
    // Fill the records: the largest page numbers go to the largest keys.
    let layout = &mut s.layout;
    layout.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
    let mut last_key = t;
    for (lists, own) in [(&retired, true), (reclaimed, false)] {
        let mut at = 0;
        for &(k, bytes, count) in layout.iter().filter(|p| (p.0 >= t) == own) {
            let known = last_put.filter(|p| p.0 == k).map(|p| p.1);
            fill_record(w, k, known, bytes, &lists[at..at + count])?;
            at += count;
            if own {
                last_key = last_key.max(k);
            }
        }
        if at != lists.len() {
            return Err(Error::Problem("GC records do not hold every free page".into()));
        }
    }
    let l = w.lists();
    if !l.loose.is_empty() || !l.retired.is_empty() || !l.reclaimed.is_empty() {
        return Err(Error::Problem("GC changed while its records were filled".into()));
    }
    give_back_retired(l.retired, retired);
    Ok(GcSaved { last_key, retired: n_retired, rounds })
}

/// The pages the own records list, in the order they are written
/// (descending): the retired ones and, folded in, the lowest reclaimed ones
/// up to `own` pages in all (or every reclaimed one). Takes the retired list
/// (to go back through [`give_back_retired`]) and leaves the reclaimed
/// pages not folded in `rest`; the folded ones are handed to
/// [`GcWriter::keep_folded`] first if `keep_folded`.
// (Inlined: called, it cost a one-put commit 50 instructions; inlined, 14.)
#[inline(always)]
fn own_pages<W: GcWriter + ?Sized>(w: &mut W, rest: &mut Vec<u32>, own: usize, keep_folded: bool) -> Result<Vec<u32>> {
    rest.clear();
    let l = w.lists();
    l.reclaimed.drain_into(rest);
    let folded = own.saturating_sub(l.retired.len()).min(rest.len());
    let from = rest.len() - folded;
    crate::radix::sort_desc(l.retired, l.sorting);
    crate::radix::merge_desc(l.retired, &rest[from..]);
    let n = l.retired.len();
    l.retired.dedup();
    if l.retired.len() != n {
        return Err(Error::Problem("a page was retired twice".into()));
    }
    let retired = std::mem::take(l.retired);
    if keep_folded {
        w.keep_folded(&rest[from..]);
    }
    rest.truncate(from);
    Ok(retired)
}

/// Returns the list [`own_pages`] took, emptied, for the pool to keep (its
/// capacity).
fn give_back_retired(slot: &mut Vec<u32>, mut retired: Vec<u32>) {
    retired.clear();
    *slot = retired;
}

/// The usual small commit's GC update, in one step: the record it consumed
/// was renamed to its own key (`stale`, where its value is) and holds every
/// page to list (the retired ones, and the reclaimed ones left over, all of
/// them folded), at the size it has. Then the update's first round would
/// plan exactly that record (checked in debug builds) and settle at once:
/// it is filled here without the planning, which took 3.6% of a one-put
/// commit's instructions. `None`: anything else (no edit was made).
fn settle_renamed<W: GcWriter + ?Sized>(
    w: &mut W,
    s: &mut GcScratch,
    stale: write::ValLoc,
    fold: usize,
    keep_folded: bool,
    caps: Caps,
) -> Result<Option<GcSaved>> {
    let t = w.txnid();
    let l = w.lists();
    let (r, q) = (l.retired.len(), l.reclaimed.len());
    let n = r + q;
    if r == 0 || q > fold || n > caps.inline || 4 * (n + 1) > stale.len {
        return Ok(None);
    }
    #[cfg(test)]
    reclaim_tests::SETTLED_RENAMED.with(|c| c.set(c.get() + 1));
    #[cfg(debug_assertions)]
    {
        // On the lists themselves (they change only if the check fails),
        // in the kept work lists: nothing is allocated.
        let (spare, plan) = (&mut s.spare, &mut s.plan);
        spare_keys(w, spare);
        let l = w.lists();
        plan_gc(l.reclaimed, l.retired, t, spare, caps, 0, fold, &[(t, stale.len, 0)], plan);
        assert_eq!(*plan, [(t, stale.len, n)], "the renamed record is not what the update plans");
    }
    // The layout, as the update leaves it (`return_leftovers` reads it).
    s.layout.clear();
    s.layout.push((t, stale.len, n));
    // Every reclaimed page is folded in.
    let retired = own_pages(w, &mut s.pages, n, keep_folded)?;
    let filled = fill_record(w, t, Some(stale), stale.len, &retired);
    if filled.is_ok() {
        w.note_own_record(stale.pgno, stale.len, &retired);
    }
    let l = w.lists();
    give_back_retired(l.retired, retired);
    filled?;
    if !l.loose.is_empty() {
        return Err(Error::Problem("GC changed while its records were filled".into()));
    }
    Ok(Some(GcSaved { last_key: t, retired: r, rounds: 1 }))
}

/// Whether `layout`, one inline record under the own key `t`, is what
/// the GC update would plan from `l` now that no reclaimed or loose page
/// is left: the record holding the retired pages at the size it has. If
/// so, its page count is set to theirs.
fn settled_own_inline(l: FreeLists<'_>, t: u64, inline_cap: usize, layout: &mut [(u64, usize, usize)]) -> bool {
    let r = l.retired.len();
    match layout {
        [(k, bytes, n)] if *k == t && l.reclaimed.is_empty() && l.loose.is_empty() => {
            let fits = (1..=inline_cap).contains(&r) && 4 * (r + 1) <= *bytes;
            if fits {
                *n = r;
            }
            fits
        }
        _ => false,
    }
}

/// The lengths of the lists the GC update plans from: reclaimed, retired
/// and loose pages.
fn list_lens<W: GcWriter + ?Sized>(w: &mut W) -> (usize, usize, usize) {
    let l = w.lists();
    (l.reclaimed.len(), l.retired.len(), l.loose.len())
}

/// Copies of the free lists and a plan, for [`replan`].
#[cfg(debug_assertions)]
#[derive(Default)]
pub(crate) struct ReplanLists {
    reclaimed: RunList,
    retired: Vec<u32>,
    plan: Vec<(u64, usize, usize)>,
}

#[cfg(debug_assertions)]
impl ReplanLists {
    /// Whether a copy holds more than `n` pages (a bulk transaction's).
    pub(crate) fn over(&self, n: usize) -> bool {
        self.retired.capacity() > n || self.reclaimed.len() > n
    }
}

/// Whether the plan of a next round of the GC update, made on copies of the
/// lists, is `layout` (a debug check that a round was settled).
#[cfg(debug_assertions)]
fn replan<W: GcWriter + ?Sized>(
    w: &mut W,
    t: u64,
    spare: &[u64],
    caps: Caps,
    fold: usize,
    layout: &[(u64, usize, usize)],
) -> bool {
    let mut r = w.take_replan();
    let l = w.lists();
    r.reclaimed.clone_from(l.reclaimed);
    r.retired.clone_from(l.retired);
    plan_gc(&mut r.reclaimed, &mut r.retired, t, spare, caps, 0, fold, layout, &mut r.plan);
    let same = r.plan == layout;
    r.plan.clear();
    w.keep_replan(r);
    same
}

/// Writes `pages` into the record reserved under `key` (`bytes` long), in
/// place: the reservation made its leaf (or its one-page large value) dirty,
/// so no tree edit is needed, and none may happen here (the lists are final).
/// `known`: where the value lives, when the update knows it (else found).
// Inline: a one-put commit runs 8 more instructions without it
// (docs/design.md, "Inlining on the commit path").
#[inline(always)]
fn fill_record<W: GcWriter + ?Sized>(
    w: &mut W,
    key: u64,
    known: Option<write::ValLoc>,
    bytes: usize,
    pages: &[u32],
) -> Result<()> {
    let loc = match known {
        Some(loc) => loc,
        None => write::locate(w, w.gc_db(), &key.to_le_bytes())?,
    };
    if loc.len != bytes || 4 * (pages.len() + 1) > bytes || !w.page_is_dirty(loc.pgno) {
        // The update's last round changed nothing, so this would be a bug.
        return Err(Error::Problem("a reserved GC record moved or changed size".into()));
    }
    let buf = w.dirty_mut_full(loc.pgno);
    crate::format::pnl::encode_into(pages, &mut buf[loc.off..loc.off + loc.len]);
    Ok(())
}

/// Rounds of the GC update before it gives up. It converges in 2 (edit,
/// then check) plus one per top-up of reclaimed pages in practice; the unit
/// tests fail above 8 (`save_rounds`).
const MAX_ROUNDS: usize = 64;

/// What [`write_gc`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GcSaved {
    /// The last key used under the transaction's own id (the txnid the new
    /// meta carries).
    pub last_key: u64,
    /// Retired pages listed under the own keys.
    pub retired: usize,
    /// Rounds of planning and editing until the layout was stable.
    pub rounds: usize,
}

/// Capacities of GC records, in page numbers: a record of one full page,
/// and the largest record kept inline in a GC leaf.
#[derive(Debug, Clone, Copy)]
struct Caps {
    page: usize,
    inline: usize,
}

/// Pages on the GC tree's path to `key` that this transaction has not
/// copied yet: putting a record under `key` copies them and retires the
/// originals.
fn clean_path_pages<W: GcWriter + ?Sized>(w: &W, key: u64) -> Result<usize> {
    let v = w.table(w.gc_db())?;
    if v.tree.root == crate::format::P_INVALID {
        return Ok(0);
    }
    let mut path = write::Path::new();
    write::find_path(w, &v.tree, &key.to_le_bytes(), v.cmp, &mut path)?;
    Ok(path.pgnos().iter().filter(|&&p| !w.page_is_dirty(p)).count())
}

/// The keys of the GC records this transaction consumed, newest first, into
/// `out`: the GC update writes unused reclaimed pages back under them.
fn spare_keys<W: GcWriter + ?Sized>(w: &W, out: &mut Vec<u64>) {
    out.clear();
    if w.no_spare() {
        return;
    }
    out.extend_from_slice(w.consumed());
    out.sort_unstable_by(|a, b| b.cmp(a));
    out.dedup();
}

/// An upper bound of the pages `edits` puts or deletes on the GC tree may
/// allocate: a copied root-to-leaf path and a split at every level plus a
/// new root, for the first; later edits find the path dirty already.
fn gc_edit_pages<W: GcWriter + ?Sized>(w: &W, edits: usize) -> usize {
    let height = w.table(w.gc_db()).map_or(1, |t| t.tree.height as usize);
    2 * (height + 2) + 2 * edits
}

/// Reclaimed pages left over at a commit that go into its own GC record
/// rather than back under the keys it consumed (when no reader is older
/// than its base snapshot): what the next commit's GC update asks to have
/// at hand ([`gc_edit_pages`], with room to spare). The next small commit
/// then finds enough in its predecessor's record alone: its own edits take
/// about the pages that record lists as retired. Without the fold, a small
/// commit after a batch consumed that record and then the leftovers under
/// a consumed key (tens of pages), and wrote both back, every commit.
fn fold_pages<W: GcWriter + ?Sized>(w: &W) -> usize {
    gc_edit_pages(w, 4)
}

/// During the GC update: reclaims GC records until `want` pages are at hand
/// or nothing more may be reclaimed. Returns whether it reclaimed anything.
/// Runs only between tree operations of the update (it deletes records).
fn top_up(txn: &mut RwTxn<'_>, want: usize) -> Result<bool> {
    let mut any = false;
    loop {
        // An empty GC has nothing to reclaim, nor anything a steady commit
        // or a sweep of readers could release (the usual small commit
        // consumed the only record).
        if txn.st.reclaimed.len() >= want || txn.table(Db::GC)?.tree.is_empty() {
            break;
        }
        while txn.st.reclaimed.len() < want && !txn.gc_exhausted {
            if !reclaim_one(txn, want - txn.st.reclaimed.len(), 1)? {
                break;
            }
            any = true;
        }
        // In a lazy mode the last steady commit may be what holds records
        // back: make it steady (once) rather than take the tail.
        if txn.st.reclaimed.len() < want
            && txn.st.steady_txnid < txn.st.base.txnid()
            && sync_would_help(txn, want - txn.st.reclaimed.len())?
        {
            force_steady(txn)?;
            continue;
        }
        if txn.st.reclaimed.len() < want && sweep_if_pinned(txn)? {
            continue;
        }
        if txn.st.reclaimed.len() < want && tail_grows(txn, want - txn.st.reclaimed.len()) && kick_laggards(txn)? {
            continue;
        }
        break;
    }
    // A record deleted by reclaiming may have freed GC pages: usable too.
    if !txn.st.loose.is_empty() {
        let st = &mut *txn.st;
        st.reclaimed.extend_desc(&st.loose);
        st.loose.clear();
    }
    Ok(any)
}

/// The GC records the current lists need: (key, reserved bytes, pages).
///
/// A record of `n` pages that fits inline is reserved at `4·(n + 1)` bytes
/// rounded up to 16, as libmdbx reserves `(n | 3) + 1` slots; a larger one
/// takes a full page (a one-page large value). A new record under `t` gets
/// `slack` more slots (the pages its own put will copy and retire). `prev` is
/// the current layout: a record that exists keeps its size while its pages
/// fit and, when it must grow, at least doubles (up to the inline size, then
/// a page), so in one update a record changes size only a few times; and
/// leftover records are not dropped while there are pages to put in them. So
/// the layout settles instead of flapping between creating a record (which
/// uses a page) and deleting it (which frees one), or growing by a slot at a
/// time. Reclaimed pages beyond what the spare keys can hold move to
/// `retired` (they wait one transaction longer). The own records also hold
/// up to `fold` reclaimed pages (the lowest; they stay in `reclaimed`,
/// usable by the update's edits, until the records are filled), the spare
/// keys the rest. The plan goes into `plan` (emptied first).
#[allow(clippy::too_many_arguments)]
fn plan_gc(
    reclaimed: &mut RunList,
    retired: &mut Vec<u32>,
    t: u64,
    spare: &[u64],
    caps: Caps,
    slack: usize,
    fold: usize,
    prev: &[(u64, usize, usize)],
    plan: &mut Vec<(u64, usize, usize)>,
) {
    let Caps { page: page_cap, inline: inline_cap } = caps;
    let (inline_bytes, page_bytes) = (4 * (inline_cap + 1), 4 * (page_cap + 1));
    // The reservation for `n` pages under `k` (`extra` slots if it is new).
    let size = |k: u64, n: usize, extra: usize| -> usize {
        if n > inline_cap {
            return page_bytes;
        }
        let fit = |slots: usize| (4 * slots.next_multiple_of(4)).min(inline_bytes);
        match prev.iter().find(|p| p.0 == k) {
            Some(&(_, b, _)) if 4 * (n + 1) <= b => b,
            Some(&(_, b, _)) => fit(n + 1).max(2 * b).min(inline_bytes),
            None => fit(n + 1 + extra),
        }
    };
    plan.clear();
    // The own records: as many as the retired pages need, one inline
    // record or records of a page each.
    let own_records = |r: usize| match r {
        0 => 0,
        r if r <= inline_cap => 1,
        r => r.div_ceil(page_cap),
    };
    let own_slots = |r: usize| match own_records(r) {
        1 if r <= inline_cap => inline_cap,
        k => k * page_cap,
    };
    // The own records' free slots take up to `fold` reclaimed pages first
    // (`preferred`), then what the spare keys cannot hold (`over`: it goes
    // under the own keys either way, and in free slots it stays reclaimed,
    // at hand for the update's edits; moved to the retired pages at once,
    // it left an update that had consumed no record, only taken from a big
    // one in part, without pages: it took more, they moved too, and so on).
    // What is left over after that waits one transaction longer (retired).
    // The fold never adds an own record, nor takes the last pages of a
    // record under a spare key: a record that existed only for pages the
    // fold could have taken might use them for its own put, then be dropped
    // and give them back, and the update would not settle. (Retired pages
    // only grow during the update, so the own records only grow too;
    // records under spare keys are kept while they have pages, below.)
    let had = prev.iter().filter(|p| p.0 < t).count();
    let spare_room = spare.len() * page_cap;
    let folded = loop {
        let free = own_slots(retired.len()) - retired.len();
        let preferred = fold.min(reclaimed.len().saturating_sub(had)).min(free);
        let over = reclaimed.len().saturating_sub(preferred + spare_room).min(free - preferred);
        let folded = preferred + over;
        let room = spare_room + folded;
        if reclaimed.len() <= room {
            break folded;
        }
        let extra = reclaimed.split_off_low(room);
        retired.extend(extra);
    };
    let l = reclaimed.len() - folded;
    let want = if l == 0 {
        0
    } else if l <= inline_cap {
        1
    } else {
        l.div_ceil(page_cap)
    };
    let recs = want.max(had).min(l).min(spare.len());
    let mut rest = l;
    for (i, &k) in spare.iter().take(recs).enumerate() {
        let others = recs - i - 1;
        let n = if others == 0 { rest } else { (rest - others).min(page_cap) };
        plan.push((k, size(k, n, 0), n));
        rest -= n;
    }
    let r = retired.len() + folded;
    if r > 0 {
        let k = own_records(retired.len());
        debug_assert_eq!(k, own_records(r), "folded pages added an own record");
        let mut rest = r;
        for j in 0..k {
            let n = if j + 1 < k { page_cap } else { rest };
            let key = t + j as u64;
            plan.push((key, if k == 1 { size(key, n, slack) } else { page_bytes }, n));
            rest -= n;
        }
    }
}

/// Gives free pages at the end of the file back to the unallocated tail
/// (`first_unallocated`).
fn refund(first_unallocated: &mut u32, left: &mut RunList) {
    let cut = left.touching(*first_unallocated, usize::MAX);
    left.drain_top(cut);
    *first_unallocated -= cut as u32;
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    /// [`super::plan_gc`], returning the plan.
    fn plan_gc(
        reclaimed: &mut RunList,
        retired: &mut Vec<u32>,
        t: u64,
        spare: &[u64],
        caps: Caps,
        slack: usize,
        prev: &[(u64, usize, usize)],
    ) -> Vec<(u64, usize, usize)> {
        let mut plan = Vec::new();
        super::plan_gc(reclaimed, retired, t, spare, caps, slack, 0, prev, &mut plan);
        plan
    }
    use crate::btree::mem::{MemWriter, Rng};
    use crate::btree::walk::Kind;
    use crate::flags::DbFlags;
    use crate::format::{NODESIZE, PAGEHDRSZ};

    impl GcWriter for MemWriter {
        fn gc_db(&self) -> usize {
            0
        }
        fn lists(&mut self) -> FreeLists<'_> {
            FreeLists {
                retired: &mut self.retired,
                loose: &mut self.loose,
                reclaimed: &mut self.reclaimed,
                first_unallocated: &mut self.next,
                sorting: &mut self.sorting,
            }
        }
        fn consumed(&self) -> &[u64] {
            &self.consumed
        }
        fn no_spare(&self) -> bool {
            self.no_spare
        }
        fn set_no_spare(&mut self) {
            self.no_spare = true;
        }
        fn top_up(&mut self, want: usize) -> Result<bool> {
            let mut any = false;
            while self.reclaimed.len() < want && reclaim(self)? {
                any = true;
            }
            self.reclaimed.extend(std::mem::take(&mut self.loose));
            Ok(any)
        }
        fn may_fold(&mut self) -> bool {
            self.fold && self.detent + 1 >= self.txnid
        }
    }

    /// The GC records of `w`: key and pages.
    fn records(w: &MemWriter) -> BTreeMap<u64, Vec<u32>> {
        w.records(0)
            .into_iter()
            .map(|(k, v)| {
                (u64::from_le_bytes(k.try_into().expect("8-byte key")), {
                    let mut pages = Vec::new();
                    parse_pnl(&v, w.next, 0, &mut pages).unwrap();
                    pages
                })
            })
            .collect()
    }

    /// Value sizes of the GC records.
    fn record_sizes(w: &MemWriter) -> BTreeMap<u64, usize> {
        w.records(0).into_iter().map(|(k, v)| (u64::from_le_bytes(k.try_into().unwrap()), v.len())).collect()
    }

    /// Consumes the newest GC record up to `w.detent` not consumed yet, as
    /// `reclaim_one` does; with `w.partial`, takes only the lowest
    /// `PARTIAL_TAKE` pages of a record of at least `PARTIAL_FACTOR` times
    /// that many and rewrites the rest in place, as `reclaim_one` does with
    /// a big record.
    fn reclaim(w: &mut MemWriter) -> Result<bool> {
        const PARTIAL_TAKE: usize = 8;
        let found = records(w).into_iter().rev().find(|(k, _)| *k <= w.detent && !w.consumed.contains(k));
        let Some((k, mut pages)) = found else { return Ok(false) };
        if w.partial && pages.len() >= PARTIAL_FACTOR * PARTIAL_TAKE {
            let rest = pages.len() - PARTIAL_TAKE;
            w.reclaimed.extend(pages.split_off(rest));
            let bytes = record_sizes(w)[&k];
            let loc = write::put(w, 0, &k.to_le_bytes(), Val::Filled(bytes), PutFlags::RESERVE, 0)?;
            let buf = w.dirty_mut_full(loc.pgno);
            crate::format::pnl::encode_into(&pages, &mut buf[loc.off..loc.off + loc.len]);
            return Ok(true);
        }
        w.reclaimed.extend(pages);
        write::del(w, 0, &k.to_le_bytes(), None)?;
        w.consumed.push(k);
        Ok(true)
    }

    /// Capacities of one-page and inline records for page size `ps`.
    fn caps(ps: usize) -> (usize, usize) {
        let page_cap = (ps - PAGEHDRSZ) / 4 - 1;
        let leaf_nodemax = crate::format::limits::Limits::new(ps).leaf_nodemax;
        (page_cap, ((leaf_nodemax - NODESIZE - 8) / 4).saturating_sub(1).min(page_cap))
    }

    /// Ends a transaction whose GC records were written: the pages they list
    /// leave the store (retired pages were readable until now). The next
    /// transaction's id follows the last key used (as the meta carries it).
    fn commit(w: &mut MemWriter, last: u64) {
        assert!(w.retired.is_empty() && w.loose.is_empty() && w.reclaimed.is_empty(), "lists left over");
        for pages in records(w).values() {
            for p in pages {
                w.store.remove(p);
            }
        }
        w.consumed.clear();
        w.no_spare = false;
        w.txnid = last;
        w.commit();
    }

    /// Every page below the tail is in a tree or in exactly one GC record,
    /// and every tree (the GC's included) is sound.
    fn check(w: &MemWriter) {
        w.check_with_free(records(w).into_values().flatten());
    }

    /// The most rounds a GC update took in these tests (see `save`).
    const ROUNDS_MAX: usize = 8;

    /// A reservation of `slots` 4-byte slots as `plan_gc` makes it for a
    /// new small record: rounded up to 16 bytes, at most the inline size.
    fn fit(slots: usize, inline_cap: usize) -> usize {
        (4 * slots.next_multiple_of(4)).min(4 * (inline_cap + 1))
    }

    /// Writes the GC records and checks what they hold: every page retired
    /// before under the transaction's own keys `t..=last`, which are
    /// consecutive and count the retired pages and reclaimed ones folded in
    /// (see `plan_gc`); records under older
    /// keys only under consumed keys. Records written now are sized as
    /// `plan_gc` says: a full page above the inline capacity, else at most the
    /// inline size, and own records within what the pages need, the clean
    /// path they copied and one doubling. Returns the last key, the retired
    /// pages and the rounds the update took (at most `ROUNDS_MAX`).
    fn save_rounds(w: &mut MemWriter) -> (u64, usize, usize) {
        let t = w.txnid;
        let before: BTreeSet<u64> = records(w).into_keys().collect();
        let retired: BTreeSet<u32> = w.retired.iter().copied().collect();
        let height = w.tables[0].tree.height as usize;
        let GcSaved { last_key: last, retired: n, rounds } = write_gc(w).expect("GC update");
        assert!(rounds <= ROUNDS_MAX, "the GC update took {rounds} rounds");
        let recs = records(w);
        // A record the update reserved and then forgot (never filled, never
        // deleted) would be left empty.
        for (k, pages) in &recs {
            assert!(!pages.is_empty(), "record {k} lists no page");
        }
        let own: Vec<u64> = recs.keys().copied().filter(|&k| k >= t).collect();
        assert_eq!(own, (t..t + own.len() as u64).collect::<Vec<_>>(), "own keys are consecutive from t");
        assert_eq!(last, own.last().copied().unwrap_or(t));
        let under_own: BTreeSet<u32> = own.iter().flat_map(|k| recs[k].iter().copied()).collect();
        assert!(under_own.len() >= n, "{} pages under own keys, {n} retired", under_own.len());
        assert!(retired.is_subset(&under_own), "a retired page is not under the transaction's own keys");
        for k in recs.keys().filter(|&&k| k < t && !before.contains(&k)) {
            assert!(w.consumed.contains(k), "record {k} under a key that was not consumed");
        }
        let (page_cap, inline_cap) = caps(w.limits().page_size);
        for (k, len) in record_sizes(w) {
            if k < t && before.contains(&k) {
                continue;
            }
            let pages = recs[&k].len();
            assert!(len % 4 == 0 && len >= 4 * (pages + 1), "record {k}: {pages} pages in {len} bytes");
            if pages > inline_cap || own.len() > 1 && k >= t {
                assert_eq!(len, 4 * (page_cap + 1), "record {k} of {pages} pages");
            } else if k >= t {
                let bound = fit(pages + 1 + height, inline_cap).max(fit(2 * (pages + 1), inline_cap));
                assert!(len <= bound, "record {k}: {pages} pages in {len} bytes (bound {bound})");
            } else {
                assert!(len == 4 * (page_cap + 1) || len <= 4 * (inline_cap + 1), "record {k}: {len} bytes");
            }
        }
        (last, n, rounds)
    }

    /// `save_rounds` without the rounds.
    fn save(w: &mut MemWriter) -> (u64, usize) {
        let (last, n, _) = save_rounds(w);
        (last, n)
    }

    fn setup(ps: usize) -> (MemWriter, usize) {
        let mut w = MemWriter::new(ps);
        let db = w.add_table(Kind::Table, DbFlags::empty());
        (w, db)
    }

    fn put(w: &mut MemWriter, db: usize, k: u64, len: usize) {
        let v = vec![k as u8; len];
        write::put(w, db, &k.to_be_bytes(), Val::Bytes(&v), PutFlags::empty(), 0).unwrap();
    }

    #[test]
    fn plan_covers_the_lists() {
        let c = Caps { page: 40, inline: 11 };
        let (ib, pb) = (4 * (c.inline + 1), 4 * (c.page + 1));
        assert_eq!((ib, pb), (48, 164));
        let plan_slack = |rec: &[u32], ret: &[u32], spare: &[u64], slack: usize, prev: &[(u64, usize, usize)]| {
            let (mut a, mut b) = (RunList::from_desc(rec), ret.to_vec());
            let p = plan_gc(&mut a, &mut b, 100, spare, c, slack, prev);
            (p, a.to_vec(), b)
        };
        let plan = |rec: &[u32], ret: &[u32], spare: &[u64], prev: &[(u64, usize, usize)]| {
            plan_slack(rec, ret, spare, 0, prev)
        };
        // Nothing to save: no records.
        assert_eq!(plan(&[], &[], &[], &[]).0, vec![]);
        // One retired page: a record of 16 bytes (count and 3 slots) under t.
        assert_eq!(plan(&[], &[7], &[], &[]).0, vec![(100, 16, 1)]);
        // 4·(n + 1) rounded up to 16, as libmdbx does.
        assert_eq!(plan(&[], &[1, 2, 3], &[], &[]).0, vec![(100, 16, 3)]);
        assert_eq!(plan(&[], &[1, 2, 3, 4], &[], &[]).0, vec![(100, 32, 4)]);
        assert_eq!(plan(&[], &[1, 2, 3, 4, 5, 6, 7, 8], &[], &[]).0, vec![(100, ib, 8)]);
        // Room for the pages the record's own put will retire.
        assert_eq!(plan_slack(&[], &[7], &[], 3, &[]).0, vec![(100, 32, 1)]);
        assert_eq!(plan_slack(&[], &[7], &[], 30, &[]).0, vec![(100, ib, 1)]);
        // ... only when the record is new.
        assert_eq!(plan_slack(&[], &[7, 8], &[], 3, &[(100, 16, 1)]).0, vec![(100, 16, 2)]);
        // Just past inline: a one-page record; past a page: several.
        let twelve: Vec<u32> = (1..=12).collect();
        assert_eq!(plan(&[], &twelve, &[], &[]).0, vec![(100, pb, 12)]);
        let many: Vec<u32> = (1..=90).collect();
        assert_eq!(plan(&[], &many, &[], &[]).0, vec![(100, pb, 40), (101, pb, 40), (102, pb, 10)]);
        // Unused reclaimed pages go back under the spare keys, newest first.
        assert_eq!(plan(&[9, 8], &[], &[50, 40], &[]).0, vec![(50, 16, 2)]);
        // More than the spare keys hold: the rest joins the retired pages.
        let lots: Vec<u32> = (1..=45).rev().collect();
        let (p, rec, ret) = plan(&lots, &[], &[50], &[]);
        assert_eq!(p, vec![(50, pb, 40), (100, 32, 5)]);
        assert_eq!((rec.len(), ret), (40, vec![5, 4, 3, 2, 1]));
        // A record keeps its size while its pages fit (no flapping).
        assert_eq!(plan(&[], &[1], &[], &[(100, pb, 12)]).0, vec![(100, pb, 1)]);
        assert_eq!(plan(&[], &[1], &[], &[(100, 32, 5)]).0, vec![(100, 32, 1)]);
        // A record that must grow at least doubles, up to the inline size,
        // then takes a page.
        assert_eq!(plan(&[], &[1, 2, 3, 4], &[], &[(100, 16, 3)]).0, vec![(100, 32, 4)]);
        assert_eq!(plan(&[], &[1, 2, 3, 4, 5, 6, 7], &[], &[(100, 16, 3)]).0, vec![(100, 32, 7)]);
        assert_eq!(plan(&[], &[1, 2, 3, 4, 5, 6, 7, 8], &[], &[(100, 32, 7)]).0, vec![(100, ib, 8)]);
        assert_eq!(plan(&[], &twelve, &[], &[(100, ib, 11)]).0, vec![(100, pb, 12)]);
        assert_eq!(plan(&[9, 8, 7, 6], &[], &[50], &[(50, 16, 2)]).0, vec![(50, 32, 4)]);
        // A spare record is not dropped while it has pages to hold.
        assert_eq!(plan(&[3, 2], &[], &[50, 40], &[(50, 16, 1), (40, 16, 1)]).0, vec![(50, 16, 1), (40, 16, 1)]);
    }

    /// However a record's page count moves during one update, its size only
    /// grows, and it changes at most `log2(inline / 16) + 2` times.
    #[test]
    fn record_sizes_grow_a_few_times() {
        let mut rng = Rng::new(11);
        let c = Caps { page: 1020, inline: 508 };
        let steps = (4 * (c.inline + 1) / 16).ilog2() as usize + 2;
        for _ in 0..500 {
            let mut prev: Vec<(u64, usize, usize)> = Vec::new();
            let mut n = 1 + rng.below(8) as usize;
            let mut changes = 0;
            for _ in 0..200 {
                let (mut rec, mut ret) = (RunList::default(), (0..n as u32).collect::<Vec<_>>());
                let plan = plan_gc(&mut rec, &mut ret, 100, &[], c, rng.below(4) as usize, &prev);
                assert_eq!(plan.len(), 1);
                if let Some(&(_, b, _)) = prev.first() {
                    assert!(plan[0].1 >= b, "a record shrank");
                    changes += usize::from(plan[0].1 != b);
                }
                prev = plan;
                // Retired pages only grow during an update, by a few at a time.
                n = (n + rng.below(6) as usize).min(c.page);
            }
            assert!(changes <= steps, "{changes} size changes");
        }
    }

    /// Random lists: the plan lists every page exactly once, within each
    /// record's capacity, under consecutive own keys and distinct spare keys;
    /// a new small record takes the size its pages need, an existing one
    /// never shrinks.
    #[test]
    fn plan_is_exact_on_random_lists() {
        let mut rng = Rng::new(5);
        let c = Caps { page: 58, inline: 24 };
        let (ib, pb) = (4 * (c.inline + 1), 4 * (c.page + 1));
        for _ in 0..2000 {
            let n_rec = rng.below(200) as usize;
            let n_ret = rng.below(300) as usize;
            let mut pages: Vec<u32> = (3..3 + (n_rec + n_ret) as u32).collect();
            let rec_vec: Vec<u32> = pages.drain(..n_rec).rev().collect();
            let mut rec = RunList::from_desc(&rec_vec);
            let mut ret = pages;
            let spare: Vec<u64> = (0..rng.below(4)).map(|i| 90 - 3 * i).collect();
            let slack = rng.below(5) as usize;
            let prev = if rng.below(2) == 0 {
                let cut = rng.below(rec_vec.len() as u64 + 1) as usize;
                let mut b = ret.clone();
                b.truncate(rng.below(b.len() as u64 + 1) as usize);
                let mut a = RunList::from_desc(&rec_vec[..cut]);
                plan_gc(&mut a, &mut b, 100, &spare, c, slack, &[])
            } else {
                Vec::new()
            };
            let all: BTreeSet<u32> = rec.iter().chain(ret.iter().copied()).collect();
            let plan = plan_gc(&mut rec, &mut ret, 100, &spare, c, slack, &prev);
            let after: BTreeSet<u32> = rec.iter().chain(ret.iter().copied()).collect();
            assert_eq!(after.len(), rec.len() + ret.len());
            assert_eq!(all, after, "pages lost or made up");
            let own: Vec<_> = plan.iter().filter(|p| p.0 >= 100).collect();
            let old: Vec<_> = plan.iter().filter(|p| p.0 < 100).collect();
            // Reclaimed pages the spare keys cannot hold are in the own
            // records' free slots (still reclaimed) or moved to `ret`.
            let (own_n, old_n) = (own.iter().map(|p| p.2).sum::<usize>(), old.iter().map(|p| p.2).sum::<usize>());
            assert_eq!(own_n + old_n, ret.len() + rec.len());
            assert!(own_n >= ret.len() && old_n <= spare.len() * c.page, "{own_n} + {old_n} pages");
            if own_n > ret.len() {
                assert_eq!(old_n, spare.len() * c.page, "folded while the spare keys had room");
            }
            assert!(own.iter().enumerate().all(|(i, p)| p.0 == 100 + i as u64));
            let keys: BTreeSet<u64> = old.iter().map(|p| p.0).collect();
            assert_eq!(keys.len(), old.len());
            assert!(keys.iter().all(|k| spare.contains(k)));
            for &(k, bytes, n) in &plan {
                assert!(n >= 1 && 4 * (n + 1) <= bytes && bytes % 4 == 0, "{n} pages in {bytes} bytes");
                assert!(bytes == pb || bytes <= ib, "{bytes} bytes");
                match prev.iter().find(|p| p.0 == k) {
                    Some(&(_, b, _)) => assert!(bytes >= b, "record {k} shrank from {b} to {bytes} bytes"),
                    None if n > c.inline || own.len() > 1 && k >= 100 => assert_eq!(bytes, pb),
                    None => {
                        let extra = if k == 100 { slack } else { 0 };
                        assert_eq!(bytes, fit(n + 1 + extra, c.inline), "record {k} of {n} pages");
                    }
                }
            }
        }
    }

    #[test]
    fn empty_update_writes_nothing() {
        let (mut w, _) = setup(512);
        let next = w.next;
        let t = w.txnid;
        assert_eq!(save(&mut w), (t, 0));
        assert!(records(&w).is_empty());
        assert_eq!(w.next, next, "no page was allocated");
        commit(&mut w, t);
        check(&w);
    }

    /// One page retired: one inline record under `t` with exactly that page.
    #[test]
    fn one_retired_page() {
        let (mut w, db) = setup(512);
        put(&mut w, db, 1, 10);
        let (last, n) = save(&mut w);
        assert_eq!(n, 0);
        commit(&mut w, last);
        let leaf = w.tables[db].tree.root;
        put(&mut w, db, 1, 11);
        assert_eq!(w.retired, vec![leaf]);
        let t = w.txnid;
        assert_eq!(save(&mut w), (t, 1));
        assert_eq!(records(&w), BTreeMap::from([(t, vec![leaf])]));
        commit(&mut w, t);
        check(&w);
    }

    /// Pages freed in the transaction that allocated them, at the end of
    /// the file, go back to the unallocated tail instead of the GC.
    #[test]
    fn loose_pages_at_the_tail_are_refunded() {
        let (mut w, db) = setup(512);
        put(&mut w, db, 1, 10);
        let (last, _) = save(&mut w);
        commit(&mut w, last);
        let next = w.next;
        put(&mut w, db, 2, 3000); // a large value of 6 pages at the tail
        assert!(w.next > next + 1);
        assert!(write::del(&mut w, db, &2u64.to_be_bytes(), None).unwrap());
        assert!(!w.loose.is_empty());
        let (last, _) = save(&mut w);
        // The chunk went back to the tail; the new pages are the copy of the
        // leaf (the old one is retired) and the GC's first leaf.
        assert_eq!(w.next, next + 2);
        commit(&mut w, last);
        check(&w);
    }

    /// More retired pages than one page of a record holds: records of one
    /// page each under `t, t+1, …`, and the last key is reported.
    #[test]
    fn long_lists_take_several_one_page_records() {
        for (ps, n, len) in [(256, 2000, 40), (512, 3000, 40), (4096, 1100, 5000)] {
            let (mut w, db) = setup(ps);
            for k in 0..n {
                put(&mut w, db, k, len);
            }
            let (last, _) = save(&mut w);
            commit(&mut w, last);
            let pages = w.table_pages(db).len();
            let (page_cap, _) = caps(ps);
            assert!(pages > 2 * page_cap, "page size {ps}: only {pages} pages");
            write::clear(&mut w, db).unwrap();
            let t = w.txnid;
            let (last, retired) = save(&mut w);
            assert_eq!(retired, pages);
            assert_eq!(last, t + pages.div_ceil(page_cap) as u64 - 1);
            commit(&mut w, last);
            check(&w);
        }
    }

    /// The update's own records take the reclaimed pages they need first
    /// (here: more than there are), so no record is planned under a
    /// consumed key for pages that are then gone.
    #[test]
    fn own_records_take_the_reclaimed_pages_first() {
        let (mut w, big) = setup(256);
        let small = w.add_table(Kind::Table, DbFlags::empty());
        for k in 0..4000 {
            put(&mut w, big, k, 100);
        }
        for k in 0..50 {
            put(&mut w, small, k, 100);
        }
        let (last, _) = save(&mut w);
        commit(&mut w, last);
        let (page_cap, inline_cap) = caps(256);
        let small_pages = w.table_pages(small).len();
        assert!(small_pages > inline_cap, "{small_pages} pages");
        // One record of more pages than an inline record holds.
        write::clear(&mut w, small).unwrap();
        let (last, _) = save(&mut w);
        commit(&mut w, last);
        assert_eq!(records(&w).len(), 1);
        // Consume it, then let nothing more be reclaimed; retire far more
        // pages than the reclaimed ones, so the update's records need them all.
        w.detent = w.txnid - 1;
        assert!(w.top_up(1).unwrap());
        assert!(w.reclaimed.len() > inline_cap);
        w.detent = 0;
        write::clear(&mut w, big).unwrap();
        assert!(w.retired.len() > 2 * page_cap);
        let t = w.txnid;
        let (last, _, rounds) = save_rounds(&mut w);
        assert!(records(&w).keys().all(|&k| k >= t), "a record under a consumed key is left");
        assert!(!w.no_spare, "records under consumed keys were created and dropped ({rounds} rounds)");
        commit(&mut w, last);
        check(&w);
    }

    /// Transaction `i` of a random run, up to its GC update: it reclaims
    /// some GC records, then puts and deletes random keys of `db` (`model`
    /// follows them). Every third stretch of 20 transactions a reader pins
    /// the snapshot the stretch began with (nothing newer is reclaimed): the
    /// GC grows.
    fn random_edits(w: &mut MemWriter, db: usize, rng: &mut Rng, model: &mut BTreeSet<u64>, i: usize) {
        if i.is_multiple_of(20) || (i / 20) % 3 != 2 {
            w.detent = w.txnid - 1;
        }
        let want = rng.below(40) as usize;
        w.top_up(want).unwrap();
        for _ in 0..rng.below(80) {
            let k = rng.below(400);
            if rng.below(2) == 0 && model.remove(&k) {
                assert!(write::del(w, db, &k.to_be_bytes(), None).unwrap());
            } else {
                let len = if rng.below(30) == 0 { 700 } else { 1 + rng.below(30) as usize };
                put(w, db, k, len);
                model.insert(k);
            }
        }
    }

    /// When an edit of the GC (a split or a copied path, for a record under
    /// a consumed key) uses up the last reclaimed page while such a record
    /// exists, and nothing more can be reclaimed, the update stops writing
    /// records under consumed keys (`no_spare`) rather than flap or take the
    /// tail. Random transactions at small pages reach that state: the first
    /// seed that does is checked (the search is bounded).
    #[test]
    fn last_reclaimed_page_used_up_stops_spare_records() {
        for seed in 1..200u64 {
            for ps in [256usize, 512] {
                let (mut w, db) = setup(ps);
                let mut rng = Rng::new(seed);
                let mut model = BTreeSet::new();
                for i in 0..60 {
                    random_edits(&mut w, db, &mut rng, &mut model, i);
                    let (last, _, _) = save_rounds(&mut w);
                    let hit = w.no_spare;
                    if hit {
                        let spare = records(&w).into_keys().filter(|k| w.consumed.contains(k)).count();
                        assert_eq!(spare, 0, "seed {seed}: records under consumed keys");
                    }
                    commit(&mut w, last);
                    check(&w);
                    if hit {
                        return;
                    }
                }
            }
        }
        panic!("no random transaction used up the last reclaimed page in a GC edit");
    }

    /// Folded pages go only into room the own records have anyway. With as
    /// many retired pages as one-page records hold (any more needs another
    /// record) and one reclaimed page, folding it made a second own record,
    /// whose put took that page, so the record was dropped, which gave the
    /// page back, and the update never converged (the model test found it
    /// at 256-byte pages).
    #[test]
    fn fold_adds_no_own_record() {
        for ps in [256usize, 512, 4096] {
            let (page_cap, _) = caps(ps);
            let (mut w, db) = setup(ps);
            let free = w.next;
            w.next += 1;
            put(&mut w, db, 1, 10);
            let first = w.next;
            w.next += page_cap as u32;
            w.retired.extend((first..w.next).rev());
            w.reclaimed.extend_desc(&[free]);
            w.fold = true;
            w.detent = w.txnid - 1;
            let (last, _, rounds) = save_rounds(&mut w);
            assert!(rounds <= 3, "page size {ps}: {rounds} rounds");
            commit(&mut w, last);
            check(&w);
        }
    }

    /// Many short runs of random transactions with the fold allowed or not,
    /// and big records taken from in part or not, at small pages: every GC
    /// update converges. The fold took the last pages of a record under a
    /// consumed key (17 reclaimed pages, 16 to fold: the record for the
    /// 17th took it for its put, was dropped, gave it back; seed 32 at
    /// 256-byte pages, and the stress runner, found it).
    #[test]
    fn random_transactions_with_the_fold_converge() {
        for seed in 1..=100u64 {
            for ps in [256usize, 512, 1024] {
                let (mut w, db) = setup(ps);
                w.fold = seed % 4 != 0;
                w.partial = seed % 3 != 0;
                let mut rng = Rng::new(seed);
                let mut model = BTreeSet::new();
                for i in 0..120 {
                    random_edits(&mut w, db, &mut rng, &mut model, i);
                    match write_gc(&mut w) {
                        Ok(saved) => commit(&mut w, saved.last_key),
                        Err(e) => panic!("seed {seed}, page size {ps}, transaction {i}: {e:?}"),
                    }
                }
                check(&w);
            }
        }
    }

    /// A GC update that needs pages and finds only a big record to take
    /// from in part (no record consumed, so no key to write leftovers back
    /// under) keeps the pages it takes at hand for its edits: they used to
    /// move to the retired pages at once, the update asked for more, took
    /// more, and so on until it gave up (the stress runner found it at
    /// 16 KiB pages, where a record holds 4,091 pages).
    #[test]
    fn partial_takes_in_the_update_stay_at_hand() {
        for fold in [false, true] {
            let (mut w, db) = setup(1024);
            for k in 0..40 {
                put(&mut w, db, k, 20);
            }
            let (last, _) = save(&mut w);
            commit(&mut w, last);
            // One big record of free pages.
            let first = w.next;
            w.next += 200;
            w.retired.extend((first..w.next).rev());
            let (last, _) = save(&mut w);
            commit(&mut w, last);
            assert_eq!(records(&w).values().map(Vec::len).max(), Some(200));
            w.partial = true;
            w.fold = fold;
            w.detent = w.txnid - 1;
            put(&mut w, db, 1, 30);
            let (last, _, rounds) = save_rounds(&mut w);
            assert!(w.consumed.is_empty(), "fold {fold}: a record was consumed");
            assert!(rounds <= 4, "fold {fold}: {rounds} rounds");
            commit(&mut w, last);
            check(&w);
        }
    }

    /// A transaction that retired nothing folds nothing: with one reclaimed
    /// page, an empty GC and the fold allowed, the record the fold would
    /// make took that page for its leaf, its removal gave it back, and the
    /// update never converged.
    #[test]
    fn fold_needs_retired_pages() {
        let (mut w, db) = setup(4096);
        // A free page below the table's first leaf (as if reclaimed; the GC
        // is empty), and nothing retired.
        let free = w.next;
        w.next += 1;
        put(&mut w, db, 1, 10);
        w.reclaimed.extend_desc(&[free]);
        w.fold = true;
        w.detent = w.txnid - 1;
        assert!(w.retired.is_empty() && records(&w).is_empty());
        let (last, _, rounds) = save_rounds(&mut w);
        assert!(rounds <= 3, "{rounds} rounds");
        commit(&mut w, last);
        check(&w);
    }

    /// Random transactions that reclaim GC records, edit a table and write
    /// their GC records at small page sizes, where the GC tree itself
    /// splits and merges while it is updated: every update reaches its
    /// fixed point, and no page is lost or listed twice; with and without
    /// folding leftovers into the own records.
    #[test]
    fn random_transactions_reach_a_fixed_point() {
        for (seed, ps, fold) in [
            (1u64, 256usize, false),
            (2, 512, false),
            (3, 1024, false),
            (4, 256, true),
            (5, 512, true),
            (6, 1024, true),
        ] {
            let (mut w, db) = setup(ps);
            w.fold = fold;
            let mut rng = Rng::new(seed);
            let mut model = BTreeSet::new();
            let (mut spare_used, mut folded) = (0, 0);
            let mut gc_height = 0;
            let mut rounds_seen = BTreeMap::new();
            for i in 0..180 {
                random_edits(&mut w, db, &mut rng, &mut model, i);
                let t = w.txnid;
                let (last, retired, rounds) = save_rounds(&mut w);
                *rounds_seen.entry(rounds).or_insert(0) += 1;
                let recs = records(&w);
                spare_used += recs.keys().filter(|&&k| k < t && w.consumed.contains(&k)).count();
                folded += usize::from(recs.range(t..).map(|r| r.1.len()).sum::<usize>() > retired);
                commit(&mut w, last);
                check(&w);
                assert_eq!(w.tables[db].tree.items, model.len() as u64);
                gc_height = gc_height.max(w.tables[0].tree.height);
            }
            assert!(spare_used > 0, "page size {ps}: no record went back under a consumed key");
            assert_eq!(folded > 0, fold, "page size {ps}: {folded} updates folded leftovers into the own records");
            assert!(gc_height > 1, "page size {ps}: the GC tree never grew past one leaf");
            eprintln!("page size {ps}: GC updates by rounds {rounds_seen:?}");
        }
    }

    /// A reader pins an old snapshot (nothing may be reclaimed) while many
    /// small transactions each leave one small record: the update has no
    /// spare pages, the GC's last leaf fills and splits during the update
    /// itself, and the pages for that come from the tail. Every update
    /// converges, each record takes the room its pages need (checked by
    /// `save`), and the GC tree about the room its records need, where full
    /// inline records would take several times more. Then the reader is gone
    /// and the records are consumed, written back under consumed keys and
    /// merged, also converging.
    #[test]
    fn pinned_reader_small_records() {
        for ps in [256usize, 512, 1024, 4096] {
            let (mut w, db) = setup(ps);
            for k in 0..200 {
                put(&mut w, db, k, 20);
            }
            let (last, _) = save(&mut w);
            commit(&mut w, last);
            let mut rng = Rng::new(ps as u64);
            let (mut splits, mut rounds_max, mut own_tail) = (0, 0, 0);
            for _ in 0..400 {
                w.detent = 0;
                assert!(!w.top_up(8).unwrap(), "nothing may be reclaimed");
                for _ in 0..1 + rng.below(4) {
                    put(&mut w, db, rng.below(200), 10 + rng.below(20) as usize);
                }
                let gc = w.tables[0].tree;
                let next = w.next;
                let (last, _, rounds) = save_rounds(&mut w);
                splits += usize::from(w.tables[0].tree.leaf_pages > gc.leaf_pages);
                own_tail += usize::from(w.next > next);
                rounds_max = rounds_max.max(rounds);
                commit(&mut w, last);
                check(&w);
            }
            let gc = w.tables[0].tree;
            let (_, inline_cap) = caps(ps);
            let node = |len: usize| NODESIZE + (8 + len).next_multiple_of(2) + 2;
            let payload: usize = record_sizes(&w).values().map(|&len| node(len)).sum();
            let room = |payload: usize| payload.div_ceil(ps - PAGEHDRSZ);
            let pages = (gc.branch_pages + gc.leaf_pages + gc.large_pages) as usize;
            let full_inline = room(gc.items as usize * node(4 * (inline_cap + 1)));
            // At 256-byte pages the records are nearly as long as inline
            // ones can be: less to gain.
            let gain = if ps == 256 { 1 } else { 2 };
            assert!(
                pages <= 2 * room(payload) + gc.height as usize && gain * pages < full_inline,
                "page size {ps}: the GC tree takes {pages} pages for {} records of {payload} bytes \
                 (full inline records: {full_inline} pages)",
                gc.items
            );
            // The GC's leaves split in its own updates, which took pages from
            // the tail; the slack for the copied path spared the round that
            // would have grown the record.
            assert!(splits > 0 && own_tail == 400, "page size {ps}: {splits} splits, {own_tail} from the tail");
            assert!(rounds_max <= 2, "page size {ps}: {rounds_max} rounds");
            // The reader is gone: the file stops growing.
            let next = w.next;
            for _ in 0..200 {
                w.detent = w.txnid - 1;
                w.top_up(40 + rng.below(30) as usize).unwrap();
                for _ in 0..rng.below(6) {
                    put(&mut w, db, rng.below(200), 10 + rng.below(20) as usize);
                }
                let (last, _) = save(&mut w);
                commit(&mut w, last);
                check(&w);
            }
            assert!(w.next <= next, "page size {ps}: the file grew from {next} to {} pages", w.next);
        }
    }
}

#[cfg(test)]
mod locality_tests {
    use super::{
        next_in_run, take_page, take_run, RunPool, GATHER_MIN_DIRTY, MIN_RUN, RUN_LIST_MAX, RUN_POOL_PER_DIRTY,
        TAIL_RUN_MIN_DIRTY,
    };
    use crate::error::Result;
    use crate::run_list::RunList;

    /// A write transaction's free pages, and GC records still to reclaim.
    #[derive(Default)]
    struct Pool {
        loose: Vec<u32>,
        reclaimed: RunList,
        run_next: u32,
        runs_scanned: usize,
        dirty: usize,
        first_unallocated: u32,
        now: u32,
        /// Records `reclaim_more` hands out, last first.
        gc: Vec<Vec<u32>>,
        reclaims: usize,
        /// Writes cost the same wherever the pages lie (tmpfs).
        free_writes: bool,
    }

    impl RunPool for Pool {
        fn free_lists(&mut self) -> (&mut Vec<u32>, &mut RunList) {
            (&mut self.loose, &mut self.reclaimed)
        }
        fn run_next(&self) -> u32 {
            self.run_next
        }
        fn runs_scanned(&mut self) -> &mut usize {
            &mut self.runs_scanned
        }
        fn dirty_pages(&self) -> usize {
            self.dirty
        }
        fn tail(&self) -> (u32, u32) {
            (self.first_unallocated, self.now)
        }
        fn take_tail(&mut self) -> Result<u32> {
            assert!(self.first_unallocated < self.now, "locality must not grow the file");
            self.first_unallocated += 1;
            Ok(self.first_unallocated - 1)
        }
        fn reclaim_more(&mut self) -> Result<bool> {
            let Some(rec) = self.gc.pop() else { return Ok(false) };
            self.reclaims += 1;
            self.reclaimed.extend(rec);
            Ok(true)
        }
        fn locality_pays(&self) -> bool {
            !self.free_writes
        }
    }

    /// Reclaimed pages listed descending.
    fn runs(pages: &[u32]) -> RunList {
        RunList::from_desc(pages)
    }

    /// Allocates `n` single pages the way `gc::alloc` does: the policy's
    /// page, else the lowest reclaimed one, else the tail.
    fn alloc_n(p: &mut Pool, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| {
                let pg = match next_in_run(p).unwrap() {
                    Some(pg) => pg,
                    None => p.reclaimed.pop_lowest().unwrap_or_else(|| {
                        p.first_unallocated += 1;
                        p.first_unallocated - 1
                    }),
                };
                p.run_next = pg + 1;
                p.dirty += 1;
                pg
            })
            .collect()
    }

    #[test]
    fn small_transactions_leave_runs_alone_where_writes_cost_the_same() {
        // Free: 40..=45 (a run of 6), 20, 10. Where locality gains nothing,
        // a small transaction's single pages take the lowest free pages and
        // leave the run to a large value's chunk; a larger transaction, or
        // one where locality pays, starts at the run.
        let pool = |free_writes, dirty| Pool {
            reclaimed: runs(&[45, 44, 43, 42, 41, 40, 20, 10]),
            first_unallocated: 100,
            now: 100,
            dirty,
            free_writes,
            ..Default::default()
        };
        assert_eq!(alloc_n(&mut pool(true, 0), 2), vec![10, 20]);
        assert_eq!(alloc_n(&mut pool(true, GATHER_MIN_DIRTY), 2), vec![40, 41]);
        assert_eq!(alloc_n(&mut pool(false, 0), 2), vec![40, 41]);
    }

    #[test]
    fn follows_the_longest_run_before_scattered_pages() {
        // Free: 40..=45 (a run of 6), 30..=31, 20, 10; a small transaction.
        let mut p = Pool {
            reclaimed: runs(&[45, 44, 43, 42, 41, 40, 31, 30, 20, 10]),
            first_unallocated: 100,
            now: 100,
            ..Default::default()
        };
        assert_eq!(alloc_n(&mut p, 6), vec![40, 41, 42, 43, 44, 45]);
        // No run of MIN_RUN left and no room in the file: lowest page first,
        // then its neighbour.
        assert_eq!(alloc_n(&mut p, 3), vec![10, 20, 30]);
        assert_eq!(alloc_n(&mut p, 1), vec![31]);
    }

    #[test]
    fn loose_pages_join_the_runs() {
        let mut p = Pool {
            loose: vec![13, 12],
            reclaimed: runs(&[11, 10, 3]),
            now: 50,
            first_unallocated: 50,
            ..Default::default()
        };
        assert_eq!(alloc_n(&mut p, 4), vec![10, 11, 12, 13]);
        assert!(p.loose.is_empty());
    }

    #[test]
    fn gathers_gc_records_until_a_run_appears_within_the_pool_limit() {
        // Each record alone is scattered; together 60..=63 is a run.
        let mut p = Pool {
            reclaimed: runs(&[5]),
            gc: vec![vec![63, 61, 7], vec![62, 60, 9]],
            dirty: GATHER_MIN_DIRTY,
            first_unallocated: 100,
            now: 100,
            ..Default::default()
        };
        assert_eq!(alloc_n(&mut p, MIN_RUN), vec![60, 61, 62, 63]);
        assert_eq!(p.reclaims, 2);
        // A pool already as large as the limit reclaims nothing more.
        let limit = (GATHER_MIN_DIRTY + 1) * RUN_POOL_PER_DIRTY;
        let big: Vec<u32> = (0..limit as u32).map(|i| 1000 - 2 * i).collect();
        let mut p = Pool {
            reclaimed: runs(&big),
            gc: vec![vec![1, 2, 3, 4]],
            dirty: GATHER_MIN_DIRTY,
            first_unallocated: 2000,
            now: 2000,
            ..Default::default()
        };
        alloc_n(&mut p, 1);
        assert_eq!(p.reclaims, 0, "a transaction of {GATHER_MIN_DIRTY} dirty pages may pool {limit} pages");
    }

    /// A transaction of few dirty pages consumes no GC record to find runs:
    /// it writes few extents anyway, and a record consumed costs its
    /// parsing and its leftovers written back.
    #[test]
    fn small_transactions_gather_no_records() {
        let mut p = Pool {
            reclaimed: runs(&[30, 20, 10, 5]),
            gc: vec![vec![63, 61, 7], vec![62, 60, 9]],
            dirty: GATHER_MIN_DIRTY - 4,
            first_unallocated: 100,
            now: 100,
            ..Default::default()
        };
        assert_eq!(alloc_n(&mut p, 4), vec![5, 10, 20, 30]);
        assert_eq!(p.reclaims, 0);
    }

    #[test]
    fn big_transactions_take_room_inside_the_file_never_beyond() {
        let scattered: Vec<u32> = (0..50).map(|i| 500 - 3 * i).collect();
        let mut p = Pool {
            reclaimed: runs(&scattered),
            dirty: TAIL_RUN_MIN_DIRTY,
            first_unallocated: 600,
            now: 604,
            ..Default::default()
        };
        // Four pages of room: a run from the tail, then scattered pages (the
        // pool's lowest) once the room is used up.
        assert_eq!(alloc_n(&mut p, 6), vec![600, 601, 602, 603, 353, 356]);
        // A small transaction with the same pool leaves the tail alone.
        let mut p = Pool { reclaimed: runs(&scattered), first_unallocated: 600, now: 604, ..Default::default() };
        assert_eq!(alloc_n(&mut p, 2), vec![353, 356]);
        assert_eq!(p.first_unallocated, 600);
    }

    #[test]
    fn long_lists_are_used_lowest_first() {
        let long: Vec<u32> = (0..RUN_LIST_MAX as u32 + 10).rev().map(|i| 10 + 2 * i).collect();
        let mut run = vec![9003, 9002, 9001, 9000];
        run.extend(long);
        let mut p = Pool { reclaimed: runs(&run), first_unallocated: 20000, now: 20000, ..Default::default() };
        assert_eq!(alloc_n(&mut p, 2), vec![10, 12], "no search for the run 9000..=9003 in a long list");
    }

    #[test]
    fn take_page_removes_only_what_is_there() {
        let mut list = vec![13, 12, 9, 7];
        assert!(take_page(&mut list, 9));
        assert!(!take_page(&mut list, 9));
        assert!(!take_page(&mut list, 10));
        assert!(take_page(&mut list, 13));
        assert!(take_page(&mut list, 7));
        assert_eq!(list, vec![12]);
    }

    #[test]
    fn take_run_takes_the_top_of_the_highest_run_that_fits() {
        // One page: the lowest.
        let mut list = vec![9, 7, 6, 5];
        assert_eq!(take_run(&mut list, 1), Some(5));
        assert_eq!(list, vec![9, 7, 6]);
        // A list that is exactly the run.
        let mut list = vec![12, 11, 10];
        assert_eq!(take_run(&mut list, 3), Some(10));
        assert!(list.is_empty());
        // The top `n` pages of the highest run of `n` or more.
        let mut list = vec![20, 19, 18, 15, 14, 13, 12, 3];
        assert_eq!(take_run(&mut list, 2), Some(19));
        assert_eq!(list, vec![18, 15, 14, 13, 12, 3]);
        assert_eq!(take_run(&mut list, 3), Some(13));
        assert_eq!(list, vec![18, 12, 3]);
        // None, the list unchanged: no run that long, or too few pages.
        assert_eq!(take_run(&mut list, 2), None);
        assert_eq!(take_run(&mut list, 4), None);
        assert_eq!(list, vec![18, 12, 3]);
    }
}

/// The run tests of a chunk's search against their definitions.
#[cfg(test)]
mod run_search_tests {
    use proptest::prelude::*;

    use super::{has_run_desc, lowest_run_desc};

    /// The longest run of consecutive pages in a descending list, counted.
    fn longest(pages: &[u32]) -> usize {
        let (mut best, mut cur) = (usize::from(!pages.is_empty()), 1);
        for w in pages.windows(2) {
            cur = if w[0] == w[1] + 1 { cur + 1 } else { 1 };
            best = best.max(cur);
        }
        best
    }

    /// The lowest run of `run` pages, by trying every start.
    fn lowest(pages: &[u32], run: usize) -> Option<usize> {
        (0..pages.len())
            .rev()
            .find(|&i| i + run <= pages.len() && (0..run).all(|j| pages[i + j] == pages[i] - j as u32))
    }

    /// Distinct pages sorted descending, in runs of random lengths and gaps.
    fn desc_pages() -> impl Strategy<Value = Vec<u32>> {
        prop::collection::vec((1u32..10, 1u32..4), 0..40).prop_map(|segs| {
            let mut v = Vec::new();
            let mut p = 1u32 << 20;
            for (len, gap) in segs {
                for _ in 0..len {
                    v.push(p);
                    p -= 1;
                }
                p -= gap;
            }
            v
        })
    }

    proptest! {
        #[test]
        fn agree_with_their_definitions(pages in desc_pages(), run in 1usize..10) {
            prop_assert_eq!(has_run_desc(&pages, run), longest(&pages) >= run);
            prop_assert_eq!(lowest_run_desc(&pages, run), lowest(&pages, run));
        }
    }

    #[test]
    fn edges() {
        assert!(has_run_desc(&[], 0));
        assert!(!has_run_desc(&[], 1) && !has_run_desc(&[], 2));
        assert!(has_run_desc(&[7], 1) && !has_run_desc(&[7], 2));
        assert_eq!(lowest_run_desc(&[], 1), None);
        assert_eq!(lowest_run_desc(&[9, 8, 5], 2), Some(0));
        // A run that ends exactly at the end of a block of the search.
        let pages: Vec<u32> = (1..=100u32).rev().map(|p| p * 3).chain([1, 0]).collect();
        assert_eq!(lowest_run_desc(&pages, 2), Some(100));
        assert!(has_run_desc(&pages, 2) && !has_run_desc(&pages, 3));
    }
}

/// The locality policy as it was on plain descending lists before the
/// reclaimed pages became a [`RunList`] (verbatim but for the names), and a
/// property test that both choose the same pages.
#[cfg(test)]
mod vec_policy_tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::{
        next_in_run, tail_room, take_page, take_reclaimed, take_run, RunPool, GATHER_MIN_DIRTY, MIN_RUN, RUN_LIST_MAX,
        RUN_POOL_PER_DIRTY,
    };
    use crate::error::Result;
    use crate::run_list::tests::{longest_in_vec, take_fit_in_vec};
    use crate::run_list::RunList;

    /// `RunPool` with the reclaimed pages as a plain list.
    trait VecRunPool {
        fn free_lists(&mut self) -> (&mut Vec<u32>, &mut Vec<u32>);
        fn run_next(&self) -> u32;
        fn runs_scanned(&mut self) -> &mut usize;
        fn dirty_pages(&self) -> usize;
        fn tail(&self) -> (u32, u32);
        fn take_tail(&mut self) -> Result<u32>;
        fn reclaim_more(&mut self) -> Result<bool>;
    }

    fn vec_next_in_run<P: VecRunPool + ?Sized>(p: &mut P) -> Result<Option<u32>> {
        let want = p.run_next();
        let (loose, reclaimed) = p.free_lists();
        let short = reclaimed.len() + loose.len() <= RUN_LIST_MAX;
        if want != 0 {
            if short && (take_page(loose, want) || take_page(reclaimed, want)) {
                return Ok(Some(want));
            }
            if want == p.tail().0 && vec_tail_run_allowed(p) {
                return p.take_tail().map(Some);
            }
        }
        if !short {
            return Ok(None);
        }
        let (loose, reclaimed) = p.free_lists();
        if !loose.is_empty() {
            reclaimed.append(loose);
            reclaimed.sort_unstable_by(|a, b| b.cmp(a));
        }
        let pool_limit = ((p.dirty_pages() + 1) * RUN_POOL_PER_DIRTY).min(RUN_LIST_MAX);
        loop {
            let scanned = *p.runs_scanned();
            let reclaimed = p.free_lists().1;
            let pooled = reclaimed.len();
            if pooled > scanned {
                let (at, len) = longest_in_vec(reclaimed);
                if len >= MIN_RUN {
                    return Ok(Some(reclaimed.remove(at)));
                }
                *p.runs_scanned() = pooled;
            }
            if pooled >= pool_limit || p.dirty_pages() < GATHER_MIN_DIRTY || !p.reclaim_more()? {
                break;
            }
        }
        if vec_tail_run_allowed(p) {
            return p.take_tail().map(Some);
        }
        Ok(None)
    }

    fn vec_tail_run_allowed<P: VecRunPool + ?Sized>(p: &P) -> bool {
        tail_room(p.dirty_pages(), p.tail())
    }

    /// A write transaction as the allocator sees it: free pages, GC records
    /// still to reclaim (last first), the tail; `R` is the reclaimed list.
    #[derive(Clone, Debug, Default, PartialEq)]
    struct Sim<R> {
        loose: Vec<u32>,
        reclaimed: R,
        run_next: u32,
        runs_scanned: usize,
        dirty: usize,
        first_unallocated: u32,
        now: u32,
        gc: Vec<Vec<u32>>,
        reclaims: usize,
    }

    /// What differs between the two lists.
    trait Reclaimed: Default {
        fn next_in_run(s: &mut Sim<Self>) -> Option<u32>;
        fn take(&mut self, n: usize) -> Option<u32>;
        fn add(&mut self, pages: Vec<u32>);
        fn touching(&self, end: u32, n: usize) -> usize;
        fn drain_top(&mut self, k: usize);
        fn pages(&self) -> Vec<u32>;
    }

    impl Reclaimed for Vec<u32> {
        fn next_in_run(s: &mut Sim<Self>) -> Option<u32> {
            vec_next_in_run(s).unwrap()
        }
        fn take(&mut self, n: usize) -> Option<u32> {
            if n == 1 {
                take_run(self, n)
            } else {
                take_fit_in_vec(self, n)
            }
        }
        fn add(&mut self, pages: Vec<u32>) {
            self.extend(pages);
            self.sort_unstable_by(|a, b| b.cmp(a));
        }
        fn touching(&self, end: u32, n: usize) -> usize {
            (0..n.min(self.len())).take_while(|&i| self[i] == end - 1 - i as u32).count()
        }
        fn drain_top(&mut self, k: usize) {
            self.drain(..k);
        }
        fn pages(&self) -> Vec<u32> {
            self.clone()
        }
    }

    impl Reclaimed for RunList {
        fn next_in_run(s: &mut Sim<Self>) -> Option<u32> {
            next_in_run(s).unwrap()
        }
        fn take(&mut self, n: usize) -> Option<u32> {
            take_reclaimed(self, n)
        }
        fn add(&mut self, pages: Vec<u32>) {
            self.extend(pages);
        }
        fn touching(&self, end: u32, n: usize) -> usize {
            RunList::touching(self, end, n)
        }
        fn drain_top(&mut self, k: usize) {
            RunList::drain_top(self, k)
        }
        fn pages(&self) -> Vec<u32> {
            self.to_vec()
        }
    }

    impl<R: Reclaimed> Sim<R> {
        fn take_tail_page(&mut self) -> u32 {
            assert!(self.first_unallocated < self.now, "locality must not grow the file");
            self.first_unallocated += 1;
            self.first_unallocated - 1
        }

        fn reclaim(&mut self) -> bool {
            let Some(rec) = self.gc.pop() else { return false };
            self.reclaims += 1;
            self.reclaimed.add(rec);
            true
        }

        /// `gc::alloc` without syncs, sweeps and kicks: the policy for one
        /// page, else loose pages, reclaimed ones (reclaiming more), the
        /// tail (growing the file by 32 pages at a time).
        fn alloc(&mut self, n: usize) -> u32 {
            let found = if n == 1 { R::next_in_run(self) } else { None };
            let p = found.unwrap_or_else(|| self.alloc_any(n));
            self.run_next = p + n as u32;
            self.dirty += 1;
            p
        }

        fn alloc_any(&mut self, n: usize) -> u32 {
            if let Some(p) = take_run(&mut self.loose, n) {
                return p;
            }
            if n > 1 && !self.loose.is_empty() {
                let loose = std::mem::take(&mut self.loose);
                self.reclaimed.add(loose);
            }
            loop {
                if let Some(p) = self.reclaimed.take(n) {
                    return p;
                }
                if !self.reclaim() {
                    break;
                }
            }
            // `alloc_tail`: free pages right below the tail start the run.
            let fu = self.first_unallocated;
            let touching =
                |list: &Vec<u32>| (0..n.min(list.len())).take_while(|&i| list[i] == fu - 1 - i as u32).count();
            let (from_loose, below) = match (touching(&self.loose), self.reclaimed.touching(fu, n)) {
                (l, r) if l >= r => (true, l),
                (_, r) => (false, r),
            };
            if from_loose {
                self.loose.drain(..below);
            } else {
                self.reclaimed.drain_top(below);
            }
            let start = fu - below as u32;
            let end = start + n as u32;
            self.now = self.now.max(end.next_multiple_of(32));
            self.first_unallocated = end.max(fu);
            start
        }

        /// Everything that decides the next choices, with the reclaimed
        /// pages as a plain list.
        fn state(&self) -> Sim<Vec<u32>> {
            Sim {
                loose: self.loose.clone(),
                reclaimed: self.reclaimed.pages(),
                run_next: self.run_next,
                runs_scanned: self.runs_scanned,
                dirty: self.dirty,
                first_unallocated: self.first_unallocated,
                now: self.now,
                gc: self.gc.clone(),
                reclaims: self.reclaims,
            }
        }
    }

    /// The simulation behind both allocators' traits: the reference one
    /// over a plain list (`VecRunPool`) and the real one over runs.
    macro_rules! sim_pool {
        ($pool:ident, $list:ty) => {
            impl $pool for Sim<$list> {
                fn free_lists(&mut self) -> (&mut Vec<u32>, &mut $list) {
                    (&mut self.loose, &mut self.reclaimed)
                }
                fn run_next(&self) -> u32 {
                    self.run_next
                }
                fn runs_scanned(&mut self) -> &mut usize {
                    &mut self.runs_scanned
                }
                fn dirty_pages(&self) -> usize {
                    self.dirty
                }
                fn tail(&self) -> (u32, u32) {
                    (self.first_unallocated, self.now)
                }
                fn take_tail(&mut self) -> Result<u32> {
                    Ok(self.take_tail_page())
                }
                fn reclaim_more(&mut self) -> Result<bool> {
                    Ok(self.reclaim())
                }
            }
        };
    }
    sim_pool!(VecRunPool, Vec<u32>);
    sim_pool!(RunPool, RunList);

    #[derive(Clone, Debug)]
    enum Op {
        /// Allocates this many contiguous pages.
        Alloc(usize),
        /// Frees a page this transaction allocated (picked by the number).
        Free(usize),
        /// Commits: the free pages and some pages this transaction
        /// allocated (picked by the numbers) become GC records; a new
        /// transaction begins.
        Commit(Vec<usize>),
    }

    /// A file: runs of pages in use (kinds 0 to 3), reclaimed (4 to 7), or
    /// in one of four GC records (8 to 11), from the lowest page up.
    fn sims(segments: &[(u32, u8)], room: u32) -> (Sim<Vec<u32>>, Sim<RunList>) {
        let mut reclaimed = Vec::new();
        let mut gc = vec![Vec::new(); 4];
        let mut next = crate::format::NUM_METAS;
        for &(len, kind) in segments {
            let pages = next..next + len;
            match kind {
                0..=3 => {}
                4..=7 => reclaimed.extend(pages),
                k => gc[k as usize - 8].extend(pages),
            }
            next += len;
        }
        reclaimed.sort_unstable_by(|a, b| b.cmp(a));
        for r in &mut gc {
            r.sort_unstable_by(|a, b| b.cmp(a));
        }
        gc.retain(|r| !r.is_empty());
        let old = Sim {
            reclaimed: reclaimed.clone(),
            first_unallocated: next,
            now: next + room,
            gc: gc.clone(),
            ..Default::default()
        };
        let new = Sim {
            reclaimed: RunList::from_desc(&reclaimed),
            first_unallocated: next,
            now: next + room,
            gc,
            ..Default::default()
        };
        (old, new)
    }

    /// How often each way of choosing a page was taken.
    #[derive(Debug, Default)]
    struct Seen {
        /// The page after the last one allocated.
        follows: usize,
        /// The start of the longest run.
        run_starts: usize,
        /// The tail while free pages remain (a big transaction).
        tails: usize,
        /// No run: the lowest free page (or the tail).
        fallbacks: usize,
        /// Allocations with more than `RUN_LIST_MAX` free pages.
        long_lists: usize,
        /// Allocations where the scan found no run
        /// (`runs_scanned` was set).
        no_run: usize,
    }

    /// Runs `ops` on both lists from the layout: the same page every time,
    /// and the same state after every step.
    fn same_choices(segments: &[(u32, u8)], room: u32, ops: Vec<Op>) -> std::result::Result<Seen, TestCaseError> {
        let (mut old, mut new) = sims(segments, room);
        let mut allocated: Vec<u32> = Vec::new();
        let mut in_use: BTreeSet<u32> = BTreeSet::new();
        let mut seen = Seen::default();
        for op in ops {
            match op {
                Op::Alloc(n) => {
                    let (want, tail) = (old.run_next, old.first_unallocated);
                    seen.long_lists += usize::from(old.reclaimed.len() + old.loose.len() > RUN_LIST_MAX);
                    let found = if n == 1 { vec_next_in_run(&mut old.clone()).unwrap() } else { None };
                    let scanned = old.runs_scanned;
                    let p = old.alloc(n);
                    prop_assert_eq!(new.alloc(n), p);
                    match found {
                        Some(p) if p == want => seen.follows += 1,
                        Some(p) if p == tail => seen.tails += 1,
                        Some(_) => seen.run_starts += 1,
                        None => seen.fallbacks += 1,
                    }
                    seen.no_run += usize::from(old.runs_scanned != scanned);
                    for q in p..p + n as u32 {
                        prop_assert!(in_use.insert(q), "page {} allocated twice", q);
                    }
                    if n == 1 {
                        allocated.push(p);
                    }
                }
                Op::Free(i) if !allocated.is_empty() => {
                    let p = allocated.swap_remove(i % allocated.len());
                    in_use.remove(&p);
                    for s in [&mut old.loose, &mut new.loose] {
                        s.push(p);
                        s.sort_unstable_by(|a, b| b.cmp(a));
                    }
                }
                Op::Free(_) => {}
                Op::Commit(picks) => {
                    let mut retired = Vec::new();
                    for i in picks {
                        if !allocated.is_empty() {
                            let p = allocated.swap_remove(i % allocated.len());
                            in_use.remove(&p);
                            retired.push(p);
                        }
                    }
                    retired.sort_unstable_by(|a, b| b.cmp(a));
                    let mut free = std::mem::take(&mut old.loose);
                    free.extend(std::mem::take(&mut old.reclaimed));
                    free.sort_unstable_by(|a, b| b.cmp(a));
                    new.loose.clear();
                    new.reclaimed = RunList::default();
                    for s in [&mut old.gc, &mut new.gc] {
                        s.insert(0, free.clone());
                        s.push(retired.clone());
                        s.retain(|r| !r.is_empty());
                    }
                    allocated.clear();
                    (old.run_next, old.runs_scanned, old.dirty) = (0, 0, 0);
                    (new.run_next, new.runs_scanned, new.dirty) = (0, 0, 0);
                }
            }
            prop_assert_eq!(new.state(), old.state());
        }
        Ok(seen)
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            40 => Just(Op::Alloc(1)),
            1 => (2usize..6).prop_map(Op::Alloc),
            6 => any::<usize>().prop_map(Op::Free),
            1 => prop::collection::vec(any::<usize>(), 0..60).prop_map(Op::Commit),
        ]
    }

    /// Segments of up to `max` pages (1 to 12) and up to 1,200 of them;
    /// room after the last page.
    fn layout() -> impl Strategy<Value = (Vec<(u32, u8)>, u32)> {
        let segments = (1u32..13).prop_flat_map(|max| prop::collection::vec((1..=max, 0u8..12), 1..1200));
        (segments, 0u32..64)
    }

    proptest! {
        /// Random transactions allocating single pages (and sometimes
        /// several), freeing some and committing: the run list chooses the
        /// same pages as the plain list, and is left with the same pages
        /// and state after every step.
        #[test]
        fn same_pages_as_the_plain_list((segments, room) in layout(), ops in prop::collection::vec(op(), 1..600)) {
            same_choices(&segments, room, ops)?;
        }
    }

    /// The same on seeded layouts and operations, which take every way of
    /// choosing a page, on short lists and on lists over `RUN_LIST_MAX`.
    #[test]
    fn same_pages_in_every_branch() {
        let mut total = Seen::default();
        for seed in 0..40 {
            let mut rng = crate::btree::mem::Rng::new(seed);
            let max = 1 + rng.below(12) as u32;
            let segments: Vec<(u32, u8)> =
                (0..rng.below(1500)).map(|_| (1 + rng.below(max as u64) as u32, rng.below(12) as u8)).collect();
            let ops: Vec<Op> = (0..2000)
                .map(|_| match rng.below(48) {
                    0 => Op::Commit((0..rng.below(60)).map(|_| rng.next() as usize).collect()),
                    1 => Op::Alloc(2 + rng.below(4) as usize),
                    2..=7 => Op::Free(rng.next() as usize),
                    _ => Op::Alloc(1),
                })
                .collect();
            let seen = same_choices(&segments, rng.below(64) as u32, ops).unwrap();
            total.follows += seen.follows;
            total.run_starts += seen.run_starts;
            total.tails += seen.tails;
            total.fallbacks += seen.fallbacks;
            total.long_lists += seen.long_lists;
            total.no_run += seen.no_run;
        }
        let Seen { follows, run_starts, tails, fallbacks, long_lists, no_run } = total;
        assert!([follows, run_starts, tails, fallbacks, long_lists, no_run].iter().all(|&n| n > 100), "{total:?}");
    }
}

#[cfg(test)]
mod reclaim_tests {
    use super::{newest_reclaimable, reclaim_one};
    use crate::btree::write::{self, Path, Val};
    use crate::flags::PutFlags;
    use crate::format::page::Page;
    use crate::txn::{Db, RwTxn};
    use crate::{Env, Geometry};

    /// The newest key at or below `detent` not in `consumed`, by a full
    /// cursor walk.
    fn by_scan(txn: &RwTxn<'_>, detent: u64, consumed: &[u64]) -> Option<u64> {
        let mut c = txn.cursor(Db::GC).unwrap();
        let mut best = None;
        let mut rec = c.first().unwrap();
        while let Some((k, _)) = rec {
            let k = u64::from_le_bytes(k.try_into().unwrap());
            if k <= detent && !consumed.contains(&k) {
                best = Some(k);
            }
            rec = c.next().unwrap();
        }
        best
    }

    /// `newest_reclaimable` (one descent, with a cursor walking back
    /// behind it only where the record is in an earlier leaf or consumed)
    /// finds what a full walk finds, for every detent, with and without
    /// consumed keys, on a GC tree of many leaves; its path leads to the
    /// record, and deleting there (`del_at`, as `reclaim_one` does) removes
    /// that record only.
    #[test]
    fn newest_reclaimable_agrees_with_a_full_walk() {
        let d = tempfile::tempdir().unwrap();
        let env =
            Env::builder().geometry(Geometry { page_size: Some(256), ..Default::default() }).open(d.path()).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        // Records under every third key from 10, each listing page 3.
        let keys: Vec<u64> = (10..400).step_by(3).collect();
        let value = crate::format::pnl::encode(&[3], 16);
        for &k in &keys {
            write::put(&mut txn, Db::GC, &k.to_le_bytes(), Val::Bytes(&value), PutFlags::empty(), 0).unwrap();
        }
        let gc = txn.table(Db::GC).unwrap();
        assert!(gc.tree.height >= 3, "a GC tree of {} levels", gc.tree.height);
        // The branch keys of the leaves one less than their first keys, as
        // a tree whose leaves lost their first records may have them (libmdbx
        // leaves such keys): a descent to that key lands before the first
        // record of a leaf, and the record sought is in the leaf before.
        lower_leaf_separators(&mut txn, gc.tree.root, gc.tree.height);
        // Consumed: none, then every other key of a stretch (the first key
        // of some leaves among them), then a stretch at the start.
        let consumed_sets: [Vec<u64>; 3] = [
            vec![],
            keys.iter().copied().filter(|k| (100..300).contains(k) && k % 2 == 0).collect(),
            keys[..20].to_vec(),
        ];
        let (mut earlier_leaf, mut landed_first, mut behind_consumed) = (0, 0, 0);
        for consumed in &consumed_sets {
            txn.st.consumed = consumed.clone();
            for detent in 0..420u64 {
                let (mut path, mut pages) = (Path::new(), Vec::new());
                let got = newest_reclaimable(&txn, detent, &gc, &mut path, &mut pages).unwrap().map(|(k, _)| k);
                let want = by_scan(&txn, detent, consumed);
                assert_eq!(got, want, "detent {detent}, consumed {consumed:?}");
                let Some(k) = got else { continue };
                assert_eq!(pages, [3]);
                let (lpg, idx) = path.at(path.leaf());
                let leaf = Page { buf: txn.pages().get(lpg).unwrap() };
                assert_eq!(crate::btree::key_at(leaf, idx, lpg).unwrap(), k.to_le_bytes());
                // Which way it was found: where one descent to `detent`
                // lands, the record at or just before it, or not there.
                let mut first = Path::new();
                let exact = write::find_path(&txn, &gc.tree, &detent.to_le_bytes(), gc.cmp, &mut first).unwrap();
                let (fpg, fidx) = first.at(first.leaf());
                if fpg != lpg {
                    earlier_leaf += 1;
                    landed_first += usize::from(fidx == 0 && !exact);
                } else if fidx != idx + usize::from(!exact) {
                    behind_consumed += 1;
                }
            }
        }
        assert!(
            landed_first > 0 && behind_consumed > 0,
            "{earlier_leaf} in an earlier leaf ({landed_first} from a leaf's start), {behind_consumed} behind consumed keys"
        );
        // Deleting where the search led removes that record only.
        txn.st.consumed.clear();
        let mut left = keys.clone();
        for detent in [399u64, 200, 201, 11, 10, 9, 250] {
            let (mut path, mut pages) = (Path::new(), Vec::new());
            let Some((k, _)) = newest_reclaimable(&txn, detent, &gc_now(&txn), &mut path, &mut pages).unwrap() else {
                assert!(left.iter().all(|&x| x > detent));
                continue;
            };
            let tree = gc_now(&txn).tree;
            write::del_at(&mut txn, Db::GC, tree, &mut path).unwrap();
            left.retain(|&x| x != k);
            let mut c = txn.cursor(Db::GC).unwrap();
            let mut all = Vec::new();
            let mut rec = c.first().unwrap();
            while let Some((k, _)) = rec {
                all.push(u64::from_le_bytes(k.try_into().unwrap()));
                rec = c.next().unwrap();
            }
            assert_eq!(all, left, "after taking {k} (detent {detent})");
        }
    }

    /// Lowers by one the key of every branch entry but the first that
    /// points at a leaf (the tree's pages are dirty in `txn`).
    fn lower_leaf_separators(txn: &mut RwTxn<'_>, pgno: u32, height: u16) {
        let children: Vec<u32> = {
            let page = Page { buf: txn.pages().get(pgno).unwrap() };
            (0..page.num_entries()).map(|i| crate::btree::child_at(page, i, pgno).unwrap()).collect()
        };
        if height > 2 {
            for c in children {
                lower_leaf_separators(txn, c, height - 1);
            }
            return;
        }
        let buf = txn.dirty_mut(pgno);
        for i in 1..children.len() {
            let at = crate::format::PAGEHDRSZ + Page { buf: &*buf }.entry(i) + crate::format::NODESIZE;
            let k = u64::from_le_bytes(buf[at..at + 8].try_into().unwrap());
            buf[at..at + 8].copy_from_slice(&(k - 1).to_le_bytes());
        }
    }

    /// The GC records: key, and the pages each lists and where its value
    /// lies in the map (a record rewritten moves: its leaf is copied).
    fn gc_records(env: &Env) -> std::collections::BTreeMap<u64, (usize, usize)> {
        let txn = env.begin_ro_txn().unwrap();
        let mut c = txn.cursor(Db::GC).unwrap();
        let mut out = std::collections::BTreeMap::new();
        let mut rec = c.first().unwrap();
        while let Some((k, v)) = rec {
            let pages = crate::format::pnl::Pnl::new(v).unwrap().len();
            out.insert(u64::from_le_bytes(k.try_into().unwrap()), (pages, v.as_ptr() as usize));
            rec = c.next().unwrap();
        }
        out
    }

    /// The GC records: key and the pages each lists.
    fn gc_record_sizes(env: &Env) -> std::collections::BTreeMap<u64, usize> {
        gc_records(env).into_iter().map(|(k, (n, _))| (k, n)).collect()
    }

    /// The GC record that lists the most pages: (key, pages, where its
    /// value lies).
    fn biggest_record(env: &Env) -> (u64, usize, usize) {
        let (k, (n, at)) = gc_records(env).into_iter().max_by_key(|r| r.1 .0).expect("a GC record");
        (k, n, at)
    }

    /// Puts `keys` with `[v; 100]` values into the main table in one
    /// transaction.
    fn put_each(env: &Env, keys: std::ops::Range<u32>, v: u8) {
        let mut txn = env.begin_rw_txn().unwrap();
        for k in keys {
            txn.put(Db::MAIN, &k.to_be_bytes(), &[v; 100], PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    }

    /// The checker finds no problem.
    fn assert_sound(env: &Env) {
        let report = env.check(&Default::default(), &mut |_| {}).unwrap();
        assert_eq!(report.problem_count(), 0, "{report:?}");
    }

    /// After a batch that retired a thousand pages in one GC record, small
    /// commits take a few pages of that record and leave the rest where it
    /// is: the record is not rewritten by each of them (consuming it whole,
    /// each one-put commit wrote almost all of it back, at three times the
    /// cost of the commit). Its pages still get used, and the file does not
    /// grow for them.
    #[test]
    fn small_commits_take_part_of_a_big_record() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().durability(crate::Durability::SafeNoSync).open(d.path()).unwrap();
        let put = |keys, v| put_each(&env, keys, v);
        put(0..40_000, 1);
        // Every record overwritten: the batch retires the whole tree.
        put(0..40_000, 2);
        put(40_000..40_001, 3);
        let (key, pages, at) = biggest_record(&env);
        assert!(pages > 500, "the batch left a record of {pages} pages");
        let used = env.info().unwrap().first_unallocated;
        for i in 0..50u32 {
            put(50_000 + i..50_001 + i, 4);
        }
        let (key2, pages2, at2) = biggest_record(&env);
        assert_eq!((key2, at2), (key, at), "the big record was rewritten ({pages} -> {pages2} pages)");
        assert!(pages2 <= pages, "{pages} -> {pages2} pages");
        assert!(env.info().unwrap().first_unallocated <= used, "the file grew while free pages were listed");
        assert_sound(&env);
    }

    /// Small commits after a batch: each consumes only its predecessor's
    /// record, which lists the pages that commit retired and the leftovers
    /// it folded in (`fold_pages`), enough for the next one. Every other
    /// record stays as it is. (Writing the leftovers back under the
    /// consumed keys, each one-put commit consumed and rewrote a second
    /// record of tens of pages.) While a reader holds a snapshot, only the
    /// first commit after it may fold: the file grows by at most what the
    /// commits retired, and one fold. (Measured there: 74 pages without the
    /// fold, 85 with it.)
    #[test]
    fn small_commits_fold_their_leftovers() {
        let d = tempfile::tempdir().unwrap();
        // Durable: every commit is steady, so the newest record may be
        // reclaimed by the next commit (in a lazy mode only up to the last
        // steady one, and then there is nothing to fold).
        let env = Env::builder().durability(crate::Durability::SyncDurable).open(d.path()).unwrap();
        let put = |keys, v| put_each(&env, keys, v);
        put(0..40_000, 1);
        for b in 0..10 {
            put(b * 4_000..(b + 1) * 4_000, 2);
        }
        for i in 0..10 {
            put(50_000 + i..50_001 + i, 3);
        }
        let fold = {
            let txn = env.begin_rw_txn().unwrap();
            super::fold_pages(&txn)
        };
        for i in 0..40 {
            let before = gc_record_sizes(&env);
            let last = env.info().unwrap().last_txnid;
            put(60_000 + i..60_001 + i, 4);
            let mut after = gc_record_sizes(&env);
            let own = after.remove(&(last + 1)).expect("the commit's own record");
            let mut rest = before.clone();
            let prev = rest.remove(&last);
            assert_eq!(after, rest, "commit {i} changed records other than its predecessor's ({before:?})");
            assert!(prev.is_some_and(|n| n <= 16 + fold) && own <= 16 + fold, "commit {i}: {prev:?} -> {own} pages");
        }
        // A reader on the base snapshot: the next commit may fold (the
        // reader keeps those pages until it ends), later ones may not.
        let reader = env.begin_ro_txn().unwrap();
        let start = env.info().unwrap();
        for i in 0..40 {
            put(70_000 + i..70_001 + i, 5);
        }
        let end = env.info().unwrap();
        drop(reader);
        // The reader keeps what these commits retired, and one fold.
        let grown = end.first_unallocated - start.first_unallocated;
        let retired = end.pages_retired - start.pages_retired;
        assert!(grown <= retired + fold as u64, "the file grew by {grown} pages, {retired} retired");
        assert_sound(&env);
    }

    thread_local! {
        /// GC updates `settle_renamed` settled in one step, in this thread.
        pub(super) static SETTLED_RENAMED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        /// Reclaims of the last commit's own record from the writer's copy
        /// (`OwnRecord`), in this thread.
        pub(super) static OWN_RECORD_HITS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// The usual small commit (one put, after one like it) renames the
    /// record it consumed and settles its GC update in one step, without
    /// the planning loop; the checker stays clean, and the debug build
    /// compares each such step with the plan the loop would make.
    #[test]
    fn small_commits_settle_their_gc_update_in_one_step() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().durability(crate::Durability::SyncDurable).open(d.path()).unwrap();
        put_each(&env, 0..2_000, 1);
        put_each(&env, 5_000..5_001, 2);
        let before = SETTLED_RENAMED.with(|c| c.get());
        for i in 0..30 {
            put_each(&env, i * 7..i * 7 + 1, 3);
        }
        assert_eq!(SETTLED_RENAMED.with(|c| c.get()) - before, 30);
        assert_sound(&env);
    }

    /// The usual small commit reclaims its predecessor's own record from the
    /// writer's copy (`OwnRecord`), which debug builds compare with what the
    /// GC holds. A commit of another process on the file in between (a new
    /// txnid) makes the next one search the GC, an aborted transaction
    /// leaves the copy as it was, and a reader that pins the record keeps
    /// the copy unused; the checker stays clean.
    #[test]
    fn small_commits_reclaim_the_last_own_record_from_the_writers_copy() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().durability(crate::Durability::SyncDurable).open(d.path()).unwrap();
        let hits = || OWN_RECORD_HITS.with(|c| c.get());
        put_each(&env, 0..2_000, 1);
        put_each(&env, 5_000..5_001, 2);
        let before = hits();
        for i in 0..30 {
            put_each(&env, i * 7..i * 7 + 1, 3);
        }
        assert!(hits() - before >= 29, "{} of 30 small commits reclaimed from the copy", hits() - before);
        // Another process commits on the file: its txnid is new.
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "gc::reclaim_tests::child_commit", "--nocapture", "--test-threads=1"])
            .env("RDBX_GC_CHILD_COMMIT", d.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "child: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"), "the child ran");
        let before = hits();
        put_each(&env, 300..301, 5);
        assert_eq!(hits() - before, 0, "after another process's commit");
        put_each(&env, 301..302, 5);
        assert_eq!(hits() - before, 1, "after its own commit again");
        // An aborted transaction leaves the copy as it was.
        let mut txn = env.begin_rw_txn().unwrap();
        txn.put(Db::MAIN, &7u32.to_be_bytes(), &[6; 100], PutFlags::empty()).unwrap();
        txn.abort();
        put_each(&env, 302..303, 5);
        assert_eq!(hits() - before, 3, "the aborted one and the next");
        // A reader of the last commit's predecessor pins the own record:
        // the reclaim finds an older one, or the file's tail.
        let reader = env.begin_ro_txn().unwrap();
        put_each(&env, 303..304, 5);
        let pinned = hits();
        put_each(&env, 304..305, 5);
        assert_eq!(hits(), pinned, "the record of the commit the reader saw is pinned");
        drop(reader);
        // (The first commit after it makes its own record by the general
        // update, the next by a rename again: the third reclaims the copy.)
        put_each(&env, 305..308, 5);
        for k in 308..311 {
            put_each(&env, k..k + 1, 5);
        }
        assert!(hits() > pinned, "reclaimed from the copy again");
        assert_sound(&env);
        let txn = env.begin_ro_txn().unwrap();
        assert_eq!(txn.get(Db::MAIN, &9_000u32.to_be_bytes()).unwrap(), Some(&[4u8; 100][..]), "the child's record");
    }

    /// Not a test: the other process of the test above, which runs this
    /// binary again with `--ignored --exact`. One one-put commit on the
    /// database in `RDBX_GC_CHILD_COMMIT`.
    #[test]
    #[ignore = "run as a child process by small_commits_reclaim_the_last_own_record_from_the_writers_copy"]
    fn child_commit() {
        let path = std::env::var_os("RDBX_GC_CHILD_COMMIT").expect("RDBX_GC_CHILD_COMMIT names the database");
        let env = Env::builder().durability(crate::Durability::SyncDurable).open(path).unwrap();
        put_each(&env, 9_000..9_001, 4);
    }

    fn gc_now(txn: &RwTxn<'_>) -> crate::txn::View {
        txn.table(Db::GC).unwrap()
    }

    /// A write transaction whose GC holds one record, under key 1 (older
    /// than any reader: reclaimable), listing `pages` (descending, below
    /// 4,000: the transaction's high-water mark is raised to it; it is
    /// never committed).
    fn with_record<R>(pages: &[u32], f: impl FnOnce(&mut RwTxn<'_>) -> R) -> R {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().open(d.path()).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        assert!(txn.table(Db::GC).unwrap().tree.is_empty() && txn.txnid >= 2);
        txn.geo.first_unallocated = txn.geo.first_unallocated.max(4_000);
        let value = crate::format::pnl::encode(pages, 4 * (pages.len() + 1));
        write::put(&mut txn, Db::GC, &1u64.to_le_bytes(), Val::Bytes(&value), PutFlags::empty(), 0).unwrap();
        let r = f(&mut txn);
        txn.abort();
        r
    }

    /// 240 scattered pages (every other page from 3,000 down), below a run
    /// of 12 at 3,500: the record is big enough to be taken from in part.
    fn scattered_below_a_run() -> Vec<u32> {
        let mut pages: Vec<u32> = (3_500..3_512).rev().collect();
        pages.extend((0..240).map(|i| 3_000 - 2 * i));
        pages
    }

    /// The record's pages the GC still lists under key 1.
    fn left_in_record(txn: &RwTxn<'_>) -> Option<usize> {
        let mut c = txn.cursor(Db::GC).unwrap();
        let (_, v) = c.set_range(&1u64.to_le_bytes()).unwrap()?;
        Some(crate::format::pnl::Pnl::new(v).unwrap().len())
    }

    /// A chunk's search takes the run a big record holds along with the
    /// record's lowest pages: one reclaim finds it. (Taking only the
    /// lowest pages, it went through the record part after part, writing
    /// it back each time, and a commit updating a 20 KB value executed 2.3
    /// times the instructions it does now.)
    #[test]
    fn a_chunk_takes_the_run_of_a_big_record_at_once() {
        let pages = scattered_below_a_run();
        with_record(&pages, |txn| {
            assert!(reclaim_one(txn, 12, 12).unwrap());
            assert!(txn.st.reclaimed.longest().is_some_and(|(start, len)| start == 3_500 && len == 12));
            assert!(txn.st.consumed.is_empty(), "taken from in part");
            let taken = txn.st.reclaimed.len();
            assert!(taken < pages.len() / 2, "{taken} pages taken");
            assert_eq!(left_in_record(txn), Some(pages.len() - taken));
        });
        // A run that reaches into the lowest pages (the 30 below it and
        // the run's lower part would be taken) is taken whole.
        let mut straddling: Vec<u32> = (0..240).map(|i| 3_000 - 2 * i).collect();
        straddling.extend((200..240).rev());
        straddling.extend((0..30).map(|i| 160 - 2 * i));
        with_record(&straddling, |txn| {
            assert!(reclaim_one(txn, 40, 40).unwrap());
            assert_eq!(txn.st.reclaimed.longest(), Some((200, 40)));
            assert_eq!(txn.st.reclaimed.len(), 70);
            assert_eq!(left_in_record(txn), Some(240));
        });
        // Single pages: the lowest ones only, as before.
        with_record(&pages, |txn| {
            assert!(reclaim_one(txn, 1, 1).unwrap());
            assert!(txn.st.reclaimed.longest().is_none(), "no run of 4 among the lowest pages");
            assert!(txn.st.consumed.is_empty());
        });
    }

    /// A big record without a run of the chunk's length is consumed whole
    /// (its pages may join other records' into a run) rather than taken
    /// from in part, again and again.
    #[test]
    fn a_record_without_the_run_is_consumed_whole() {
        let pages = scattered_below_a_run();
        with_record(&pages, |txn| {
            assert!(reclaim_one(txn, 13, 13).unwrap());
            assert_eq!(txn.st.consumed, [1]);
            assert_eq!(txn.st.reclaimed.len(), pages.len());
            assert_eq!(left_in_record(txn), None);
        });
    }

    /// The pages a transaction takes from a big record: what it needs, twice
    /// the pages it holds dirty, and 16 (`partial_take`); a record shorter
    /// than 4 times that is consumed whole. For a chunk, the record's lowest
    /// run of its length comes along with those pages, and nothing more:
    /// the record keeps every page between the run and the lowest ones.
    #[test]
    fn a_partial_take_takes_what_the_rule_says() {
        // Single pages: 240 scattered ones and a run above them.
        let pages = scattered_below_a_run();
        let take = with_record(&pages, |txn| {
            let dirty = txn.st.dirty.len() + txn.st.spilled.len();
            assert!(dirty >= 1, "the record's leaf is dirty");
            let take = 1 + 2 * dirty + 16;
            assert!(pages.len() >= 4 * take);
            assert!(reclaim_one(txn, 1, 1).unwrap());
            assert!(txn.st.consumed.is_empty(), "taken from in part");
            assert_eq!(txn.st.reclaimed.len(), take);
            assert_eq!(left_in_record(txn), Some(pages.len() - take));
            take
        });
        // A record of fewer than 4 times those pages is consumed whole, one
        // of that many is not.
        for (len, whole) in [(4 * take - 1, true), (4 * take, false)] {
            let small: Vec<u32> = (0..len as u32).map(|i| 3_000 - 2 * i).collect();
            with_record(&small, |txn| {
                assert_eq!(1 + 2 * (txn.st.dirty.len() + txn.st.spilled.len()) + 16, take);
                assert!(reclaim_one(txn, 1, 1).unwrap());
                assert_eq!(txn.st.consumed.is_empty(), !whole, "a record of {len} pages");
                assert_eq!(txn.st.reclaimed.len(), if whole { len } else { take });
            });
        }
        // A chunk of 12 pages: the record's only run of 12 lies between 100
        // scattered pages above it and 140 below it.
        let mut middle: Vec<u32> = (0..100).map(|i| 3_900 - 2 * i).collect();
        middle.extend((3_500..3_512).rev());
        middle.extend((0..140).map(|i| 3_000 - 2 * i));
        with_record(&middle, |txn| {
            let take = 12 + 2 * (txn.st.dirty.len() + txn.st.spilled.len()) + 16;
            assert!(reclaim_one(txn, 12, 12).unwrap());
            assert!(txn.st.consumed.is_empty(), "taken from in part");
            assert_eq!(txn.st.reclaimed.longest(), Some((3_500, 12)));
            assert_eq!(txn.st.reclaimed.len(), take + 12, "the lowest pages and the run");
            assert_eq!(left_in_record(txn), Some(middle.len() - take - 12));
        });
    }

    /// A search that finds no record it may reclaim (all are newer than
    /// the oldest reader's snapshot) marks the GC exhausted for the rest of
    /// the transaction: later allocations take the tail without searching
    /// again (without the mark, each of them walked the GC tree anew).
    #[test]
    fn a_fruitless_search_marks_the_gc_exhausted() {
        with_record(&scattered_below_a_run(), |txn| {
            // A reader of snapshot 0: the record, under key 1, is pinned.
            txn.detent = Some(0);
            // (The record's own put found the GC empty and marked it.)
            txn.gc_exhausted = false;
            let at_hand = txn.st.reclaimed.len();
            assert!(!reclaim_one(txn, 1, 1).unwrap());
            assert!(txn.gc_exhausted, "the GC was searched in vain and not marked");
            assert_eq!((txn.st.reclaimed.len(), txn.st.consumed.len()), (at_hand, 0));
            assert_eq!(left_in_record(txn), Some(scattered_below_a_run().len()));
        });
    }
}

/// A GC record longer than a page (as libmdbx versions without "bigfoot",
/// and libmdbx's dense return today, write them) taken from in part by
/// small commits while a reader holds an older snapshot: the leftovers go
/// back into that record through its whole chunk, the file stays valid, and
/// the reader pins only what was retired since it began.
#[cfg(test)]
mod multi_page_record_tests {
    use crate::btree::write::{self, Val};
    use crate::flags::PutFlags;
    use crate::txn::Db;
    use crate::{Durability, Env, Geometry};

    thread_local! {
        /// GC records `read_record` read from a page that was not dirty
        /// (spilled since the partial take rewrote it), in this thread.
        pub(super) static SPILLED_READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// The key of the `i`th large value (after the 100,000 small ones).
    fn blob_key(i: u32) -> [u8; 4] {
        (1_000_000 + i).to_be_bytes()
    }

    /// The pages the GC record under `key` lists (none if there is none).
    fn read_pages(env: &Env, key: u64) -> Vec<u32> {
        let rtxn = env.begin_ro_txn().unwrap();
        let v = rtxn.get(Db::GC, &key.to_le_bytes()).unwrap().unwrap_or_default().to_vec();
        crate::format::pnl::Pnl::new(&v).unwrap().iter().collect()
    }

    /// The GC's records: key and value length.
    fn records(env: &Env) -> Vec<(u64, usize)> {
        let txn = env.begin_ro_txn().unwrap();
        let mut c = txn.cursor(Db::GC).unwrap();
        let mut out = Vec::new();
        let mut rec = c.first().unwrap();
        while let Some((k, v)) = rec {
            out.push((u64::from_le_bytes(k.try_into().unwrap()), v.len()));
            rec = c.next().unwrap();
        }
        out
    }

    /// An environment of 4 KiB pages (with a dirty-page budget of
    /// `dirty_limit`, if given) whose GC is one record of several pages:
    /// its key and length, and the pages it lists. With `inline`, that many
    /// of the pages go to a record kept in its leaf, under a newer key.
    fn with_a_big_record(
        dirty_limit: Option<usize>,
        inline: Option<usize>,
    ) -> (tempfile::TempDir, Env, u64, usize, Vec<u32>) {
        with_a_big_record_and(dirty_limit, inline, 0, 0)
    }

    /// [`with_a_big_record`], the table also holding `blobs` values of two
    /// pages (`blob_key`), and the merging transaction deleting the
    /// `retire` small values from 80,000 (its own record, newer than the
    /// merged ones, then lists the pages that freed).
    fn with_a_big_record_and(
        dirty_limit: Option<usize>,
        inline: Option<usize>,
        blobs: u32,
        retire: u32,
    ) -> (tempfile::TempDir, Env, u64, usize, Vec<u32>) {
        let d = tempfile::tempdir().unwrap();
        let mut b = Env::builder().durability(Durability::SafeNoSync).geometry(Geometry {
            size_upper: Some(1 << 30),
            page_size: Some(4096),
            ..Default::default()
        });
        if let Some(l) = dirty_limit {
            b = b.dirty_page_limit(l);
        }
        let env = b.open(d.path()).unwrap();
        let value = [7u8; 100];
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0..100_000u32 {
            txn.put(Db::MAIN, &i.to_be_bytes(), &value, PutFlags::APPEND).unwrap();
        }
        for i in 0..blobs {
            txn.put(Db::MAIN, &blob_key(i), &[9u8; 6000], PutFlags::APPEND).unwrap();
        }
        txn.commit().unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0..80_000u32 {
            txn.del(Db::MAIN, &i.to_be_bytes(), None).unwrap();
        }
        txn.commit().unwrap();
        // Every GC record merged into one under the oldest key, in a
        // transaction that takes its pages from the tail only.
        let before = records(&env);
        assert!(before.len() > 1, "the deletes left {} GC records", before.len());
        let mut txn = env.begin_rw_txn().unwrap();
        // (As in a reclaim: no reclaim, steady point or sweep may change
        // the GC tree in the middle of these edits of it.)
        txn.gc_exhausted = true;
        for i in 80_000..80_000 + retire {
            txn.del(Db::MAIN, &i.to_be_bytes(), None).unwrap();
        }
        txn.in_reclaim = true;
        let mut all = Vec::new();
        {
            let mut c = txn.cursor(Db::GC).unwrap();
            let mut rec = c.first().unwrap();
            while let Some((_, v)) = rec {
                all.extend(crate::format::pnl::Pnl::new(v).unwrap().iter());
                rec = c.next().unwrap();
            }
        }
        all.sort_unstable_by(|a, b| b.cmp(a));
        for &(k, _) in &before {
            write::del(&mut txn, Db::GC, &k.to_le_bytes(), None).unwrap();
        }
        if let Some(n) = inline {
            let small = crate::format::pnl::encode(&all[..n], 0);
            write::put(&mut txn, Db::GC, &before[1].0.to_le_bytes(), Val::Bytes(&small), PutFlags::empty(), 0).unwrap();
            all.drain(..n);
        }
        let merged = crate::format::pnl::encode(&all, 0);
        write::put(&mut txn, Db::GC, &before[0].0.to_le_bytes(), Val::Bytes(&merged), PutFlags::empty(), 0).unwrap();
        txn.in_reclaim = false;
        txn.commit().unwrap();
        let (key, len) = records(&env)[0];
        assert_eq!(key, before[0].0);
        assert!(len > 4096, "the merged record is {len} bytes: not a chunk of several pages");
        assert_eq!(env.check(&Default::default(), &mut |_| {}).unwrap().problem_count(), 0);
        (d, env, key, len, all)
    }

    #[test]
    fn a_partial_take_from_a_record_of_several_pages_under_a_reader() {
        let (_d, env, key, len, all) = with_a_big_record(None, None);
        // A reader from now on; small commits after it take from the big
        // record in part (once they consumed the merge's own record).
        let reader = env.begin_ro_txn().unwrap();
        let retired_at_reader = env.info().unwrap().pages_retired;
        for n in 0..60u32 {
            let mut txn = env.begin_rw_txn().unwrap();
            let k = 80_000 + n.wrapping_mul(2_654_435_761) % 20_000;
            txn.put(Db::MAIN, &k.to_be_bytes(), &[n as u8; 100], PutFlags::empty()).unwrap();
            txn.commit().unwrap();
        }
        let after = records(&env);
        let big = after.iter().find(|r| r.0 == key).copied();
        assert_eq!(big.map(|r| r.1), Some(len), "the big record was not taken from in part: {after:?}");
        let rtxn = env.begin_ro_txn().unwrap();
        let left = crate::format::pnl::Pnl::new(rtxn.get(Db::GC, &key.to_le_bytes()).unwrap().unwrap()).unwrap().len();
        drop(rtxn);
        assert!(left < all.len(), "the big record still lists all its {left} pages");
        let gc = env.gc_info().unwrap();
        let retired = env.info().unwrap().pages_retired - retired_at_reader;
        // The bound of tests/reader_partial_take.rs (which guards the
        // leftovers' return more tightly: its takes leave more). Here 291
        // pages against 273 retired; 301 without the return, and without
        // reading the record through its whole chunk the commits panicked.
        let pinned = gc.pages_gc - gc.pages_reclaimable;
        assert!(pinned <= retired + 24, "the reader pins {pinned} pages of the GC, {retired} retired since it began");
        drop(reader);
        assert_eq!(env.check(&Default::default(), &mut |_| {}).unwrap().problem_count(), 0);
    }

    /// A bigger transaction takes from the record in part under a reader
    /// and spills pages (a small dirty-page budget), the record's chunk
    /// among them: its commit must still succeed, the leftovers staying
    /// where they are if the chunk is no longer in memory.
    /// (The record in a large chunk, then one in its leaf: a spilled leaf
    /// comes back into memory with the rewrite.)
    #[test]
    fn a_partial_take_then_a_spill_under_a_reader() {
        for inline in [None, Some(300)] {
            let (_d, env, _, _, _) = with_a_big_record(Some(16), inline);
            let reader = env.begin_ro_txn().unwrap();
            for round in 0..200u32 {
                let mut txn = env.begin_rw_txn().unwrap();
                for n in 0..20u32 {
                    let k = 80_000 + (n * 499 + round * 7919) % 20_000;
                    txn.put(Db::MAIN, &k.to_be_bytes(), &[round as u8; 100], PutFlags::empty()).unwrap();
                }
                txn.commit().unwrap_or_else(|e| panic!("{inline:?}, round {round}: {e}"));
            }
            drop(reader);
            assert_eq!(env.check(&Default::default(), &mut |_| {}).unwrap().problem_count(), 0);
            assert!(env.page_ops().spill > 0, "{inline:?}: nothing was spilled");
        }
    }

    /// More leftovers than the record taken from in part has room for:
    /// pages from the file's tail that the transaction used and freed again
    /// join the pages it took and did not use. The record takes back what
    /// fits (it keeps its size, full), the rest stays in the own record,
    /// and the commit succeeds. (Before this test only leftovers that fit
    /// were seen: a return that took the record's room for more pages, or
    /// one more, failed no test.)
    #[test]
    fn leftovers_beyond_the_room_of_the_record_taken_from_stay_in_the_own_record() {
        let (_d, env, key, len, _) = with_a_big_record(None, None);
        let reader = env.begin_ro_txn().unwrap();
        // The first small commit consumes the merge's own record.
        let mut txn = env.begin_rw_txn().unwrap();
        txn.put(Db::MAIN, &90_001u32.to_be_bytes(), &[1; 100], PutFlags::empty()).unwrap();
        txn.commit().unwrap();
        let used = |env: &Env| env.gc_info().unwrap().pages_allocated - env.gc_info().unwrap().pages_gc;
        let used_before = used(&env);
        let mut txn = env.begin_rw_txn().unwrap();
        // A small edit: a few pages taken from the big record in part.
        txn.put(Db::MAIN, &90_000u32.to_be_bytes(), &[1; 100], PutFlags::empty()).unwrap();
        assert!(txn.st.partly_taken.iter().any(|t| t.0 == key) && txn.st.consumed.is_empty());
        // Then pages from the tail only: 3,000 appended values (about 90
        // pages), the first 2,700 deleted again (their pages loose; the last
        // ones keep the top of the file, so the loose ones are not refunded).
        txn.gc_exhausted = true;
        for i in 0..3_000u32 {
            txn.put(Db::MAIN, &(200_000 + i).to_be_bytes(), &[2; 100], PutFlags::APPEND).unwrap();
        }
        for i in 0..2_700u32 {
            txn.del(Db::MAIN, &(200_000 + i).to_be_bytes(), None).unwrap();
        }
        let loose = txn.st.loose.len();
        let txnid = txn.txnid;
        assert!(loose > 40, "{loose} loose pages");
        txn.commit().unwrap();
        // The big record is full again; the own record keeps what did not fit.
        let back = read_pages(&env, key);
        assert_eq!(4 * (back.len() + 1), len, "the record taken from is not full: {} pages in {len} bytes", back.len());
        let own = read_pages(&env, txnid);
        assert!(!own.is_empty(), "no own record");
        // Nothing lost: the pages in use grew by the 300 values kept and the
        // tree above them, not by what went back to the GC.
        assert!(used(&env) <= used_before + 20, "pages in use {} -> {}", used_before, used(&env));
        drop(reader);
        assert_eq!(env.check(&Default::default(), &mut |_| {}).unwrap().problem_count(), 0);
    }

    /// The record a commit took from in part sits in a leaf that was
    /// spilled after the take and that the GC update does not touch again
    /// (own records pinned by a reader lie between it and the update's
    /// leaf): the leftovers' return reads it through the map and puts the
    /// pages back there, none left in the own record that reader pins.
    #[test]
    fn a_partial_take_from_a_spilled_leaf_under_a_reader() {
        let (_d, env, _, _, _) = with_a_big_record_and(None, Some(400), 400, 10_000);
        let reader = env.begin_ro_txn().unwrap();
        // Commits that each retire about 100 pages (50 values of two
        // pages): their records, kept while the reader lives, fill GC
        // leaves to the right of the older ones.
        for round in 0..8u32 {
            let mut txn = env.begin_rw_txn().unwrap();
            for i in round * 50..(round + 1) * 50 {
                txn.del(Db::MAIN, &blob_key(i), None).unwrap();
            }
            txn.commit().unwrap();
        }
        let before: Vec<(u64, Vec<u32>)> = records(&env).iter().map(|r| (r.0, read_pages(&env, r.0))).collect();
        let mut txn = env.begin_rw_txn().unwrap();
        for n in 0..20u32 {
            txn.put(Db::MAIN, &(90_000 + n * 499).to_be_bytes(), &[1; 100], PutFlags::empty()).unwrap();
        }
        let taken = &txn.st.partly_taken;
        assert!(
            !taken.is_empty() && taken.iter().all(|t| t.0 == taken[0].0) && txn.st.consumed.is_empty(),
            "not one record taken from in part, and none consumed: {taken:?}, {:?}",
            txn.st.consumed
        );
        let key = taken[0].0;
        let leaf = |txn: &crate::RwTxn<'_>, key: u64| {
            write::find_value(txn, Db::GC, &key.to_le_bytes()).unwrap().unwrap().pgno
        };
        let taken_leaf = leaf(&txn, key);
        let newest_leaf = leaf(&txn, before.last().unwrap().0);
        assert_ne!(taken_leaf, newest_leaf, "the record taken from is in the GC's last leaf");
        txn.spill_all().unwrap();
        assert!(!txn.page_is_dirty(taken_leaf), "the leaf of the record taken from was not spilled");
        let txnid = txn.txnid;
        SPILLED_READS.with(|n| n.set(0));
        txn.commit().unwrap();
        assert!(SPILLED_READS.with(|n| n.get()) > 0, "the record was not read from its spilled leaf");
        // Every page of the record it did not use went back to it.
        let original = &before.iter().find(|r| r.0 == key).unwrap().1;
        let own = read_pages(&env, txnid);
        assert!(!own.is_empty(), "no own record");
        let parked: Vec<u32> = own.iter().copied().filter(|p| original.contains(p)).collect();
        assert!(parked.is_empty(), "the own record keeps {} pages of record {key}: {parked:?}", parked.len());
        let now = read_pages(&env, key);
        assert!(now.len() < original.len(), "record {key} lists all its {} pages still", now.len());
        drop(reader);
        assert_eq!(env.check(&Default::default(), &mut |_| {}).unwrap().problem_count(), 0);
    }
}

/// Page allocation (`alloc`, `alloc_any`, `alloc_tail`, `reclaim_one`,
/// `force_steady`) on a real write transaction whose free lists and GC
/// records the tests set up. The page numbers taken are checked, not used:
/// each transaction is aborted.
#[cfg(test)]
mod alloc_tests {
    use super::{alloc, alloc_any, alloc_tail, force_steady, partial_take, reclaim_one, tail_grows};
    use crate::btree::write::{self, Val};
    use crate::error::Error;
    use crate::flags::PutFlags;
    use crate::run_list::RunList;
    use crate::txn::{Db, RwTxn};
    use crate::{Env, Geometry};

    /// An environment of 256-byte pages holding about 600 pages of records
    /// (so the tests' page numbers are below the first unallocated page).
    fn env_in(dir: &std::path::Path, writemap: bool) -> Env {
        let env = Env::builder()
            .geometry(Geometry { page_size: Some(256), ..Default::default() })
            .write_map(writemap)
            .open(dir)
            .unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0u32..600 {
            txn.put(Db::MAIN, &i.to_be_bytes(), &[7; 150], PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
        env
    }

    /// A temporary directory on a disk (lazy commits on tmpfs are steady:
    /// syncs cost nothing there): the system's, else one in this crate.
    fn disk_tempdir() -> tempfile::TempDir {
        let on_disk = |d: &tempfile::TempDir| {
            let f = std::fs::File::create(d.path().join("probe")).unwrap();
            !crate::os::is_in_memory_fs(&f)
        };
        let d = tempfile::tempdir().unwrap();
        if on_disk(&d) {
            return d;
        }
        tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap()
    }

    /// GC records under keys `1..=records`, each listing one page, none
    /// next to another's (no run of two), reclaimable by `txn`.
    fn scattered_records(txn: &mut RwTxn<'_>, records: u64) {
        for k in 1..=records {
            let value = crate::format::pnl::encode(&[10 + 3 * k as u32], 16);
            write::put(txn, Db::GC, &k.to_le_bytes(), Val::Bytes(&value), PutFlags::empty(), 0).unwrap();
        }
        txn.detent = Some(records);
        // (The puts found the GC empty.)
        txn.gc_exhausted = false;
    }

    #[test]
    fn a_run_may_span_loose_and_reclaimed_pages() {
        let d = tempfile::tempdir().unwrap();
        let env = env_in(d.path(), false);
        let mut txn = env.begin_rw_txn().unwrap();
        txn.st.loose = vec![101, 100];
        txn.st.reclaimed = RunList::from_desc(&[99, 98, 50]);
        assert_eq!(alloc_any(&mut txn, 4).unwrap(), 98);
        assert!(txn.st.loose.is_empty());
        assert_eq!(txn.st.reclaimed.to_vec(), [50]);
        txn.abort();
    }

    #[test]
    fn the_gc_update_keeps_its_loose_pages_apart() {
        // While the GC is written its lists are the plan's: the loose pages
        // stay loose, and no GC record is consumed.
        let d = tempfile::tempdir().unwrap();
        let env = env_in(d.path(), false);
        let mut txn = env.begin_rw_txn().unwrap();
        scattered_records(&mut txn, 3);
        txn.st.loose = vec![101];
        txn.st.reclaimed = RunList::from_desc(&[100, 99]);
        txn.saving_gc = true;
        assert_eq!(alloc_any(&mut txn, 2).unwrap(), 99);
        assert_eq!(txn.st.loose, [101]);
        let fu = txn.geo.first_unallocated;
        assert_eq!(alloc_any(&mut txn, 1).unwrap(), 101);
        assert_eq!(alloc_any(&mut txn, 1).unwrap(), fu, "the tail, not a GC record");
        assert!(txn.st.consumed.is_empty());
        txn.saving_gc = false;
        txn.abort();
    }

    #[test]
    fn the_search_for_a_run_consumes_a_bounded_number_of_records() {
        let d = tempfile::tempdir().unwrap();
        let env = env_in(d.path(), false);
        let mut txn = env.begin_rw_txn().unwrap();
        scattered_records(&mut txn, 100);
        // No two of their pages are a run: 65 records looked through, then
        // the tail (or pages freed at its edge).
        assert!(alloc_any(&mut txn, 2).unwrap() > 10 + 3 * 100);
        assert_eq!(txn.st.consumed.len(), 65);
        assert_eq!(txn.st.consumed[0], 100, "newest first");
        txn.abort();
    }

    #[test]
    fn a_forced_steady_point_rewrites_the_head_in_its_own_slot() {
        let d = disk_tempdir();
        let env = Env::builder()
            .geometry(Geometry { page_size: Some(256), ..Default::default() })
            .durability(crate::Durability::SafeNoSync)
            .open(d.path())
            .unwrap();
        let path = d.path().join("mdbx.dat");
        // Each slot's (txnid, steady), read from the file.
        let metas = || {
            let bytes = std::fs::read(&path).unwrap();
            (0..3u32)
                .map(|i| {
                    let m = crate::format::meta::Meta::read(&bytes[i as usize * 256..], i).unwrap();
                    (m.txnid(), m.is_steady())
                })
                .collect::<Vec<_>>()
        };
        let head = |m: &[(u64, bool)]| (0..3).max_by_key(|&i| m[i].0).unwrap();
        // Lazy commits until the head is not slot 0.
        for i in 0u32.. {
            let mut txn = env.begin_rw_txn().unwrap();
            txn.put(Db::MAIN, &i.to_be_bytes(), b"v", PutFlags::empty()).unwrap();
            txn.commit().unwrap();
            if i > 2 && head(&metas()) != 0 {
                break;
            }
        }
        let before = metas();
        let h = head(&before);
        assert!(!before[h].1, "the head is steady already");
        let mut txn = env.begin_rw_txn().unwrap();
        assert_eq!(txn.st.recent_slot, h);
        force_steady(&mut txn).unwrap();
        assert_eq!(txn.st.steady_txnid, txn.st.base.txnid());
        txn.abort();
        let mut want = before.clone();
        want[h].1 = true;
        assert_eq!(metas(), want, "head slot {h}");
    }

    #[test]
    fn a_run_from_the_tail_starts_at_the_free_pages_right_below_it() {
        let d = tempfile::tempdir().unwrap();
        let env = env_in(d.path(), false);
        let mut txn = env.begin_rw_txn().unwrap();
        let fu = txn.geo.first_unallocated;
        // Loose pages touching the tail, a reclaimed one that does not.
        txn.st.loose = vec![fu - 1, fu - 2, fu - 5];
        txn.st.reclaimed = RunList::from_desc(&[fu - 4]);
        assert_eq!(alloc_tail(&mut txn, 3).unwrap(), fu - 2);
        assert_eq!((txn.geo.first_unallocated, &txn.st.loose[..]), (fu + 1, &[fu - 5][..]));
        // Reclaimed pages touching it, a loose one that does not.
        let fu = fu + 1;
        txn.st.loose = vec![fu - 8];
        txn.st.reclaimed = RunList::from_desc(&[fu - 1, fu - 2, fu - 3]);
        assert_eq!(alloc_tail(&mut txn, 2).unwrap(), fu - 2);
        assert_eq!(txn.st.reclaimed.to_vec(), [fu - 3]);
        assert_eq!((txn.geo.first_unallocated, &txn.st.loose[..]), (fu, &[fu - 8][..]));
        // None touching: the tail itself.
        assert_eq!(alloc_tail(&mut txn, 1).unwrap(), fu);
        assert_eq!(txn.geo.first_unallocated, fu + 1);
        txn.abort();
    }

    #[test]
    fn the_tail_grows_by_steps_up_to_the_upper_bound() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder()
            .geometry(Geometry {
                page_size: Some(4096),
                size_lower: Some(64 << 10),
                size_now: Some(64 << 10),
                size_upper: Some(256 << 10),
                growth_step: Some(64 << 10),
                ..Default::default()
            })
            .open(d.path())
            .unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let step = 16;
        assert_eq!((txn.geo.now, txn.geo.upper), (step, 4 * step));
        let fu = txn.geo.first_unallocated;
        // The file's last page, then one past it: a step more.
        txn.geo.first_unallocated = step - 1;
        assert_eq!(alloc_tail(&mut txn, 1).unwrap(), step - 1);
        assert_eq!(txn.geo.now, step);
        assert_eq!(alloc_tail(&mut txn, 1).unwrap(), step);
        assert_eq!(txn.geo.now, 2 * step);
        assert_eq!(std::fs::metadata(d.path().join("mdbx.dat")).unwrap().len(), 2 * step as u64 * 4096);
        // Beyond the upper bound: MapFull, nothing taken.
        txn.geo.first_unallocated = 3 * step;
        assert!(matches!(alloc_tail(&mut txn, step as usize + 1), Err(Error::MapFull)));
        assert_eq!(txn.geo.first_unallocated, 3 * step);
        assert_eq!(alloc_tail(&mut txn, step as usize).unwrap(), 3 * step);
        assert_eq!(txn.geo.now, 4 * step);
        // No growth step: no growth, though the bound is further.
        txn.geo.upper = 8 * step;
        txn.geo.grow_pv = 0;
        assert!(matches!(alloc_tail(&mut txn, 1), Err(Error::MapFull)));
        txn.geo.first_unallocated = fu;
        txn.abort();
    }

    #[test]
    fn a_small_transaction_takes_part_of_a_big_record() {
        // One record of 200 pages (10..210); single pages wanted: the
        // lowest `partial_take` of them, the record keeps the rest.
        let d = tempfile::tempdir().unwrap();
        let env = env_in(d.path(), false);
        let mut txn = env.begin_rw_txn().unwrap();
        let pages: Vec<u32> = (10..210).rev().collect();
        let value = crate::format::pnl::encode(&pages, 16);
        write::put(&mut txn, Db::GC, &1u64.to_le_bytes(), Val::Bytes(&value), PutFlags::empty(), 0).unwrap();
        (txn.detent, txn.gc_exhausted) = (Some(1), false);
        let take = partial_take(&txn, 1);
        assert!(take * 4 <= 200 && take > 16, "{take}");
        assert!(reclaim_one(&mut txn, 1, 1).unwrap());
        assert_eq!(txn.st.reclaimed.to_vec(), (10..10 + take as u32).rev().collect::<Vec<_>>());
        assert!(txn.st.consumed.is_empty());
        assert_eq!(txn.st.partly_taken, [(1, value.len())]);
        let left = txn.get(Db::GC, &1u64.to_le_bytes()).unwrap().unwrap();
        assert_eq!(crate::format::pnl::Pnl::new(left).unwrap().iter().collect::<Vec<_>>(), pages[..200 - take]);
        // A chunk of 3: the lowest pages again, as they hold a run of 3.
        let take2 = partial_take(&txn, 3);
        assert!(reclaim_one(&mut txn, 3, 3).unwrap());
        assert_eq!(txn.st.reclaimed.len(), take + take2);
        assert_eq!(txn.st.reclaimed.iter().max(), Some(9 + (take + take2) as u32));
        txn.abort();
    }

    #[test]
    fn the_tail_grows_the_file_past_its_size_only() {
        let d = tempfile::tempdir().unwrap();
        let env = env_in(d.path(), false);
        let mut txn = env.begin_rw_txn().unwrap();
        txn.geo.first_unallocated = txn.geo.now - 2;
        assert!(!tail_grows(&txn, 1));
        assert!(!tail_grows(&txn, 2), "the last two pages of the file");
        assert!(tail_grows(&txn, 3));
        txn.abort();
    }

    #[test]
    fn single_pages_follow_a_run_unless_writes_cost_nothing_where_they_go() {
        // Free: a run 40..=43 and page 5. On a disk, with pages written by
        // calls or through the map: the run (a commit's pages stay
        // together). On tmpfs: the lowest free page (a small transaction
        // starts no run there).
        let shm = std::path::Path::new("/dev/shm");
        let dirs = [std::env::temp_dir(), env!("CARGO_MANIFEST_DIR").into(), shm.into()];
        let mut seen = Vec::new();
        for dir in dirs.iter().filter(|d| d.is_dir()) {
            for writemap in [false, true] {
                let d = tempfile::tempdir_in(dir).unwrap();
                let env = env_in(d.path(), writemap);
                let memory = env.inner.in_memory_fs;
                let mut txn = env.begin_rw_txn().unwrap();
                txn.st.reclaimed = RunList::from_desc(&[43, 42, 41, 40, 5]);
                let got: Vec<u32> = (0..3).map(|_| alloc(&mut txn, 1).unwrap()).collect();
                let want = if memory { [5, 40, 41] } else { [40, 41, 42] };
                assert_eq!(got, want, "{}: writemap {writemap}, in memory {memory}", dir.display());
                txn.abort();
                seen.push((writemap, memory));
            }
        }
        assert!(seen.contains(&(true, false)), "WRITEMAP on a disk never ran: {seen:?}");
    }
}
