//! Failed writes and syncs (a full disk, a failing device): the commit fails,
//! the transaction is gone, and the last commit stays intact and readable.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rdbx::{Db, Env, PutFlags};

/// Fails the `n`-th write (or sync) after being armed.
#[derive(Default)]
struct Faults {
    fail_write_at: AtomicU64,
    fail_sync_at: AtomicU64,
    writes: AtomicU64,
    syncs: AtomicU64,
}

impl rdbx::IoFaults for Faults {
    fn before_write(&self, _offset: u64, _len: usize) -> io::Result<()> {
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.fail_write_at.load(Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(libc_enospc()));
        }
        Ok(())
    }
    fn before_sync(&self) -> io::Result<()> {
        let n = self.syncs.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.fail_sync_at.load(Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(5)); // EIO
        }
        Ok(())
    }
}

fn libc_enospc() -> i32 {
    28
}

fn contents(env: &Env) -> Vec<(Vec<u8>, Vec<u8>)> {
    let r = env.begin_ro_txn().unwrap();
    let mut c = r.cursor(Db::MAIN).unwrap();
    let mut v = Vec::new();
    while let Some((k, val)) = c.next().unwrap() {
        v.push((k.to_vec(), val.to_vec()));
    }
    r.verify_table(Db::MAIN).unwrap();
    v
}

fn fill(env: &Env, from: u32, n: u32) -> rdbx::Result<()> {
    let mut txn = env.begin_rw_txn()?;
    for i in from..from + n {
        txn.put(
            Db::MAIN,
            format!("key{i:06}").as_bytes(),
            &vec![i as u8; 100 + (i % 300) as usize],
            PutFlags::empty(),
        )?;
    }
    txn.commit()
}

#[test]
fn every_failing_write_or_sync_of_a_commit_keeps_the_last_commit() {
    // Find how many writes and syncs one commit makes, then fail each in turn.
    for fail_sync in [false, true] {
        let mut failed_commits = 0;
        for k in 1..40u64 {
            let dir = tempfile::tempdir().unwrap();
            let faults = Arc::new(Faults::default());
            let env = Env::builder().io_faults(faults.clone()).open(dir.path().join("db")).unwrap();
            fill(&env, 0, 2000).unwrap();
            let before = contents(&env);
            let (w0, s0) = (faults.writes.load(Ordering::SeqCst), faults.syncs.load(Ordering::SeqCst));
            if fail_sync {
                faults.fail_sync_at.store(s0 + k, Ordering::SeqCst);
            } else {
                faults.fail_write_at.store(w0 + k, Ordering::SeqCst);
            }
            let r = fill(&env, 1000, 3000);
            let fired = if fail_sync {
                faults.syncs.load(Ordering::SeqCst) >= s0 + k
            } else {
                faults.writes.load(Ordering::SeqCst) >= w0 + k
            };
            if !fired {
                r.unwrap();
                break; // past the last write/sync of the commit
            }
            assert!(r.is_err(), "commit must fail when write/sync #{k} fails (sync: {fail_sync})");
            failed_commits += 1;
            // Same process: the last commit is what readers see, and writing goes on.
            assert_eq!(contents(&env), before, "after failed {} #{k}", if fail_sync { "sync" } else { "write" });
            fill(&env, 5000, 10).unwrap();
            drop(env);
            // Reopened: intact, with the later commit.
            let env = Env::open(dir.path().join("db")).unwrap();
            let after = contents(&env);
            assert_eq!(after.len(), before.len() + 10);
        }
        // A commit of that size makes several writes (page runs, meta) and two syncs.
        assert!(failed_commits >= 2, "only {failed_commits} injected failures hit the commit (sync: {fail_sync})");
    }
}
