//! Comparative benchmark: the same workloads on rdbx, on the real libmdbx
//! (through `mdbx-sys`) and on LMDB (`lmdb-master-sys`; only at 4 KiB pages,
//! its only page size here), in one run, on a temporary directory (under /dev/shm
//! when it exists, so the disk does not dominate).
//!
//! Run: `cargo bench -p rdbx-tests --bench compare`
//! (`RDBX_BENCH_N=<records>` changes the record count, default 1,000,000;
//! `RDBX_BENCH_MODES=none` runs only the durable workloads;
//! `RDBX_BENCH_ORDER=libmdbx,lmdb,rdbx` changes the order the engines run in;
//! `RDBX_BENCH_ENGINES=lmdb` runs only the engines named (comma-separated;
//! for profiling one engine: prints its rows alone, no ratios);
//! `RDBX_BENCH_ROUNDS=<k>` runs each mode k times, rotating that order one
//! step per round, on fresh files each time, and keeps each engine's best
//! time per row (default 1); `RDBX_BENCH_EACH=1` prints every round's
//! times on stderr;
//! `RDBX_BENCH_PAGE_SIZE` the page size, default 4096;
//! `RDBX_BENCH_RESERVE=<pages>` the page buffers rdbx keeps between write
//! transactions, `EnvBuilder::page_buffer_reserve`: default rdbx's 1024, as
//! libmdbx's; LMDB keeps every one, which `max` asks of rdbx).
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
//!    then the same gets split over two threads, each with its own read txn
//!    (wall time);
//! 4. full scan: one cursor over every record, one read txn;
//! 5. multimap put: a DUPSORT table, min(100,000, N) puts of 8-byte values
//!    (random order) under 1,000 keys, about 100 values per key, so the values
//!    of a key live in a sub-page that grows to near libmdbx's sub-page limit
//!    and some turn into nested trees; transactions of 1,000 puts;
//! 6. multimap delete: every other value of workload 5 deleted one by one
//!    (key and value), in transactions of 1,000;
//! 7. integer keys: an INTEGER_KEY table (8-byte native-endian keys, 32-byte
//!    values): N puts in key order with APPEND in one transaction, N gets in
//!    shuffled order, one full scan;
//! 8. CRUD: min(20,000, N) write transactions of 2 inserts, 1 read, 1
//!    update and 1 delete each, on the table of workloads 1-4 (inserts of
//!    random keys in N..2N, the others of random keys in 0..N), then on the
//!    INTEGER_KEY table (inserts after its last key, as an auto-increment
//!    id would; the others random);
//! 9. small commits: min(20,000, N) write transactions of one put each (a
//!    random key, 32-byte value) into a table of their own;
//! 10. blob updates: a table of 1,000 values of 6 to 46 KiB (2 to 12 pages
//!     of 4 KiB), then min(5,000, N) write transactions each overwriting one
//!     of them with a value of a new length (from the same random sequence
//!     on every engine): each commit frees a chunk of large pages and needs
//!     a run of another length from the free pages;
//! 11. prune: one write transaction walks the table of workloads 1-4 and
//!     8 with one write cursor and deletes at the cursor every record whose
//!     key's last byte is a multiple of 10 (about 1 in 10; the cursor then
//!     stands on the successor, which its next step returns), as a pruning
//!     job does; ops are the records walked. It runs after the others, so
//!     the pages it frees change no other row;
//! 12. multimap prune: a DUPSORT table of min(N / 5, 200,000) 8-byte values,
//!     1,000 under each key (so each key's values are a nested tree), loaded
//!     in order in one transaction; then one write transaction walks it with
//!     one write cursor deleting 2 values in 3 (those whose last byte is not
//!     a multiple of 3), so the nested trees' leaves merge under the cursor,
//!     as pruning a history table value by value does; ops are the values
//!     walked. It runs last.
//!
//! LMDB has no automatic growth: its map is the same 16 GiB, and `MDB_NOSYNC`
//! stands for SAFE_NOSYNC (commits not flushed, one sync at the end).
//!
//! Durable CRUD (`RDBX_BENCH_SYNC_DIR`, default the system's temp directory,
//! which should be a real disk, not a tmpfs; `RDBX_BENCH_SYNC_TXNS`, default
//! 300): after a preload of 10,000 records, transactions of 2 inserts, 1
//! read, 1 update and 1 delete, each committed durably (rdbx SyncDurable,
//! libmdbx MDBX_SYNC_DURABLE, LMDB's default full sync), in the engine
//! order and rounds of the other rows (each engine's best round). Printed as
//! transactions per second, with rdbx's flushes and write calls per commit.
//!
//! Random UUIDs (LMDB's "degenerate scenario", also on `RDBX_BENCH_SYNC_DIR`):
//! 100 durable transactions of 100 random 16-byte keys with 100-byte values;
//! for the last 20 commits, the write calls (extents) per commit of rdbx and
//! libmdbx (their `wops` counters, the meta included), their bytes per
//! commit (the dirty pages before the commit), and the data file size of both.
//!
//! Prints one row per workload: rdbx, libmdbx and LMDB ops/s, and the ratios
//! rdbx/libmdbx and rdbx/LMDB (above 1: rdbx is faster),
//! for each write mode in `RDBX_BENCH_MODES` (default `pwrite,writemap`):
//! `pwrite` writes pages from heap buffers at commit, `writemap` edits them
//! in place in a writable map (WRITEMAP on both sides).

