//! WRITEMAP: a write transaction edits its pages in place in a writable map
//! of the data file and commits with `msync`.

use rdbx::{Db, Durability, Env, Geometry, PutFlags};

const MARKER: &[u8] = b"written-through-the-map:5f1c0e";

fn open(dir: &std::path::Path, write_map: bool, d: Durability) -> Env {
    Env::builder()
        .write_map(write_map)
        .durability(d)
        .geometry(Geometry { page_size: Some(4096), ..Default::default() })
        .open(dir)
        .unwrap()
}

fn file_has(dir: &std::path::Path, needle: &[u8]) -> bool {
    let bytes = std::fs::read(dir.join("mdbx.dat")).unwrap();
    bytes.windows(needle.len()).any(|w| w == needle)
}

/// Before the commit, the new value is already in the file with WRITEMAP
/// (the page lives in the shared map), and only after it without.
#[test]
fn pages_are_edited_in_place() {
    for write_map in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let env = open(d.path(), write_map, Durability::SyncDurable);
        let mut txn = env.begin_rw_txn().unwrap();
        let db = txn.open_db(None).unwrap();
        for i in 0..100u32 {
            txn.put(db, &i.to_be_bytes(), b"filler", PutFlags::empty()).unwrap();
        }
        txn.put(db, b"marker", MARKER, PutFlags::empty()).unwrap();
        assert_eq!(file_has(d.path(), MARKER), write_map, "write_map {write_map}: before the commit");
        let ops = env.page_ops();
        txn.commit().unwrap();
        let after = env.page_ops();
        assert!(file_has(d.path(), MARKER));
        // A durable commit syncs its pages (msync with WRITEMAP), then writes
        // the meta through; a small one without WRITEMAP writes its pages
        // through too (tests/write_through.rs).
        let (msync, fsync) = (after.msync - ops.msync, after.fsync - ops.fsync);
        if write_map {
            assert_eq!((msync, fsync), (1, 0), "WRITEMAP syncs with msync");
        } else {
            assert_eq!(msync, 0, "without WRITEMAP: no msync");
        }
        drop(env);
        // The other mode reads it.
        let env = open(d.path(), !write_map, Durability::SyncDurable);
        let r = env.begin_ro_txn().unwrap();
        assert_eq!(r.get(db, b"marker").unwrap(), Some(MARKER));
        assert_eq!(r.db_stat(db).unwrap().entries, 101);
        let report = env.check(&Default::default(), &mut |_| {}).unwrap();
        assert_eq!(report.problem_count(), 0, "{report:?}");
    }
}

/// An aborted WRITEMAP transaction leaves nothing a reader or the next
/// writer sees, although it wrote into the file through the map.
#[test]
fn abort_leaves_the_last_commit() {
    let d = tempfile::tempdir().unwrap();
    let env = open(d.path(), true, Durability::SyncDurable);
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.open_db(None).unwrap();
    for i in 0..2000u32 {
        txn.put(db, &i.to_be_bytes(), &[1u8; 100], PutFlags::empty()).unwrap();
    }
    txn.commit().unwrap();
    let reader = env.begin_ro_txn().unwrap();
    for round in 0..5u8 {
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0..2000u32 {
            txn.put(db, &i.to_be_bytes(), &[round + 2; 100], PutFlags::empty()).unwrap();
        }
        txn.abort();
    }
    for (k, v) in reader.iter(db).unwrap().map(Result::unwrap) {
        assert_eq!(v, &[1u8; 100][..], "key {k:?}");
    }
    drop(reader);
    let txn = env.begin_rw_txn().unwrap();
    assert_eq!(txn.db_stat(db).unwrap().entries, 2000);
    assert_eq!(txn.get(db, &7u32.to_be_bytes()).unwrap(), Some(&[1u8; 100][..]));
}

/// Lazy modes: the lock file tells peers whose sync will flush a lazily
/// written meta, with the WRITEMAP bias (libmdbx's
/// MDBX_NOMETASYNC_LAZY_WRITEMAP), and both modes reopen what the other wrote.
#[test]
fn lazy_modes_round_trip() {
    for d in [Durability::NoMetaSync, Durability::SafeNoSync, Durability::UtterlyNoSync] {
        let dir = tempfile::tempdir().unwrap();
        {
            let env = open(dir.path(), true, d);
            for n in 0..20u32 {
                let mut txn = env.begin_rw_txn().unwrap();
                let db = txn.open_db(None).unwrap();
                for i in 0..50u32 {
                    txn.put(db, &(n * 50 + i).to_be_bytes(), &[n as u8; 300], PutFlags::empty()).unwrap();
                }
                txn.commit().unwrap();
            }
            env.sync().unwrap();
        }
        let env = open(dir.path(), false, d);
        let r = env.begin_ro_txn().unwrap();
        let db = r.open_db(None).unwrap();
        assert_eq!(r.db_stat(db).unwrap().entries, 1000, "{d:?}");
        let report = env.check(&Default::default(), &mut |_| {}).unwrap();
        assert_eq!(report.problem_count(), 0, "{d:?}: {report:?}");
    }
}

