//! `EnvBuilder::lock_format` and `Env::lock_format` (issue 12): which lock-file
//! layout rdbx creates as the first opener, and that a stale lock file keeps
//! its version. Joining a live lock file of either version is in tests/lck.rs
//! (rdbx processes) and in the rdbx-tests crate (libmdbx 0.13 and 0.14).

use rdbx::{Env, LockFormat, PutFlags};

fn magic(path: &std::path::Path) -> Option<u64> {
    let b = std::fs::read(path).unwrap();
    (b.len() >= 8).then(|| u64::from_le_bytes(b[..8].try_into().unwrap()))
}

#[test]
fn first_opener_creates_the_chosen_format() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let env = Env::builder().lock_format(LockFormat::V6).open(&path).unwrap();
    assert!(env.opened_exclusively());
    assert_eq!(env.lock_format(), Some(LockFormat::V6));
    assert_eq!(magic(env.lock_path()), Some(0x59659DBDEF4C1106));
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.open_db(None).unwrap();
    txn.put(db, b"k", b"v", PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    let stale = std::fs::read(env.lock_path()).unwrap();
    let lck_path = env.lock_path().to_path_buf();
    drop(env);
    // A clean close truncates the lock file: no version is left to keep.
    assert_eq!(std::fs::metadata(&lck_path).unwrap().len(), 0);
    let env = Env::open(&path).unwrap();
    assert_eq!(env.lock_format(), Some(LockFormat::V7));
    assert_eq!(magic(&lck_path), Some(0x59659DBDEF4C1107));
    let r = env.begin_ro_txn().unwrap();
    let db = r.open_db(None).unwrap();
    assert_eq!(r.get(db, b"k").unwrap(), Some(&b"v"[..]));
    drop(r);
    drop(env);

    // A v6 lock file left behind (a crash of its last user) stays v6.
    std::fs::write(&lck_path, &stale).unwrap();
    let env = Env::open(&path).unwrap();
    assert_eq!(env.lock_format(), Some(LockFormat::V6));
    drop(env);
    // Unless the caller says otherwise.
    std::fs::write(&lck_path, &stale).unwrap();
    let env = Env::builder().lock_format(LockFormat::V7).open(&path).unwrap();
    assert_eq!(env.lock_format(), Some(LockFormat::V7));
}

#[test]
fn every_durability_works_on_v6() {
    use rdbx::Durability::*;
    for d in [SyncDurable, NoMetaSync, SafeNoSync, UtterlyNoSync] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let env = Env::builder().lock_format(LockFormat::V6).durability(d).open(&path).unwrap();
        for i in 0..50u32 {
            let mut txn = env.begin_rw_txn().unwrap();
            let db = txn.open_db(None).unwrap();
            txn.put(db, &i.to_be_bytes(), &[7; 100], PutFlags::empty()).unwrap();
            txn.commit().unwrap();
        }
        env.sync().unwrap();
        let r = env.begin_ro_txn().unwrap();
        let db = r.open_db(None).unwrap();
        let mut c = r.cursor(db).unwrap();
        let mut n = 0;
        while c.next().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 50, "{d:?}");
        drop(r);
        assert_eq!(env.lock_format(), Some(LockFormat::V6));
    }
}