use std::hint::black_box;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rdbx::{Db, Durability, Env, PutFlags};
use rdbx_tests::rng::Rng;
use rdbx_tests::{lmdb, oracle};

mod engines;
use engines::{Engine, Kind, Read, Setup, Write};

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
    /// Keys of the small transactions (one put each).
    small_puts: Vec<u64>,
    /// Keys of the CRUD transactions: two inserted, one read, one updated,
    /// one deleted (the inserts of the integer-key CRUD are its own).
    crud: Vec<[u64; 5]>,
    /// The blob updates: (key, value length), one a transaction.
    blobs: Vec<(u64, usize)>,
}

/// Keys of the multimap workload.
const MULTI_KEYS: u64 = 1000;
/// Transactions of the small-commit workload (one put each).
const SMALL_COMMITS: u64 = 20_000;
/// Transactions of each CRUD workload.
const CRUD_TXNS: u64 = 20_000;
/// Records of the blob table, and the transactions updating them.
const BLOB_KEYS: u64 = 1000;
const BLOB_TXNS: u64 = 5000;

/// Values of the multimap prune's table, at most.
const MULTI_PRUNE_MAX: u64 = 200_000;

/// A blob length: 6 to 46 KiB (2 to 12 pages of 4 KiB).
fn blob_len(rng: &mut Rng) -> usize {
    4096 * (1 + rng.below(11) as usize) + 2048
}

/// The bytes blobs are cut from.
static BLOB: [u8; 4096 * 12] = [0x5a; 4096 * 12];

impl Workloads {
    fn new(n: u64) -> Self {
        let mut rng = Rng::new(42);
        let puts = n.min(100_000);
        let random_puts = (0..puts).map(|_| rng.below(2 * n)).collect();
        let mut gets: Vec<u64> = (0..n).collect();
        rng.shuffle(&mut gets);
        let multi_puts = (0..puts).map(|_| (rng.below(MULTI_KEYS), rng.next_u64())).collect();
        let small_puts = (0..n.min(SMALL_COMMITS)).map(|_| rng.next_u64()).collect();
        let crud = (0..n.min(CRUD_TXNS))
            .map(|_| [n + rng.below(n), n + rng.below(n), rng.below(n), rng.below(n), rng.below(n)])
            .collect();
        let blobs = (0..n.min(BLOB_TXNS)).map(|_| (rng.below(BLOB_KEYS), blob_len(&mut rng))).collect();
        Workloads { n, random_puts, gets, multi_puts, small_puts, crud, blobs }
    }
}

