//! WRITEMAP: a write transaction edits its pages in place in a writable map
//! of the data file and commits with `msync`.

use rdbx::{Durability, Env, Geometry, PutFlags};

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
