//! Multimaps against a model: BTreeMap<key, BTreeSet<value>> (plain byte order),
//! with enough values per key to force sub-pages into nested trees and back down.

mod common;
use common::Rng;

use std::collections::{BTreeMap, BTreeSet};

use rdbx::{DbFlags, Env, Error, Geometry, PutFlags};

fn scan(env: &Env, name: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let r = env.begin_ro_txn().unwrap();
    let db = r.open_db(Some(name)).unwrap();
    let mut c = r.cursor(db).unwrap();
    let mut out = Vec::new();
    while let Some((k, v)) = c.next().unwrap() {
        out.push((k.to_vec(), v.to_vec()));
    }
    out
}

fn run(ps: usize, flags: DbFlags, fixed: bool, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::builder()
        .max_dbs(4)
        .geometry(Geometry { page_size: Some(ps), ..Default::default() })
        .open(dir.path().join("db"))
        .unwrap();
    let mut rng = Rng(seed);
    let mut model: BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>> = BTreeMap::new();
    for round in 0..8 {
        let mut txn = env.begin_rw_txn().unwrap();
        let db = txn.create_db(Some("m"), flags).unwrap();
        for step in 0..1500 {
            if std::env::var_os("RDBX_VERIFY_EACH").is_some() {
                txn.verify_table(db).unwrap_or_else(|e| panic!("round {round} step {step}: {e}"));
            }
            let k = format!("k{:03}", rng.next() % if round % 2 == 0 { 12 } else { 200 }).into_bytes();
            let v: Vec<u8> = if fixed {
                (rng.next() % 100_000).to_be_bytes().to_vec()
            } else {
                let n = (rng.next() % 24) as usize;
                (0..n).map(|_| b'a' + (rng.next() % 3) as u8).collect()
            };
            match rng.next() % 10 {
                0..=6 => {
                    txn.put(db, &k, &v, PutFlags::empty()).unwrap();
                    model.entry(k).or_default().insert(v);
                }
                7 | 8 => {
                    // delete one existing value of the key, or a random one
                    let target =
                        model.get(&k).and_then(|s| s.iter().nth((rng.next() % 4) as usize).cloned()).unwrap_or(v);
                    let deleted = txn.del(db, &k, Some(&target)).unwrap();
                    let m = model.get_mut(&k).map(|s| s.remove(&target)).unwrap_or(false);
                    assert_eq!(deleted, m, "del one {k:?} {target:?}");
                    if model.get(&k).is_some_and(|s| s.is_empty()) {
                        model.remove(&k);
                    }
                }
                _ => {
                    if rng.next().is_multiple_of(4) {
                        let deleted = txn.del(db, &k, None).unwrap();
                        assert_eq!(deleted, model.remove(&k).is_some());
                    }
                }
            }
        }
        if let Some(k) = model.keys().next().cloned() {
            let v = model[&k].iter().next().unwrap().clone();
            assert!(matches!(txn.put(db, &k, &v, PutFlags::NO_OVERWRITE), Err(Error::KeyExist)));
            assert!(matches!(txn.put(db, &k, &v, PutFlags::NO_DUP_DATA), Err(Error::KeyExist)));
        }
        txn.verify_table(db).unwrap();
        txn.commit().unwrap();
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone()))).collect();
        let got = scan(&env, "m");
        assert_eq!(got.len(), want.len(), "ps {ps} flags {flags:?} round {round}");
        assert!(got == want, "ps {ps} flags {flags:?} round {round}");
        let r = env.begin_ro_txn().unwrap();
        let db = r.open_db(Some("m")).unwrap();
        assert_eq!(r.db_stat(db).unwrap().entries, want.len() as u64);
        // per-key counts and first values
        let mut c = r.cursor(db).unwrap();
        for (k, vs) in model.iter().take(20) {
            let (_, v) = c.set(k).unwrap().unwrap();
            assert_eq!(v, vs.iter().next().unwrap().as_slice());
            assert_eq!(c.count().unwrap(), vs.len() as u64);
            assert_eq!(r.get(db, k).unwrap().unwrap(), vs.iter().next().unwrap().as_slice());
        }
    }
}

#[test]
fn dupsort_model_4k() {
    run(4096, DbFlags::DUP_SORT, false, 1);
}

#[test]
fn dupsort_model_256() {
    run(256, DbFlags::DUP_SORT, false, 2);
}

#[test]
fn dupfixed_model() {
    run(4096, DbFlags::DUP_SORT | DbFlags::DUP_FIXED, true, 3);
    run(1024, DbFlags::DUP_SORT | DbFlags::DUP_FIXED, true, 4);
}
