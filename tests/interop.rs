//! Interoperability of rdbx with the real libmdbx (the oracle, in this process
//! through `mdbx-sys`, or in a child process through the `mdbx-oracle` binary):
//!
//! * (a) rdbx writes, libmdbx checks (`mdbx_env_chk`) and reads every record;
//! * (b) libmdbx writes, rdbx reads every record and the same statistics;
//! * (c) writers alternate on one file: sequentially in this process (each
//!   side closes its environment before the other opens), and with libmdbx in
//!   a child process while rdbx keeps its environment (and a reader) open;
//! * geometry: growth in small steps, and `MapFull` at the upper bound.
//!
//! Every test keeps a model (`BTreeMap`s) of what the database must contain.

// `u64::is_multiple_of` needs Rust 1.87; the workspace's rust-version is 1.80.
#![allow(clippy::manual_is_multiple_of)]

use std::path::{Path, PathBuf};

use rdbx::{Db, Durability, Env, Error, Geometry, PutFlags};
use rdbx_tests::engine::{self, apply_rdbx, figures, OracleCli};
use rdbx_tests::model::{diff_sections, generate, Model, WorkloadSpec};
use rdbx_tests::ops::{self, Op};
use rdbx_tests::oracle;

fn cli() -> OracleCli {
    OracleCli::new(env!("CARGO_BIN_EXE_mdbx-oracle"))
}

const MIB: usize = 1 << 20;

fn rdbx_open(path: &Path, ps: usize, no_sub_dir: bool, durability: Durability) -> Env {
    rdbx_open_with(path, ps, no_sub_dir, durability, Mode::default())
}

/// How rdbx opens the database beyond page size, layout and durability.
#[derive(Clone, Copy, Default)]
struct Mode {
    /// The dirty-page budget (`Some(1)`: spill between every two operations).
    dirty_limit: Option<usize>,
    /// WRITEMAP: pages edited in place in a writable map, synced with msync.
    write_map: bool,
}

fn rdbx_open_with(path: &Path, ps: usize, no_sub_dir: bool, durability: Durability, mode: Mode) -> Env {
    let Mode { dirty_limit, write_map } = mode;
    let b = Env::builder().write_map(write_map);
    let b = match dirty_limit {
        Some(n) => b.dirty_page_limit(n),
        None => b,
    };
    b.max_dbs(16)
        .no_sub_dir(no_sub_dir)
        .durability(durability)
        .geometry(Geometry { page_size: Some(ps), size_upper: Some(512 * MIB), ..Default::default() })
        .open(path)
        .unwrap_or_else(|e| panic!("rdbx open {path:?} (page size {ps}): {e:?}"))
}

