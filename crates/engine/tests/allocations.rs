//! Heap allocations on the hot paths, counted by a global allocator (counts
//! are deterministic; nothing here measures time).
//!
//! In steady state a get, a cursor step, an overwrite put of an existing
//! key, adding or deleting one value of an existing multimap key, and a
//! whole small write transaction (begin, a put, a get, commit) allocate
//! nothing; nor do transactions of random inserts and deletes, whose
//! pages split and merge.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rdbx::{Db, DbFlags, Env, PutFlags};

struct Counting;

static COUNT: AtomicU64 = AtomicU64::new(0);
static ON: AtomicBool = AtomicBool::new(false);

// SAFETY: delegates every call to the system allocator unchanged; it only
// counts allocations while `ON` is set.
unsafe impl GlobalAlloc for Counting {
    // SAFETY: the caller's contract, passed unchanged to the system allocator.
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ON.load(Ordering::Relaxed) {
            COUNT.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    // SAFETY: as `alloc`.
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    // SAFETY: as `alloc`.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ON.load(Ordering::Relaxed) {
            COUNT.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` (one test function in this binary, so no other
/// test thread allocates meanwhile).
fn allocations(f: impl FnOnce()) -> u64 {
    COUNT.store(0, Ordering::SeqCst);
    ON.store(true, Ordering::SeqCst);
    f();
    ON.store(false, Ordering::SeqCst);
    COUNT.load(Ordering::SeqCst)
}

const N: u64 = 20_000;

fn filled(dir: &std::path::Path) -> Env {
    let env = Env::builder().max_dbs(4).open(dir).expect("open");
    let mut txn = env.begin_rw_txn().expect("begin");
    let ints = txn.create_db(Some("ints"), DbFlags::INTEGER_KEY).expect("db");
    for i in 0..N {
        txn.put(Db::MAIN, format!("key-{i:08}").as_bytes(), &[1; 32], PutFlags::empty()).expect("put");
        txn.put(ints, &i.to_ne_bytes(), &[2; 16], PutFlags::empty()).expect("put");
    }
    txn.commit().expect("commit");
    env
}

// One test function: the counter is global, and the harness runs tests in
// parallel threads.
#[test]
fn hot_paths_do_not_allocate() {
    // The counter sees allocations at all.
    assert_eq!(allocations(|| drop(std::hint::black_box(vec![1u8; 10]))), 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let env = filled(dir.path());
    let keys: Vec<Vec<u8>> = (0..N).map(|i| format!("key-{i:08}").into_bytes()).collect();
    let ikeys: Vec<[u8; 8]> = (0..N).map(|i| i.to_ne_bytes()).collect();

    let txn = env.begin_ro_txn().expect("ro");
    let ints = txn.open_db(Some("ints")).expect("db");
    // Warm up (tables opened, map touched).
    txn.get(Db::MAIN, &keys[0]).expect("get");
    txn.get(ints, &ikeys[0]).expect("get");
    let gets = allocations(|| {
        for k in &keys {
            assert!(txn.get(Db::MAIN, k).expect("get").is_some());
        }
        for k in &ikeys {
            assert!(txn.get(ints, k).expect("get").is_some());
        }
    });
    let mut c = txn.cursor(Db::MAIN).expect("cursor");
    let steps = allocations(|| {
        let mut n = 0;
        while c.next().expect("next").is_some() {
            n += 1;
        }
        assert_eq!(n, N + 1, "the records and the record of table ints");
    });
    // Iterators: whole table both ways, and a bounded range (created
    // outside the count: a range owns copies of its bounds).
    let mut it = txn.iter(Db::MAIN).expect("iter");
    let mut back = txn.iter(Db::MAIN).expect("iter");
    let mut range = txn.range(Db::MAIN, keys[10].as_slice()..keys[N as usize - 10].as_slice()).expect("range");
    let iter_steps = allocations(|| {
        let ok = |r: rdbx::Result<(&[u8], &[u8])>| r.expect("item").0.len();
        let fwd = it.by_ref().map(ok).filter(|&l| l > 0).count();
        let bwd = back.by_ref().rev().map(ok).filter(|&l| l > 0).count();
        let inner = range.by_ref().map(ok).filter(|&l| l > 0).count();
        assert_eq!((fwd, bwd, inner), (N as usize + 1, N as usize + 1, N as usize - 20));
    });
    drop((it, back, range));
    drop(txn);

    let mut txn = env.begin_rw_txn().expect("begin");
    // Warm up: touch every page once (copy-on-write allocates the copies),
    // then overwrite again: the second pass is the steady state.
    for k in &keys {
        txn.put(Db::MAIN, k, &[3; 32], PutFlags::empty()).expect("put");
    }
    let puts = allocations(|| {
        for k in &keys {
            txn.put(Db::MAIN, k, &[4; 32], PutFlags::empty()).expect("put");
        }
    });
    let rw_gets = allocations(|| {
        for k in &keys {
            assert!(txn.get(Db::MAIN, k).expect("get").is_some());
        }
    });
    // A write cursor's walk (its key buffer grows to the longest key at
    // its first position, outside the count).
    let mut c = txn.rw_cursor(Db::MAIN).expect("rw_cursor");
    c.last().expect("last");
    let mut rw_walked = 0;
    let rw_steps = allocations(|| {
        let mut at = c.first().expect("first").is_some();
        while at {
            rw_walked += 1;
            at = c.next().expect("next").is_some();
        }
    });
    assert_eq!(rw_walked, N + 1, "the write cursor's walk (the keys and the record of the table `ints`)");
    drop(c);
    txn.commit().expect("commit");

    // Multimap: values added to and removed from existing keys' sub-pages.
    let mut txn = env.begin_rw_txn().expect("begin");
    let multi = txn.create_db(Some("multi"), DbFlags::DUP_SORT).expect("db");
    for k in 0..100u64 {
        for v in 0..20u64 {
            txn.put(multi, &k.to_be_bytes(), &(v * 4).to_be_bytes(), PutFlags::empty()).expect("put");
        }
    }
    txn.commit().expect("commit");
    let mut txn = env.begin_rw_txn().expect("begin");
    // Warm up: every leaf copied on write.
    for k in 0..100u64 {
        txn.put(multi, &k.to_be_bytes(), &1u64.to_be_bytes(), PutFlags::empty()).expect("put");
    }
    let multi_puts = allocations(|| {
        for k in 0..100u64 {
            txn.put(multi, &k.to_be_bytes(), &2u64.to_be_bytes(), PutFlags::empty()).expect("put");
        }
    });
    let multi_dels = allocations(|| {
        for k in 0..100u64 {
            assert!(txn.del(multi, &k.to_be_bytes(), Some(&4u64.to_be_bytes())).expect("del"));
        }
    });
    txn.commit().expect("commit");

    // Small write transactions (begin, one put into a named table, commit),
    // in both write modes: after a few, they allocate nothing (the page
    // lists, the GC's work lists, the dirty set and the table list are
    // kept between transactions).
    let small_commits = |write_map: bool| {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = Env::builder().max_dbs(4).write_map(write_map).open(dir.path()).expect("open");
        let mut txn = env.begin_rw_txn().expect("begin");
        let db = txn.create_db(Some("small"), DbFlags::empty()).expect("db");
        for i in 0..2_000u64 {
            txn.put(db, &i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes(), &[5; 32], PutFlags::empty())
                .expect("put");
        }
        txn.commit().expect("commit");
        let one = |i: u64| {
            let mut txn = env.begin_rw_txn().expect("begin");
            txn.put(db, &i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes(), &[6; 32], PutFlags::empty())
                .expect("put");
            assert!(txn.get(db, &0u64.to_be_bytes()).expect("get").is_some());
            txn.commit().expect("commit");
        };
        (0..100).for_each(one);
        allocations(|| (100..400).for_each(one))
    };
    let small_pwrite = small_commits(false);
    let small_writemap = small_commits(true);
    // Large values, one rewritten per transaction (values of 2 to 5 pages;
    // with WRITEMAP written straight into the map, else into kept buffers).
    let blobs = |write_map: bool| {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = Env::builder().max_dbs(4).write_map(write_map).open(dir.path()).expect("open");
        let value = vec![7u8; 5 * 4096];
        let len = |i: u64| 6_000 + (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize % 12_000;
        let mut txn = env.begin_rw_txn().expect("begin");
        let db = txn.create_db(Some("blobs"), DbFlags::empty()).expect("db");
        for k in 0..64u64 {
            txn.put(db, &k.to_be_bytes(), &value[..len(k)], PutFlags::empty()).expect("put");
        }
        txn.commit().expect("commit");
        let one = |i: u64| {
            let mut txn = env.begin_rw_txn().expect("begin");
            txn.put(db, &(i % 64).to_be_bytes(), &value[..len(i)], PutFlags::empty()).expect("put");
            txn.commit().expect("commit");
        };
        // The GC's work lists reach their steady capacities in a few
        // hundred commits more than the one-put ones (after 300, 3 of the
        // next 300 still grew one).
        (0..2000).for_each(one);
        allocations(|| (2000..2300).for_each(one))
    };
    let (blob_pwrite, blob_writemap) = (blobs(false), blobs(true));
    // Inserts and deletes at a steady table size: each transaction inserts
    // 100 new random keys (leaves split) and deletes the 100 smallest keys
    // (leaves empty at the left edge and merge). The keys of each
    // transaction are worked out first, outside the count.
    const CHURN_TXNS: usize = 1300;
    // (keys inserted, keys deleted) by each transaction.
    type Churn = (Vec<[u8; 8]>, Vec<[u8; 8]>);
    let schedule: Vec<Churn> = {
        let key = |i: u64| i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes();
        let mut live: std::collections::BTreeSet<[u8; 8]> = (0..20_000).map(key).collect();
        let mut next = 20_000;
        let mut txns = vec![(live.iter().copied().collect(), Vec::new())];
        for _ in 0..CHURN_TXNS {
            let ins: Vec<[u8; 8]> = (next..next + 100).map(key).collect();
            next += 100;
            live.extend(ins.iter().copied());
            let del: Vec<[u8; 8]> = (0..100).map(|_| live.pop_first().expect("live")).collect();
            txns.push((ins, del));
        }
        txns
    };
    let churn = |write_map: bool| {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = Env::builder().max_dbs(4).write_map(write_map).open(dir.path()).expect("open");
        let mut txn = env.begin_rw_txn().expect("begin");
        let db = txn.create_db(Some("churn"), DbFlags::empty()).expect("db");
        txn.commit().expect("commit");
        let one = |(ins, del): &Churn| {
            let mut txn = env.begin_rw_txn().expect("begin");
            for k in ins {
                txn.put(db, k, &[9; 40], PutFlags::empty()).expect("put");
            }
            for k in del {
                assert!(txn.del(db, k, None).expect("del"));
            }
            txn.commit().expect("commit");
        };
        schedule[..1001].iter().for_each(one);
        let before = env.page_ops();
        let n = allocations(|| schedule[1001..].iter().for_each(one));
        let after = env.page_ops();
        (n, after.split - before.split, after.merge - before.merge)
    };
    // The same in a multimap: each transaction adds 100 random values to
    // random keys (a quarter to 4 keys whose values fill nested trees, the
    // others to 5,000 keys of a few values each: single values, sub-pages
    // growing, moving and shrinking) and deletes the 100 oldest values.
    type MultiChurn = (Vec<(u64, u64)>, Vec<(u64, u64)>);
    let multi_schedule: Vec<MultiChurn> = {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut live = std::collections::VecDeque::new();
        (0..CHURN_TXNS)
            .map(|t| {
                let ins: Vec<(u64, u64)> = (0..100)
                    .map(|_| {
                        let r = next();
                        (if r % 4 == 0 { r % 16 / 4 } else { 4 + r % 5000 }, next())
                    })
                    .collect();
                live.extend(ins.iter().copied());
                let del = if t < 200 { Vec::new() } else { live.drain(..100).collect() };
                (ins, del)
            })
            .collect()
    };
    let multi_churn = |write_map: bool| {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = Env::builder().max_dbs(4).write_map(write_map).open(dir.path()).expect("open");
        let mut txn = env.begin_rw_txn().expect("begin");
        let db = txn.create_db(Some("multi"), DbFlags::DUP_SORT).expect("db");
        txn.commit().expect("commit");
        let txns = |batch: &[MultiChurn]| {
            let mut txn = env.begin_rw_txn().expect("begin");
            for (ins, del) in batch {
                for (k, v) in ins {
                    txn.put(db, &k.to_be_bytes(), &v.to_be_bytes(), PutFlags::empty()).expect("put");
                }
                for (k, v) in del {
                    assert!(txn.del(db, &k.to_be_bytes(), Some(&v.to_be_bytes())).expect("del"));
                }
            }
            txn.commit().expect("commit");
        };
        let one = |t: &MultiChurn| txns(std::slice::from_ref(t));
        multi_schedule[..990].iter().for_each(one);
        // Without WRITEMAP the page pool keeps as many buffers as the
        // largest transaction so far dirtied pages (up to 1,024), and a
        // transaction that dirties more allocates the rest (2 buffers in
        // the counted run without this): ten transactions in one first.
        txns(&multi_schedule[990..1000]);
        let n = allocations(|| multi_schedule[1000..].iter().for_each(one));
        // Values of a key of the first four (in a nested tree) and of one of
        // the others.
        let txn = env.begin_ro_txn().expect("begin");
        let mut c = txn.cursor(db).expect("cursor");
        let mut count = |k: u64| {
            c.set(&k.to_be_bytes()).expect("set").expect("key");
            c.count().expect("count")
        };
        let recent = multi_schedule[CHURN_TXNS - 1].0.iter().find(|p| p.0 >= 4).expect("a key of the others").0;
        let (many, few) = (count(0), count(recent));
        // Reads of the multimap: a cursor over every value, and each value
        // of the last transaction found again.
        let mut c = txn.cursor(db).expect("cursor");
        let mut values = 0;
        let walk = allocations(|| {
            let mut at = c.first().expect("first");
            while at.is_some() {
                values += 1;
                at = c.next().expect("next");
            }
        });
        let found = allocations(|| {
            for (k, v) in &multi_schedule[CHURN_TXNS - 1].0 {
                assert!(c.get_both(&k.to_be_bytes(), &v.to_be_bytes()).expect("get_both").is_some());
            }
        });
        assert_eq!(values, 20_000, "the multimap's values");
        drop(txn);
        // A write cursor over every value, deleting every 200th (its key
        // and value buffers are allocated at its first position, outside
        // the count).
        let mut w = env.begin_rw_txn().expect("begin");
        let mut c = w.rw_cursor(db).expect("rw_cursor");
        c.first().expect("first");
        let (mut walked, mut deleted) = (0, 0);
        let rw_walk = allocations(|| {
            let mut at = c.first().expect("first").is_some();
            while at {
                if walked % 200 == 0 {
                    c.del().expect("del");
                    deleted += 1;
                }
                walked += 1;
                at = c.next().expect("next").is_some();
            }
        });
        assert_eq!((walked, deleted), (20_000, 100), "the write cursor's walk");
        drop(c);
        w.commit().expect("commit");
        (n, many, few, walk + found + rw_walk)
    };
    let ((multi_churn_pwrite, many, few, multi_reads), (multi_churn_writemap, ..)) =
        (multi_churn(false), multi_churn(true));
    assert!(many > 1000 && few < 20, "the multimap churn's keys hold {many} and {few} values");
    let ((churn_pwrite, splits, merges), (churn_writemap, ..)) = (churn(false), churn(true));
    assert!(splits > 100 && merges > 100, "the churn splits and merges pages: {splits} splits, {merges} merges");
    eprintln!("allocations: {small_pwrite} for 300 one-put commits, {small_writemap} with WRITEMAP");
    eprintln!("allocations: {blob_pwrite} for 300 commits of a large value, {blob_writemap} with WRITEMAP");
    eprintln!(
        "allocations: {churn_pwrite} for 300 transactions of 100 inserts and 100 deletes \
         ({splits} splits, {merges} merges), {churn_writemap} with WRITEMAP"
    );
    eprintln!(
        "allocations: {multi_churn_pwrite} for 300 multimap transactions of 100 value puts and 100 value deletes, \
         {multi_churn_writemap} with WRITEMAP; {multi_reads} for a read cursor over its 20,000 values, 100 get_both \
         and a write cursor over them deleting 100"
    );
    eprintln!("allocations: {multi_puts} for 100 multimap value puts, {multi_dels} for 100 value deletes");
    eprintln!(
        "allocations: {gets} for {} gets, {steps} for {} cursor steps, {iter_steps} for {} iterator steps, \
         {puts} for {N} overwrite puts, {rw_gets} for {N} gets in a write transaction, \
         {rw_steps} for {N} write cursor steps",
        2 * N,
        N,
        3 * N
    );
    assert_eq!(iter_steps, 0, "iterator steps allocate");
    assert_eq!(gets, 0, "gets allocate");
    assert_eq!(steps, 0, "cursor steps allocate");
    assert_eq!(puts, 0, "overwrite puts allocate");
    assert_eq!(rw_gets, 0, "gets in a write transaction allocate");
    assert_eq!(rw_steps, 0, "write cursor steps allocate");
    assert_eq!(multi_puts, 0, "multimap puts of a new value of an existing key allocate");
    assert_eq!(multi_dels, 0, "multimap deletes of one value allocate");
    assert_eq!(small_pwrite, 0, "one-put commits allocate");
    assert_eq!(small_writemap, 0, "one-put commits with WRITEMAP allocate");
    assert_eq!(churn_pwrite, 0, "inserts and deletes allocate");
    assert_eq!(churn_writemap, 0, "inserts and deletes with WRITEMAP allocate");
    assert_eq!(multi_churn_pwrite, 0, "multimap value puts and deletes allocate");
    assert_eq!(multi_reads, 0, "multimap cursor steps, get_both and write cursor steps and deletes allocate");
    assert_eq!(multi_churn_writemap, 0, "multimap value puts and deletes with WRITEMAP allocate");
    assert_eq!(blob_pwrite, 0, "commits of a large value allocate");
    assert_eq!(blob_writemap, 0, "commits of a large value with WRITEMAP allocate");
}
