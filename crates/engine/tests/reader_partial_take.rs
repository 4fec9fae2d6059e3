//! Small commits that take pages from a big GC record in part while a
//! reader holds an older snapshot: the pages they take and do not use are
//! free, and must stay where no reader pins them. They went into the
//! committing transaction's own GC record, which the reader pins, so they
//! were lost to every writer while the reader lasted and the file grew by
//! them instead (found by the stress runner with a libmdbx writer, whose
//! GC records are big: docs/status.md).

use rdbx::{Db, Durability, Env, Geometry, PutFlags};

fn value(i: u32) -> [u8; 100] {
    let mut v = [0u8; 100];
    v[..4].copy_from_slice(&i.to_le_bytes());
    v
}

#[test]
fn leftovers_of_a_partial_take_are_not_pinned_by_a_reader() {
    // tmpfs when there is one: lazy commits are steady at once there, so
    // only the reader holds pages back (the last steady commit does not).
    let base = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm".into() } else { std::env::temp_dir() };
    let d = tempfile::tempdir_in(base).unwrap();
    let env = Env::builder()
        .durability(Durability::SafeNoSync)
        .geometry(Geometry { size_upper: Some(1 << 30), ..Default::default() })
        .open(d.path())
        .unwrap();
    // A table of 20,000 records, then half of them deleted in one
    // transaction: one big GC record (hundreds of pages).
    let mut txn = env.begin_rw_txn().unwrap();
    for i in 0..20_000u32 {
        txn.put(Db::MAIN, &i.to_be_bytes(), &value(i), PutFlags::APPEND).unwrap();
    }
    txn.commit().unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    for i in (0..20_000u32).filter(|i| i % 2 == 0) {
        txn.del(Db::MAIN, &i.to_be_bytes(), None).unwrap();
    }
    txn.commit().unwrap();
    let big = env.gc_info().unwrap().pages_reclaimable;
    assert!(big > 200, "the batch left {big} reclaimable pages");
    // A reader from now on; small commits after it.
    let reader = env.begin_ro_txn().unwrap();
    let retired_at_reader = env.info().unwrap().pages_retired;
    for n in 0..60u32 {
        let mut txn = env.begin_rw_txn().unwrap();
        let k = (n.wrapping_mul(2_654_435_761) % 10_000) * 2 + 1;
        txn.put(Db::MAIN, &k.to_be_bytes(), &value(k ^ 7), PutFlags::empty()).unwrap();
        txn.commit().unwrap();
    }
    let gc = env.gc_info().unwrap();
    let retired = env.info().unwrap().pages_retired - retired_at_reader;
    // What the reader holds back: the GC's pages (its tree's too) that are
    // not reclaimable. Only what the commits after it retired may be there,
    // the GC tree's few pages, and what the first commit after it folded
    // into its own record (at most `gc::fold_pages`, 16 here: that commit's
    // base is the reader's snapshot, so it does not know of an older
    // reader): pages that were free when it began must not be. (Before
    // the fix, 641 pages against 278 retired.)
    let pinned = gc.pages_gc - gc.pages_reclaimable;
    assert!(
        pinned <= retired + 24,
        "the reader pins {pinned} pages of the GC, the commits since it began retired {retired}"
    );
    drop(reader);
}
