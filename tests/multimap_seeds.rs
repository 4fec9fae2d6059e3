//! Random multimap workloads written by rdbx (puts and single-value deletes on
//! a DUPSORT and a DUPFIXED table, keys with few and with many values, so
//! sub-pages grow in place, get spare room, shrink, and turn into nested
//! trees), at page sizes 256, 4096 and 65536, each checked by libmdbx's
//! `mdbx_env_chk` and read back by libmdbx against a model.
//!
//! `RDBX_MULTIMAP_SEEDS=<n>` runs n seeds per page size (default 12; 120 ran
//! clean).
use rdbx::{DbFlags, Env, Geometry, PutFlags};
use rdbx_tests::engine::OracleCli;
use rdbx_tests::rng::Rng;
use std::collections::{BTreeMap, BTreeSet};

#[test]
fn random_multimap_workloads_pass_libmdbx() {
    let cli = OracleCli::new(env!("CARGO_BIN_EXE_mdbx-oracle"));
    let seeds: u64 = std::env::var("RDBX_MULTIMAP_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(12);
    for seed in 0..seeds {
        for ps in [256usize, 4096, 65536] {
            let tmp = tempfile::tempdir().unwrap();
            let path = tmp.path().join("db");
            let mut rng = Rng::new(seed * 7 + ps as u64);
            let mut model: BTreeMap<(u8, Vec<u8>), BTreeSet<Vec<u8>>> = BTreeMap::new();
            {
                let env = Env::builder()
                    .max_dbs(4)
                    .geometry(Geometry { page_size: Some(ps), ..Default::default() })
                    .open(&path)
                    .unwrap();
                for round in 0..6 {
                    let mut txn = env.begin_rw_txn().unwrap();
                    let d = txn.create_db(Some("d"), DbFlags::DUP_SORT).unwrap();
                    let f = txn.create_db(Some("f"), DbFlags::DUP_SORT | DbFlags::DUP_FIXED).unwrap();
                    for _ in 0..3000 {
                        let which = rng.below(2) as u8;
                        let db = if which == 0 { d } else { f };
                        let k = format!("k{:03}", rng.below(if round % 2 == 0 { 15 } else { 150 })).into_bytes();
                        let v: Vec<u8> = if which == 1 {
                            rng.below(5000).to_be_bytes().to_vec()
                        } else {
                            let n = rng.below(30) as usize;
                            (0..n).map(|_| b'a' + rng.below(4) as u8).collect()
                        };
                        if rng.below(3) == 0 {
                            let had = model.get_mut(&(which, k.clone())).map(|s| s.remove(&v)).unwrap_or(false);
                            if model.get(&(which, k.clone())).is_some_and(|s| s.is_empty()) {
                                model.remove(&(which, k.clone()));
                            }
                            assert_eq!(txn.del(db, &k, Some(&v)).unwrap(), had);
                        } else {
                            txn.put(db, &k, &v, PutFlags::empty()).unwrap();
                            model.entry((which, k)).or_default().insert(v);
                        }
                    }
                    txn.commit().unwrap();
                }
            }
            cli.chk(&path).unwrap_or_else(|e| panic!("seed {seed} ps {ps}: {e}"));
            let secs = cli.dump(&path).unwrap();
            let mut got: BTreeMap<(u8, Vec<u8>), BTreeSet<Vec<u8>>> = BTreeMap::new();
            for s in secs {
                let which = match s.name.as_deref() {
                    Some(b"d") => 0u8,
                    Some(b"f") => 1,
                    _ => continue,
                };
                for (k, v) in s.records {
                    got.entry((which, k)).or_default().insert(v);
                }
            }
            assert!(got == model, "seed {seed} ps {ps}: libmdbx reads something else");
        }
    }
}
