//! APPEND runs mixed with everything that may change the rightmost leaf behind
//! the writer's back: plain puts and deletes (of the last keys too), cursor
//! writes, clearing the table, RESERVE, large values, INTEGER_KEY tables and
//! nested transactions committed or aborted, against a BTreeMap model, at a
//! page size small enough that leaves split and merge all the time. The writer
//! remembers the rightmost leaf between APPEND puts; this checks that no
//! change leaves it stale.
mod common;
use common::Rng;

use std::collections::BTreeMap;

use rdbx::{Db, DbFlags, Env, Error, Geometry, PutFlags, RwTxn};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The model's key for `i`: ordered as the table orders it (big-endian
/// bytes for INTEGER_KEY, whose keys are native-endian integers).
fn key(int: bool, i: u64) -> Vec<u8> {
    if int {
        i.to_be_bytes().to_vec()
    } else {
        format!("{i:08}").into_bytes()
    }
}

/// The key stored in the table for a model key.
fn db_key(int: bool, k: &[u8]) -> Vec<u8> {
    if int {
        u64::from_be_bytes(k.try_into().unwrap()).to_ne_bytes().to_vec()
    } else {
        k.to_vec()
    }
}

fn contents(txn: &RwTxn<'_>, db: Db, int: bool) -> Model {
    let mut c = txn.cursor(db).unwrap();
    let mut m = Model::new();
    while let Some((k, v)) = c.next().unwrap() {
        let k = if int { u64::from_ne_bytes(k.try_into().unwrap()).to_be_bytes().to_vec() } else { k.to_vec() };
        m.insert(k, v.to_vec());
    }
    m
}

fn last(int: bool, model: &Model) -> u64 {
    model.keys().next_back().map_or(0, |k| {
        if int {
            u64::from_be_bytes(k[..8].try_into().unwrap())
        } else {
            std::str::from_utf8(k).unwrap().parse().unwrap()
        }
    })
}

/// One random step; returns after checking the model where cheap.
fn step(txn: &mut RwTxn<'_>, db: Db, int: bool, model: &mut Model, rng: &mut Rng, depth: usize) {
    let top = last(int, model);
    match rng.below(100) {
        // A run of APPENDs (the common case: several per step).
        0..=54 => {
            for j in 0..1 + rng.below(40) {
                let k = key(int, top + 1 + j * (1 + rng.below(3)));
                let max = if rng.below(20) == 0 { 900 } else { 40 };
                let v = vec![b'a' + (j % 26) as u8; rng.below(max) as usize];
                if model.keys().next_back().is_some_and(|l| *l >= k) {
                    continue;
                }
                txn.put(db, &db_key(int, &k), &v, PutFlags::APPEND).unwrap();
                model.insert(k, v);
            }
        }
        // APPEND of a key that is not above the last: refused or overwriting.
        55..=59 => {
            let k = key(int, top.saturating_sub(rng.below(3)));
            let v = b"again".to_vec();
            match txn.put(db, &db_key(int, &k), &v, PutFlags::APPEND) {
                Ok(()) => {
                    // Into an empty table, or over the last key.
                    assert!(model.keys().next_back().is_none_or(|l| *l <= k), "APPEND below the last key succeeded");
                    model.insert(k, v);
                }
                Err(Error::KeyMismatch(_)) => assert!(model.keys().next_back().is_some_and(|l| *l > k)),
                Err(e) => panic!("{e:?}"),
            }
        }
        // Plain puts anywhere, deletes of the last keys and of random keys.
        60..=69 => {
            let k = key(int, rng.below(top + 2));
            let v = vec![b'p'; rng.below(60) as usize];
            txn.put(db, &db_key(int, &k), &v, PutFlags::empty()).unwrap();
            model.insert(k, v);
        }
        70..=79 => {
            for _ in 0..1 + rng.below(30) {
                let Some(k) = model.keys().next_back().cloned() else { break };
                assert!(txn.del(db, &db_key(int, &k), None).unwrap());
                model.remove(&k);
            }
        }
        80..=84 => {
            let k = key(int, rng.below(top + 1));
            assert_eq!(txn.del(db, &db_key(int, &k), None).unwrap(), model.remove(&k).is_some());
        }
        // Cursor writes at the end.
        85..=87 => {
            let mut c = txn.rw_cursor(db).unwrap();
            if c.last().unwrap().is_some() {
                c.del().unwrap();
                drop(c);
                let k = model.keys().next_back().cloned().unwrap();
                model.remove(&k);
            }
        }
        // RESERVE at the end.
        88..=89 => {
            let k = key(int, top + 1);
            txn.reserve(db, &db_key(int, &k), 12, PutFlags::APPEND).unwrap().copy_from_slice(b"reserved-val");
            model.insert(k, b"reserved-val".to_vec());
        }
        // Nested transactions: appends inside, then commit or abort.
        90..=97 if depth < 3 => {
            let mut child = txn.begin_nested_txn().unwrap();
            let mut m2 = model.clone();
            for _ in 0..1 + rng.below(4) {
                step(&mut child, db, int, &mut m2, rng, depth + 1);
            }
            if rng.below(2) == 0 {
                child.commit().unwrap();
                *model = m2;
            } else {
                child.abort();
            }
        }
        98 => {
            txn.clear_db(db).unwrap();
            model.clear();
        }
        _ => {}
    }
}

fn run(ps: usize, int: bool, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::builder()
        .max_dbs(2)
        .geometry(Geometry { page_size: Some(ps), ..Default::default() })
        .open(dir.path().join("db"))
        .unwrap();
    let flags = if int { DbFlags::INTEGER_KEY } else { DbFlags::empty() };
    let mut rng = Rng(seed);
    let mut model = Model::new();
    for round in 0..12 {
        let mut txn = env.begin_rw_txn().unwrap();
        let db = txn.create_db(Some("t"), flags).unwrap();
        for s in 0..120 {
            step(&mut txn, db, int, &mut model, &mut rng, 0);
            if s % 10 == 0 {
                txn.verify_table(db).unwrap_or_else(|e| panic!("seed {seed} round {round} step {s}: {e}"));
                assert!(contents(&txn, db, int) == model, "seed {seed} round {round} step {s}: contents differ");
            }
        }
        assert!(contents(&txn, db, int) == model, "seed {seed} round {round}: contents differ before commit");
        if round % 4 == 3 {
            txn.abort();
            let r = env.begin_rw_txn().unwrap();
            model = contents(&r, r.open_db(Some("t")).unwrap(), int);
        } else {
            txn.commit().unwrap();
        }
    }
    drop(env);
    let env = Env::builder().max_dbs(2).open(dir.path().join("db")).unwrap();
    let r = env.begin_rw_txn().unwrap();
    let got = contents(&r, r.open_db(Some("t")).unwrap(), int);
    assert!(got == model, "seed {seed}: committed contents differ after reopening");
}

#[test]
fn append_runs_with_other_changes_256() {
    for seed in 1..=6 {
        run(256, false, seed * 7919);
    }
}

#[test]
fn append_runs_with_other_changes_4096() {
    for seed in 1..=3 {
        run(4096, false, seed * 104_729);
    }
}

#[test]
fn append_runs_integer_keys() {
    for seed in 1..=3 {
        run(512, true, seed * 31);
    }
}
