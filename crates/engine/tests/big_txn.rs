//! One huge write transaction in a process whose heap is limited: dirty pages
//! beyond the transaction's dirty-page budget are spilled to the data file,
//! so the transaction's memory stays bounded however much it writes.
//!
//! The child process runs under `ulimit -d` (RLIMIT_DATA: heap and private
//! writable mappings; the shared read-only map of the data file does not
//! count). Without spilling, the dirty pages alone exceed the limit and the
//! child dies on a failed allocation.
//!
//! Knobs: `RDBX_BIG_TXN_MIB` (bytes of values written in the one transaction,
//! default 1024) and `RDBX_BIG_TXN_LIMIT_MIB` (the child's RLIMIT_DATA,
//! default an eighth of that: the case is 4096 and 512).

mod common;

use std::path::Path;

use rdbx::{Env, Geometry, PutFlags};

const CHILD_ENV: &str = "RDBX_BIG_TXN_CHILD";
const VAL_LEN: usize = 1000;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let l = s.lines().find(|l| l.starts_with(field)).unwrap_or("x 0");
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn value(i: u64, buf: &mut [u8; VAL_LEN]) {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

fn open(path: &Path, mib: u64) -> Env {
    let upper = (mib as usize * 3 + 1024) << 20;
    Env::builder()
        .write_map(std::env::var_os("RDBX_BIG_TXN_WRITEMAP").is_some())
        .geometry(Geometry {
            page_size: Some(4096),
            size_upper: Some(upper),
            growth_step: Some(64 << 20),
            ..Geometry::default()
        })
        .open(path)
        .unwrap()
}

/// Child side: writes `RDBX_BIG_TXN_MIB` MiB of values in one transaction,
/// commits, reads them back and prints its memory figures.
#[test]
fn big_txn_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let mib = env_u64("RDBX_BIG_TXN_MIB", 1024);
    let n = mib * 1024 * 1024 / VAL_LEN as u64;
    let env = open(Path::new(&dir), mib);
    let mut buf = [0u8; VAL_LEN];
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.open_db(None).unwrap();
    let mut peak_dirty = 0u64;
    for i in 0..n {
        value(i, &mut buf);
        txn.put(db, &i.to_be_bytes(), &buf, PutFlags::APPEND).unwrap();
        if i % 65536 == 0 {
            peak_dirty = peak_dirty.max(txn.info().unwrap().space_dirty);
        }
    }
    txn.commit().unwrap();
    let ops = env.page_ops();
    let r = env.begin_ro_txn().unwrap();
    assert_eq!(r.db_stat(db).unwrap().entries, n);
    for i in (0..n).step_by((n / 1000).max(1) as usize) {
        value(i, &mut buf);
        assert_eq!(r.get(db, &i.to_be_bytes()).unwrap(), Some(&buf[..]), "record {i}");
    }
    println!(
        "RDBX-BIG-TXN records={n} peak_dirty_mib={} spilled={} unspilled={} vmhwm_kb={} rss_anon_kb={} vm_data_kb={}",
        peak_dirty >> 20,
        ops.spill,
        ops.unspill,
        status_kb("VmHWM:"),
        status_kb("RssAnon:"),
        status_kb("VmData:"),
    );
    assert!(ops.spill > 0, "the transaction spilled no page");
}

#[test]
fn a_huge_transaction_fits_in_bounded_memory() {
    run(false);
}

/// With WRITEMAP the pages live in the shared map (page cache, not process
/// memory): the same transaction, edited in place.
#[test]
fn a_huge_writemap_transaction_fits_in_bounded_memory() {
    run(true);
}

fn run(write_map: bool) {
    let mib = env_u64("RDBX_BIG_TXN_MIB", 1024);
    let limit_mib = env_u64("RDBX_BIG_TXN_LIMIT_MIB", (mib / 8).max(64));
    // A real file system: spilled pages are page cache, not process memory.
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (dir, mib_s) = (d.path().to_str().expect("a UTF-8 temporary path"), mib.to_string());
    let mut envs = vec![(CHILD_ENV, dir), ("RDBX_BIG_TXN_MIB", mib_s.as_str())];
    if write_map {
        envs.push(("RDBX_BIG_TXN_WRITEMAP", "1"));
    }
    let out = common::run_child_under_ulimit('d', limit_mib * 1024, "big_txn_child", &envs);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "a {mib} MiB transaction under a {limit_mib} MiB data limit failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let line = stdout.lines().find(|l| l.contains("RDBX-BIG-TXN")).expect("the child's figures");
    eprintln!("{mib} MiB transaction, {limit_mib} MiB limit, WRITEMAP {write_map}: {line}");
}
