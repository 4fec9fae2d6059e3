//! The commit of a write transaction: named-table records into the main
//! table, the GC records (`gc::save_gc`), the new meta, the pages in runs of
//! consecutive page numbers, the syncs the durability mode asks for, the meta
//! into the tail slot, and a shrink of the file when the rule says so.

use crate::btree::write::{self, Val};
use crate::error::{Error, Result};
use crate::flags::PutFlags;
use crate::format::meta::{pv2pages, META_OFF, SIGN_STEADY, SIGN_WEAK};
use crate::gc::{os_unit, round_up_pages, save_gc};
use crate::txn::{Db, RwTxn};

/// Rewrites a named table's record (`bytes`, under `name`) where its last
/// commit left it (`at`: the main tree's one leaf and the index), if the main
/// tree's root is still that page and unchanged (a page of the base snapshot
/// this transaction has not changed: any edit copies the root first), or its
/// copy made by this loop (`copied`: the original and the copy; the loop
/// only overwrites records of the same size, which moves nothing). Returns
/// the record's place then, or `None` to put it the usual way. A commit into
/// a named table spent about a tenth of its instructions finding its record.
fn rewrite_in_place(
    txn: &mut RwTxn<'_>,
    at: (u32, u16),
    name: &[u8],
    bytes: &[u8],
    copied: &mut Option<(u32, u32)>,
) -> Result<Option<(u32, u16)>> {
    let main = txn.st.tables[1].as_ref().expect("main").tree;
    let (leaf, idx) = (at.0, at.1 as usize);
    let root = match *copied {
        Some((old, new)) if old == leaf && main.root == new => new,
        _ if main.root == leaf && txn.page_unchanged(leaf) => leaf,
        _ => return Ok(None),
    };
    if main.height != 1 {
        return Ok(None);
    }
    {
        let page = crate::format::page::Page { buf: txn.pages().get(root)? };
        if page.is_dupfix() || idx >= page.num_entries() {
            return Ok(None);
        }
        let n = crate::format::node::node(page, idx, root)?;
        if n.key != name || n.flags != crate::format::node::N_TREE || n.data.len() != bytes.len() {
            return Ok(None);
        }
    }
    let mut tree = main;
    let mut path = write::Path::new();
    path.push(root, idx);
    write::touch_path(txn, &mut tree, &mut path)?;
    let new = tree.root;
    let buf = txn.dirty_mut(new);
    let (off, len) = crate::format::node::value_range(buf, idx);
    buf[off..off + len].copy_from_slice(bytes);
    write::finish(txn, Db::MAIN, tree);
    if new != root {
        *copied = Some((root, new));
    }
    Ok(Some((new, idx as u16)))
}

/// Where the record of `name` lies in the main tree after its put, if that
/// tree is one leaf (the next commit rewrites it there): the leaf and index.
fn record_place(txn: &RwTxn<'_>, name: &[u8]) -> Result<Option<(u32, u16)>> {
    let main = txn.st.tables[1].as_ref().expect("main");
    if main.tree.height != 1 {
        return Ok(None);
    }
    let mut path = write::Path::new();
    if !write::find_path(txn, &main.tree, name, main.cmp, &mut path)? {
        return Err(Error::Problem("a table record vanished after its put".into()));
    }
    let (leaf, idx) = path.at(0);
    Ok(Some((leaf, idx as u16)))
}