/// rdbx reads the whole database and every key, and must match the model.
fn rdbx_verify(env: &Env, model: &Model, what: &str) {
    let txn = env.begin_ro_txn().unwrap_or_else(|e| panic!("{what}: rdbx begin_ro_txn: {e:?}"));
    let got = engine::dump_sections(&txn).unwrap_or_else(|e| panic!("{what}: rdbx read: {e:?}"));
    if let Some(d) = diff_sections(&model.sections(), &got) {
        panic!("{what}: rdbx reads something else than the model:\n{d}");
    }
    let mut bad = Vec::new();
    for (name, t) in &model.tables {
        let db = match name {
            None => Db::MAIN,
            Some(n) => txn.open_db_bytes(Some(n)).expect("open_db_bytes"),
        };
        for (k, v) in &t.map {
            match txn.get(db, k) {
                Ok(Some(x)) if x == v.as_slice() => {}
                other => {
                    if bad.len() < 5 {
                        bad.push(format!(
                            "table {:?} key {:02x?}: expected {} bytes, got {:?}",
                            name.as_deref().map(String::from_utf8_lossy),
                            &k[..k.len().min(16)],
                            v.len(),
                            other.map(|o| o.map(|x| x.len()))
                        ));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{what}: rdbx get() differs:\n{}", bad.join("\n"));
}

/// libmdbx (child process) checks the file and reads every record.
fn libmdbx_verify(path: &Path, model: &Model, what: &str) {
    let cli = cli();
    if let Err(e) = cli.chk(path) {
        panic!("{what}: {e}");
    }
    let got = cli.dump(path).unwrap_or_else(|e| panic!("{what}: {e}"));
    if let Some(d) = diff_sections(&model.sections(), &got) {
        panic!("{what}: libmdbx reads something else than the model:\n{d}");
    }
}

/// libmdbx in this process reads everything (the env must not be open in rdbx).
fn oracle_verify(env: &oracle::Env, model: &Model, what: &str) {
    let txn = env.begin_ro().unwrap();
    let got = oracle::dump_sections(&txn).unwrap_or_else(|e| panic!("{what}: {e}"));
    if let Some(d) = diff_sections(&model.sections(), &got) {
        panic!("{what}: libmdbx reads something else than the model:\n{d}");
    }
}

fn spec_for(ps: usize, seed: u64) -> WorkloadSpec {
    let mut s = WorkloadSpec::new(seed, ps);
    if ps >= 16384 {
        // Fewer, still thousands of, records; large values are big here.
        s.ops_per_txn = 600;
        s.large_one_in = 60;
    }
    s
}

fn db_path(dir: &Path, no_sub_dir: bool) -> PathBuf {
    if no_sub_dir {
        dir.join("db.mdbx")
    } else {
        dir.join("db")
    }
}

// ---------------------------------------------------------------------------
// (a) rdbx writes, libmdbx reads

fn rdbx_writes_libmdbx_reads(ps: usize, no_sub_dir: bool, durability: Durability) {
    rdbx_writes_libmdbx_reads_with(ps, no_sub_dir, durability, Mode::default());
}

fn rdbx_writes_libmdbx_reads_with(ps: usize, no_sub_dir: bool, durability: Durability, mode: Mode) {
    let tmp = tempfile::tempdir().unwrap();
    let path = db_path(tmp.path(), no_sub_dir);
    let mut model = Model::default();
    let ops = generate(&spec_for(ps, ps as u64 * 31 + 1), &mut model);
    assert!(model.len() > 1000);
    let rdbx_stats = {
        let env = rdbx_open_with(&path, ps, no_sub_dir, durability, mode);
        assert_eq!(env.page_size(), ps);
        apply_rdbx(&env, &ops).unwrap_or_else(|e| panic!("page size {ps}: {e}"));
        if mode.dirty_limit.is_some() {
            assert!(env.page_ops().spill > 0, "page size {ps}: nothing was spilled");
        }
        if mode.write_map && durability == Durability::SyncDurable {
            assert!(env.page_ops().msync > 0, "page size {ps}: WRITEMAP did not msync");
        }
        rdbx_verify(&env, &model, &format!("page size {ps}, rdbx after writing"));
        let txn = env.begin_ro_txn().unwrap();
        let s = engine::all_stats(&txn).unwrap();
        drop(txn);
        s
    };
    let what = format!("page size {ps}, written by rdbx ({durability:?}, no_sub_dir {no_sub_dir})");
    libmdbx_verify(&path, &model, &what);
    // libmdbx's statistics are rdbx's.
    let lstats = cli().stat(&path).unwrap();
    for (name, st) in &rdbx_stats {
        assert_eq!(
            lstats.get(name),
            Some(&figures(st)),
            "{what}: stat of table {:?}: libmdbx vs rdbx",
            name.as_deref().map(String::from_utf8_lossy)
        );
        assert_eq!(st.page_size as usize, ps);
    }
    let model_entries: usize = model.tables.values().map(|t| t.map.len()).sum();
    let stat_entries: u64 = rdbx_stats.iter().skip(1).map(|(_, s)| s.entries).sum();
    assert_eq!(stat_entries as usize, model_entries - model.tables[&None].map.len());
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps4096_spilling() {
    let mode = Mode { dirty_limit: Some(1), ..Mode::default() };
    rdbx_writes_libmdbx_reads_with(4096, false, Durability::SyncDurable, mode);
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps256_spilling() {
    let mode = Mode { dirty_limit: Some(1), ..Mode::default() };
    rdbx_writes_libmdbx_reads_with(256, true, Durability::SafeNoSync, mode);
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps4096_write_map() {
    let mode = Mode { write_map: true, ..Mode::default() };
    rdbx_writes_libmdbx_reads_with(4096, false, Durability::SyncDurable, mode);
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps1024_write_map_no_meta_sync_spilling() {
    let mode = Mode { write_map: true, dirty_limit: Some(1) };
    rdbx_writes_libmdbx_reads_with(1024, true, Durability::NoMetaSync, mode);
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps256() {
    rdbx_writes_libmdbx_reads(256, true, Durability::SyncDurable);
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps4096() {
    rdbx_writes_libmdbx_reads(4096, false, Durability::SyncDurable);
}

/// SafeNoSync: the last commits are weak until rdbx syncs them at close;
/// libmdbx must then find a steady, complete database.
#[test]
fn a_rdbx_writes_libmdbx_reads_ps4096_safe_nosync() {
    rdbx_writes_libmdbx_reads(4096, true, Durability::SafeNoSync);
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps4096_no_meta_sync() {
    rdbx_writes_libmdbx_reads(4096, false, Durability::NoMetaSync);
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps4096_utterly_no_sync() {
    rdbx_writes_libmdbx_reads(4096, true, Durability::UtterlyNoSync);
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps16384() {
    rdbx_writes_libmdbx_reads(16384, true, Durability::SyncDurable);
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps65536() {
    rdbx_writes_libmdbx_reads(65536, false, Durability::SyncDurable);
}

// ---------------------------------------------------------------------------
// (b) libmdbx writes, rdbx reads

fn libmdbx_writes_rdbx_reads(ps: usize, no_sub_dir: bool, rdbx_read_only: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let path = db_path(tmp.path(), no_sub_dir);
    let mut model = Model::default();
    let ops = generate(&spec_for(ps, ps as u64 * 17 + 5), &mut model);
    let lstats = {
        let env = oracle::Env::open(
            &path,
            &oracle::EnvOptions {
                no_sub_dir: Some(no_sub_dir),
                page_size: Some(ps),
                durability: oracle::Durability::SafeNoSync,
                geometry: oracle::Geometry { upper: Some(512 * MIB), ..Default::default() },
                ..Default::default()
            },
        )
        .unwrap();
        let commits = ops::apply_oracle(&env, &ops).unwrap();
        assert!(commits >= 5);
        oracle_verify(&env, &model, "libmdbx after writing");
        let txn = env.begin_ro().unwrap();
        let s = oracle::all_stats(&txn).unwrap();
        drop(txn);
        env.close().unwrap();
        s
    };
    let what = format!("page size {ps}, written by libmdbx, rdbx read_only {rdbx_read_only}");
    let env = Env::builder()
        .max_dbs(16)
        .read_only(rdbx_read_only)
        .open(&path)
        .unwrap_or_else(|e| panic!("{what}: rdbx open: {e:?}"));
    assert_eq!(env.page_size(), ps, "{what}");
    rdbx_verify(&env, &model, &what);
    let txn = env.begin_ro_txn().unwrap();
    for (name, st) in &lstats {
        let db = match name {
            None => Db::MAIN,
            Some(n) => txn.open_db_bytes(Some(n)).unwrap(),
        };
        let r = txn.db_stat(db).unwrap_or_else(|e| panic!("{what}: db_stat: {e:?}"));
        assert_eq!(
            (r.depth, r.branch_pages, r.leaf_pages, r.overflow_pages, r.entries),
            (st.depth, st.branch_pages, st.leaf_pages, st.overflow_pages, st.entries),
            "{what}: stat of table {:?}: rdbx vs libmdbx",
            name.as_deref().map(String::from_utf8_lossy)
        );
    }
    // Cursor positioning on a libmdbx-written tree: set_range lands on the
    // model's lower bound for a sample of probes.
    let db = txn.open_db(Some("plain")).unwrap();
    let plain = &model.tables[&Some(b"plain".to_vec())].map;
    let mut c = txn.cursor(db).unwrap();
    let mut rng = rdbx_tests::rng::Rng::new(99);
    for _ in 0..500 {
        let probe = rng.bytes_in(0, 6);
        let want = plain.range(probe.clone()..).next().map(|(k, _)| k.as_slice());
        let got = c.set_range(&probe).unwrap().map(|(k, _)| k.to_vec());
        assert_eq!(got.as_deref(), want, "{what}: set_range({probe:02x?})");
    }
}

#[test]
fn b_libmdbx_writes_rdbx_reads_ps256() {
    libmdbx_writes_rdbx_reads(256, true, true);
}

#[test]
fn b_libmdbx_writes_rdbx_reads_ps4096() {
    libmdbx_writes_rdbx_reads(4096, false, false);
}

#[test]
fn b_libmdbx_writes_rdbx_reads_ps16384() {
    libmdbx_writes_rdbx_reads(16384, false, true);
}

#[test]
fn b_libmdbx_writes_rdbx_reads_ps65536() {
    libmdbx_writes_rdbx_reads(65536, true, false);
}

// ---------------------------------------------------------------------------
// (c) alternating writers

/// Sequential alternation in this process: each side closes its environment
/// before the other opens the file.
fn alternating_sequential(ps: usize, no_sub_dir: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let path = db_path(tmp.path(), no_sub_dir);
    let mut model = Model::default();
    let oracle_opts = oracle::EnvOptions {
        no_sub_dir: Some(no_sub_dir),
        page_size: Some(ps),
        geometry: oracle::Geometry { upper: Some(512 * MIB), ..Default::default() },
        ..Default::default()
    };
    let mut spec = spec_for(ps, 1000 + ps as u64);
    spec.txns = 3;
    spec.ops_per_txn = 500;
    for round in 0..2 {
        // libmdbx commits.
        spec.seed += 1;
        let before = model.clone();
        let ops = generate(&spec, &mut model);
        {
            let env = oracle::Env::open(&path, &oracle_opts).unwrap();
            if round > 0 {
                oracle_verify(&env, &before, "libmdbx after rdbx's round");
            }
            ops::apply_oracle(&env, &ops).unwrap();
            env.close().unwrap();
        }
        // rdbx commits.
        spec.seed += 1;
        let what = format!("round {round}: rdbx after libmdbx");
        {
            let env = rdbx_open(&path, ps, no_sub_dir, Durability::SyncDurable);
            rdbx_verify(&env, &model, &what);
            let ops = generate(&spec, &mut model);
            apply_rdbx(&env, &ops).unwrap_or_else(|e| panic!("{what}: {e}"));
            rdbx_verify(&env, &model, &format!("round {round}: rdbx after its writes"));
        }
    }
    // libmdbx commits once more on top of rdbx's work.
    spec.seed += 1;
    let before = model.clone();
    let ops = generate(&spec, &mut model);
    {
        let env = oracle::Env::open(&path, &oracle_opts).unwrap();
        oracle_verify(&env, &before, "libmdbx after rdbx");
        ops::apply_oracle(&env, &ops).unwrap();
        env.close().unwrap();
    }
    libmdbx_verify(&path, &model, "after alternating writers");
    let env = rdbx_open(&path, ps, no_sub_dir, Durability::SyncDurable);
    rdbx_verify(&env, &model, "rdbx at the end");
}

#[test]
fn c_alternating_writers_sequential_ps4096() {
    alternating_sequential(4096, true);
}

#[test]
fn c_alternating_writers_sequential_ps1024_dir() {
    alternating_sequential(1024, false);
}

/// libmdbx writes from a child process while rdbx keeps its environment open,
/// and while an rdbx read transaction holds an older snapshot.
#[test]
fn c_alternating_writers_libmdbx_child_process_rdbx_env_open() {
    child_writer_beside_open_rdbx(false, false);
}

/// Both sides with WRITEMAP: rdbx edits pages in its writable map while a
/// libmdbx process edits them in its own.
#[test]
fn c_alternating_writers_both_write_map() {
    child_writer_beside_open_rdbx(true, true);
}

/// Mixed modes, allowed by libmdbx in the durable mode: rdbx with WRITEMAP,
/// libmdbx writing with pwrite, and the other way round.
#[test]
fn c_alternating_writers_mixed_write_map() {
    child_writer_beside_open_rdbx(true, false);
    child_writer_beside_open_rdbx(false, true);
}

/// In a lazy durability mode every process must use WRITEMAP or none must
/// (the lock file's envmode; docs/lock-format.md, "Sync and mode fields"): a libmdbx process that differs from the
/// running rdbx is refused, one that agrees joins.
#[test]
fn c_lazy_mode_peers_agree_on_write_map() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let cli = cli();
    let mut model = Model::default();
    let mut spec = spec_for(4096, 4242);
    spec.txns = 2;
    spec.ops_per_txn = 200;
    let mode = Mode { write_map: true, ..Mode::default() };
    let env = rdbx_open_with(&path, 4096, false, Durability::SafeNoSync, mode);
    let ops = generate(&spec, &mut model);
    apply_rdbx(&env, &ops).unwrap();
    spec.seed += 1;
    let before = model.clone();
    let ops = generate(&spec, &mut model);
    let err = cli.write(&path, &ops, &["--safe-nosync"]).expect_err("libmdbx without WRITEMAP must be refused");
    assert!(err.contains("INCOMPATIBLE") || err.contains("-30784"), "{err}");
    rdbx_verify(&env, &before, "after the refused libmdbx writer");
    cli.write(&path, &ops, &["--safe-nosync", "--write-map"]).unwrap();
    rdbx_verify(&env, &model, "after the libmdbx WRITEMAP writer");
    drop(env);
    libmdbx_verify(&path, &model, "lazy WRITEMAP peers");
}

fn child_writer_beside_open_rdbx(rdbx_write_map: bool, libmdbx_write_map: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let cli = cli();
    let ps = 4096;
    let mut model = Model::default();
    let mut spec = spec_for(ps, 777);
    spec.txns = 3;
    spec.ops_per_txn = 500;

    let mode = Mode { write_map: rdbx_write_map, ..Mode::default() };
    let env = rdbx_open_with(&path, ps, false, Durability::SyncDurable, mode);
    let extra: &[&str] = if libmdbx_write_map { &["--write-map"] } else { &[] };
    // rdbx commits first (creates the tables).
    let ops1 = generate(&spec, &mut model);
    apply_rdbx(&env, &ops1).unwrap_or_else(|e| panic!("rdbx phase 1: {e}"));

    // libmdbx (child) commits; rdbx sees it without reopening.
    spec.seed += 1;
    let ops2 = generate(&spec, &mut model);
    cli.write(&path, &ops2, extra).unwrap();
    rdbx_verify(&env, &model, "rdbx after libmdbx child phase 2");

    // An rdbx reader keeps a snapshot while libmdbx rewrites much of the data
    // (deletes and overwrites free pages that libmdbx would like to reuse).
    let snapshot = model.clone();
    let reader = env.begin_ro_txn().unwrap();
    spec.seed += 1;
    spec.delete_percent = 45;
    let ops3 = generate(&spec, &mut model);
    cli.write(&path, &ops3, extra).unwrap();
    spec.seed += 1;
    let ops3b = generate(&spec, &mut model);
    cli.write(&path, &ops3b, extra).unwrap();
    let got = engine::dump_sections(&reader).unwrap();
    if let Some(d) = diff_sections(&snapshot.sections(), &got) {
        panic!("rdbx reader snapshot changed under libmdbx writes:\n{d}");
    }
    drop(reader);
    rdbx_verify(&env, &model, "rdbx after libmdbx child phase 3");

    // rdbx commits on top of libmdbx's work, then libmdbx again.
    spec.seed += 1;
    spec.delete_percent = 25;
    let ops4 = generate(&spec, &mut model);
    apply_rdbx(&env, &ops4).unwrap_or_else(|e| panic!("rdbx phase 4: {e}"));
    spec.seed += 1;
    let ops5 = generate(&spec, &mut model);
    cli.write(&path, &ops5, extra).unwrap();
    rdbx_verify(&env, &model, "rdbx after libmdbx child phase 5");
    // libmdbx checks while rdbx still has the environment open.
    let dump = cli.dump(&path).unwrap();
    if let Some(d) = diff_sections(&model.sections(), &dump) {
        panic!("libmdbx (child) reads something else than the model:\n{d}");
    }
    drop(env);
    libmdbx_verify(&path, &model, "after child-process alternation");
}

// ---------------------------------------------------------------------------
// Geometry

/// rdbx grows the file in small steps; libmdbx reads the result and sees the
/// same geometry.
#[test]
fn geometry_growth_in_small_steps() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("grow.mdbx");
    let step = 64 * 1024;
    let env = Env::builder()
        .max_dbs(4)
        .no_sub_dir(true)
        .durability(Durability::SafeNoSync)
        .geometry(Geometry {
            page_size: Some(4096),
            size_lower: Some(step),
            size_now: Some(step),
            size_upper: Some(64 * MIB),
            growth_step: Some(step),
            shrink_threshold: Some(0),
        })
        .open(&path)
        .unwrap();
    let info0 = env.info().unwrap();
    assert_eq!(info0.growth_step as usize, step, "{info0:?}");
    assert!(info0.size_now as usize <= 2 * step, "{info0:?}");
    let mut model = Model::default();
    let mut rng = rdbx_tests::rng::Rng::new(5);
    let mut sizes = vec![info0.size_now];
    for t in 0..30u64 {
        let mut txn = env.begin_rw_txn().unwrap();
        let db = txn.create_db(Some("grow"), rdbx::DbFlags::empty()).unwrap();
        for i in 0..600u64 {
            let k = (t * 100_000 + i * 7919 % 600).to_be_bytes().to_vec();
            let v = rng.bytes_in(20, 200);
            txn.put(db, &k, &v, PutFlags::empty()).unwrap();
            model.tables.entry(Some(b"grow".to_vec())).or_default().map.insert(k, v);
        }
        txn.commit().unwrap();
        sizes.push(env.info().unwrap().size_now);
    }
    let info = env.info().unwrap();
    assert!(info.size_now >= 2 * 1024 * 1024, "file grew to {} bytes only", info.size_now);
    let grows = sizes.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(grows >= 10, "grew in {grows} steps only: {sizes:?}");
    for w in sizes.windows(2) {
        assert!(
            w[1] <= w[0] || ((w[1] - w[0]) as usize).checked_rem(step) == Some(0),
            "growth by {} bytes is not a multiple of the step: {sizes:?}",
            w[1] - w[0]
        );
    }
    rdbx_verify(&env, &model, "growth: rdbx");
    drop(env);
    let file_len = std::fs::metadata(&path).unwrap().len();
    let out = cli().run(&["info".as_ref(), path.as_os_str()]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .parse()
            .unwrap()
    };
    assert_eq!(field("page_size"), 4096, "{text}");
    assert_eq!(field("geo_grow") as usize, step, "{text}");
    assert_eq!(field("geo_upper") as usize, 64 * MIB, "{text}");
    assert_eq!(field("geo_lower") as usize, step, "{text}");
    assert_eq!(field("geo_current"), file_len, "{text}");
    libmdbx_verify(&path, &model, "growth: libmdbx");
}

/// Inserting past the upper bound fails with MapFull; what was committed
/// before stays intact and readable by both sides.
#[test]
fn map_full_at_the_upper_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("full.mdbx");
    let upper = MIB;
    let env = Env::builder()
        .max_dbs(4)
        .no_sub_dir(true)
        .geometry(Geometry {
            page_size: Some(4096),
            size_lower: Some(64 * 1024),
            size_now: Some(64 * 1024),
            size_upper: Some(upper),
            growth_step: Some(64 * 1024),
            shrink_threshold: Some(0),
        })
        .open(&path)
        .unwrap();
    let mut model = Model::default();
    let mut rng = rdbx_tests::rng::Rng::new(11);
    let mut err = None;
    'outer: for t in 0..200u64 {
        let mut txn = env.begin_rw_txn().unwrap();
        let db = match txn.create_db(Some("full"), rdbx::DbFlags::empty()) {
            Ok(db) => db,
            Err(e) => {
                err = Some(e);
                break;
            }
        };
        let mut pending = Vec::new();
        for i in 0..50u64 {
            let k = (t * 1000 + i).to_be_bytes().to_vec();
            let v = rng.bytes_in(500, 1500);
            if let Err(e) = txn.put(db, &k, &v, PutFlags::empty()) {
                err = Some(e);
                break 'outer;
            }
            pending.push((k, v));
        }
        match txn.commit() {
            Ok(()) => {
                let t = model.tables.entry(Some(b"full".to_vec())).or_default();
                t.map.extend(pending);
            }
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    let err = err.expect("never hit MapFull with a 1 MiB upper bound");
    assert!(matches!(err, Error::MapFull), "expected MapFull, got {err:?}");
    assert!(!model.is_empty(), "nothing fit before MapFull");
    let info = env.info().unwrap();
    assert!(info.size_now as usize <= upper, "{info:?}");
    // The environment is still usable: reads see the last commit, and a
    // small write (deleting) still works.
    rdbx_verify(&env, &model, "after MapFull: rdbx");
    {
        let mut txn = env.begin_rw_txn().unwrap();
        let db = txn.open_db(Some("full")).unwrap();
        let k = model.tables[&Some(b"full".to_vec())].map.keys().next().unwrap().clone();
        assert!(txn.del(db, &k, None).unwrap());
        txn.commit().unwrap();
        model.tables.get_mut(&Some(b"full".to_vec())).unwrap().map.remove(&k);
    }
    rdbx_verify(&env, &model, "after MapFull and a delete: rdbx");
    drop(env);
    assert!(std::fs::metadata(&path).unwrap().len() as usize <= upper);
    libmdbx_verify(&path, &model, "after MapFull: libmdbx");
}

// ---------------------------------------------------------------------------
// Concurrency across processes: libmdbx in a child process at the same time

/// Records of the "inv" table; every write round rewrites all of them with
/// values that start with the round number, so a consistent snapshot has one
/// round number everywhere.
const INV_COUNT: u64 = 1500;
const INV_ROUNDS: u64 = 120;

fn inv_key(k: u64) -> Vec<u8> {
    k.to_be_bytes().to_vec()
}

fn inv_value(round: u64, k: u64) -> Vec<u8> {
    let len = if k % 50 == 0 {
        5000 // large (overflow) values, freed and reused every round
    } else if round % 2 == 0 {
        100
    } else {
        24
    };
    let mut v = round.to_le_bytes().to_vec();
    v.resize(len, (round ^ k) as u8);
    v
}

fn inv_model(round: u64) -> Model {
    let mut m = Model::default();
    let t = m.tables.entry(Some(b"inv".to_vec())).or_default();
    for k in 0..INV_COUNT {
        t.map.insert(inv_key(k), inv_value(round, k));
    }
    m
}

fn rdbx_write_inv_round(env: &Env, round: u64) {
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.create_db(Some("inv"), rdbx::DbFlags::empty()).unwrap();
    for k in 0..INV_COUNT {
        txn.put(db, &inv_key(k), &inv_value(round, k), PutFlags::empty())
            .unwrap_or_else(|e| panic!("rdbx round {round} put: {e:?}"));
    }
    txn.commit().unwrap_or_else(|e| panic!("rdbx round {round} commit: {e:?}"));
}

/// Check one rdbx snapshot of "inv": all values carry one round number.
fn rdbx_inv_snapshot(env: &Env) -> Result<u64, String> {
    let txn = env.begin_ro_txn().map_err(|e| format!("{e:?}"))?;
    let db = txn.open_db(Some("inv")).map_err(|e| format!("{e:?}"))?;
    let recs = engine::read_all(&txn, db).map_err(|e| format!("{e:?}"))?;
    if recs.len() as u64 != INV_COUNT {
        return Err(format!("snapshot txn {} has {} records, expected {INV_COUNT}", txn.id(), recs.len()));
    }
    let round = |v: &[u8]| u64::from_le_bytes(v[..8].try_into().unwrap());
    let r0 = round(&recs[0].1);
    for (k, v) in &recs {
        if round(v) != r0 || *v != inv_value(r0, u64::from_be_bytes(k[..].try_into().unwrap())) {
            return Err(format!(
                "torn snapshot txn {}: key {k:02x?} has round {}, first key round {r0}",
                txn.id(),
                round(v)
            ));
        }
    }
    Ok(r0)
}

/// A libmdbx reader in a child process reads in a loop while rdbx commits
/// many rounds: every snapshot it sees must be consistent (rdbx must not
/// reuse pages that the libmdbx reader's snapshot still uses).
#[test]
fn concurrent_libmdbx_reader_child_while_rdbx_writes() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let env = rdbx_open(&path, 4096, false, Durability::SyncDurable);
    rdbx_write_inv_round(&env, 0);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mdbx-oracle"))
        .args(["snapcheck".as_ref(), path.as_os_str(), "inv".as_ref()])
        .arg(INV_COUNT.to_string())
        .arg(INV_ROUNDS.to_string())
        .arg("120")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert_eq!(first.trim(), "started", "libmdbx reader did not start");
    for round in 1..=INV_ROUNDS {
        rdbx_write_inv_round(&env, round);
    }
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "libmdbx reader saw a bad snapshot ({status}): {rest}{err}");
    assert!(rest.contains("ok "), "{rest}");
    eprintln!("libmdbx reader child: {}", rest.trim());
    assert_eq!(rdbx_inv_snapshot(&env), Ok(INV_ROUNDS));
    drop(env);
    libmdbx_verify(&path, &inv_model(INV_ROUNDS), "after concurrent libmdbx reader");
}

/// libmdbx commits many rounds from a child process while an rdbx thread
/// reads in a loop: every rdbx snapshot must be consistent and rounds never
/// go backwards (libmdbx must respect rdbx's reader slots).
#[test]
fn concurrent_rdbx_reader_while_libmdbx_child_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let env = rdbx_open(&path, 4096, false, Durability::SyncDurable);
    rdbx_write_inv_round(&env, 0);
    let mut script = Vec::new();
    for round in 1..=INV_ROUNDS {
        for k in 0..INV_COUNT {
            script.push(Op::Put {
                table: Some(b"inv".to_vec()),
                key: inv_key(k),
                value: inv_value(round, k),
                flags: 0,
            });
        }
        script.push(Op::Commit);
    }
    let dir = tempfile::tempdir().unwrap();
    let script_path = dir.path().join("ops.txt");
    std::fs::write(&script_path, ops::format_ops(&script)).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mdbx-oracle"))
        .args(["write".as_ref(), path.as_os_str(), script_path.as_os_str()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut last = 0;
    let mut distinct = 0;
    let mut snapshots = 0u64;
    let status = loop {
        let done = child.try_wait().unwrap();
        let r = rdbx_inv_snapshot(&env).unwrap_or_else(|e| panic!("rdbx reader during libmdbx writes: {e}"));
        snapshots += 1;
        assert!(r >= last, "rdbx snapshot went backwards: round {r} after {last}");
        if r != last {
            distinct += 1;
        }
        last = r;
        if let Some(s) = done {
            break s;
        }
    };
    let o = child.wait_with_output().unwrap();
    assert!(
        status.success(),
        "libmdbx writer failed ({status}): {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(last, INV_ROUNDS, "after {snapshots} snapshots, {distinct} distinct");
    eprintln!("rdbx reader: {snapshots} snapshots, {distinct} distinct rounds seen");
    drop(env);
    libmdbx_verify(&path, &inv_model(INV_ROUNDS), "after concurrent rdbx reader");
}

/// rdbx and a libmdbx child process write at the same time (different
/// tables): the cross-process writer lock serialises them and nothing is lost.
#[test]
fn concurrent_writers_rdbx_and_libmdbx_child() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let env = rdbx_open(&path, 4096, false, Durability::SyncDurable);
    let mut model = Model::default();
    let setup = vec![
        Op::Create { table: Some(b"parent".to_vec()), flags: 0 },
        Op::Create { table: Some(b"child".to_vec()), flags: 0 },
    ];
    apply_rdbx(&env, &setup).unwrap();
    model.apply(&setup);
    let txns = 150u64;
    let mut rng = rdbx_tests::rng::Rng::new(3);
    let mut gen = |table: &str| {
        let mut v = Vec::new();
        for t in 0..txns {
            for j in 0..20u64 {
                let len = if rng.chance(1, 30) { 6000 } else { rng.range(0, 80) };
                v.push(Op::Put {
                    table: Some(table.as_bytes().to_vec()),
                    key: format!("{table}-{:05}", (t * 37 + j * 101) % 2000).into_bytes(),
                    value: rng.bytes(len),
                    flags: 0,
                });
            }
            if t % 3 == 2 {
                v.push(Op::Del {
                    table: Some(table.as_bytes().to_vec()),
                    key: format!("{table}-{:05}", (t * 13) % 2000).into_bytes(),
                    value: None,
                });
            }
            v.push(Op::Commit);
        }
        v
    };
    let child_ops = gen("child");
    let parent_ops = gen("parent");
    model.apply(&child_ops);
    model.apply(&parent_ops);
    let dir = tempfile::tempdir().unwrap();
    let script_path = dir.path().join("ops.txt");
    std::fs::write(&script_path, ops::format_ops(&child_ops)).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_mdbx-oracle"))
        .args(["write".as_ref(), path.as_os_str(), script_path.as_os_str()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    apply_rdbx(&env, &parent_ops).unwrap_or_else(|e| panic!("rdbx writer: {e}"));
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "libmdbx writer failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    rdbx_verify(&env, &model, "after concurrent writers: rdbx");
    drop(env);
    libmdbx_verify(&path, &model, "after concurrent writers: libmdbx");
}

// ---------------------------------------------------------------------------
// Tree shrinking, many tables, space reuse

/// Delete almost everything (page merges, root collapse, the tree getting
/// shallower), then everything, then refill; libmdbx checks every stage.
fn shrink_and_regrow(ps: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("shrink.mdbx");
    let env = rdbx_open(&path, ps, true, Durability::SyncDurable);
    let mut rng = rdbx_tests::rng::Rng::new(ps as u64);
    let mut model = Model::default();
    let t = Some(b"t".to_vec());
    let mut ops = vec![Op::Create { table: t.clone(), flags: 0 }];
    for i in 0..6000u64 {
        let len = if rng.chance(1, 50) { ps * 2 } else { rng.range(0, 60) };
        ops.push(Op::Put { table: t.clone(), key: rng.bytes_in(1, 16), value: vec![i as u8; len], flags: 0 });
        if i % 1000 == 999 {
            ops.push(Op::Commit);
        }
    }
    model.apply(&ops);
    apply_rdbx(&env, &ops).unwrap_or_else(|e| panic!("fill: {e}"));
    let depth_full = {
        let txn = env.begin_ro_txn().unwrap();
        let db = txn.open_db(Some("t")).unwrap();
        txn.db_stat(db).unwrap().depth
    };
    // Delete 97% in random order over ten transactions.
    let mut keys: Vec<Vec<u8>> = model.tables[&t].map.keys().cloned().collect();
    rng.shuffle(&mut keys);
    let keep = keys.len() / 33;
    let mut ops = Vec::new();
    for (i, k) in keys[keep..].iter().enumerate() {
        ops.push(Op::Del { table: t.clone(), key: k.clone(), value: None });
        if i % 600 == 599 {
            ops.push(Op::Commit);
        }
    }
    model.apply(&ops);
    apply_rdbx(&env, &ops).unwrap_or_else(|e| panic!("delete 97%: {e}"));
    rdbx_verify(&env, &model, &format!("ps {ps}: after deleting 97%"));
    let st = {
        let txn = env.begin_ro_txn().unwrap();
        let db = txn.open_db(Some("t")).unwrap();
        txn.db_stat(db).unwrap()
    };
    assert_eq!(st.entries as usize, keep);
    assert!(st.depth <= depth_full, "depth grew from {depth_full} to {}", st.depth);
    drop(env);
    libmdbx_verify(&path, &model, &format!("ps {ps}: after deleting 97%"));

    // Delete the rest: an empty table.
    let env = rdbx_open(&path, ps, true, Durability::SyncDurable);
    let ops: Vec<Op> = keys[..keep].iter().map(|k| Op::Del { table: t.clone(), key: k.clone(), value: None }).collect();
    model.apply(&ops);
    apply_rdbx(&env, &ops).unwrap_or_else(|e| panic!("delete the rest: {e}"));
    {
        let txn = env.begin_ro_txn().unwrap();
        let db = txn.open_db(Some("t")).unwrap();
        let st = txn.db_stat(db).unwrap();
        assert_eq!(
            (st.depth, st.branch_pages, st.leaf_pages, st.overflow_pages, st.entries),
            (0, 0, 0, 0, 0),
            "ps {ps}: empty table stat {st:?}"
        );
        assert_eq!(txn.cursor(db).unwrap().first().unwrap(), None);
    }
    drop(env);
    libmdbx_verify(&path, &model, &format!("ps {ps}: empty table"));

    // Refill.
    let env = rdbx_open(&path, ps, true, Durability::SyncDurable);
    let mut spec = WorkloadSpec::new(ps as u64 + 9, ps);
    spec.txns = 3;
    spec.ops_per_txn = 500;
    let ops = generate(&spec, &mut model);
    apply_rdbx(&env, &ops).unwrap_or_else(|e| panic!("refill: {e}"));
    rdbx_verify(&env, &model, &format!("ps {ps}: refilled"));
    drop(env);
    libmdbx_verify(&path, &model, &format!("ps {ps}: refilled"));
}

#[test]
fn shrink_to_empty_and_regrow_ps256() {
    shrink_and_regrow(256);
}

#[test]
fn shrink_to_empty_and_regrow_ps4096() {
    shrink_and_regrow(4096);
}

/// Many named tables: created, filled, some dropped and some emptied by one
/// side, more added by the other; both agree on the table list and contents.
#[test]
fn many_named_tables_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let mut model = Model::default();
    let mut rng = rdbx_tests::rng::Rng::new(8);
    let name = |i: usize| Some(format!("table-{i:03}").into_bytes());
    let mut ops = Vec::new();
    for i in 0..60 {
        let flags = match i % 3 {
            0 => 0,
            1 => rdbx_tests::model::REVERSE_KEY,
            _ => rdbx_tests::model::INTEGER_KEY,
        };
        ops.push(Op::Create { table: name(i), flags });
        for _ in 0..rng.range(0, 40) {
            let key = if flags == rdbx_tests::model::INTEGER_KEY {
                rng.next_u64().to_le_bytes().to_vec()
            } else {
                rng.bytes_in(1, 12)
            };
            ops.push(Op::Put { table: name(i), key, value: rng.bytes_in(0, 30), flags: 0 });
        }
        if i % 20 == 19 {
            ops.push(Op::Commit);
        }
    }
    for i in (0..60).step_by(4) {
        ops.push(Op::Drop { table: name(i) });
    }
    ops.push(Op::Commit);
    for i in (1..60).step_by(6) {
        ops.push(Op::Clear { table: name(i) });
    }
    model.apply(&ops);
    {
        let env = Env::builder()
            .max_dbs(100)
            .geometry(Geometry { page_size: Some(4096), ..Default::default() })
            .open(&path)
            .unwrap();
        apply_rdbx(&env, &ops).unwrap_or_else(|e| panic!("rdbx: {e}"));
        let txn = env.begin_ro_txn().unwrap();
        assert_eq!(txn.table_names().unwrap(), model.table_names());
        drop(txn);
        rdbx_verify(&env, &model, "many tables: rdbx");
    }
    libmdbx_verify(&path, &model, "many tables (rdbx wrote)");
    // libmdbx adds and drops tables; rdbx reads them.
    let mut ops = Vec::new();
    for i in 60..90 {
        ops.push(Op::Create { table: name(i), flags: 0 });
        ops.push(Op::Put { table: name(i), key: format!("k{i}").into_bytes(), value: vec![i as u8; i], flags: 0 });
    }
    ops.push(Op::Drop { table: name(2) });
    model.apply(&ops);
    {
        let env = oracle::Env::open(&path, &oracle::EnvOptions { max_dbs: 100, ..Default::default() }).unwrap();
        ops::apply_oracle(&env, &ops).unwrap();
        env.close().unwrap();
    }
    let env = Env::builder().max_dbs(100).open(&path).unwrap();
    let txn = env.begin_ro_txn().unwrap();
    assert_eq!(txn.table_names().unwrap(), model.table_names());
    drop(txn);
    rdbx_verify(&env, &model, "many tables (libmdbx added): rdbx");
}

/// In SafeNoSync mode libmdbx forces a steady point when it would otherwise
/// grow the file, so pages freed since the last steady commit become
/// reusable. rdbx keeps growing the file instead (about 6x libmdbx's size in
/// the comparative benchmark).
#[test]
fn safe_nosync_reuses_freed_pages_like_libmdbx() {
    let tmp = tempfile::tempdir().unwrap();
    let load = 20_000u64;
    let rounds = 60u64;
    let put = |i: u64, r: u64| ((i * 7919 + r * 104_729) % (2 * load)).to_be_bytes();
    // rdbx
    let rpath = tmp.path().join("r");
    {
        let env = rdbx_open(&rpath, 4096, false, Durability::SafeNoSync);
        let mut txn = env.begin_rw_txn().unwrap();
        let db = txn.create_db(Some("t"), rdbx::DbFlags::empty()).unwrap();
        for i in 0..load {
            txn.put(db, &i.to_be_bytes(), &[1; 32], PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
        for r in 0..rounds {
            let mut txn = env.begin_rw_txn().unwrap();
            for i in 0..500 {
                txn.put(db, &put(i, r), &[2; 32], PutFlags::empty()).unwrap();
            }
            txn.commit().unwrap();
        }
    }
    // libmdbx
    let lpath = tmp.path().join("l");
    {
        let env = oracle::Env::open(
            &lpath,
            &oracle::EnvOptions {
                page_size: Some(4096),
                durability: oracle::Durability::SafeNoSync,
                geometry: oracle::Geometry { upper: Some(512 * MIB), ..Default::default() },
                ..Default::default()
            },
        )
        .unwrap();
        let mut txn = env.begin_rw().unwrap();
        let db = txn.create_table(Some(b"t"), 0).unwrap();
        for i in 0..load {
            txn.put(db, &i.to_be_bytes(), &[1; 32], 0).unwrap();
        }
        txn.commit().unwrap();
        for r in 0..rounds {
            let mut txn = env.begin_rw().unwrap();
            for i in 0..500 {
                txn.put(db, &put(i, r), &[2; 32], 0).unwrap();
            }
            txn.commit().unwrap();
        }
        env.close().unwrap();
    }
    let used = |p: &Path| -> u64 {
        let out = cli().run(&["info".as_ref(), p.as_os_str()]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines().find_map(|l| l.strip_prefix("last_pgno=")).unwrap().parse().unwrap()
    };
    let (r, l) = (used(&rpath), used(&lpath));
    assert!(r <= 2 * l + 64, "rdbx used {r} pages, libmdbx {l} for the same SafeNoSync workload");
}

/// While a reader pins a snapshot, each small rdbx commit leaves one small
/// GC record, reserved at the size its pages need (as libmdbx sizes them,
/// with up to 3 spare slots) rather than a full inline record: libmdbx
/// checks them, then reclaims them in its own commits; rdbx then reclaims
/// what libmdbx left, and libmdbx checks the result again.
fn small_gc_records_both_ways(ps: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let path = db_path(tmp.path(), false);
    let mut model = Model::default();
    let mut spec = spec_for(ps, 0x6c0 + ps as u64);
    spec.txns = 1;
    spec.ops_per_txn = 400;
    let ops = generate(&spec, &mut model);
    spec.txns = 300;
    spec.ops_per_txn = 3;
    spec.seed += 1;
    let small = generate(&spec, &mut model);
    let pinned: Vec<u64> = {
        let env = rdbx_open(&path, ps, false, Durability::SyncDurable);
        apply_rdbx(&env, &ops).unwrap();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|sc| {
            let env = &env;
            sc.spawn(move || {
                let r = env.begin_ro_txn().unwrap();
                ready_tx.send(()).unwrap();
                stop_rx.recv().unwrap();
                drop(r);
            });
            ready_rx.recv().unwrap();
            apply_rdbx(env, &small).unwrap();
            stop_tx.send(()).unwrap();
        });
        rdbx_verify(&env, &model, "rdbx with a pinned reader");
        env.space().unwrap().gc_records.iter().map(|r| r.txnid).collect()
    };
    assert!(pinned.len() >= 250, "page size {ps}: {} GC records", pinned.len());
    let metas = rdbx::inspect::read_metas(&path.join("mdbx.dat")).unwrap();
    let gc = metas.slots[metas.head].meta.gc;
    let pages = (gc.branch_pages + gc.leaf_pages + gc.large_pages) as usize;
    // Full inline records would take a leaf per 2 records at 4 KiB pages.
    assert!(ps < 4096 || pages * 20 < pinned.len(), "{} GC records in {pages} pages", pinned.len());
    libmdbx_verify(&path, &model, "rdbx's small GC records");
    // libmdbx commits, consuming rdbx's records.
    spec.txns = 150;
    spec.seed += 1;
    let ops = generate(&spec, &mut model);
    {
        let opts = oracle::EnvOptions {
            page_size: Some(ps),
            geometry: oracle::Geometry { upper: Some(512 * MIB), ..Default::default() },
            ..Default::default()
        };
        let env = oracle::Env::open(&path, &opts).unwrap();
        ops::apply_oracle(&env, &ops).unwrap();
        env.close().unwrap();
    }
    libmdbx_verify(&path, &model, "libmdbx after reclaiming rdbx's records");
    // rdbx commits, consuming libmdbx's records.
    spec.seed += 1;
    let before = model.clone();
    let ops = generate(&spec, &mut model);
    {
        let env = rdbx_open(&path, ps, false, Durability::SyncDurable);
        rdbx_verify(&env, &before, "rdbx after libmdbx");
        let left: Vec<u64> = env.space().unwrap().gc_records.iter().map(|r| r.txnid).collect();
        let consumed = pinned.iter().filter(|k| !left.contains(k)).count();
        assert!(consumed > 0, "page size {ps}: libmdbx consumed none of rdbx's {} records", pinned.len());
        apply_rdbx(&env, &ops).unwrap();
        rdbx_verify(&env, &model, "rdbx after its writes");
    }
    libmdbx_verify(&path, &model, "rdbx after reclaiming libmdbx's records");
}

#[test]
fn small_gc_records_both_ways_ps256() {
    small_gc_records_both_ways(256);
}

#[test]
fn small_gc_records_both_ways_ps4096() {
    small_gc_records_both_ways(4096);
}

// ---------------------------------------------------------------------------
// Other write paths: APPEND, RESERVE, read-write cursors

/// Bulk load with APPEND (page fill differs from ordinary puts), RESERVE, and
/// deletes/puts through a read-write cursor; libmdbx checks and reads it all.
#[test]
fn append_reserve_and_cursor_writes_are_valid_for_libmdbx() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db.mdbx");
    let env = rdbx_open(&path, 4096, true, Durability::SyncDurable);
    let mut model = Model::default();
    let n = 30_000u64;
    {
        let mut txn = env.begin_rw_txn().unwrap();
        let db = txn.create_db(Some("append"), rdbx::DbFlags::empty()).unwrap();
        let m = model.tables.entry(Some(b"append".to_vec())).or_default();
        for i in 0..n {
            let k = i.to_be_bytes();
            let v = if i % 1000 == 7 { vec![i as u8; 9000] } else { (i * 3).to_le_bytes().to_vec() };
            txn.put(db, &k, &v, PutFlags::APPEND).unwrap();
            m.map.insert(k.to_vec(), v);
        }
        // Appending a smaller key fails and changes nothing.
        let e = txn.put(db, &5u64.to_be_bytes(), b"x", PutFlags::APPEND).unwrap_err();
        assert!(matches!(e, Error::KeyMismatch(_)), "{e:?}");
        // RESERVE: fill the value in place.
        let db2 = txn.create_db(Some("reserve"), rdbx::DbFlags::empty()).unwrap();
        let m2 = model.tables.entry(Some(b"reserve".to_vec())).or_default();
        for i in 0..500u64 {
            let len = if i % 50 == 0 { 10_000 } else { (i % 90) as usize };
            let k = format!("r{i:04}").into_bytes();
            let buf = txn.reserve(db2, &k, len, PutFlags::empty()).unwrap();
            assert_eq!(buf.len(), len);
            for (j, b) in buf.iter_mut().enumerate() {
                *b = (i as usize + j) as u8;
            }
            m2.map.insert(k, (0..len).map(|j| (i as usize + j) as u8).collect());
        }
        txn.commit().unwrap();
    }
    {
        // Through a cursor: delete every third record, overwrite every fifth.
        let mut txn = env.begin_rw_txn().unwrap();
        let db = txn.open_db(Some("append")).unwrap();
        let m = model.tables.get_mut(&Some(b"append".to_vec())).unwrap();
        let mut c = txn.rw_cursor(db).unwrap();
        let mut i = 0u64;
        let mut cur = c.first().unwrap().map(|(k, _)| k.to_vec());
        while let Some(k) = cur {
            if i % 3 == 0 {
                c.del().unwrap();
                m.map.remove(&k);
                // Reposition explicitly on the successor (put(CURRENT) right
                // after del() is covered by rw_cursor_after_del_like_libmdbx).
                cur = m.map.range(k.clone()..).next().map(|(k, _)| k.clone());
                if let Some(next) = &cur {
                    assert_eq!(c.set(next).unwrap().map(|(k, _)| k.to_vec()).as_ref(), Some(next));
                }
            } else {
                if i % 5 == 0 {
                    let v = vec![0xab; (i % 300) as usize];
                    c.put(&k, &v, PutFlags::CURRENT).unwrap();
                    m.map.insert(k.clone(), v);
                }
                cur = c.next().unwrap().map(|(k, _)| k.to_vec());
            }
            i += 1;
        }
        drop(c);
        txn.commit().unwrap();
    }
    rdbx_verify(&env, &model, "append/reserve/cursor: rdbx");
    drop(env);
    libmdbx_verify(&path, &model, "append/reserve/cursor: libmdbx");
}

/// Read-write cursor semantics after a delete, as libmdbx behaves (observed
/// with mdbx_cursor_del / MDBX_GET_CURRENT / MDBX_CURRENT / MDBX_NEXT on keys
/// a, b, c, d): after deleting `a` the cursor stands on `b`; `put(b, CURRENT)`
/// replaces b's value; after deleting `b`, `next()` returns `c`.
#[test]
fn rw_cursor_after_del_like_libmdbx() {
    let tmp = tempfile::tempdir().unwrap();
    let env = rdbx_open(&tmp.path().join("db"), 4096, false, Durability::SyncDurable);
    let mut txn = env.begin_rw_txn().unwrap();
    for k in ["a", "b", "c", "d"] {
        txn.put(Db::MAIN, k.as_bytes(), b"x", PutFlags::empty()).unwrap();
    }
    let mut c = txn.rw_cursor(Db::MAIN).unwrap();
    assert_eq!(c.first().unwrap().map(|(k, _)| k.to_vec()), Some(b"a".to_vec()));
    c.del().unwrap();
    assert_eq!(c.get_current().unwrap().map(|(k, _)| k.to_vec()), Some(b"b".to_vec()));
    c.put(b"b", b"NEW", PutFlags::CURRENT).expect("put(CURRENT) on the record the cursor stands on after del()");
    assert_eq!(c.get_current().unwrap().map(|(k, v)| (k.to_vec(), v.to_vec())), Some((b"b".to_vec(), b"NEW".to_vec())));
    c.del().unwrap();
    assert_eq!(
        c.next().unwrap().map(|(k, _)| k.to_vec()),
        Some(b"c".to_vec()),
        "next() right after del() returns the successor of the deleted record"
    );
}

// ---------------------------------------------------------------------------
// Page-operation counters, shared through the lock file

/// rdbx counts its page operations in the lock file where libmdbx keeps
/// them: libmdbx (a child process, with rdbx's environment open so the lock
/// file lives on) reports exactly rdbx's figures, and rdbx sees libmdbx's
/// writes added.
#[test]
fn page_operation_counters_are_shared_with_libmdbx() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let env = rdbx_open(&path, 4096, false, Durability::SyncDurable);
    let at_start = env.page_ops();
    // A new lock file starts with wops = 1, as libmdbx initialises it.
    assert_eq!(at_start, rdbx::PageOps { wops: 1, ..Default::default() });
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.create_db(Some("t"), rdbx::DbFlags::empty()).unwrap();
    for i in 0u32..3000 {
        txn.put(t, &i.to_be_bytes(), &[7u8; 100], PutFlags::empty()).unwrap();
    }
    txn.commit().unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.open_db(Some("t")).unwrap();
    txn.put(t, &5u32.to_be_bytes(), b"parent", PutFlags::empty()).unwrap();
    {
        let mut child = txn.begin_nested_txn().unwrap();
        child.put(t, &5u32.to_be_bytes(), b"child", PutFlags::empty()).unwrap();
        child.commit().unwrap();
    }
    for i in 0u32..2500 {
        txn.del(t, &i.to_be_bytes(), None).unwrap();
    }
    txn.commit().unwrap();
    let ours = env.page_ops();
    assert!(ours.newly > 0 && ours.cow > 0 && ours.split > 0 && ours.merge > 0, "{ours:?}");
    assert_eq!(ours.clone, 1, "one parent page cloned for the child: {ours:?}");
    // Two large durable commits: pages, one fdatasync, the meta written
    // through (RWF_DSYNC), each.
    assert!(ours.wops >= at_start.wops + 4 && ours.fsync == at_start.fsync + 2, "{ours:?}");
    assert_eq!((ours.spill, ours.unspill, ours.msync, ours.prefault, ours.mincore), (0, 0, 0, 0, 0));

    let theirs = cli().info(&path).unwrap();
    let expect = [
        ("newly", ours.newly),
        ("cow", ours.cow),
        ("clone", ours.clone),
        ("split", ours.split),
        ("merge", ours.merge),
        ("wops", ours.wops),
        ("fsync", ours.fsync),
        ("msync", ours.msync),
    ];
    for (name, want) in expect {
        assert_eq!(theirs[&format!("pgop_{name}")], want, "{name}: libmdbx {theirs:?}, rdbx {ours:?}");
    }

    // libmdbx writes: rdbx sees the counters grow.
    let script: Vec<Op> = (0u32..2000)
        .map(|i| Op::Put {
            table: Some(b"t".to_vec()),
            key: (10_000 + i).to_be_bytes().to_vec(),
            value: vec![1; 90],
            flags: 0,
        })
        .chain([Op::Commit])
        .collect();
    cli().write(&path, &script, &[]).unwrap();
    let after = env.page_ops();
    assert!(after.newly > ours.newly && after.split > ours.split, "{ours:?} -> {after:?}");
    assert!(after.wops > ours.wops && after.fsync > ours.fsync, "{ours:?} -> {after:?}");
}

/// The lock file's unsynced-pages accounting and auto-sync settings are
/// shared with libmdbx: libmdbx (a child process) reports rdbx's unsynced
/// volume and threshold, and rdbx acts on a threshold libmdbx set.
#[test]
fn unsynced_volume_and_autosync_are_shared_with_libmdbx() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let env = Env::builder()
        .durability(Durability::SafeNoSync)
        .sync_bytes(1 << 30)
        .geometry(rdbx::Geometry { page_size: Some(4096), ..Default::default() })
        .open(&path)
        .unwrap();
    let write = |from: u32, n: u32| {
        let mut txn = env.begin_rw_txn().unwrap();
        for i in from..from + n {
            txn.put(rdbx::Db::MAIN, &i.to_be_bytes(), &[3u8; 200], PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    };
    write(0, 1000);
    write(1000, 1000);
    let ours = env.info().unwrap();
    // On tmpfs, where a sync does nothing, rdbx makes lazy commits steady:
    // nothing is left unsynced (libmdbx keeps counting there).
    let in_memory = matches!(
        String::from_utf8_lossy(
            &std::process::Command::new("stat").args(["-f", "-c", "%T"]).arg(tmp.path()).output().unwrap().stdout
        )
        .trim(),
        "tmpfs" | "ramfs"
    );
    if in_memory {
        assert_eq!(ours.unsynced_bytes, 0, "lazy commits on tmpfs are steady");
    } else {
        assert!(ours.unsynced_bytes >= 50 * 4096, "unsynced after two lazy commits: {}", ours.unsynced_bytes);
    }
    assert_eq!(ours.autosync_threshold, 1 << 30);
    let theirs = cli().info(&path).unwrap();
    assert_eq!(theirs["unsync_volume"], ours.unsynced_bytes, "libmdbx {theirs:?}");
    assert_eq!(theirs["autosync_threshold"], 1 << 30, "libmdbx {theirs:?}");
    env.sync().unwrap();
    assert_eq!(env.info().unwrap().unsynced_bytes, 0);
    assert_eq!(cli().info(&path).unwrap()["unsync_volume"], 0);

    // libmdbx lowers the threshold to 16 pages (it stays in the lock file):
    // rdbx's next lazy commits over it are made steady.
    let script = [Op::Put { table: None, key: b"peer".to_vec(), value: vec![1; 10], flags: 0 }, Op::Commit];
    cli().write(&path, &script, &["--safe-nosync", "--sync-bytes", "65536"]).unwrap();
    assert_eq!(env.info().unwrap().autosync_threshold, 65536);
    let steady_before = env.info().unwrap().metas.iter().filter(|m| m.1).map(|m| m.0).max().unwrap();
    write(2000, 1000);
    let info = env.info().unwrap();
    let steady_after = info.metas.iter().filter(|m| m.1).map(|m| m.0).max().unwrap();
    assert_eq!(steady_after, info.last_txnid, "a commit over libmdbx's threshold was not made steady: {info:?}");
    assert!(steady_after > steady_before);
    assert_eq!(info.unsynced_bytes, 0, "{info:?}");
    assert_eq!(cli().info(&path).unwrap()["unsync_volume"], 0);
}

/// A database whose file grows in small steps, with 300 records, for the
/// parking tests.
fn park_db(path: &Path) -> Env {
    let env = Env::builder()
        .geometry(Geometry {
            page_size: Some(4096),
            size_lower: Some(64 << 10),
            size_now: Some(64 << 10),
            size_upper: Some(256 << 20),
            growth_step: Some(64 << 10),
            ..Default::default()
        })
        .open(path)
        .unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    for i in 0..300u64 {
        txn.put(Db::MAIN, &i.to_be_bytes(), &[1; 200], PutFlags::empty()).unwrap();
    }
    txn.commit().unwrap();
    env
}

/// A libmdbx 0.14 reader (child process) parks its transaction; rdbx's
/// writer, short of space, ousts it; libmdbx's unpark reports MDBX_OUSTED.
#[test]
fn rdbx_writer_ousts_a_parked_libmdbx_reader() {
    use std::io::{BufRead, Write};
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let env = park_db(&path);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mdbx-oracle"))
        .arg("park")
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let txnid: u64 = line.trim().strip_prefix("reader ").expect("reader line").parse().unwrap();
    let pid = child.id();
    let slot = env.readers().unwrap().into_iter().find(|r| r.pid == pid).expect("libmdbx slot");
    assert_eq!((slot.tid, slot.txnid), (u64::MAX, Some(txnid)), "libmdbx's parked slot");
    for r in 0..200u64 {
        let mut txn = env.begin_rw_txn().unwrap();
        for i in 0..300u64 {
            txn.put(Db::MAIN, &i.to_be_bytes(), &[(r % 250) as u8 + 2; 200], PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
    }
    let slot = env.readers().unwrap().into_iter().find(|r| r.pid == pid).expect("libmdbx slot");
    assert_eq!((slot.tid, slot.txnid), (u64::MAX - 1, None), "rdbx did not oust libmdbx's parked reader");
    stdin.write_all(b"go\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(line.trim(), format!("unpark {}", oracle::MDBX_OUSTED));
    assert!(std::fs::metadata(path.join("mdbx.dat")).unwrap().len() < 1 << 20, "the file grew");
}

/// An rdbx reader parks; a libmdbx 0.14 writer (child process), short of
/// space, ousts it; rdbx's unpark reports `Ousted`.
#[test]
fn libmdbx_writer_ousts_a_parked_rdbx_reader() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let env = park_db(&path);
    let mut reader = env.begin_ro_txn().unwrap();
    reader.park().unwrap();
    let mut script = Vec::new();
    for r in 0..100u64 {
        for i in 0..300u64 {
            script.push(Op::Put {
                table: None,
                key: i.to_be_bytes().to_vec(),
                value: vec![(r % 250) as u8 + 2; 200],
                flags: 0,
            });
        }
        script.push(Op::Commit);
    }
    cli().write(&path, &script, &[]).unwrap();
    assert!(matches!(reader.unpark(), Err(Error::Ousted)), "libmdbx did not oust rdbx's parked reader");
}

/// A write transaction that changed nothing still commits a new meta, as
/// libmdbx 0.14 does in the durable modes: its `txn_basal_commit` ends such
/// a transaction without writing only while the newest meta is weak and the
/// transaction syncs, so an empty commit on a steady database moves the
/// txnid (0.13 ended every such transaction without a meta). A "pure" commit
/// in rdbx would have saved two syncs an empty commit, and diverged from
/// the library it follows.
#[test]
fn an_empty_commit_moves_the_txnid_as_in_libmdbx() {
    let tmp = tempfile::tempdir().unwrap();
    let env = oracle::Env::open(tmp.path(), &oracle::EnvOptions::default()).unwrap();
    let mut txn = env.begin_rw().unwrap();
    let t = txn.create_table(Some(b"t"), 0).unwrap();
    txn.put(t, b"k", b"v", 0).unwrap();
    txn.commit().unwrap();
    let id = env.begin_ro().unwrap().id();
    env.begin_rw().unwrap().commit().unwrap();
    let txn = env.begin_rw().unwrap();
    assert_eq!(txn.get(txn.open_table(Some(b"t")).unwrap(), b"k").unwrap().as_deref(), Some(&b"v"[..]));
    txn.commit().unwrap();
    let libmdbx = env.begin_ro().unwrap().id() - id;
    drop(env);

    let tmp = tempfile::tempdir().unwrap();
    let env = Env::builder().max_dbs(4).durability(Durability::SyncDurable).open(tmp.path()).unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    let t = txn.create_db(Some("t"), rdbx::DbFlags::empty()).unwrap();
    txn.put(t, b"k", b"v", PutFlags::empty()).unwrap();
    txn.commit().unwrap();
    let id = env.begin_ro_txn().unwrap().id();
    env.begin_rw_txn().unwrap().commit().unwrap();
    let txn = env.begin_rw_txn().unwrap();
    let t = txn.open_db(Some("t")).unwrap();
    assert_eq!(txn.get(t, b"k").unwrap(), Some(&b"v"[..]));
    txn.commit().unwrap();
    let rdbx = env.begin_ro_txn().unwrap().id() - id;
    assert_eq!((rdbx, libmdbx), (2, 2), "txnids moved by two empty commits");
}
