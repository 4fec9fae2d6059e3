//! Iterators and the `ReadTxn` trait against a model: random key bounds
//! (included, excluded, unbounded, present or absent keys), forwards,
//! backwards and from both ends at once, on a plain table and on a multimap
//! whose keys hold one value, a sub-page or a nested tree.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use common::Rng;
use rdbx::{Db, DbFlags, Env, Error, PutFlags, ReadTxn};

type Model = BTreeMap<(Vec<u8>, Vec<u8>), ()>;

fn build(env: &Env, name: &str, flags: DbFlags, rng: &mut Rng) -> Model {
    let mut model = Model::new();
    let mut txn = env.begin_rw_txn().expect("begin");
    let db = txn.create_db(Some(name), flags).expect("db");
    for i in 0..600u64 {
        let k = format!("k{:04}", rng.below(400)).into_bytes();
        let dups = if flags.contains(DbFlags::DUP_SORT) {
            match i % 10 {
                0 => 200,
                1..=3 => 1 + rng.below(6),
                _ => 1,
            }
        } else {
            1
        };
        for _ in 0..dups {
            let v = format!("v{:05}", rng.below(100_000)).into_bytes();
            txn.put(db, &k, &v, PutFlags::empty()).expect("put");
            if !flags.contains(DbFlags::DUP_SORT) {
                model.retain(|(mk, _), _| mk != &k);
            }
            model.insert((k.clone(), v), ());
        }
    }
    txn.commit().expect("commit");
    model
}

fn bound(rng: &mut Rng, keys: &[Vec<u8>]) -> Bound<Vec<u8>> {
    let k = if rng.below(3) == 0 {
        format!("k{:04}", rng.below(420)).into_bytes()
    } else {
        keys[rng.index(keys.len())].clone()
    };
    match rng.below(3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(k),
        _ => Bound::Excluded(k),
    }
}

fn in_range(k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above = match lo {
        Bound::Unbounded => true,
        Bound::Included(l) => k >= l.as_slice(),
        Bound::Excluded(l) => k > l.as_slice(),
    };
    let below = match hi {
        Bound::Unbounded => true,
        Bound::Included(h) => k <= h.as_slice(),
        Bound::Excluded(h) => k < h.as_slice(),
    };
    above && below
}

fn check_ranges(txn: &impl ReadTxn, db: Db, model: &Model, rng: &mut Rng, what: &str) {
    let keys: Vec<Vec<u8>> = model.keys().map(|(k, _)| k.clone()).collect();
    for case in 0..300 {
        let (lo, hi) = (bound(rng, &keys), bound(rng, &keys));
        let want: Vec<(Vec<u8>, Vec<u8>)> = model.keys().filter(|(k, _)| in_range(k, &lo, &hi)).cloned().collect();
        let range = (lo.clone(), hi.clone());
        let fwd: Vec<(Vec<u8>, Vec<u8>)> = txn
            .range(db, range.clone())
            .expect("range")
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).expect("item"))
            .collect();
        assert_eq!(fwd, want, "{what} case {case}: forward {lo:?}..{hi:?}");
        let mut back: Vec<(Vec<u8>, Vec<u8>)> = txn
            .range(db, range.clone())
            .expect("range")
            .rev()
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).expect("item"))
            .collect();
        back.reverse();
        assert_eq!(back, want, "{what} case {case}: backward {lo:?}..{hi:?}");
        // Both ends at once, in a random pattern: no record twice, none lost.
        let mut it = txn.range(db, range.clone()).expect("range");
        let (mut head, mut tail) = (Vec::new(), Vec::new());
        loop {
            let item =
                if rng.below(2) == 0 { it.next().map(|r| (true, r)) } else { it.next_back().map(|r| (false, r)) };
            match item {
                Some((front, r)) => {
                    let (k, v) = r.expect("item");
                    if front {
                        head.push((k.to_vec(), v.to_vec()))
                    } else {
                        tail.push((k.to_vec(), v.to_vec()))
                    }
                }
                None => break,
            }
        }
        assert!(it.next().is_none() && it.next_back().is_none(), "{what} case {case}: not fused");
        tail.reverse();
        head.extend(tail);
        assert_eq!(head, want, "{what} case {case}: from both ends {lo:?}..{hi:?}");
    }
}