/// Commits the transaction (docs/format.md, "Commit and recovery").
pub(crate) fn commit(txn: &mut RwTxn<'_>) -> Result<()> {
    let ps = txn.env.page_size;
    // 1. Records of changed named tables.
    let mut copied = None;
    for dbi in 2..txn.st.tables.len() {
        // The name is lent out of the table and given back below: a clone
        // would count it up and down, two locked instructions a commit. (A
        // commit that fails here ends the transaction, and its tables.)
        let (name, bytes, at) = match txn.st.tables[dbi].as_mut() {
            Some(t) if t.dirty => (t.name.take().ok_or(Error::BadDbi)?, t.tree.to_bytes(), t.record_at),
            _ => continue,
        };
        let at = match at {
            Some(at) => rewrite_in_place(txn, at, &name, &bytes, &mut copied)?,
            None => None,
        };
        let at = match at {
            Some(at) => Some(at),
            None => {
                write::put(txn, Db::MAIN, &name, Val::Bytes(&bytes), PutFlags::empty(), crate::format::node::N_TREE)?;
                record_place(txn, &name)?
            }
        };
        if let Some(t) = txn.st.tables[dbi].as_mut() {
            t.record_at = at;
            t.name = Some(name);
        }
    }
    // 2. GC records.
    let meta_txnid = save_gc(txn)?;
    // 3. The new meta.
    let mut meta = txn.st.base.clone();
    let gc = txn.st.tables[0].as_ref().expect("gc").tree;
    let main = txn.st.tables[1].as_ref().expect("main").tree;
    meta.gc = crate::format::tree::Tree { dupfix_size: ps as u32, ..gc };
    meta.main = main;
    meta.canary = txn.st.canary;
    // A statistics counter that a damaged (or very old) meta may carry near
    // its limit: it wraps, exactly as libmdbx's unsigned arithmetic does, so
    // both write the same meta (and a debug build does not panic).
    meta.pages_retired = txn.st.base.pages_retired.wrapping_add(txn.st.retired_count);
    meta.bootid = crate::bootid::boot_id();
    meta.txnid_a = meta_txnid;
    meta.txnid_b = meta_txnid;
    let mut geo = txn.geo;
    let shrink_to = shrink_target(txn, &geo, gc.height);
    if let Some(now) = shrink_to {
        geo.now = now;
    }
    meta.geo = geo;
    // 4. Pages, in runs of consecutive page numbers.
    // With WRITEMAP most pages are already in place in the map.
    // The heap pages in page-number order, as `pgno << 32 | pages` (a large
    // chunk is one buffer of several pages): plain numbers, kept by the
    // pool with their capacity; each buffer is looked up again to be written.
    // Pages edited in place in the map count as written too (to the page
    // cache). One pass over the dirty set counts them and lists the others.
    let mut order = std::mem::take(&mut txn.st.write_order);
    order.reserve(txn.st.dirty.len());
    let mut to_write = 0usize;
    let mut written: u64 = 0;
    for (p, b) in txn.st.dirty.iter() {
        let pages = b.pages(ps);
        if b.in_map() {
            written += pages as u64;
        } else {
            order.push(u64::from(*p) << 32 | pages as u64);
            to_write += pages;
        }
    }
    #[cfg(test)]
    tests::TO_WRITE.with(|t| *t.borrow_mut() = order.clone());
    // Page numbers are unique, so their order is the keys' order.
    crate::radix::sort_by_key(&mut order, &mut txn.st.write_order_scratch, |k| (k >> 32) as u32);
    let durable = txn.env.durability == crate::env::Durability::SyncDurable;
    // Write-through (libmdbx's writethrough threshold): a small durable
    // commit with nothing else waiting for a sync (no spilled pages, no lazy
    // commit of another process, the file not resized) writes its pages
    // durably as it goes and needs no fdatasync.
    let write_through = durable
        && !txn.env.writemap
        && to_write <= txn.env.writethrough_threshold
        && txn.geo.now == txn.st.base.geo.now
        && txn.env.lck.unsynced_pages() == 0;
    // With WRITEMAP there is usually nothing to gather.
    if !order.is_empty() {
        // The buffers of one run: on the stack for runs of up to RUN_ON_STACK
        // buffers (a small commit's), else in a vector.
        let mut on_stack: [&[u8]; RUN_ON_STACK] = [&[]; RUN_ON_STACK];
        let mut on_heap: Vec<&[u8]> = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let start = (order[i] >> 32) as u32;
            let mut next = start;
            let mut j = i;
            while j < order.len() && (order[j] >> 32) as u32 == next {
                next += order[j] as u32;
                j += 1;
            }
            let bufs: &mut [&[u8]] = if j - i <= RUN_ON_STACK {
                &mut on_stack[..j - i]
            } else {
                on_heap.clear();
                on_heap.resize(j - i, &[]);
                &mut on_heap
            };
            for (slot, &k) in bufs.iter_mut().zip(&order[i..j]) {
                *slot = match txn.st.dirty.get(&((k >> 32) as u32)) {
                    Some(b) => b,
                    None => return Err(Error::Problem("a page to write left the dirty set".into())),
                };
            }
            if write_through {
                txn.env.write_at_durable(bufs, start as u64 * ps as u64)?;
            } else {
                txn.env.write_at(bufs, start as u64 * ps as u64)?;
                written += u64::from(next - start);
            }
            i = j;
        }
    }
    // Every page written counts as unsynced until a steady commit (libmdbx
    // counts them in every mode); a lazy commit becomes steady when a
    // process sharing the lock file set an auto-sync threshold or period
    // that is now passed (libmdbx's `autosync_threshold`/`autosync_period`).
    // On tmpfs or ramfs a sync does nothing (`EnvInner::in_memory_fs`): a
    // lazy commit there is made steady at once (its syncs still go through
    // the io seam), so the next transaction may reuse the pages this one
    // freed without first rewriting this meta as steady (`gc::force_steady`:
    // a meta write and a scan of the GC, each small commit). The promise of
    // the lazy modes holds: the last steady commit's pages are never reused
    // while a newer weak one exists. libmdbx keeps such commits weak there,
    // and lets the file grow instead. Such a commit leaves nothing unsynced,
    // so it skips the count (and its clock read) that the steady commit
    // would reset at once.
    let free_syncs = txn.env.in_memory_fs;
    // With WRITEMAP there, a lazy commit's sync is not even a call: skipped,
    // and the meta written in place needs no copy of the previous one to put
    // back. (A durable commit still syncs: as everywhere, its msync counts.)
    let no_sync_call = free_syncs && !durable && txn.env.sync_is_free(&txn.st.map);
    if !free_syncs {
        txn.env.lck.add_unsynced_pages(written);
    }
    let autosync = !txn.env.durability.syncs_data() && !free_syncs && txn.env.lck.autosync_due();
    let steady = txn.env.durability.syncs_data() || autosync || free_syncs;
    let meta_synced = txn.env.durability == crate::env::Durability::SyncDurable || autosync || free_syncs;
    meta.sign = if steady { SIGN_STEADY } else { SIGN_WEAK };
    if steady && !write_through && !no_sync_call {
        txn.env.sync_data()?;
    }
    // 5. The meta, into the tail slot. Should that write or its sync fail,
    // the slot gets its previous contents back, so the last commit stays the
    // newest (a torn meta is ignored by every reader anyway).
    // Durable: the meta is written through, after the pages are durable (as
    // libmdbx writes it through its O_DSYNC descriptor). An autosync commit
    // of a lazy mode writes it, then syncs. A lazy commit with WRITEMAP
    // writes it in place in the map, as libmdbx does (no system call); with
    // no sync after it (none is needed on tmpfs), that cannot fail, and the
    // previous contents are not needed (else the writer's copy of them).
    let slot_off = (txn.st.base_slot * ps + META_OFF) as u64;
    let body = meta.body();
    let in_map_unsynced =
        !durable && (!meta_synced || no_sync_call) && txn.env.write_meta_in_map(&txn.st.map, txn.st.base_slot, &body);
    if !in_map_unsynced {
        let previous = txn.env.previous_meta_body(&txn.st.metas, &txn.st.map, txn.st.base_slot)?;
        let in_map = !durable && txn.env.write_meta_in_map(&txn.st.map, txn.st.base_slot, &body);
        let meta_written = if durable {
            txn.env.write_at_durable(&[&body], slot_off)
        } else {
            let written = if in_map { Ok(()) } else { txn.env.write_at(&[&body], slot_off) };
            written.and_then(|()| if meta_synced { txn.env.sync_data() } else { Ok(()) })
        };
        if let Err(e) = meta_written {
            if !(in_map && txn.env.write_meta_in_map(&txn.st.map, txn.st.base_slot, &previous)) {
                let _ = txn.env.write_at(&[&previous], slot_off);
            }
            return Err(e.into());
        }
    }
    let slot = txn.st.base_slot;
    crate::env::EnvInner::note_meta_written(&mut txn.st.metas, slot, &meta, &body);
    txn.st.own_record.committed(meta_txnid, &gc);
    txn.env.lck.after_commit(meta_txnid, steady, meta_synced);
    if let Some(now) = shrink_to {
        // Best effort: the meta already records the smaller size.
        let _ = txn.env.set_file_len(now as u64 * ps as u64);
    }
    // The buffers go back to the pool in the order they were written, so
    // the next transaction's first copies land in the last ones written,
    // still in the CPU's cache (hash order made most of them cold).
    txn.recycle_dirty(order.iter().map(|&k| (k >> 32) as u32));
    order.clear();
    txn.st.write_order = order;
    txn.st.spilled.clear();
    txn.st.committed_main = Some(main);
    Ok(())
}

