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

use std::path::{Path, PathBuf};

use rdbx::{Db, Durability, Env, Error, Geometry, PutFlags};
use rdbx_tests::engine::{self, apply_rdbx, figures, OracleCli};
use rdbx_tests::model::{diff_sections, generate, Model, WorkloadSpec};
use rdbx_tests::ops;
use rdbx_tests::oracle;

fn cli() -> OracleCli {
    OracleCli::new(env!("CARGO_BIN_EXE_mdbx-oracle"))
}

const MIB: usize = 1 << 20;

fn rdbx_open(path: &Path, ps: usize, no_sub_dir: bool, durability: Durability) -> Env {
    Env::builder()
        .max_dbs(16)
        .no_sub_dir(no_sub_dir)
        .durability(durability)
        .geometry(Geometry {
            page_size: Some(ps),
            size_upper: Some(512 * MIB),
            ..Default::default()
        })
        .open(path)
        .unwrap_or_else(|e| panic!("rdbx open {path:?} (page size {ps}): {e:?}"))
}

/// rdbx reads the whole database and every key, and must match the model.
fn rdbx_verify(env: &Env, model: &Model, what: &str) {
    let txn = env
        .begin_ro_txn()
        .unwrap_or_else(|e| panic!("{what}: rdbx begin_ro_txn: {e:?}"));
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
    let tmp = tempfile::tempdir().unwrap();
    let path = db_path(tmp.path(), no_sub_dir);
    let mut model = Model::default();
    let ops = generate(&spec_for(ps, ps as u64 * 31 + 1), &mut model);
    assert!(model.len() > 1000);
    let rdbx_stats = {
        let env = rdbx_open(&path, ps, no_sub_dir, durability);
        assert_eq!(env.page_size(), ps);
        apply_rdbx(&env, &ops).unwrap_or_else(|e| panic!("page size {ps}: {e}"));
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
    assert_eq!(
        stat_entries as usize,
        model_entries - model.tables[&None].map.len()
    );
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
                geometry: oracle::Geometry {
                    upper: Some(512 * MIB),
                    ..Default::default()
                },
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
        let r = txn
            .db_stat(db)
            .unwrap_or_else(|e| panic!("{what}: db_stat: {e:?}"));
        assert_eq!(
            (r.depth, r.branch_pages, r.leaf_pages, r.overflow_pages, r.entries),
            (
                st.depth,
                st.branch_pages,
                st.leaf_pages,
                st.overflow_pages,
                st.entries
            ),
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
        let probe = { let n = rng.range(0, 6); rng.bytes(n) };
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
        geometry: oracle::Geometry {
            upper: Some(512 * MIB),
            ..Default::default()
        },
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
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let cli = cli();
    let ps = 4096;
    let mut model = Model::default();
    let mut spec = spec_for(ps, 777);
    spec.txns = 3;
    spec.ops_per_txn = 500;

    let env = rdbx_open(&path, ps, false, Durability::SyncDurable);
    // rdbx commits first (creates the tables).
    let ops1 = generate(&spec, &mut model);
    apply_rdbx(&env, &ops1).unwrap_or_else(|e| panic!("rdbx phase 1: {e}"));

    // libmdbx (child) commits; rdbx sees it without reopening.
    spec.seed += 1;
    let ops2 = generate(&spec, &mut model);
    cli.write(&path, &ops2, &[]).unwrap();
    rdbx_verify(&env, &model, "rdbx after libmdbx child phase 2");

    // An rdbx reader keeps a snapshot while libmdbx rewrites much of the data
    // (deletes and overwrites free pages that libmdbx would like to reuse).
    let snapshot = model.clone();
    let reader = env.begin_ro_txn().unwrap();
    spec.seed += 1;
    spec.delete_percent = 45;
    let ops3 = generate(&spec, &mut model);
    cli.write(&path, &ops3, &[]).unwrap();
    spec.seed += 1;
    let ops3b = generate(&spec, &mut model);
    cli.write(&path, &ops3b, &[]).unwrap();
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
    cli.write(&path, &ops5, &[]).unwrap();
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
        let db = txn
            .create_db(Some("grow"), rdbx::DbFlags::empty())
            .unwrap();
        for i in 0..600u64 {
            let k = (t * 100_000 + i * 7919 % 600).to_be_bytes().to_vec();
            let v = { let n = rng.range(20, 200); rng.bytes(n) };
            txn.put(db, &k, &v, PutFlags::empty()).unwrap();
            model
                .tables
                .entry(Some(b"grow".to_vec()))
                .or_default()
                .map
                .insert(k, v);
        }
        txn.commit().unwrap();
        sizes.push(env.info().unwrap().size_now);
    }
    let info = env.info().unwrap();
    assert!(
        info.size_now >= 2 * 1024 * 1024,
        "file grew to {} bytes only",
        info.size_now
    );
    let grows = sizes.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(grows >= 10, "grew in {grows} steps only: {sizes:?}");
    for w in sizes.windows(2) {
        assert!(
            w[1] <= w[0] || (w[1] - w[0]) as usize % step == 0,
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
            let v = { let n = rng.range(500, 1500); rng.bytes(n) };
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
        let k = model.tables[&Some(b"full".to_vec())]
            .map
            .keys()
            .next()
            .unwrap()
            .clone();
        assert!(txn.del(db, &k, None).unwrap());
        txn.commit().unwrap();
        model
            .tables
            .get_mut(&Some(b"full".to_vec()))
            .unwrap()
            .map
            .remove(&k);
    }
    rdbx_verify(&env, &model, "after MapFull and a delete: rdbx");
    drop(env);
    assert!(std::fs::metadata(&path).unwrap().len() as usize <= upper);
    libmdbx_verify(&path, &model, "after MapFull: libmdbx");
}
