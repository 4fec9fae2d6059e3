//! Comparative benchmark: the same workloads on rdbx and on the real libmdbx
//! (through `mdbx-sys`), in one run, on a temporary directory (under /dev/shm
//! when it exists, so the disk does not dominate).
//!
//! Run: `cargo bench -p rdbx-tests --bench compare`
//! (`RDBX_BENCH_N=<records>` changes the record count, default 1,000,000;
//! `RDBX_BENCH_PAGE_SIZE` the page size, default 4096).
//!
//! Both sides: the same page size, the same geometry (upper 16 GiB, growth 16 MiB),
//! and durability SafeNoSync / `MDBX_SAFE_NOSYNC` for the write workloads: commits
//! are not flushed (weak metas), the data is synced once when the environment is
//! closed. Workloads:
//!
//! 1. sequential load: one write transaction, N puts in key order with APPEND
//!    (8-byte big-endian counter keys, 32-byte values);
//! 2. random put: min(100,000, N) puts of random keys in 0..2N (about half new,
//!    half overwrites), in write transactions of 1,000 puts each;
//! 3. random get: N gets of existing keys in shuffled order, one read txn;
//! 4. full scan: one cursor over every record, one read txn;
//! 5. multimap put: a DUPSORT table, min(100,000, N) puts of 8-byte values
//!    (random order) under 1,000 keys, about 100 values per key, so the values
//!    of a key live in a sub-page that grows to near libmdbx's sub-page limit
//!    and some turn into nested trees; transactions of 1,000 puts;
//! 6. multimap delete: every other value of workload 5 deleted one by one
//!    (key and value), in transactions of 1,000.
//!
//! Prints one row per workload: rdbx ops/s, libmdbx ops/s, ratio rdbx/libmdbx,
//! for each write mode in `RDBX_BENCH_MODES` (default `pwrite,writemap`):
//! `pwrite` writes pages from heap buffers at commit, `writemap` edits them
//! in place in a writable map (WRITEMAP on both sides).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rdbx::{DbFlags, Durability, Env, Geometry, PutFlags};
use rdbx_tests::oracle;
use rdbx_tests::rng::Rng;

/// Page size of both environments (`RDBX_BENCH_PAGE_SIZE`, default 4096).
fn page_size() -> usize {
    std::env::var("RDBX_BENCH_PAGE_SIZE").ok().and_then(|v| v.parse().ok()).unwrap_or(4096)
}
const UPPER: usize = 16 << 30;
const GROWTH: usize = 16 << 20;
const BATCH: usize = 1000;

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn value(i: u64) -> [u8; 32] {
    let mut v = [0u8; 32];
    for (j, c) in v.chunks_mut(8).enumerate() {
        c.copy_from_slice(&(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ j as u64).to_le_bytes());
    }
    v
}

struct Workloads {
    n: u64,
    random_puts: Vec<u64>,
    gets: Vec<u64>,
    /// (key, value) pairs for the multimap workload.
    multi_puts: Vec<(u64, u64)>,
}

/// Keys of the multimap workload.
const MULTI_KEYS: u64 = 1000;

impl Workloads {
    fn new(n: u64) -> Self {
        let mut rng = Rng::new(42);
        let puts = n.min(100_000);
        let random_puts = (0..puts).map(|_| rng.below(2 * n)).collect();
        let mut gets: Vec<u64> = (0..n).collect();
        rng.shuffle(&mut gets);
        let multi_puts = (0..puts).map(|_| (rng.below(MULTI_KEYS), rng.next_u64())).collect();
        Workloads { n, random_puts, gets, multi_puts }
    }
}