/// On tmpfs (/dev/shm), with WRITEMAP and without: a steady random-update
/// workload reuses the pages it frees rather than taking the unused room of
/// the file, which there costs the kernel a fresh page each and gains
/// nothing (a sync is free; commit locality serves disks). Before, the lazy
/// steady point held a transaction's freed pages back and commit locality
/// took runs from the room inside the file: 100 transactions filled the
/// file's whole 16 MiB growth step (4,087 pages used, in both modes).
#[test]
fn random_updates_on_tmpfs_reuse_pages_before_fresh_room() {
    let shm = std::path::Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("skipped: no /dev/shm");
        return;
    }
    for write_map in [true, false] {
        let d = tempfile::tempdir_in(shm).unwrap();
        let env = Env::builder()
            .write_map(write_map)
            .durability(Durability::SafeNoSync)
            .geometry(Geometry { growth_step: Some(16 << 20), ..Default::default() })
            .open(d.path())
            .unwrap();
        let n = 100_000u64;
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0..n {
            txn.put(Db::MAIN, &i.to_be_bytes(), &[7u8; 32], PutFlags::APPEND).unwrap();
        }
        txn.commit().unwrap();
        let loaded = env.info().unwrap().first_unallocated;
        let mut x = 1u64;
        let mut most_dirty = 0;
        for _ in 0..100 {
            let mut txn = env.begin_rw_txn().unwrap();
            for _ in 0..300 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                txn.put(Db::MAIN, &(x % (2 * n)).to_be_bytes(), &[9u8; 32], PutFlags::empty()).unwrap();
            }
            most_dirty = most_dirty.max(txn.info().unwrap().space_dirty / 4096);
            txn.commit().unwrap();
        }
        let used = env.info().unwrap().first_unallocated;
        eprintln!(
            "write_map {write_map}: pages used: {loaded} after the load, {used} after the updates; \
             at most {most_dirty} dirty per commit"
        );
        // The tree grows by the inserts (about half the puts), plus the pages
        // of the last two commits that are not yet reusable, plus slack.
        assert!(
            used <= loaded + 4 * most_dirty,
            "write_map {write_map}: {used} pages used (from {loaded}; {most_dirty} dirty per commit)"
        );
    }
}

/// On tmpfs a sync does nothing, so a lazy commit there is steady at once:
/// the next transaction reuses the pages it freed without rewriting its meta
/// first (before, `gc::force_steady` rewrote the base meta as steady at the
/// start of each small transaction: one write call more per commit, and the
/// commits' own metas stayed weak).
#[test]
fn lazy_commits_on_tmpfs_are_steady() {
    let shm = std::path::Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("skipped: no /dev/shm");
        return;
    }
    for write_map in [true, false] {
        for durability in [Durability::SafeNoSync, Durability::NoMetaSync, Durability::UtterlyNoSync] {
            let d = tempfile::tempdir_in(shm).unwrap();
            let env = open(d.path(), write_map, durability);
            let (mut wops, mut syncs) = (Vec::new(), Vec::new());
            for i in 0..20u32 {
                let ops = env.page_ops();
                let mut txn = env.begin_rw_txn().unwrap();
                txn.put(Db::MAIN, &(i % 4).to_be_bytes(), &[i as u8; 100], PutFlags::empty()).unwrap();
                txn.commit().unwrap();
                let now = env.page_ops();
                wops.push(now.wops - ops.wops);
                syncs.push(now.msync + now.fsync - ops.msync - ops.fsync);
                let info = env.info().unwrap();
                let head = info.metas.iter().max_by_key(|m| m.0).unwrap();
                assert!(head.1, "write_map {write_map}, {durability:?}, commit {i}: the head is weak: {info:?}");
                assert_eq!(info.unsynced_bytes, 0, "write_map {write_map}, {durability:?}, commit {i}");
            }
            // With WRITEMAP nothing is written with a call. Without it: the
            // table's leaf and the GC's leaf (one run or two), then the meta,
            // 2 or 3 calls; never a rewrite of the base meta on top.
            let most = wops.iter().max().copied().unwrap_or(0);
            let limit = if write_map { 0 } else { 3 };
            assert!(most <= limit, "write_map {write_map}, {durability:?}: write calls per commit {wops:?}");
            // With WRITEMAP there a sync would do nothing: not even the call.
            if write_map {
                assert!(syncs.iter().all(|&n| n == 0), "{durability:?}: sync calls per commit {syncs:?}");
            }
        }
        // A durable commit still flushes there (the promise does not depend
        // on the file system being known): with WRITEMAP its pages are in
        // the map, so a sync call; without, a sync or a write-through call
        // (the counters do not tell a write-through from a plain write).
        let d = tempfile::tempdir_in(shm).unwrap();
        let env = open(d.path(), write_map, Durability::SyncDurable);
        for i in 0..5u32 {
            let ops = env.page_ops();
            let mut txn = env.begin_rw_txn().unwrap();
            txn.put(Db::MAIN, &i.to_be_bytes(), &[1; 100], PutFlags::empty()).unwrap();
            txn.commit().unwrap();
            let now = env.page_ops();
            let syncs = now.msync + now.fsync - ops.msync - ops.fsync;
            let flushed = if write_map { syncs } else { syncs + now.wops - ops.wops };
            assert!(flushed > 0, "write_map {write_map}: a durable commit neither synced nor wrote through");
        }
    }
}

