//! The lock file's unsynced-pages accounting in the lazy durability modes
//! and the auto-sync threshold that turns a lazy commit steady.

mod common;
use common::in_memory_fs;
use rdbx::{Db, Durability, Env, Geometry, PutFlags};

fn write(env: &Env, from: u32, n: u32) {
    let mut txn = env.begin_rw_txn().expect("begin");
    for i in from..from + n {
        txn.put(Db::MAIN, &i.to_be_bytes(), &[3u8; 200], PutFlags::empty()).expect("put");
    }
    txn.commit().expect("commit");
}

fn newest_steady(env: &Env) -> u64 {
    env.info().expect("info").metas.iter().filter(|m| m.1).map(|m| m.0).max().expect("a steady meta")
}

fn open(dir: &std::path::Path, d: Durability, sync_bytes: Option<usize>, write_map: bool) -> Env {
    let mut b = Env::builder()
        .durability(d)
        .write_map(write_map)
        .geometry(Geometry { page_size: Some(4096), ..Default::default() });
    if let Some(n) = sync_bytes {
        b = b.sync_bytes(n);
    }
    b.open(dir).expect("open")
}

/// Both ways of writing pages count them: from heap buffers, and (with
/// WRITEMAP) edited in place in the map, where no write call sees them.
#[test]
fn lazy_commits_count_unsynced_pages_until_a_sync() {
    for write_map in [false, true] {
        lazy_commits_count_unsynced_pages(write_map);
    }
}

fn lazy_commits_count_unsynced_pages(write_map: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = open(dir.path(), Durability::SafeNoSync, None, write_map);
    assert_eq!(env.info().expect("info").unsynced_bytes, 0);
    write(&env, 0, 1000);
    let one = env.info().expect("info").unsynced_bytes;
    write(&env, 1000, 10);
    let two = env.info().expect("info").unsynced_bytes;
    if in_memory_fs(dir.path()) {
        assert_eq!((one, two), (0, 0), "lazy commits on tmpfs are steady");
    } else {
        assert!(one >= 50 * 4096, "write_map {write_map}: unsynced after a lazy commit of ~60 pages: {one}");
        assert!(two > one, "write_map {write_map}: a second lazy commit added nothing: {one} -> {two}");
    }
    env.sync().expect("sync");
    assert_eq!(env.info().expect("info").unsynced_bytes, 0);

    let dir = tempfile::tempdir().expect("tempdir");
    let env = open(dir.path(), Durability::SyncDurable, None, write_map);
    write(&env, 0, 1000);
    assert_eq!(env.info().expect("info").unsynced_bytes, 0, "a durable commit leaves nothing unsynced");
}

#[test]
fn a_lazy_commit_over_the_threshold_is_made_steady() {
    for (threshold, expect_steady, write_map) in
        [(None, false, false), (Some(64 << 10), true, false), (None, false, true), (Some(64 << 10), true, true)]
    {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = open(dir.path(), Durability::SafeNoSync, threshold, write_map);
        let expect_steady = expect_steady || in_memory_fs(dir.path());
        let before = newest_steady(&env);
        let ops = env.page_ops();
        write(&env, 0, 1000);
        let now = env.page_ops();
        let syncs = now.msync + now.fsync - ops.msync - ops.fsync;
        let info = env.info().expect("info");
        assert_eq!(info.autosync_threshold, threshold.unwrap_or(0) as u64);
        let steady = newest_steady(&env);
        assert_eq!(
            steady == info.last_txnid && steady > before,
            expect_steady,
            "threshold {threshold:?}, write_map {write_map}: {info:?}"
        );
        assert_eq!(info.unsynced_bytes == 0, expect_steady, "write_map {write_map}: {info:?}");
        // Made steady on a disk: the pages are synced, then the meta
        // written and synced in turn (with WRITEMAP too, where the meta
        // goes into the map and a lazy commit's stays unsynced).
        if expect_steady && !in_memory_fs(dir.path()) {
            assert!(syncs >= 2, "write_map {write_map}: {syncs} sync calls made the commit steady");
        }
    }
}