/// Timings of the four workloads, plus a checksum so nothing is optimised away.
#[derive(Default)]
struct Times {
    load: Duration,
    /// The INTEGER_KEY table (8-byte native-endian keys): load, get, scan.
    int_load: Duration,
    int_get: Duration,
    int_scan: Duration,
    /// Transactions of one put each.
    small: Duration,
    /// Transactions updating one blob each.
    blobs: Duration,
    /// The write cursor's walk deleting 1 record in 10, and its (records
    /// walked, deleted).
    prune: Duration,
    pruned: (u64, u64),
    /// The same over the values of a multimap (2 in 3 deleted).
    multi_prune: Duration,
    multi_pruned: (u64, u64),
    /// CRUD transactions on the plain and on the INTEGER_KEY table.
    crud: Duration,
    int_crud: Duration,
    put: Duration,
    multi: Duration,
    multi_del: Duration,
    get: Duration,
    /// The same gets split over two threads, each with its own read txn.
    get2: Duration,
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

impl Times {
    /// Keeps the better (shorter) time of each row from `other`, a run of
    /// the same workloads on fresh files; the work done must be the same.
    fn keep_best(&mut self, other: Times) {
        assert_eq!(
            (self.found, self.scanned, self.multi_entries, self.pruned, self.multi_pruned),
            (other.found, other.scanned, other.multi_entries, other.pruned, other.multi_pruned)
        );
        for (a, b) in [
            (&mut self.load, other.load),
            (&mut self.int_load, other.int_load),
            (&mut self.int_get, other.int_get),
            (&mut self.int_scan, other.int_scan),
            (&mut self.put, other.put),
            (&mut self.multi, other.multi),
            (&mut self.multi_del, other.multi_del),
            (&mut self.get, other.get),
            (&mut self.get2, other.get2),
            (&mut self.scan, other.scan),
            (&mut self.small, other.small),
            (&mut self.blobs, other.blobs),
            (&mut self.crud, other.crud),
            (&mut self.int_crud, other.int_crud),
            (&mut self.prune, other.prune),
            (&mut self.multi_prune, other.multi_prune),
        ] {
            *a = (*a).min(b);
        }
    }
}

/// Runs every in-memory workload on one engine, in a new environment in `dir`.
fn run<E: Engine>(dir: &Path, w: &Workloads, write_map: bool) -> Times {
    let env = E::open(dir, Setup::NoSync { write_map });
    let mut t = Times::default();

    let start = Instant::now();
    let mut txn = env.begin_rw();
    let db = txn.table(Some("bench"), Kind::Plain);
    for i in 0..w.n {
        txn.append(db, &key(i), &value(i));
    }
    txn.commit();
    t.load = start.elapsed();
    let shape = |env: &E| env.begin_ro().shape(db).tree;
    t.tree_after_load = shape(&env);
    t.used[0] = env.used_pages();

    t.put = random_put_phase(|| {
        for chunk in w.random_puts.chunks(BATCH) {
            let mut txn = env.begin_rw();
            for &i in chunk {
                txn.put(db, &key(i), &value(i ^ 1));
            }
            txn.commit();
        }
    });
    t.used[1] = env.used_pages();

    let mut txn = env.begin_rw();
    let multi = txn.table(Some("multi"), Kind::Multi);
    txn.commit();
    t.multi = multi_put_phase(|| {
        for chunk in w.multi_puts.chunks(BATCH) {
            let mut txn = env.begin_rw();
            for &(k, v) in chunk {
                txn.put(multi, &key(k), &v.to_be_bytes());
            }
            txn.commit();
        }
    });
    t.used[2] = env.used_pages();
    let s = env.begin_ro().shape(multi);
    (t.multi_entries, t.multi_tree) = (s.entries, s.tree);
    t.multi_del = multi_del_phase(|| {
        for chunk in w.multi_puts.iter().step_by(2).collect::<Vec<_>>().chunks(BATCH) {
            let mut txn = env.begin_rw();
            for &&(k, v) in chunk {
                txn.del(multi, &key(k), Some(&v.to_be_bytes()));
            }
            txn.commit();
        }
    });
    t.multi_entries += env.begin_ro().shape(multi).entries << 32;

    // The gets: the first byte of each value found (`| 1`: a found value
    // counts even when that byte is 0). Every loop of this function counts
    // in a local: `t` escapes (`two_threads`), so a count kept in it would
    // cost a load and a store per record after each `black_box`.
    let gets = |ks: &[u64]| {
        let txn = env.begin_ro();
        let mut f = 0;
        for &i in ks {
            if let Some(v) = txn.get(db, &key(i)) {
                f += black_box(v)[0] as u64 | 1;
            }
        }
        f
    };
    let start = Instant::now();
    t.found += gets(&w.gets);
    t.get = start.elapsed();
    t.get2 = two_threads(&w.gets, &mut t.found, gets);

    let start = Instant::now();
    t.scanned += scan(&env, db);
    t.scan = start.elapsed();
    t.tree_at_end = shape(&env);

    let start = Instant::now();
    let mut txn = env.begin_rw();
    let ints = txn.table(Some("ints"), Kind::Integer);
    for i in 0..w.n {
        txn.append(ints, &i.to_ne_bytes(), &value(i));
    }
    txn.commit();
    t.int_load = start.elapsed();
    let start = Instant::now();
    let txn = env.begin_ro();
    let mut f = 0;
    for &i in &w.gets {
        if let Some(v) = txn.get(ints, &i.to_ne_bytes()) {
            f += black_box(v)[1] as u64 | 1;
        }
    }
    drop(txn);
    t.int_get = start.elapsed();
    t.found += f;
    let start = Instant::now();
    t.scanned += scan(&env, ints);
    t.int_scan = start.elapsed();

    // CRUD transactions: `f` counts the values read as the gets do.
    let mut f = 0;
    t.crud = crud_phase(|| {
        for &[a, b, get, upd, del] in &w.crud {
            let mut txn = env.begin_rw();
            txn.put(db, &key(a), &value(a));
            txn.put(db, &key(b), &value(b));
            if let Some(v) = txn.get(db, &key(get)) {
                f += black_box(v)[0] as u64 | 1;
            }
            txn.put(db, &key(upd), &value(upd ^ 2));
            txn.del(db, &key(del), None);
            txn.commit();
        }
    });
    let mut next = w.n;
    t.int_crud = int_crud_phase(|| {
        for &[_, _, get, upd, del] in &w.crud {
            let mut txn = env.begin_rw();
            for k in [next, next + 1] {
                txn.put(ints, &k.to_ne_bytes(), &value(k));
            }
            next += 2;
            if let Some(v) = txn.get(ints, &get.to_ne_bytes()) {
                f += black_box(v)[0] as u64 | 1;
            }
            txn.put(ints, &upd.to_ne_bytes(), &value(upd ^ 2));
            txn.del(ints, &del.to_ne_bytes(), None);
            txn.commit();
        }
    });
    t.found += f;

    // Small transactions: one put each, into a table of their own.
    let mut txn = env.begin_rw();
    let small = txn.table(Some("small"), Kind::Plain);
    txn.commit();
    t.small = small_commit_phase(|| {
        for &i in &w.small_puts {
            let mut txn = env.begin_rw();
            txn.put(small, &key(i), &value(i));
            txn.commit();
        }
    });

    // Blob updates: values of 2 to 12 pages, each written with a new
    // length (a commit frees a chunk and needs another of another length).
    let mut txn = env.begin_rw();
    let blobs = txn.table(Some("blobs"), Kind::Plain);
    let mut rng = Rng::new(5);
    for i in 0..BLOB_KEYS {
        txn.put(blobs, &key(i), &BLOB[..blob_len(&mut rng)]);
    }
    txn.commit();
    t.blobs = blob_phase(|| {
        for &(i, len) in &w.blobs {
            let mut txn = env.begin_rw();
            txn.put(blobs, &key(i), &BLOB[..len]);
            txn.commit();
        }
    });
    let txn = env.begin_ro();
    t.found += (0..BLOB_KEYS).map(|i| txn.get(blobs, &key(i)).map_or(0, |v| v.len() as u64)).sum::<u64>();
    drop(txn);

    // Prune: a write cursor over the main table deletes 1 record in 10.
    t.prune = prune_phase(|| {
        let mut txn = env.begin_rw();
        t.pruned = txn.walk_delete(db, |k, _| k[7] % 10 == 0);
        txn.commit();
    });

    // Multimap prune: a write cursor over keys of 1,000 values each deletes
    // 2 values in 3.
    let mut txn = env.begin_rw();
    let history = txn.table(Some("history"), Kind::Multi);
    for i in 0..(w.n / 5).min(MULTI_PRUNE_MAX) {
        txn.put(history, &key(i / 1000), &i.to_be_bytes());
    }
    txn.commit();
    t.multi_prune = multi_prune_phase(|| {
        let mut txn = env.begin_rw();
        t.multi_pruned = txn.walk_delete(history, |_, v| v[7] % 3 != 0);
        txn.commit();
    });
    env.close();
    t
}

/// One cursor over every record of `t` in a read transaction: the records seen.
fn scan<E: Engine>(env: &E, t: E::Table) -> u64 {
    let txn = env.begin_ro();
    let mut scanned = 0;
    txn.scan(t, |k, v| {
        black_box((k, v));
        scanned += 1;
    });
    scanned
}

fn bench_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Wall time of `gets` split over two threads (`one` runs half of them in
/// its own read transaction and returns its checksum, added to `found`).
fn two_threads(gets: &[u64], found: &mut u64, one: impl Fn(&[u64]) -> u64 + Sync) -> Duration {
    let (a, b) = gets.split_at(gets.len() / 2);
    let start = Instant::now();
    let sum = std::thread::scope(|s| {
        let other = s.spawn(|| one(b));
        one(a) + other.join().unwrap()
    });
    let took = start.elapsed();
    *found += sum;
    took
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
    for mode in modes.split(',').filter(|m| *m != "none") {
        let write_map = match mode {
            "pwrite" => false,
            "writemap" => true,
            other => panic!("RDBX_BENCH_MODES: unknown mode {other:?} (pwrite, writemap, none)"),
        };
        println!();
        println!("== {mode}");
        run_mode(tmp.path(), &w, n, mode, write_map);
    }
    durable_crud();
    random_uuids();
}

/// 16 random bytes (the UUID-like keys of the random-UUID workload).
fn uuid(rng: &mut Rng) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
    k[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
    k
}

fn random_uuids() {
    let base = std::env::var_os("RDBX_BENCH_SYNC_DIR").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let tmp = tempfile::Builder::new().prefix("rdbx-bench-uuid-").tempdir_in(&base).expect("uuid dir");
    const TXNS: usize = 100;
    const PER_TXN: usize = 100;
    const LAST: usize = 20;
    let val = [0x5Au8; 100];
    // rdbx
    let env = Env::builder().durability(Durability::SyncDurable).open(tmp.path().join("rdbx")).unwrap();
    let mut rng = Rng::new(7);
    let (mut r_wops, mut r_bytes) = (0u64, 0u64);
    for t in 0..TXNS {
        let mut txn = env.begin_rw_txn().unwrap();
        for _ in 0..PER_TXN {
            txn.put(Db::MAIN, &uuid(&mut rng), &val, PutFlags::empty()).unwrap();
        }
        let before = env.page_ops().wops;
        let dirty = txn.info().unwrap().space_dirty;
        txn.commit().unwrap();
        if t >= TXNS - LAST {
            r_wops += env.page_ops().wops - before;
            r_bytes += dirty;
        }
    }
    let r_size = std::fs::metadata(tmp.path().join("rdbx/mdbx.dat")).unwrap().len();
    let r_used = env.info().unwrap().first_unallocated;
    drop(env);
    // libmdbx
    let env = oracle::Env::open(
        tmp.path().join("libmdbx"),
        &oracle::EnvOptions { no_sub_dir: Some(false), max_dbs: 2, ..Default::default() },
    )
    .unwrap();
    let mut rng = Rng::new(7);
    let (mut m_wops, mut m_bytes) = (0u64, 0u64);
    for t in 0..TXNS {
        let mut txn = env.begin_rw().unwrap();
        for _ in 0..PER_TXN {
            txn.put(oracle::MAIN_DBI, &uuid(&mut rng), &val, 0).unwrap();
        }
        let before = env.info().unwrap().pgop[7];
        let dirty = txn.space_dirty().unwrap();
        txn.commit().unwrap();
        if t >= TXNS - LAST {
            m_wops += env.info().unwrap().pgop[7] - before;
            m_bytes += dirty;
        }
    }
    let m_size = std::fs::metadata(tmp.path().join("libmdbx/mdbx.dat")).unwrap().len();
    let m_used = env.info().unwrap().last_pgno + 1;
    env.close().unwrap();
    let n = LAST as f64;
    println!();
    println!(
        "== random UUIDs ({TXNS} durable transactions of {PER_TXN} 16-byte keys, 100-byte values; last {LAST} commits)"
    );
    println!(
        "extents (write calls) per commit: rdbx {:.1}, libmdbx {:.1}; bytes per commit (dirty pages): rdbx {:.0}, libmdbx {:.0}; data file: rdbx {r_size} bytes ({r_used} pages used), libmdbx {m_size} bytes ({m_used} pages used)",
        r_wops as f64 / n,
        m_wops as f64 / n,
        r_bytes as f64 / n,
        m_bytes as f64 / n
    );
}

/// Transactions of the durable CRUD workload.
fn sync_txns() -> u64 {
    std::env::var("RDBX_BENCH_SYNC_TXNS").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
}

const CRUD_PRELOAD: u64 = 10_000;

/// The keys of CRUD transaction `t`: two inserted, one read, one updated,
/// one deleted (all from the preload or earlier inserts).
fn crud_keys(t: u64) -> ([u64; 2], u64, u64, u64) {
    let ins = [CRUD_PRELOAD + 2 * t, CRUD_PRELOAD + 2 * t + 1];
    (ins, (t * 7919) % CRUD_PRELOAD, (t * 104_729) % CRUD_PRELOAD, t)
}

fn durable_crud() {
    let base = std::env::var_os("RDBX_BENCH_SYNC_DIR").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let tmp = tempfile::Builder::new().prefix("rdbx-bench-sync-").tempdir_in(&base).expect("sync dir");
    let txns = sync_txns();
    println!();
    println!("== durable CRUD in {} ({txns} transactions of 2 inserts, 1 read, 1 update, 1 delete)", base.display());
    // As the in-memory rows: the engines in `RDBX_BENCH_ORDER`, rotated one
    // step per round, each keeping its best time over `RDBX_BENCH_ROUNDS`
    // rounds, on new files every round.
    let mut best = [Duration::MAX; 3];
    let mut rdbx_ops = (0.0, 0.0);
    let mut order = bench_order();
    for round in 0..bench_rounds() {
        for engine in &order {
            let dir = tmp.path().join(format!("{engine}-{round}"));
            let (slot, took) = match *engine {
                "rdbx" => {
                    let (took, io) = crud::<Env>(&dir, txns);
                    let (fsyncs, writes) = io.expect("rdbx counts its flushes and writes");
                    rdbx_ops = (fsyncs as f64 / txns as f64, writes as f64 / txns as f64);
                    (0, took)
                }
                "libmdbx" => (1, crud::<oracle::Env>(&dir, txns).0),
                _ => (2, crud::<lmdb::Env>(&dir, txns).0),
            };
            best[slot] = best[slot].min(took);
            let _ = std::fs::remove_dir_all(&dir);
        }
        order.rotate_left(1);
    }
    let [ro, mo, lo] = best.map(|t| ops_per_sec(txns, t));
    println!(
        "{:<36} {:>9} {:>12.0} {:>12.0} {:>12.0} {:>9.2} {:>9.2}",
        "durable CRUD transactions",
        txns,
        ro,
        mo,
        lo,
        ro / mo,
        ro / lo
    );
    println!("rdbx per commit: {:.2} fdatasync, {:.2} writes", rdbx_ops.0, rdbx_ops.1);
}

/// One engine's durable CRUD run in a new environment in `dir`: its time,
/// and the flushes and write calls its commits made (where it counts them).
fn crud<E: Engine>(dir: &Path, txns: u64) -> (Duration, Option<(u64, u64)>) {
    let env = E::open(dir, Setup::Durable);
    let mut txn = env.begin_rw();
    let main = txn.table(None, Kind::Plain);
    for i in 0..CRUD_PRELOAD {
        txn.append(main, &key(i), &value(i));
    }
    txn.commit();
    let io0 = env.io_counts();
    let start = Instant::now();
    for t in 0..txns {
        let (ins, get, upd, del) = crud_keys(t);
        let mut txn = env.begin_rw();
        for k in ins {
            txn.put(main, &key(k), &value(k));
        }
        black_box(txn.get(main, &key(get)).map(<[u8]>::len));
        txn.put(main, &key(upd), &value(upd ^ t));
        txn.del(main, &key(del), None);
        txn.commit();
    }
    let took = start.elapsed();
    let io = env.io_counts().zip(io0).map(|(b, a)| (b.0 - a.0, b.1 - a.1));
    env.close();
    (took, io)
}

/// Defines the timed write phases, each its own function so that a
/// profiler can single one out (`valgrind --tool=callgrind
/// --toggle-collect='*multi_del_phase*'`, or a `perf report --parent`
/// filter).
macro_rules! phases {
    ($($name:ident),* $(,)?) => {$(
        #[inline(never)]
        fn $name(f: impl FnOnce()) -> Duration {
            timed(f)
        }
    )*};
}
phases!(
    random_put_phase,
    multi_put_phase,
    multi_del_phase,
    small_commit_phase,
    blob_phase,
    crud_phase,
    int_crud_phase,
    prune_phase,
    multi_prune_phase
);

fn timed(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// A row of the table: its name, its operations (from the workloads, the
/// record count and the engine's own counts) and its time.
type Row = (&'static str, fn(&Workloads, u64, &Times) -> u64, fn(&Times) -> Duration);

/// The rows, in the order printed.
const ROWS: [Row; 16] = [
    ("sequential load (append, 1 txn)", |_, n, _| n, |t| t.load),
    ("random put (txns of 1000)", |w, _, _| w.random_puts.len() as u64, |t| t.put),
    ("random get (shuffled)", |_, n, _| n, |t| t.get),
    ("random get, 2 threads", |_, n, _| n, |t| t.get2),
    ("full scan (cursor)", |_, n, t| t.scanned - n, |t| t.scan),
    ("multimap put (txns of 1000)", |w, _, _| w.multi_puts.len() as u64, |t| t.multi),
    ("multimap delete (txns of 1000)", |w, _, _| w.multi_puts.len().div_ceil(2) as u64, |t| t.multi_del),
    ("integer keys: load (append, 1 txn)", |_, n, _| n, |t| t.int_load),
    ("integer keys: get (shuffled)", |_, n, _| n, |t| t.int_get),
    ("integer keys: scan (cursor)", |_, n, _| n, |t| t.int_scan),
    ("CRUD (2 puts, get, update, del)", |w, _, _| w.crud.len() as u64, |t| t.crud),
    ("integer keys: CRUD (ids appended)", |w, _, _| w.crud.len() as u64, |t| t.int_crud),
    ("small commits (1 put per txn)", |w, _, _| w.small_puts.len() as u64, |t| t.small),
    ("blob updates (6-46 KiB, 1 per txn)", |w, _, _| w.blobs.len() as u64, |t| t.blobs),
    ("prune (write cursor, del 1 in 10)", |_, _, t| t.pruned.0, |t| t.prune),
    ("multimap prune (cursor, del 2 in 3)", |_, _, t| t.multi_pruned.0, |t| t.multi_prune),
];

/// A row's name for `RDBX_BENCH_EACH` lines: "random put (txns of 1000)"
/// -> "random_put", "integer keys: get (shuffled)" -> "int_get".
fn short(name: &str) -> String {
    let name = name.split(" (").next().unwrap_or(name);
    name.replace("integer keys: ", "int ").replace(", ", " ").replace(' ', "_")
}

/// Rounds per mode (`RDBX_BENCH_ROUNDS`, default 1).
fn bench_rounds() -> usize {
    std::env::var("RDBX_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1).max(1)
}

/// The engines in the order they run (`RDBX_BENCH_ORDER`, a comma-separated
/// permutation of `rdbx,libmdbx,lmdb`).
fn bench_order() -> Vec<&'static str> {
    let all = ["rdbx", "libmdbx", "lmdb"];
    let Ok(v) = std::env::var("RDBX_BENCH_ORDER") else { return all.to_vec() };
    let order: Vec<&'static str> = v
        .split(',')
        .map(|e| {
            *all.iter()
                .find(|a| **a == e.trim())
                .unwrap_or_else(|| panic!("RDBX_BENCH_ORDER: unknown engine {e:?} (rdbx, libmdbx, lmdb)"))
        })
        .collect();
    assert!(
        order.len() == 3 && all.iter().all(|a| order.contains(a)),
        "RDBX_BENCH_ORDER must name rdbx, libmdbx and lmdb once each, got {v:?}"
    );
    order
}

fn run_mode(tmp: &Path, w: &Workloads, n: u64, mode: &str, write_map: bool) {
    let rdbx_dir = tmp.join(format!("rdbx-{mode}"));
    let mdbx_dir = tmp.join(format!("libmdbx-{mode}"));
    let lmdb_dir = tmp.join(format!("lmdb-{mode}"));
    // In the order `RDBX_BENCH_ORDER` names (default rdbx, libmdbx, LMDB):
    // the first engine of a process may pay for fresh heap memory the
    // others find ready, so `scripts/bench_runs.py` rotates it between runs.
    // With several rounds, the order rotates one step per round and each
    // engine keeps its best time per row; every round starts from new files.
    let (mut r, mut m, mut l): (Option<Times>, Option<Times>, Option<Times>) = (None, None, None);
    let rounds = bench_rounds();
    let mut order = bench_order();
    if let Ok(only) = std::env::var("RDBX_BENCH_ENGINES") {
        order.retain(|e| only.split(',').any(|o| o.trim() == *e));
    }
    for round in 0..rounds {
        let last = round + 1 == rounds;
        for engine in &order {
            let (dir, slot) = match *engine {
                "rdbx" => (&rdbx_dir, &mut r),
                "libmdbx" => (&mdbx_dir, &mut m),
                // LMDB's page size is the OS page size.
                _ if page_size() != 4096 => continue,
                _ => (&lmdb_dir, &mut l),
            };
            let _ = std::fs::remove_dir_all(dir);
            let t = match *engine {
                "rdbx" => run::<Env>(dir, w, write_map),
                "libmdbx" => run::<oracle::Env>(dir, w, write_map),
                _ => run::<lmdb::Env>(dir, w, write_map),
            };
            if std::env::var_os("RDBX_BENCH_EACH").is_some() {
                // Every round's times (ms) on stderr, for studying the spread.
                let ms: Vec<String> = ROWS
                    .iter()
                    .map(|(name, _, time)| format!("{}={:.1}", short(name), time(&t).as_secs_f64() * 1e3))
                    .collect();
                eprintln!("round {round} {engine:<8} {}", ms.join(" "));
            }
            match slot {
                Some(best) => best.keep_best(t),
                None => *slot = Some(t),
            }
            // The last round's files stay for the size figures below.
            if !last {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        order.rotate_left(1);
    }
    if r.is_none() || m.is_none() {
        // A subset of the engines (`RDBX_BENCH_ENGINES`): their rows alone.
        println!();
        for (name, t) in [("rdbx", &r), ("libmdbx", &m), ("LMDB", &l)] {
            let Some(t) = t else { continue };
            for (row, ops, time) in ROWS {
                println!("{name:<8} {row:<36} {:>12.0} ops/s", ops_per_sec(ops(w, n, t), time(t)));
            }
        }
        return;
    }
    let (r, m) = (r.expect("rdbx ran"), m.expect("libmdbx ran"));

    // Every side did the same work.
    for (peer, p) in [("libmdbx", Some(&m)), ("LMDB", l.as_ref())] {
        let Some(p) = p else { continue };
        assert_eq!(r.scanned, p.scanned, "records scanned: rdbx vs {peer}");
        assert_eq!(r.found, p.found, "get checksum: rdbx vs {peer}");
        assert_eq!(r.multi_entries, p.multi_entries, "multimap values: rdbx vs {peer}");
        assert_eq!(r.pruned, p.pruned, "prune (records walked, deleted): rdbx vs {peer}");
        assert_eq!(r.multi_pruned, p.multi_pruned, "multimap prune (values walked, deleted): rdbx vs {peer}");
    }

    println!();
    if rounds > 1 {
        println!("best of {rounds} rounds per row (engine order rotated each round)");
    }
    println!(
        "{:<36} {:>9} {:>12} {:>12} {:>12} {:>9} {:>9}",
        "workload", "ops", "rdbx ops/s", "libmdbx", "LMDB", "/libmdbx", "/LMDB"
    );
    for (name, ops, time) in ROWS {
        let ops = ops(w, n, &r);
        let ro = ops_per_sec(ops, time(&r));
        let mo = ops_per_sec(ops, time(&m));
        let (lo, lr) = match l.as_ref().map(time) {
            Some(lt) => {
                let lo = ops_per_sec(ops, lt);
                (format!("{lo:.0}"), format!("{:.2}", ro / lo))
            }
            None => ("-".into(), "-".into()),
        };
        println!("{:<36} {:>9} {:>12.0} {:>12.0} {:>12} {:>9.2} {:>9}", name, ops, ro, mo, lo, ro / mo, lr);
    }
    let size = |d: &Path| -> u64 {
        std::fs::read_dir(d)
            .map(|it| {
                it.flatten()
                    .filter(|e| e.file_name() == "mdbx.dat" || e.file_name() == "data.mdb")
                    .map(|e| e.metadata().map(|m| m.blocks() * 512).unwrap_or(0))
                    .sum()
            })
            .unwrap_or(0)
    };
    println!();
    println!(
        "data file bytes allocated: rdbx {}, libmdbx {}, LMDB {}",
        size(&rdbx_dir),
        size(&mdbx_dir),
        size(&lmdb_dir)
    );
    let shape = |s: (u32, u64, u64)| format!("depth {}, {} branch + {} leaf pages", s.0, s.1, s.2);
    let lshape = |f: fn(&Times) -> (u32, u64, u64)| l.as_ref().map_or("-".into(), |l| shape(f(l)));
    println!(
        "tree after load: rdbx {}; libmdbx {}; LMDB {}",
        shape(r.tree_after_load),
        shape(m.tree_after_load),
        lshape(|t| t.tree_after_load)
    );
    println!(
        "tree at the end: rdbx {}; libmdbx {}; LMDB {}",
        shape(r.tree_at_end),
        shape(m.tree_at_end),
        lshape(|t| t.tree_at_end)
    );
    println!(
        "multimap table: rdbx {}; libmdbx {}; LMDB {}",
        shape(r.multi_tree),
        shape(m.multi_tree),
        lshape(|t| t.multi_tree)
    );
    println!(
        "pages in use after load / random put / multimap put: rdbx {:?}; libmdbx {:?}; LMDB {:?}",
        r.used,
        m.used,
        l.as_ref().map(|l| l.used)
    );
}
