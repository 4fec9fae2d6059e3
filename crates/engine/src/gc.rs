//! The GC (free-page records) seen from a write transaction: page allocation
//! (loose pages, pages reclaimed from the GC newest-first, then the
//! unallocated tail, growing the file; ousting parked readers and asking the
//! slow-reader callback first) as libmdbx's gc-get, and writing the
//! transaction's GC records at commit (`save_gc`) as its gc-put. The page
//! life cycle is `txn::pages`, the commit `txn::commit`.

use crate::btree::write::{self, Val};
use crate::error::{Error, Result};
use crate::flags::PutFlags;
use crate::format::meta::META_OFF;
use crate::format::meta::{pv2pages, SIGN_STEADY};
use crate::format::pnl::Pnl;
use crate::format::MAX_PAGENO;
use crate::readers::{SlowReader, SlowReaderAction};
use crate::txn::{Db, RwTxn};

/// Pages per OS page (sizes are rounded to whole OS pages).
pub(crate) fn os_unit(ps: usize) -> u32 {
    (crate::os::page_size() / ps).max(1) as u32
}

pub(crate) fn round_up_pages(x: u64, unit: u32) -> u64 {
    x.div_ceil(unit as u64) * unit as u64
}

/// Takes `n` contiguous pages from a descending-sorted list.
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

/// Allocates `n` contiguous page numbers. Single pages continue the run the
/// previous allocation started where they can (see [`next_in_run`]), so a
/// commit writes a few long extents rather than many scattered pages.
pub(crate) fn alloc(txn: &mut RwTxn<'_>, n: usize) -> Result<u32> {
    let found = if n == 1 && !txn.saving_gc && !txn.in_reclaim { next_in_run(txn)? } else { None };
    let p = match found {
        Some(p) => p,
        None => alloc_any(txn, n)?,
    };
    txn.run_next = p.saturating_add(n as u32);
    Ok(p)
}

/// Shortest run of free pages worth starting an extent in while the file
/// has unused room at its tail or the GC has more records to look through.
/// (Measured on the random-UUID workload: 2 gave 56.7 extents per commit, 3
/// gave 53.0, 4 gave 51.0.)
const MIN_RUN: usize = 4;

/// How many reclaimed pages per page this transaction holds dirty the search
/// for a run may gather from the GC: enough for runs to exist, while a small
/// transaction consumes (and writes back) no more GC records than before.
const RUN_POOL_PER_DIRTY: usize = 8;

/// Free-page lists longer than this are used lowest page first, as before:
/// following runs takes pages from the middle of the list, which moves the
/// entries after them (at most 8 KiB of them per page here).
const RUN_LIST_MAX: usize = 2048;

/// Dirty pages (128 KiB at 4 KiB pages) from which a transaction takes runs
/// from the unallocated room inside the file rather than scattered free
/// pages. Smaller commits (the steady small updates of most applications)
/// keep reusing free pages first, so their high-water mark stays near
/// libmdbx's (`tests/page_reuse.rs`: with 16, transactions of up to 19
/// updates raised it to 1.33x libmdbx's). Random-UUID extents per commit
/// by threshold: 8: 53.9, 16: 52.8, 32: 54.0, 64: 59.3.
const TAIL_RUN_MIN_DIRTY: usize = 32;

/// Commit locality: the page after the one allocated last if it is free
/// (loose, reclaimed, or the unallocated tail inside the current file
/// size); otherwise the start of the longest run of free pages if it has at
/// least [`MIN_RUN`] pages, consuming more GC records to find one while the
/// reclaimed pages are few for the transaction's size; otherwise, for a
/// transaction of [`TAIL_RUN_MIN_DIRTY`] pages or more, the tail if the file
/// has room there without growing. `None`: no run to follow,
/// and the caller takes the lowest free page, reclaiming or growing as
/// before. The file never grows for the sake of locality: it grows only
/// when no free page is left, as before.
fn next_in_run(txn: &mut RwTxn<'_>) -> Result<Option<u32>> {
    // Taking a page from the middle of a list moves the entries after it:
    // on long lists (a huge transaction's), the lowest page, as before.
    let short = txn.reclaimed.len() + txn.loose.len() <= RUN_LIST_MAX;
    let want = txn.run_next;
    if want != 0 {
        if short && (take_page(&mut txn.loose, want) || take_page(&mut txn.reclaimed, want)) {
            return Ok(Some(want));
        }
        if want == txn.geo.first_unallocated && tail_run_allowed(txn) {
            return alloc_tail(txn, 1).map(Some);
        }
    }
    if !short {
        return Ok(None);
    }
    if !txn.loose.is_empty() {
        let loose = std::mem::take(&mut txn.loose);
        txn.reclaimed.extend(loose);
        txn.reclaimed.sort_unstable_by(|a, b| b.cmp(a));
    }
    let pool_limit = ((txn.dirty.len() + txn.spilled.len() + 1) * RUN_POOL_PER_DIRTY).min(RUN_LIST_MAX);
    loop {
        if txn.reclaimed.len() > txn.runs_scanned {
            let (at, len) = longest_run(&txn.reclaimed);
            if len >= MIN_RUN {
                return Ok(Some(txn.reclaimed.remove(at)));
            }
            txn.runs_scanned = txn.reclaimed.len();
        }
        if txn.reclaimed.len() >= pool_limit || txn.gc_exhausted || !reclaim_one(txn)? {
            break;
        }
    }
    if tail_run_allowed(txn) {
        return alloc_tail(txn, 1).map(Some);
    }
    Ok(None)
}