#[test]
fn ranges_match_the_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = Env::builder().max_dbs(4).open(dir.path()).expect("open");
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for (name, flags) in [("plain", DbFlags::empty()), ("multi", DbFlags::DUP_SORT)] {
        let model = build(&env, name, flags, &mut rng);
        let txn = env.begin_ro_txn().expect("ro");
        let db = txn.open_db(Some(name)).expect("db");
        check_ranges(&txn, db, &model, &mut rng, name);
        // Whole table, prefix and one key's values.
        let all: Vec<_> = txn.iter(db).expect("iter").map(|r| r.expect("item").0.to_vec()).collect();
        assert_eq!(all.len(), model.len(), "{name}: iter");
        for p in [&b"k00"[..], b"k03", b"k", b"k9", b"x", b""] {
            let got: Vec<_> = txn.prefix(db, p).expect("prefix").map(|r| r.expect("item").0.to_vec()).collect();
            let want: Vec<_> = model.keys().filter(|(k, _)| k.starts_with(p)).map(|(k, _)| k.clone()).collect();
            assert_eq!(got, want, "{name}: prefix {p:?}");
        }
        for (k, _) in model.keys().step_by(37) {
            let got: Vec<_> = txn.iter_dup(db, k).expect("iter_dup").map(|r| r.expect("item").1.to_vec()).collect();
            let want: Vec<_> = model.keys().filter(|(mk, _)| mk == k).map(|(_, v)| v.clone()).collect();
            assert_eq!(got, want, "{name}: iter_dup {k:?}");
        }
        assert_eq!(txn.iter_dup(db, b"absent").expect("iter_dup").count(), 0);
    }
}

#[test]
fn prefix_needs_lexicographic_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = Env::builder().max_dbs(4).open(dir.path()).expect("open");
    let mut txn = env.begin_rw_txn().expect("begin");
    let ints = txn.create_db(Some("ints"), DbFlags::INTEGER_KEY).expect("db");
    txn.put(ints, &7u64.to_ne_bytes(), b"x", PutFlags::empty()).expect("put");
    assert!(matches!(txn.prefix(ints, b"\x07").err(), Some(Error::Incompatible(_))));
    // Ranges follow the table's own order: integers by value.
    for i in [300u64, 2, 70_000] {
        txn.put(ints, &i.to_ne_bytes(), b"y", PutFlags::empty()).expect("put");
    }
    let lo = 7u64.to_ne_bytes();
    let got: Vec<u64> = txn
        .range(ints, lo..)
        .expect("range")
        .map(|r| u64::from_ne_bytes(r.expect("item").0.try_into().expect("8 bytes")))
        .collect();
    assert_eq!(got, [7, 300, 70_000]);
}

/// Code written once over `ReadTxn` reads a snapshot, a write transaction's
/// pending changes and a nested transaction's.
fn count_all(txn: &impl ReadTxn, db: Db) -> usize {
    txn.iter(db).expect("iter").count()
}

#[test]
fn one_reader_function_for_every_transaction_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = Env::builder().open(dir.path()).expect("open");
    let mut txn = env.begin_rw_txn().expect("begin");
    txn.put(Db::MAIN, b"a", b"1", PutFlags::empty()).expect("put");
    assert_eq!(count_all(&txn, Db::MAIN), 1);
    {
        let mut nested = txn.begin_nested_txn().expect("nested");
        nested.put(Db::MAIN, b"b", b"2", PutFlags::empty()).expect("put");
        assert_eq!(count_all(&nested, Db::MAIN), 2);
        nested.abort();
    }
    assert_eq!(count_all(&txn, Db::MAIN), 1);
    txn.commit().expect("commit");
    let ro = env.begin_ro_txn().expect("ro");
    assert_eq!(count_all(&ro, Db::MAIN), 1);
}