/// Timings of the four workloads, plus a checksum so nothing is optimised away.
#[derive(Default)]
struct Times {
    load: Duration,
    put: Duration,
    multi: Duration,
    multi_del: Duration,
    get: Duration,
    scan: Duration,
    found: u64,
    scanned: u64,
    /// Values in the multimap table after the puts (low 32 bits) and after
    /// the deletes (high 32 bits), and its (depth, branch, leaf) pages.
    multi_entries: u64,
    multi_tree: (u32, u64, u64),
    /// (depth, branch pages, leaf pages) after the sequential load, and at the end.
    tree_after_load: (u32, u64, u64),
    tree_at_end: (u32, u64, u64),
    /// Pages in use (first unallocated page number) after the load, the
    /// random puts and the multimap puts.
    used: [u64; 3],
}

fn run_rdbx(dir: &Path, w: &Workloads, write_map: bool) -> Times {
    let env = Env::builder()
        .write_map(write_map)
        .max_dbs(4)
        .durability(Durability::SafeNoSync)
        .geometry(Geometry {
            page_size: Some(page_size()),
            size_upper: Some(UPPER),
            growth_step: Some(GROWTH),
            ..Default::default()
        })
        .open(dir)
        .expect("rdbx open");
    let mut t = Times::default();

    let start = Instant::now();
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.create_db(Some("bench"), DbFlags::empty()).unwrap();
    for i in 0..w.n {
        txn.put(db, &key(i), &value(i), PutFlags::APPEND).unwrap();
    }
    txn.commit().unwrap();
    t.load = start.elapsed();
    let shape = |env: &Env| {
        let txn = env.begin_ro_txn().unwrap();
        let s = txn.db_stat(db).unwrap();
        (s.depth, s.branch_pages, s.leaf_pages)
    };
    t.tree_after_load = shape(&env);
    let used = |env: &Env| env.info().unwrap().first_unallocated;
    t.used[0] = used(&env);

    let start = Instant::now();
    for chunk in w.random_puts.chunks(BATCH) {
        let mut txn = env.begin_rw_txn().unwrap();
        for &i in chunk {
            txn.put(db, &key(i), &value(i ^ 1), PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    }
    t.put = start.elapsed();
    t.used[1] = used(&env);

    let mut txn = env.begin_rw_txn().unwrap();
    let multi = txn.create_db(Some("multi"), DbFlags::DUP_SORT).unwrap();
    txn.commit().unwrap();
    let start = Instant::now();
    for chunk in w.multi_puts.chunks(BATCH) {
        let mut txn = env.begin_rw_txn().unwrap();
        for &(k, v) in chunk {
            txn.put(multi, &key(k), &v.to_be_bytes(), PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    }
    t.multi = start.elapsed();
    t.used[2] = used(&env);
    {
        let txn = env.begin_ro_txn().unwrap();
        let s = txn.db_stat(multi).unwrap();
        t.multi_entries = s.entries;
        t.multi_tree = (s.depth, s.branch_pages, s.leaf_pages);
    }
    let start = Instant::now();
    for chunk in w.multi_puts.iter().step_by(2).collect::<Vec<_>>().chunks(BATCH) {
        let mut txn = env.begin_rw_txn().unwrap();
        for &&(k, v) in chunk {
            txn.del(multi, &key(k), Some(&v.to_be_bytes())).unwrap();
        }
        txn.commit().unwrap();
    }
    t.multi_del = start.elapsed();
    t.multi_entries += env.begin_ro_txn().unwrap().db_stat(multi).unwrap().entries << 32;

    let start = Instant::now();
    let txn = env.begin_ro_txn().unwrap();
    for &i in &w.gets {
        if let Some(v) = txn.get(db, &key(i)).unwrap() {
            t.found += black_box(v)[0] as u64 | 1;
        }
    }
    drop(txn);
    t.get = start.elapsed();

    let start = Instant::now();
    let txn = env.begin_ro_txn().unwrap();
    let mut c = txn.cursor(db).unwrap();
    while let Some((k, v)) = c.next().unwrap() {
        black_box((k, v));
        t.scanned += 1;
    }
    drop(c);
    drop(txn);
    t.scan = start.elapsed();
    t.tree_at_end = shape(&env);
    drop(env);
    t
}

fn run_libmdbx(dir: &Path, w: &Workloads, write_map: bool) -> Times {
    let env = oracle::Env::open(
        dir,
        &oracle::EnvOptions {
            no_sub_dir: Some(false),
            page_size: Some(page_size()),
            geometry: oracle::Geometry { upper: Some(UPPER), growth: Some(GROWTH), ..Default::default() },
            max_dbs: 4,
            durability: oracle::Durability::SafeNoSync,
            write_map,
            ..Default::default()
        },
    )
    .expect("libmdbx open");
    let mut t = Times::default();

    let start = Instant::now();
    let mut txn = env.begin_rw().unwrap();
    let db = txn.create_table(Some(b"bench"), 0).unwrap();
    for i in 0..w.n {
        txn.put(db, &key(i), &value(i), oracle::MDBX_APPEND).unwrap();
    }
    txn.commit().unwrap();
    t.load = start.elapsed();
    let shape = |env: &oracle::Env| {
        let txn = env.begin_ro().unwrap();
        let s = txn.stat(db).unwrap();
        (s.depth, s.branch_pages, s.leaf_pages)
    };
    t.tree_after_load = shape(&env);
    let used = |env: &oracle::Env| env.info().unwrap().last_pgno + 1;
    t.used[0] = used(&env);

    let start = Instant::now();
    for chunk in w.random_puts.chunks(BATCH) {
        let mut txn = env.begin_rw().unwrap();
        for &i in chunk {
            txn.put(db, &key(i), &value(i ^ 1), 0).unwrap();
        }
        txn.commit().unwrap();
    }
    t.put = start.elapsed();
    t.used[1] = used(&env);

    let mut txn = env.begin_rw().unwrap();
    let multi = txn.create_table(Some(b"multi"), oracle::MDBX_DUPSORT).unwrap();
    txn.commit().unwrap();
    let start = Instant::now();
    for chunk in w.multi_puts.chunks(BATCH) {
        let mut txn = env.begin_rw().unwrap();
        for &(k, v) in chunk {
            txn.put(multi, &key(k), &v.to_be_bytes(), 0).unwrap();
        }
        txn.commit().unwrap();
    }
    t.multi = start.elapsed();
    t.used[2] = used(&env);
    {
        let txn = env.begin_ro().unwrap();
        let s = txn.stat(multi).unwrap();
        t.multi_entries = s.entries;
        t.multi_tree = (s.depth, s.branch_pages, s.leaf_pages);
    }
    let start = Instant::now();
    for chunk in w.multi_puts.iter().step_by(2).collect::<Vec<_>>().chunks(BATCH) {
        let mut txn = env.begin_rw().unwrap();
        for &&(k, v) in chunk {
            txn.del(multi, &key(k), Some(&v.to_be_bytes())).unwrap();
        }
        txn.commit().unwrap();
    }
    t.multi_del = start.elapsed();
    t.multi_entries += env.begin_ro().unwrap().stat(multi).unwrap().entries << 32;

    let start = Instant::now();
    let txn = env.begin_ro().unwrap();
    for &i in &w.gets {
        if let Some(v) = txn.get_ref(db, &key(i)).unwrap() {
            t.found += black_box(v)[0] as u64 | 1;
        }
    }
    drop(txn);
    t.get = start.elapsed();

    let start = Instant::now();
    let txn = env.begin_ro().unwrap();
    let mut scanned = 0;
    txn.for_each(db, |k, v| {
        black_box((k, v));
        scanned += 1;
        Ok(())
    })
    .unwrap();
    t.scanned = scanned;
    drop(txn);
    t.scan = start.elapsed();
    t.tree_at_end = shape(&env);
    env.close().unwrap();
    t
}

fn bench_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

fn ops_per_sec(ops: u64, d: Duration) -> f64 {
    ops as f64 / d.as_secs_f64().max(1e-9)
}

fn main() {
    let n: u64 = std::env::var("RDBX_BENCH_N").ok().and_then(|v| v.replace('_', "").parse().ok()).unwrap_or(1_000_000);
    let base = bench_dir();
    let tmp = tempfile::Builder::new().prefix("rdbx-bench-").tempdir_in(&base).expect("temp dir");
    println!(
        "rdbx vs libmdbx: N = {n}, page size {}, durability SafeNoSync / MDBX_SAFE_NOSYNC, in {}",
        page_size(),
        tmp.path().display()
    );
    let w = Workloads::new(n);
    let modes = std::env::var("RDBX_BENCH_MODES").unwrap_or_else(|_| "pwrite,writemap".into());
    for mode in modes.split(',') {
        let write_map = match mode {
            "pwrite" => false,
            "writemap" => true,
            other => panic!("RDBX_BENCH_MODES: unknown mode {other:?} (pwrite, writemap)"),
        };
        println!();
        println!("== {mode}");
        run_mode(tmp.path(), &w, n, mode, write_map);
    }
}

fn run_mode(tmp: &Path, w: &Workloads, n: u64, mode: &str, write_map: bool) {
    let rdbx_dir = tmp.join(format!("rdbx-{mode}"));
    let mdbx_dir = tmp.join(format!("libmdbx-{mode}"));
    let r = run_rdbx(&rdbx_dir, w, write_map);
    let m = run_libmdbx(&mdbx_dir, w, write_map);

    // Both sides did the same work.
    assert_eq!(r.scanned, m.scanned, "records scanned: rdbx vs libmdbx");
    assert_eq!(r.found, m.found, "get checksum: rdbx vs libmdbx");
    assert_eq!(r.multi_entries, m.multi_entries, "multimap values: rdbx vs libmdbx");

    let puts = w.random_puts.len() as u64;
    let rows = [
        ("sequential load (append, 1 txn)", n, r.load, m.load),
        ("random put (txns of 1000)", puts, r.put, m.put),
        ("random get (shuffled)", n, r.get, m.get),
        ("full scan (cursor)", r.scanned, r.scan, m.scan),
        ("multimap put (txns of 1000)", w.multi_puts.len() as u64, r.multi, m.multi),
        ("multimap delete (txns of 1000)", w.multi_puts.len().div_ceil(2) as u64, r.multi_del, m.multi_del),
    ];
    println!();
    println!("{:<34} {:>10} {:>15} {:>15} {:>14}", "workload", "ops", "rdbx ops/s", "libmdbx ops/s", "rdbx/libmdbx");
    for (name, ops, rt, mt) in rows {
        let ro = ops_per_sec(ops, rt);
        let mo = ops_per_sec(ops, mt);
        println!("{:<34} {:>10} {:>15.0} {:>15.0} {:>14.2}", name, ops, ro, mo, ro / mo);
    }
    let size = |d: &Path| -> u64 {
        std::fs::read_dir(d)
            .map(|it| {
                it.flatten()
                    .filter(|e| e.file_name() == "mdbx.dat")
                    .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
                    .sum()
            })
            .unwrap_or(0)
    };
    println!();
    println!("data file size: rdbx {} bytes, libmdbx {} bytes", size(&rdbx_dir), size(&mdbx_dir));
    let shape = |s: (u32, u64, u64)| format!("depth {}, {} branch + {} leaf pages", s.0, s.1, s.2);
    println!("tree after load: rdbx {}; libmdbx {}", shape(r.tree_after_load), shape(m.tree_after_load));
    println!("tree at the end: rdbx {}; libmdbx {}", shape(r.tree_at_end), shape(m.tree_at_end));
    println!("multimap table: rdbx {}; libmdbx {}", shape(r.multi_tree), shape(m.multi_tree));
    println!("pages in use after load / random put / multimap put: rdbx {:?}; libmdbx {:?}", r.used, m.used);
}
