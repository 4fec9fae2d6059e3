//! `Env::close` reports the final sync that dropping an environment can only
//! attempt silently.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rdbx::{Durability, Env, IoFaults, PutFlags};

/// Fails every sync once armed.
#[derive(Default)]
struct FailSync(AtomicBool);

impl IoFaults for FailSync {
    fn before_write(&self, _offset: u64, _len: usize) -> io::Result<()> {
        Ok(())
    }
    fn before_sync(&self) -> io::Result<()> {
        if self.0.load(Ordering::SeqCst) {
            Err(io::Error::other("injected: the disk is gone"))
        } else {
            Ok(())
        }
    }
}

fn commit_one(env: &Env) {
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.open_db(None).unwrap();
    txn.put(db, b"k", b"v", PutFlags::empty()).unwrap();
    txn.commit().unwrap();
}

#[test]
fn close_reports_a_failed_final_sync_in_lazy_modes() {
    for d in [Durability::SafeNoSync, Durability::UtterlyNoSync, Durability::NoMetaSync] {
        let dir = tempfile::tempdir().unwrap();
        let faults = Arc::new(FailSync::default());
        let env = Env::builder().durability(d).io_faults(faults.clone()).open(dir.path()).unwrap();
        commit_one(&env);
        faults.0.store(true, Ordering::SeqCst);
        let err = env.close().expect_err("the final sync failed");
        assert!(format!("{err}").contains("disk is gone"), "{d:?}: {err}");
        // The commit is in the file all the same.
        let env = Env::open(dir.path()).unwrap();
        assert_eq!(env.begin_ro_txn().unwrap().get(rdbx::Db::MAIN, b"k").unwrap(), Some(&b"v"[..]));
        env.close().unwrap();
    }
}

#[test]
fn close_of_a_clone_leaves_the_environment_open() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(FailSync::default());
    let env = Env::builder().durability(Durability::SafeNoSync).io_faults(faults.clone()).open(dir.path()).unwrap();
    commit_one(&env);
    let other = env.clone();
    faults.0.store(true, Ordering::SeqCst);
    env.close().unwrap();
    assert_eq!(other.begin_ro_txn().unwrap().get(rdbx::Db::MAIN, b"k").unwrap(), Some(&b"v"[..]));
    faults.0.store(false, Ordering::SeqCst);
    other.close().unwrap();
    // Closed steadily: the last meta is steady.
    let env = Env::open(dir.path()).unwrap();
    let info = env.info().unwrap();
    assert!(info.metas[info.recent_meta].1, "the newest meta is steady: {info:?}");
}

#[test]
fn durable_close_has_nothing_to_sync() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(FailSync::default());
    let env = Env::builder().io_faults(faults.clone()).open(dir.path()).unwrap();
    commit_one(&env);
    faults.0.store(true, Ordering::SeqCst);
    env.close().unwrap();
}