/// Buffers of one run of pages the commit gathers on the stack (a run of
/// more takes a vector).
const RUN_ON_STACK: usize = 64;

/// The shrink rule (docs/format.md, "Shrink"): the new `now`, if the file should shrink.
fn shrink_target(txn: &RwTxn<'_>, geo: &crate::format::meta::MetaGeo, gc_height: u16) -> Option<u32> {
    let step = pv2pages(geo.shrink_pv) as u64;
    if step == 0 {
        return None;
    }
    let gap = 3 + 3 * gc_height as u64;
    let now = geo.now as u64;
    let fu = geo.first_unallocated as u64;
    if now.saturating_sub(fu) <= step + gap {
        return None;
    }
    let largest = fu.max(txn.st.base.geo.first_unallocated as u64).max(txn.env.lck.max_reader_pages_used() as u64);
    if now <= largest || now - largest <= step + gap {
        return None;
    }
    let x = largest + gap;
    let grow = pv2pages(geo.grow_pv) as u64;
    let a = if grow == 0 { step } else { grow };
    let bottom = (geo.lower as u64).max(round_up_pages(x + a - x % a, os_unit(txn.env.page_size)));
    (now > bottom).then_some(bottom as u32)
}

#[cfg(test)]
mod tests {
    use crate::{Db, Durability, Env, PutFlags};

