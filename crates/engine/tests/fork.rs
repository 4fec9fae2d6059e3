//! A forked child must not use its parent's environment: its write
//! transactions fail with `Error::Panic` (libmdbx's `MDBX_PANIC`), while the
//! parent goes on. The engine caches its process id (`os::getpid`); this
//! checks that the cache does not follow the child across the fork.
//!
//! One test in its own binary: the child of a fork runs only the forking
//! thread, so no other test may hold a lock the child could need.

use rdbx::{Db, Durability, Env, Error, PutFlags};

#[test]
fn a_forked_child_cannot_write_through_its_parents_environment() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::builder().durability(Durability::SafeNoSync).open(dir.path()).unwrap();
    // The parent writes first, so the process id is cached before the fork.
    let mut txn = env.begin_rw_txn().unwrap();
    txn.put(Db::MAIN, b"k", b"v", PutFlags::empty()).unwrap();
    txn.commit().unwrap();

    // SAFETY: the child runs only the code below and leaves with `_exit`,
    // never returning into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let code = match env.begin_rw_txn() {
            Err(Error::Panic) => 0,
            Err(_) => 2,
            Ok(txn) => {
                std::mem::forget(txn);
                1
            }
        };
        // SAFETY: ends the child at once, without running the parent's
        // destructors (the environment belongs to the parent).
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked; `status` is a valid pointer.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid);
    assert!(libc::WIFEXITED(status), "child status {status:#x}");
    match libc::WEXITSTATUS(status) {
        0 => {}
        1 => panic!("the forked child began a write transaction on its parent's environment"),
        c => panic!("the forked child failed otherwise (exit {c})"),
    }
    // The parent still writes.
    let mut txn = env.begin_rw_txn().unwrap();
    txn.put(Db::MAIN, b"k2", b"v", PutFlags::empty()).unwrap();
    txn.commit().unwrap();
}
