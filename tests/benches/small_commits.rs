//! A focused probe of the benchmark's weakest row: write transactions of one
//! put each, for profiling one engine (perf, callgrind) and for quick A/B
//! runs, where the whole `compare` benchmark takes minutes.
//!
//! Run: `cargo bench -p rdbx-tests --bench small_commits -- [engines] [modes] [commits] [rounds]`
//! - engines: comma-separated of `rdbx`, `libmdbx`, `lmdb` (default all three);
//! - modes: comma-separated of `pwrite`, `writemap` (default both);
//! - commits: transactions per round (default 20,000);
//! - rounds: fresh files per engine and mode, the best kept (default 3).
//!
//! Each round opens a fresh environment under /dev/shm (SafeNoSync, the
//! `compare` benchmark's geometry and `RDBX_BENCH_PAGE_SIZE`), loads 10,000
//! records (`RDBX_PROBE_RECORDS`) into a named table in one transaction, then times `commits`
//! transactions that each put one random key (32-byte value) into it.
//! `RDBX_PROBE_OTHER` first fills and updates another table, as the
//! `compare` benchmark does before its small commits.
//! `RDBX_PROBE_VALUE=<bytes>` makes the values that long on average (sizes
//! from half to one and a half times it, by key and round; default: 32
//! bytes each), and `RDBX_PROBE_KEYS=<k>` draws the keys from `0..k` (the
//! commits update existing records; default: random 64-bit keys, so the
//! table grows): with values of several pages, a commit frees a chunk
//! and needs another of a different length, from the free runs the GC
//! holds.
//! `RDBX_PROBE_EMPTY=1` makes each transaction commit without a put: what
//! an engine spends on a write transaction itself (LMDB ends one that
//! changed nothing without writing; libmdbx 0.14 does so while the newest
//! meta is weak, as in this probe's lazy mode; rdbx and a durable libmdbx
//! write a meta).
//! Prints microseconds per commit and the pages in use at the end.
//!
//! `RDBX_PROBE_PRUNE=multi` runs the benchmark's multimap prune row instead:
//! a DUPSORT table of 200 keys with 1,000 8-byte values each (nested trees),
//! committed, then one write transaction whose write cursor walks it and
//! deletes 2 values in 3; `RDBX_PROBE_PRUNE=plain` its prune row: a table of
//! 1,000,000 records (8-byte keys, 32-byte values) and a walk deleting 1
//! record in 10. Either prints the walk's microseconds (with its commit) and
//! the records deleted.
//! With `RDBX_PERF_CTL=<fifo>` and `RDBX_PERF_ACK=<fifo>`, the walk tells
//! `perf record --control=fifo:<ctl>,<ack> --delay=-1` when to record, so
//! that a profile holds the walk alone (the table's fill is most of a
//! round's time).
//! Under callgrind, `--toggle-collect=*commits_phase*` counts only the
//! timed loop.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rdbx_tests::rng::Rng;

// The benchmark's engine adapters; this probe uses only part of them.
#[path = "compare/engines.rs"]
#[allow(dead_code)]
mod engines;
use engines::{Engine, Kind, Setup, Write};

