//! Nested write transactions against a model: children committed and aborted
//! at random depths; the parent sees nothing of an aborted child.

mod common;
use common::Rng;

use std::collections::BTreeMap;

use rdbx::{DbFlags, Env, Geometry, PutFlags, RwTxn};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn contents(txn: &RwTxn<'_>) -> Model {
    let db = txn.open_db(Some("t")).unwrap();
    let mut c = txn.cursor(db).unwrap();
    let mut m = Model::new();
    while let Some((k, v)) = c.next().unwrap() {
        m.insert(k.to_vec(), v.to_vec());
    }
    m
}

fn ops(txn: &mut RwTxn<'_>, model: &mut Model, rng: &mut Rng, n: usize) {
    let db = txn.open_db(Some("t")).unwrap();
    for _ in 0..n {
        let k = format!("{:05}", rng.next() % 3000).into_bytes();
        if rng.next().is_multiple_of(3) {
            assert_eq!(txn.del(db, &k, None).unwrap(), model.remove(&k).is_some());
        } else {
            let v = vec![(rng.next() % 256) as u8; (rng.next() % 700) as usize];
            txn.put(db, &k, &v, PutFlags::empty()).unwrap();
            model.insert(k, v);
        }
    }
}

fn nest(txn: &mut RwTxn<'_>, model: &mut Model, rng: &mut Rng, depth: usize) {
    ops(txn, model, rng, 200);
    if depth < 4 {
        for _ in 0..2 {
            let mut child_model = model.clone();
            let mut child = txn.begin_nested_txn().unwrap();
            nest(&mut child, &mut child_model, rng, depth + 1);
            assert_eq!(contents(&child), child_model);
            if rng.next().is_multiple_of(2) {
                child.commit().unwrap();
                *model = child_model;
            } else if rng.next().is_multiple_of(2) {
                child.abort();
            } else {
                drop(child);
            }
            assert_eq!(contents(txn), *model, "depth {depth}");
            txn.verify_table(txn.open_db(Some("t")).unwrap()).unwrap();
        }
    }
    ops(txn, model, rng, 50);
}

#[test]
fn nested_transactions_match_the_model() {
    // The smallest dirty-page budget makes children spill and unspill the
    // parent's pages all the time (see the engine's `spill` module).
    // WRITEMAP edits pages in place in the map, where an abort must not
    // leave the child's edits for the parent to find.
    for (ps, seed, spill, write_map) in [
        (4096usize, 7u64, false, false),
        (512, 11, false, false),
        (4096, 7, true, false),
        (512, 13, true, false),
        (4096, 17, false, true),
        (512, 19, true, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut b = Env::builder();
        if spill {
            b = b.dirty_page_limit(1);
        }
        let env = b
            .write_map(write_map)
            .max_dbs(4)
            .geometry(Geometry { page_size: Some(ps), ..Default::default() })
            .open(dir.path().join("db"))
            .unwrap();
        let mut rng = Rng(seed);
        let mut model = Model::new();
        for _ in 0..3 {
            let mut txn = env.begin_rw_txn().unwrap();
            txn.create_db(Some("t"), DbFlags::empty()).unwrap();
            let mut m = model.clone();
            nest(&mut txn, &mut m, &mut rng, 0);
            let spilled_before = env.page_ops().spill;
            txn.commit().unwrap();
            assert_eq!(env.page_ops().spill > spilled_before, spill, "page size {ps}");
            model = m;
            let r = env.begin_ro_txn().unwrap();
            let db = r.open_db(Some("t")).unwrap();
            let mut c = r.cursor(db).unwrap();
            let mut got = Model::new();
            while let Some((k, v)) = c.next().unwrap() {
                got.insert(k.to_vec(), v.to_vec());
            }
            assert_eq!(got, model);
            r.verify_table(db).unwrap();
        }
    }
}

#[test]
fn aborted_child_table_creation_vanishes() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::builder().max_dbs(4).open(dir.path().join("db")).unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    {
        let mut child = txn.begin_nested_txn().unwrap();
        let db = child.create_db(Some("gone"), DbFlags::empty()).unwrap();
        child.put(db, b"k", b"v", PutFlags::empty()).unwrap();
        child.abort();
    }
    assert!(txn.open_db(Some("gone")).is_err());
    assert!(txn.table_names().unwrap().is_empty());
    txn.commit().unwrap();
}