/// A lazy WRITEMAP commit writes its meta in place in the map, as libmdbx
/// does: a one-put commit makes no write call at all (before, the meta went
/// out with a `pwrite`).
#[test]
fn a_lazy_commit_writes_its_meta_through_the_map() {
    for durability in [Durability::SafeNoSync, Durability::UtterlyNoSync] {
        let d = tempfile::tempdir().unwrap();
        // Room for every page the commits take, so that no commit makes the
        // last one steady first to reuse pages (`gc::force_steady`, a write).
        let env = Env::builder()
            .write_map(true)
            .durability(durability)
            .geometry(Geometry { page_size: Some(4096), size_now: Some(16 << 20), ..Default::default() })
            .open(d.path())
            .unwrap();
        for i in 0..50u32 {
            let ops = env.page_ops();
            let last = env.info().unwrap().last_txnid;
            let mut txn = env.begin_rw_txn().unwrap();
            txn.put(Db::MAIN, &i.to_be_bytes(), b"value", PutFlags::empty()).unwrap();
            txn.commit().unwrap();
            let after = env.page_ops();
            assert_eq!(after.wops - ops.wops, 0, "{durability:?}, commit {i}: write calls");
            assert_eq!(env.info().unwrap().last_txnid, last + 1, "the commit is the newest");
        }
        drop(env);
        let env = open(d.path(), false, Durability::SyncDurable);
        let r = env.begin_ro_txn().unwrap();
        assert_eq!(r.db_stat(Db::MAIN).unwrap().entries, 50);
        let report = env.check(&Default::default(), &mut |_| {}).unwrap();
        assert_eq!(report.problem_count(), 0, "{report:?}");
    }
}

/// Readers that begin while metas are being written in place always see a
/// whole commit: each commit stores its own number under one key and the
/// same number in the canary, so a snapshot whose tree and canary disagree
/// (a torn meta taken for a valid one) is caught.
#[test]
fn readers_never_take_a_meta_half_written_in_place() {
    let d = tempfile::tempdir().unwrap();
    let env = open(d.path(), true, Durability::SafeNoSync);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut seen = 0u64;
                    while !done.load(std::sync::atomic::Ordering::Relaxed) {
                        let r = env.begin_ro_txn().unwrap();
                        let canary = r.canary()[0];
                        let stored = r.get(Db::MAIN, b"n").unwrap().map(|v| u64::from_le_bytes(v.try_into().unwrap()));
                        assert_eq!(stored.unwrap_or(0), canary, "snapshot {}", r.id());
                        seen += 1;
                    }
                    seen
                })
            })
            .collect();
        for n in 1..=3000u64 {
            let mut txn = env.begin_rw_txn().unwrap();
            txn.put(Db::MAIN, b"n", &n.to_le_bytes(), PutFlags::empty()).unwrap();
            txn.put(Db::MAIN, &n.to_be_bytes(), &[0u8; 64], PutFlags::empty()).unwrap();
            txn.set_canary(n, 0, 0);
            txn.commit().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
    });
}
