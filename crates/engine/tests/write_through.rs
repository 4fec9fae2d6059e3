//! Durable commits and their flushes: a small commit writes its pages and
//! meta through (RWF_DSYNC) with no fdatasync; a larger one writes its pages,
//! fdatasyncs once, and writes the meta through; the lazy modes flush
//! nothing. (Power loss at every step: crash.rs, `power_loss_durable_write_through`.)

mod common;
use common::in_memory_fs;
use rdbx::{Db, Durability, Env, PageOps, PutFlags};

fn delta(a: PageOps, b: PageOps) -> (u64, u64) {
    (b.fsync - a.fsync, b.wops - a.wops)
}

/// (fdatasync calls, write calls) of one commit of `n` puts.
fn commit(env: &Env, n: u32, round: u8) -> (u64, u64) {
    let mut txn = env.begin_rw_txn().unwrap();
    for i in 0..n {
        txn.put(Db::MAIN, &i.to_be_bytes(), &[round; 64], PutFlags::empty()).unwrap();
    }
    let before = env.page_ops();
    txn.commit().unwrap();
    delta(before, env.page_ops())
}

#[test]
fn small_durable_commits_need_no_fdatasync() {
    let d = tempfile::tempdir().unwrap();
    let env = Env::open(d.path()).unwrap();
    // One leaf, then the leaf and one GC record page: at most two pages.
    assert_eq!(commit(&env, 1, 1), (0, 2), "first commit: one page run, then the meta, both written through");
    for round in 2..10 {
        let (fsync, _) = commit(&env, 1, round);
        assert_eq!(fsync, 0, "round {round}");
    }
    // Many pages: one fdatasync for them, the meta written through.
    let (fsync, _) = commit(&env, 2000, 50);
    assert_eq!(fsync, 1);
    // Off: every durable commit fdatasyncs its pages.
    drop(env);
    let env = Env::builder().writethrough_threshold(0).open(d.path()).unwrap();
    assert_eq!(commit(&env, 1, 60).0, 1);
}

#[test]
fn lazy_modes_do_not_flush_at_commit() {
    for mode in [Durability::SafeNoSync, Durability::UtterlyNoSync] {
        let d = tempfile::tempdir().unwrap();
        // On tmpfs, where a sync does nothing (no system call is made), a
        // lazy commit is made steady: it counts the pages' sync and the meta's.
        let in_memory = in_memory_fs(d.path());
        let env = Env::builder().durability(mode).open(d.path()).unwrap();
        for round in 1..5 {
            assert_eq!(commit(&env, 100, round).0, if in_memory { 2 } else { 0 }, "{mode:?}");
        }
    }
}