fn page_size() -> usize {
    std::env::var("RDBX_BENCH_PAGE_SIZE").ok().and_then(|v| v.parse().ok()).unwrap_or(4096)
}
const UPPER: usize = 16 << 30;
const GROWTH: usize = 16 << 20;
/// Records loaded before the timed commits (`RDBX_PROBE_RECORDS`, default 10,000).
fn preload() -> u64 {
    std::env::var("RDBX_PROBE_RECORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000)
}

/// The keys the commits draw from (`RDBX_PROBE_KEYS`), if set: `0..k`.
fn key_space() -> Option<u64> {
    std::env::var("RDBX_PROBE_KEYS").ok().and_then(|v| v.parse().ok())
}

/// The average value length of the timed commits (`RDBX_PROBE_VALUE`), if set.
fn value_len() -> Option<usize> {
    std::env::var("RDBX_PROBE_VALUE").ok().and_then(|v| v.parse().ok())
}

/// A value for `i` of round `r`: `value(i)` by default, else from `buf`, of
/// a length between half and one and a half times `RDBX_PROBE_VALUE`.
fn value_of(buf: &[u8], i: u64, r: u64) -> &[u8] {
    let avg = buf.len() / 2;
    let h = (i ^ r.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xff51_afd7_ed55_8ccd) >> 33;
    &buf[..avg / 2 + (h as usize % avg.max(1))]
}

fn value(i: u64) -> [u8; 32] {
    let mut v = [0u8; 32];
    for (j, c) in v.chunks_mut(8).enumerate() {
        c.copy_from_slice(&(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ j as u64).to_le_bytes());
    }
    v
}

fn base_dir() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

/// Records of another table loaded first, then updated by 100 write
/// transactions of 1,000 random puts (`RDBX_PROBE_OTHER`, default 0): the
/// `compare` benchmark's file, GC and cache state before its small commits
/// (1,000,000 there, with `RDBX_PROBE_RECORDS=0`).
fn other() -> u64 {
    std::env::var("RDBX_PROBE_OTHER").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// One round on a fresh environment: (time of the commits, pages in use).
fn round<E: Engine>(write_map: bool, keys: &[u64]) -> (Duration, u64) {
    let dir = tempfile::tempdir_in(base_dir()).expect("temp dir");
    let env = E::open(dir.path(), Setup::NoSync { write_map });
    let n = other();
    if n > 0 {
        let mut txn = env.begin_rw();
        let t = txn.table(Some("other"), Kind::Plain);
        for i in 0..n {
            txn.append(t, &i.to_be_bytes(), &value(i));
        }
        txn.commit();
        let mut rng = Rng::new(3);
        for _ in 0..100 {
            let mut txn = env.begin_rw();
            for _ in 0..1000 {
                let i = rng.next_u64() % (2 * n);
                txn.put(t, &i.to_be_bytes(), &value(i ^ 1));
            }
            txn.commit();
        }
    }
    let mut txn = env.begin_rw();
    let t = txn.table(Some("small"), Kind::Plain);
    let mut rng = Rng::new(7);
    let big = value_len().map(|v| vec![0x5a_u8; 2 * v]);
    // With a key space (`RDBX_PROBE_KEYS`), each of its keys once.
    let space = key_space();
    for n in 0..space.unwrap_or(preload()) {
        let i = if space.is_some() { n } else { rng.next_u64() };
        match &big {
            Some(buf) => txn.put(t, &i.to_be_bytes(), value_of(buf, i, 0)),
            None => txn.put(t, &i.to_be_bytes(), &value(i)),
        }
    }
    txn.commit();
    let took = commits_phase(&env, t, keys);
    let used = env.used_pages();
    env.close();
    (took, used)
}

#[inline(never)]
fn commits_phase<E: Engine>(env: &E, t: E::Table, keys: &[u64]) -> Duration {
    let big = value_len().map(|v| vec![0xa5_u8; 2 * v]);
    let empty = std::env::var_os("RDBX_PROBE_EMPTY").is_some();
    let start = Instant::now();
    for (r, &i) in keys.iter().enumerate() {
        let mut txn = env.begin_rw();
        match &big {
            _ if empty => {}
            Some(buf) => txn.put(t, &black_box(i).to_be_bytes(), value_of(buf, i, r as u64 + 1)),
            None => txn.put(t, &black_box(i).to_be_bytes(), &value(i)),
        }
        txn.commit();
    }
    start.elapsed()
}

/// Which prune the probe runs instead of commits (`RDBX_PROBE_PRUNE`):
/// `Some(true)` the multimap's, `Some(false)` the plain table's.
fn prune() -> Option<bool> {
    match std::env::var("RDBX_PROBE_PRUNE").ok()?.as_str() {
        "multi" => Some(true),
        "plain" => Some(false),
        other => panic!("RDBX_PROBE_PRUNE={other:?}: multi or plain"),
    }
}

/// Tells a `perf record --control=fifo:CTL,ACK --delay=-1` to `enable` or
/// `disable` recording, if `RDBX_PERF_CTL` and `RDBX_PERF_ACK` name those
/// fifos, and waits for its answer.
fn perf_ctl(cmd: &str) {
    use std::io::{Read, Write};
    let (Some(ctl), Some(ack)) = (std::env::var_os("RDBX_PERF_CTL"), std::env::var_os("RDBX_PERF_ACK")) else {
        return;
    };
    let mut ctl = std::fs::OpenOptions::new().write(true).open(ctl).expect("RDBX_PERF_CTL: a fifo");
    ctl.write_all(format!("{cmd}\n").as_bytes()).expect("write to RDBX_PERF_CTL");
    let mut answer = [0u8; 5];
    let _ = std::fs::File::open(ack).expect("RDBX_PERF_ACK: a fifo").read(&mut answer);
}

/// One round of a prune (see the module documentation; `multi`: the
/// multimap's): the walk's time and the records it deleted.
fn prune_round<E: Engine>(write_map: bool, multi: bool) -> (Duration, u64) {
    let dir = tempfile::tempdir_in(base_dir()).expect("temp dir");
    let env = E::open(dir.path(), Setup::NoSync { write_map });
    let mut txn = env.begin_rw();
    let t = if multi {
        let t = txn.table(Some("history"), Kind::Multi);
        for i in 0..200_000u64 {
            txn.put(t, &(i / 1000).to_be_bytes(), &i.to_be_bytes());
        }
        t
    } else {
        let t = txn.table(Some("plain"), Kind::Plain);
        for i in 0..1_000_000u64 {
            txn.append(t, &i.to_be_bytes(), &value(i));
        }
        t
    };
    txn.commit();
    perf_ctl("enable");
    let start = Instant::now();
    let mut txn = env.begin_rw();
    let (_, deleted) =
        if multi { txn.walk_delete(t, |_, v| v[7] % 3 != 0) } else { txn.walk_delete(t, |k, _| k[7] % 10 == 0) };
    txn.commit();
    let took = start.elapsed();
    perf_ctl("disable");
    env.close();
    (took, deleted)
}

fn best<E: Engine>(write_map: bool, keys: &[u64], rounds: usize) -> (Duration, u64) {
    if let Some(multi) = prune() {
        return (0..rounds.max(1)).map(|_| prune_round::<E>(write_map, multi)).min_by_key(|r| r.0).expect("a round");
    }
    (0..rounds.max(1)).map(|_| round::<E>(write_map, keys)).min_by_key(|r| r.0).expect("a round")
}

fn main() {
    // `cargo bench` passes `--bench`: skip flags.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    let engines = arg(0, "rdbx,libmdbx,lmdb");
    let modes = arg(1, "pwrite,writemap");
    let commits: usize = arg(2, "20000").parse().expect("commits: a number");
    let rounds: usize = arg(3, "3").parse().expect("rounds: a number");
    let mut rng = Rng::new(11);
    let keys: Vec<u64> = (0..commits).map(|_| rng.next_u64() % key_space().unwrap_or(u64::MAX)).collect();
    for mode in modes.split(',') {
        let write_map = match mode {
            "pwrite" => false,
            "writemap" => true,
            other => panic!("unknown mode {other:?} (pwrite, writemap)"),
        };
        for engine in engines.split(',') {
            let (took, used) = match engine {
                "rdbx" => best::<rdbx::Env>(write_map, &keys, rounds),
                "libmdbx" => best::<rdbx_tests::oracle::Env>(write_map, &keys, rounds),
                "lmdb" if page_size() == 4096 => best::<rdbx_tests::lmdb::Env>(write_map, &keys, rounds),
                "lmdb" => continue,
                other => panic!("unknown engine {other:?} (rdbx, libmdbx, lmdb)"),
            };
            if prune().is_some() {
                let us = took.as_secs_f64() * 1e6;
                println!("{mode:9} {engine:8} {us:9.1} us for the walk  {used:6} deleted");
                continue;
            }
            let us = took.as_secs_f64() * 1e6 / commits.max(1) as f64;
            println!("{mode:9} {engine:8} {us:7.2} us/commit  {used:6} pages in use");
        }
    }
}