    thread_local! {
        /// The pages the last commit on this thread wrote from heap
        /// buffers, as `pgno << 32 | pages`, in the order it found them.
        pub(super) static TO_WRITE: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// A commit writes each run of consecutive dirty pages with one call,
    /// however the transaction came to dirty them: the pages are gathered
    /// in page-number order. Random inserts into a tree whose free pages are
    /// scattered dirty pages out of order (LMDB's random-UUID scenario); a
    /// commit that wrote them in the order they were dirtied made more
    /// calls than there are runs, which the locality test's bound (an
    /// average) did not notice.
    #[test]
    fn a_commit_writes_each_run_of_pages_with_one_call() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().durability(Durability::SafeNoSync).open(d.path()).unwrap();
        let mut x = 7u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut out_of_order = 0;
        for _ in 0..60 {
            let mut txn = env.begin_rw_txn().unwrap();
            for _ in 0..100 {
                let mut k = [0u8; 16];
                k[..8].copy_from_slice(&next().to_le_bytes());
                k[8..].copy_from_slice(&next().to_le_bytes());
                txn.put(Db::MAIN, &k, &[0x5A; 100], PutFlags::empty()).unwrap();
            }
            let before = env.page_ops().wops;
            txn.commit().unwrap();
            // The pages the commit had to write, as it found them dirty.
            let dirtied: Vec<u32> = TO_WRITE
                .with(|t| t.take())
                .iter()
                .flat_map(|&k| (k >> 32) as u32..(k >> 32) as u32 + k as u32)
                .collect();
            out_of_order += usize::from(!dirtied.is_sorted());
            let mut pages = dirtied;
            pages.sort_unstable();
            let runs = 1 + pages.windows(2).filter(|w| w[1] != w[0] + 1).count() as u64;
            // The runs, and the meta unless it went into the map.
            let calls = env.page_ops().wops - before;
            assert!(calls == runs || calls == runs + 1, "{calls} write calls for {runs} runs of pages");
        }
        assert!(out_of_order > 10, "only {out_of_order} of 60 transactions dirtied pages out of order");
    }

    /// The pool gets a commit's buffers back in the order they were written
    /// (by page number), so the next transaction's first page copies go to
    /// the buffers the kernel read last. Given back in hash order, the
    /// first copies of a 1,000-put transaction went mostly to buffers
    /// already out of the CPU's cache.
    #[test]
    fn commit_gives_buffers_back_in_write_order() {
        let d = tempfile::tempdir().unwrap();
        let env = Env::builder().durability(Durability::SafeNoSync).open(d.path()).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0u32..20_000 {
            txn.put(Db::MAIN, &i.to_be_bytes(), &[1u8; 40], PutFlags::APPEND).unwrap();
        }
        txn.commit().unwrap();
        // Every 300th key: one put in each of ~60 leaves spread over the tree.
        let mut txn = env.begin_rw_txn().unwrap();
        for i in (0u32..20_000).step_by(300) {
            txn.put(Db::MAIN, &i.to_be_bytes(), &[2u8; 40], PutFlags::empty()).unwrap();
        }
        let addr_to_pgno: std::collections::HashMap<usize, u32> =
            txn.st.dirty.iter().filter(|(_, b)| !b.in_map()).map(|(p, b)| (b.as_ptr() as usize, *p)).collect();
        assert!(addr_to_pgno.len() > 50, "{} dirty pages", addr_to_pgno.len());
        txn.commit().unwrap();
        let pooled = env.inner.writer_state.lock().unwrap().pool.buffer_addrs();
        let pgnos: Vec<u32> = pooled.iter().filter_map(|a| addr_to_pgno.get(a).copied()).collect();
        assert_eq!(pgnos.len(), addr_to_pgno.len(), "every buffer of the transaction is pooled");
        assert!(pgnos.is_sorted(), "buffers pooled out of write order: {pgnos:?}");
    }
}