/// Whether a run may take the unallocated tail while free pages remain: for
/// a transaction of [`TAIL_RUN_MIN_DIRTY`] pages or more, inside the file's
/// current size.
fn tail_run_allowed(txn: &RwTxn<'_>) -> bool {
    txn.dirty.len() + txn.spilled.len() >= TAIL_RUN_MIN_DIRTY && txn.geo.first_unallocated < txn.geo.now
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

/// The longest run of consecutive page numbers in a descending-sorted list:
/// the index of its lowest page and its length (the lowest run on ties).
fn longest_run(list: &[u32]) -> (usize, usize) {
    let (mut best_at, mut best_len) = (0, 0);
    let mut len = 0;
    for i in 0..list.len() {
        len = if i > 0 && list[i - 1] == list[i] + 1 { len + 1 } else { 1 };
        if len >= best_len {
            (best_at, best_len) = (i, len);
        }
    }
    (best_at, best_len)
}

/// Allocates `n` contiguous page numbers: loose pages, then reclaimed ones
/// (the lowest first), then the tail.
fn alloc_any(txn: &mut RwTxn<'_>, n: usize) -> Result<u32> {
    if let Some(p) = take_run(&mut txn.loose, n) {
        return Ok(p);
    }
    if n > 1 && !txn.loose.is_empty() && !txn.saving_gc {
        // A run may span both kinds of free pages.
        let loose = std::mem::take(&mut txn.loose);
        txn.reclaimed.extend(loose);
        txn.reclaimed.sort_unstable_by(|a, b| b.cmp(a));
    }
    let mut synced = false;
    loop {
        if let Some(p) = take_run(&mut txn.reclaimed, n) {
            return Ok(p);
        }
        if !(txn.saving_gc || txn.in_reclaim || txn.gc_exhausted) && reclaim_one(txn)? {
            // Bound the search for a long contiguous run.
            if n > 1 && txn.consumed.len() > 64 {
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
            && txn.steady_txnid < txn.base.txnid()
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
        None => lck.oldest_reader(txn.steady_txnid).min(limit),
    };
    if straggler >= txn.base.txnid() {
        return Ok(false);
    }
    let callback = txn.env.slow_readers.clone();
    let mut retry = 0i32;
    let mut notify_end = false;
    loop {
        lck.force_refresh();
        let oldest = lck.oldest_reader(txn.steady_txnid).min(limit);
        if oldest == txn.steady_txnid || oldest > straggler {
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
            lag: txn.base.txnid().saturating_sub(stuck.txnid),
            retained_bytes: txn.base.pages_retired.saturating_sub(stuck.pages_retired).saturating_mul(ps),
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
            let oldest = lck.oldest_reader(txn.steady_txnid).min(limit);
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
    let oldest = lck.oldest_reader(txn.steady_txnid).min(limit);
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
/// (libmdbx also makes a steady point rather than grow or fail).
fn sync_would_help(txn: &mut RwTxn<'_>, n: usize) -> Result<bool> {
    let readers = txn.env.lck.oldest_live_reader().unwrap_or(u64::MAX).min(txn.txnid - 1);
    if readers <= txn.steady_txnid {
        return Ok(false);
    }
    let tail_grows = txn.geo.first_unallocated as u64 + n as u64 > txn.geo.now as u64;
    let half_step = if tail_grows { 0 } else { pv2pages(txn.geo.grow_pv) as usize / 2 };
    let want = half_step.max(n).max(1);
    let mut held = 0usize;
    let mut c = txn.cursor(Db::GC)?;
    let mut rec = c.set_range(&(txn.steady_txnid + 1).to_le_bytes())?;
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
    let mut m = txn.base.clone();
    m.sign = SIGN_STEADY;
    env.write_at(&[&m.body()], (txn.recent_slot * env.page_size + META_OFF) as u64)?;
    env.sync_data()?;
    env.lck.after_commit(m.txnid(), true, true);
    txn.base = m;
    txn.steady_txnid = txn.base.txnid();
    txn.detent = None;
    txn.gc_exhausted = false;
    Ok(())
}

fn alloc_tail(txn: &mut RwTxn<'_>, n: usize) -> Result<u32> {
    let ps = txn.env.page_size;
    // Free pages right below the high-water mark can start the run.
    let fu = txn.geo.first_unallocated;
    let touching = |list: &Vec<u32>| (0..n.min(list.len())).take_while(|&i| list[i] == fu - 1 - i as u32).count();
    let (from_loose, below) = match (touching(&txn.loose), touching(&txn.reclaimed)) {
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
    if below > 0 {
        let list = if from_loose { &mut txn.loose } else { &mut txn.reclaimed };
        list.drain(..below);
    }
    txn.geo.first_unallocated = end.max(fu as u64) as u32;
    Ok(start)
}

/// Consumes the newest GC record that no reader can still need (LIFO).
/// Returns false when there is none.
fn reclaim_one(txn: &mut RwTxn<'_>) -> Result<bool> {
    let detent = match txn.detent {
        Some(d) => d,
        None => {
            let d = txn.env.lck.oldest_reader(txn.steady_txnid).min(txn.txnid - 1);
            txn.detent = Some(d);
            d
        }
    };
    let gc = txn.table(Db::GC)?;
    if gc.tree.is_empty() {
        txn.gc_exhausted = true;
        return Ok(false);
    }
    let (key, pages) = {
        let mut c = txn.cursor(Db::GC)?;
        let probe = (detent.saturating_add(1)).to_le_bytes();
        let mut rec = match c.set_range(&probe)? {
            Some(_) => c.prev()?,
            None => c.last()?,
        };
        // Records under keys this transaction consumed were written back by
        // the GC update itself (unused reclaimed pages): not a source.
        loop {
            let Some((k, v)) = rec else {
                txn.gc_exhausted = true;
                return Ok(false);
            };
            if k.len() != 8 {
                return Err(Error::corrupted(gc.tree.root, "GC key is not 8 bytes"));
            }
            let key = u64::from_le_bytes(k.try_into().expect("8 bytes"));
            if key > detent {
                txn.gc_exhausted = true;
                return Ok(false);
            }
            if txn.consumed.contains(&key) {
                rec = c.prev()?;
                continue;
            }
            break (key, parse_pnl(v, txn.geo.first_unallocated, gc.tree.root)?);
        }
    };
    txn.reclaimed.extend(pages);
    txn.reclaimed.sort_unstable_by(|a, b| b.cmp(a));
    txn.in_reclaim = true;
    let r = write::del(txn, Db::GC, &key.to_le_bytes(), None);
    txn.in_reclaim = false;
    r?;
    txn.consumed.push(key);
    Ok(true)
}

/// A GC record's page list, checked for allocation (`format::pnl`).
fn parse_pnl(v: &[u8], limit: u32, at: u32) -> Result<Vec<u32>> {
    let pnl = Pnl::new(v).ok_or_else(|| Error::corrupted(at, "GC record has a bad length"))?;
    pnl.strict(limit).map_err(|why| Error::corrupted(at, why))
}

/// Writes this transaction's GC records and returns the txnid the new meta
/// carries.
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
/// Reservations have only two sizes (a full inline record or a full page),
/// with unused trailing slots (allowed by the format), so small changes of the
/// lists do not move records. Pages the loop needs come from the unused
/// reclaimed pages, then the tail.
pub(crate) fn save_gc(txn: &mut RwTxn<'_>) -> Result<u64> {
    txn.saving_gc = true;
    let mut left: Vec<u32> = std::mem::take(&mut txn.reclaimed);
    left.append(&mut txn.loose);
    left.sort_unstable_by(|a, b| b.cmp(a));
    left.dedup();
    refund(txn, &mut left);
    txn.reclaimed = left;
    let ps = txn.env.page_size;
    // Pages per one-page record, and per record kept inline in a GC leaf.
    let page_cap = (ps - crate::format::PAGEHDRSZ) / 4 - 1;
    let inline_cap = ((txn.env.limits.leaf_nodemax - crate::format::NODESIZE - 8) / 4).saturating_sub(1).min(page_cap);
    let t = txn.txnid;
    let mut layout: Vec<(u64, usize, usize)> = Vec::new(); // (key, bytes, pages it holds)
    let mut stable = false;
    for _ in 0..64 {
        let spare = spare_keys(txn);
        let plan = plan_gc(txn, t, &spare, page_cap, inline_cap, &layout);
        if plan.iter().map(|p| (p.0, p.1)).eq(layout.iter().map(|p| (p.0, p.1))) {
            layout = plan;
            stable = true;
            break;
        }
        // The edits below copy GC pages and may split them: have the pages
        // for that at hand, reclaimed from the GC between tree operations
        // (never from inside one), before falling back to the file's tail.
        let edits = layout.iter().filter(|p| !plan.iter().any(|q| q.0 == p.0)).count()
            + plan.iter().filter(|p| !layout.iter().any(|q| q.0 == p.0 && q.1 == p.1)).count();
        if txn.reclaimed.len() < gc_edit_pages(txn, edits) && top_up(txn, gc_edit_pages(txn, edits))? {
            // plan_gc moved what the spare keys could not hold to the
            // retired list; with more spare keys, plan again.
            continue;
        }
        for &(k, _, _) in &layout {
            if !plan.iter().any(|p| p.0 == k) {
                write::del(txn, Db::GC, &k.to_le_bytes(), None)?;
            }
        }
        for &(k, bytes, _) in &plan {
            if !layout.iter().any(|p| p.0 == k && p.1 == bytes) {
                write::put(txn, Db::GC, &k.to_le_bytes(), Val::Reserve(bytes), PutFlags::empty(), 0)?;
            }
        }
        layout = plan;
        // Pages freed while saving were never visible to anyone: reusable
        // at once if a spare key can hold them, else retired.
        let freed = std::mem::take(&mut txn.loose);
        if spare.is_empty() {
            txn.retired.extend(freed);
        } else {
            txn.reclaimed.extend(freed);
            txn.reclaimed.sort_unstable_by(|a, b| b.cmp(a));
            if txn.reclaimed.is_empty() && layout.iter().any(|p| spare.contains(&p.0)) && !top_up(txn, 1)? {
                // Creating a record used up the last reclaimed page and the
                // GC has nothing more to reclaim. Deleting the record could
                // free a page again and so flap; taking one from the tail
                // would grow the file (or fail on a full one). Instead, stop
                // writing pages back under spare keys: from now on they join
                // this transaction's own record, reusable by the next one.
                txn.no_spare = true;
            }
        }
    }
    if !stable {
        return Err(Error::Problem("GC update did not converge".into()));
    }
    txn.retired.sort_unstable_by(|a, b| b.cmp(a));
    let n = txn.retired.len();
    txn.retired.dedup();
    if txn.retired.len() != n {
        return Err(Error::Problem("a page was retired twice".into()));
    }
    // Fill the records: the largest page numbers go to the largest keys.
    let retired = std::mem::take(&mut txn.retired);
    let reclaimed = std::mem::take(&mut txn.reclaimed);
    let mut last_key = t;
    for (lists, own) in [(&retired, true), (&reclaimed, false)] {
        let mut recs: Vec<&(u64, usize, usize)> = layout.iter().filter(|p| (p.0 >= t) == own).collect();
        recs.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
        let mut at = 0;
        for &&(k, bytes, count) in &recs {
            let bytes_v = crate::format::pnl::encode(&lists[at..at + count], bytes);
            at += count;
            write::put(txn, Db::GC, &k.to_le_bytes(), Val::Bytes(&bytes_v), PutFlags::empty(), 0)?;
            if own {
                last_key = last_key.max(k);
            }
        }
        if at != lists.len() {
            return Err(Error::Problem("GC records do not hold every free page".into()));
        }
    }
    if !txn.loose.is_empty() || !txn.retired.is_empty() || !txn.reclaimed.is_empty() {
        return Err(Error::Problem("GC changed while its records were filled".into()));
    }
    txn.retired_count = txn.retired_count.saturating_add(n as u64);
    Ok(last_key)
}

/// The keys of the GC records this transaction consumed, newest first: the
/// GC update writes unused reclaimed pages back under them.
fn spare_keys(txn: &RwTxn<'_>) -> Vec<u64> {
    if txn.no_spare {
        return Vec::new();
    }
    let mut spare = txn.consumed.clone();
    spare.sort_unstable_by(|a, b| b.cmp(a));
    spare.dedup();
    spare
}

/// An upper bound of the pages `edits` puts or deletes on the GC tree may
/// allocate: a copied root-to-leaf path and a split at every level plus a
/// new root, for the first; later edits find the path dirty already.
fn gc_edit_pages(txn: &RwTxn<'_>, edits: usize) -> usize {
    let height = txn.tables[0].as_ref().map_or(1, |t| t.tree.height as usize);
    2 * (height + 2) + 2 * edits
}

/// During the GC update: reclaims GC records until `want` pages are at hand
/// or nothing more may be reclaimed. Returns whether it reclaimed anything.
/// Runs only between tree operations of the update (it deletes records).
fn top_up(txn: &mut RwTxn<'_>, want: usize) -> Result<bool> {
    let mut any = false;
    loop {
        while txn.reclaimed.len() < want && !txn.gc_exhausted {
            if !reclaim_one(txn)? {
                break;
            }
            any = true;
        }
        // In a lazy mode the last steady commit may be what holds records
        // back: make it steady (once) rather than take the tail.
        if txn.reclaimed.len() < want
            && txn.steady_txnid < txn.base.txnid()
            && sync_would_help(txn, want - txn.reclaimed.len())?
        {
            force_steady(txn)?;
            continue;
        }
        if txn.reclaimed.len() < want && sweep_if_pinned(txn)? {
            continue;
        }
        if txn.reclaimed.len() < want && tail_grows(txn, want - txn.reclaimed.len()) && kick_laggards(txn)? {
            continue;
        }
        break;
    }
    // A record deleted by reclaiming may have freed GC pages: usable too.
    if !txn.loose.is_empty() {
        let loose = std::mem::take(&mut txn.loose);
        txn.reclaimed.extend(loose);
        txn.reclaimed.sort_unstable_by(|a, b| b.cmp(a));
    }
    Ok(any)
}

/// The GC records the current lists need: (key, reserved bytes, pages).
/// `prev` is the current layout: records that exist keep their size class
/// while their pages fit, and leftover records are not dropped while there are
/// pages to put in them, so the layout settles instead of flapping between
/// creating a record (which uses a page) and deleting it (which frees one).
fn plan_gc(
    txn: &mut RwTxn<'_>,
    t: u64,
    spare: &[u64],
    page_cap: usize,
    inline_cap: usize,
    prev: &[(u64, usize, usize)],
) -> Vec<(u64, usize, usize)> {
    let (inline_bytes, page_bytes) = (4 * (inline_cap + 1), 4 * (page_cap + 1));
    let size = |k: u64, n: usize| -> usize {
        match prev.iter().find(|p| p.0 == k) {
            Some(&(_, b, _)) if 4 * (n + 1) <= b => b,
            _ if n <= inline_cap => inline_bytes,
            _ => page_bytes,
        }
    };
    let mut plan = Vec::new();
    // Leftovers over the capacity of the spare keys wait one transaction longer.
    let room = spare.len() * page_cap;
    if txn.reclaimed.len() > room {
        let extra = txn.reclaimed.split_off(room);
        txn.retired.extend(extra);
    }
    let l = txn.reclaimed.len();
    let had = prev.iter().filter(|p| p.0 < t).count();
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
        plan.push((k, size(k, n), n));
        rest -= n;
    }
    let r = txn.retired.len();
    if r > 0 {
        let k = if r <= inline_cap { 1 } else { r.div_ceil(page_cap) };
        let mut rest = r;
        for j in 0..k {
            let n = if j + 1 < k { page_cap } else { rest };
            let key = t + j as u64;
            plan.push((key, if k == 1 { size(key, n) } else { page_bytes }, n));
            rest -= n;
        }
    }
    plan
}

/// Gives free pages at the end of the file back to the unallocated tail.
/// `left` is sorted descending.
fn refund(txn: &mut RwTxn<'_>, left: &mut Vec<u32>) {
    let mut cut = 0;
    while cut < left.len() && left[cut] + 1 == txn.geo.first_unallocated {
        txn.geo.first_unallocated -= 1;
        cut += 1;
    }
    left.drain(..cut);
}

#[cfg(test)]
mod locality_tests {
    use super::{longest_run, take_page};

    #[test]
    fn longest_run_finds_the_longest_lowest_run() {
        assert_eq!(longest_run(&[]), (0, 0));
        assert_eq!(longest_run(&[9]), (0, 1));
        // Runs 12..=13, 7..=9, 3: the longest is 7..=9, its lowest page at index 4.
        assert_eq!(longest_run(&[13, 12, 9, 8, 7, 3]), (4, 3));
        // Ties go to the lowest run.
        assert_eq!(longest_run(&[21, 20, 5, 4]), (3, 2));
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
}
