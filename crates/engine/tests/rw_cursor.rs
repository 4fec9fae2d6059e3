//! `RwCursor` on multimaps (DUP_SORT tables) against a model (issue 10, item
//! 5): the cursor steps through every value of every key, `del()` removes the
//! current value only and leaves the cursor on its successor (libmdbx's
//! `mdbx_cursor_del` without `MDBX_ALLDUPS`), `del_all()` removes the key,
//! `put(.., CURRENT)` replaces the current value, and `get_current()`
//! returns the current value.
//!
//! Run: `cargo test --release -p rdbx --test rw_cursor`; more random cases:
//! `RDBX_PROPTEST_CASES=500`.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rdbx::{Db, DbFlags, Env, Error, Geometry, PutFlags, RwCursor, RwTxn};

type Pair = (Vec<u8>, Vec<u8>);

fn open_env(ps: usize, dir: &Path) -> Env {
    Env::builder()
        .max_dbs(4)
        .geometry(Geometry { page_size: Some(ps), size_upper: Some(1 << 28), ..Default::default() })
        .open(dir)
        .unwrap()
}

fn own(r: rdbx::Result<Option<(&[u8], &[u8])>>) -> rdbx::Result<Option<Pair>> {
    r.map(|o| o.map(|(k, v)| (k.to_vec(), v.to_vec())))
}

fn content(txn: &RwTxn<'_>, db: Db) -> Vec<Pair> {
    let mut c = txn.cursor(db).unwrap();
    let mut out = Vec::new();
    while let Some((k, v)) = c.next().unwrap() {
        out.push((k.to_vec(), v.to_vec()));
    }
    out
}

fn value(k: usize, j: usize, fixed: bool) -> Vec<u8> {
    if fixed {
        ((j * 7 + k) as u32).to_be_bytes().to_vec()
    } else {
        format!("v{:03}{}", j * 7, "x".repeat((j + k) % 11)).into_bytes()
    }
}

/// Keys with 1 to 5 values, and two keys with many (sub-pages grow into
/// nested trees).
fn populate(txn: &mut RwTxn<'_>, db: Db, fixed: bool) -> BTreeSet<Pair> {
    let mut model = BTreeSet::new();
    for k in 0..60 {
        let n = if k == 17 || k == 40 { 150 } else { 1 + k % 5 };
        for j in 0..n {
            let (key, val) = (format!("k{k:03}").into_bytes(), value(k, j, fixed));
            txn.put(db, &key, &val, PutFlags::empty()).unwrap();
            model.insert((key, val));
        }
    }
    model
}

fn tables() -> [(&'static str, DbFlags); 2] {
    [("ds", DbFlags::DUP_SORT), ("df", DbFlags::DUP_SORT | DbFlags::DUP_FIXED)]
}

/// Walks the table forward deleting every other record: every record is
/// visited once, in order, and the rest stays. The table is committed
/// first, so the deletes copy its pages on write under the cursor.
#[test]
fn walk_deleting_every_other_value() {
    walk_deleting(|i| i % 2 == 0);
}

/// As [`walk_deleting_every_other_value`], keeping 1 record in 7: leaves of
/// the table and of the nested trees run under a quarter full and merge
/// under the cursor, which stands where the walk goes on all the same.
#[test]
fn walk_deleting_most_values() {
    walk_deleting(|i| i % 7 != 3);
}

/// As [`walk_deleting_every_other_value`], deleting every record: a pruning
/// job dropping keys value by value. Sub-pages shrink out of their nodes,
/// keys go with their last values, and the table ends empty.
#[test]
fn walk_deleting_every_value() {
    walk_deleting(|_| true);
}

/// A forward walk with a write cursor deleting the `i`-th record visited
/// when `doomed(i)`, checked against the model at each step.
fn walk_deleting(doomed: fn(usize) -> bool) {
    for ps in [256, 4096] {
        for (name, flags) in tables() {
            let dir = tempfile::tempdir().unwrap();
            let env = open_env(ps, dir.path());
            let mut txn = env.begin_rw_txn().unwrap();
            let db = txn.create_db(Some(name), flags).unwrap();
            let mut model = populate(&mut txn, db, flags.contains(DbFlags::DUP_FIXED));
            txn.commit().unwrap();
            let mut txn = env.begin_rw_txn().unwrap();
            let all: Vec<Pair> = model.iter().cloned().collect();
            let mut visited = Vec::new();
            {
                let mut c = txn.rw_cursor(db).unwrap();
                let mut cur = own(c.first()).unwrap();
                while let Some(p) = cur {
                    assert!(visited.len() < all.len(), "{name} ps {ps}: the walk does not end");
                    assert_eq!(own(c.get_current()).unwrap().as_ref(), Some(&p), "{name} ps {ps}: get_current");
                    let i = visited.len();
                    visited.push(p.clone());
                    if doomed(i) {
                        c.del().unwrap();
                        model.remove(&p);
                        // The cursor stands on the successor.
                        let succ = model.range(p.clone()..).next().cloned();
                        assert_eq!(own(c.get_current()).unwrap(), succ, "{name} ps {ps}: get_current after del");
                    }
                    cur = own(c.next()).unwrap();
                }
            }
            assert_eq!(visited, all, "{name} ps {ps}: records visited");
            assert_eq!(content(&txn, db), model.iter().cloned().collect::<Vec<_>>(), "{name} ps {ps}");
            txn.verify_table(db).unwrap();
            assert_eq!(txn.db_stat(db).unwrap().entries, model.len() as u64);
            txn.commit().unwrap();
        }
    }
}

/// Backward walk with deletes, `del_all` of every third key via
/// `next_nodup`, and `put(CURRENT)` replacing one value.
#[test]
fn prev_del_all_and_put_current() {
    let dir = tempfile::tempdir().unwrap();
    let env = open_env(256, dir.path());
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.create_db(Some("ds"), DbFlags::DUP_SORT).unwrap();
    let mut model = populate(&mut txn, db, false);
    {
        let mut c = txn.rw_cursor(db).unwrap();
        // Backward, deleting every third value.
        let mut cur = own(c.last()).unwrap();
        let (mut i, n) = (0, model.len());
        while let Some(p) = cur {
            assert!(i < n, "backward walk does not end");
            if i % 3 == 0 {
                c.del().unwrap();
                model.remove(&p);
            }
            cur = own(c.prev()).unwrap();
            assert_eq!(cur, model.range(..p.clone()).next_back().cloned(), "prev after {p:?}");
            i += 1;
        }
        // Every third key goes with all its values.
        let mut cur = own(c.first()).unwrap();
        let mut i = 0;
        while let Some((k, v)) = cur {
            let next_key =
                model.range((Bound::Excluded((k.clone(), vec![0xff; 300])), Bound::Unbounded)).next().cloned();
            if i % 3 == 0 {
                c.del_all().unwrap();
                model.retain(|(mk, _)| *mk != k);
                assert_eq!(own(c.get_current()).unwrap(), next_key, "get_current after del_all of {k:?}");
                cur = own(c.next()).unwrap();
            } else {
                assert_eq!(own(c.get_current()).unwrap(), Some((k.clone(), v)));
                cur = own(c.next_nodup()).unwrap();
            }
            assert_eq!(cur, next_key, "after key {k:?}");
            i += 1;
        }
        // put(CURRENT) replaces the value at the cursor only.
        let (k, v) =
            model.iter().find(|(k, _)| model.range((k.clone(), vec![])..).take(3).all(|p| p.0 == *k)).cloned().unwrap();
        assert_eq!(own(c.set(&k)).unwrap(), Some((k.clone(), v.clone())));
        assert_eq!(own(c.next()).unwrap().map(|p| p.0), Some(k.clone()));
        let second = own(c.get_current()).unwrap().unwrap();
        c.put(&k, b"zz-new", PutFlags::CURRENT).unwrap();
        model.remove(&second);
        model.insert((k.clone(), b"zz-new".to_vec()));
        assert_eq!(own(c.get_current()).unwrap(), Some((k.clone(), b"zz-new".to_vec())));
        assert!(matches!(c.put(b"other", b"x", PutFlags::CURRENT), Err(Error::KeyMismatch(_))));
        // A plain put adds a value and stands on it.
        c.put(&k, b"aa-new", PutFlags::empty()).unwrap();
        model.insert((k.clone(), b"aa-new".to_vec()));
        assert_eq!(own(c.get_current()).unwrap(), Some((k.clone(), b"aa-new".to_vec())));
        assert_eq!(own(c.next()).unwrap(), model.range((k.clone(), b"aa-new".to_vec())..).nth(1).cloned());
    }
    assert_eq!(content(&txn, db), model.iter().cloned().collect::<Vec<_>>());
    txn.verify_table(db).unwrap();
    txn.commit().unwrap();
}

// ---------------------------------------------------------------------------
// Random sequences against a model cursor

#[derive(Clone, Debug)]
enum Op {
    First,
    Last,
    Next,
    Prev,
    NextNodup,
    NextDup,
    Set(u8),
    SetRange(u8),
    GetCurrent,
    Del,
    DelAll,
    Put(u8, u16),
    PutCurrent(u16),
}

/// Keys `0..keys`.
fn op(keys: u8) -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::First),
        1 => Just(Op::Last),
        6 => Just(Op::Next),
        3 => Just(Op::Prev),
        2 => Just(Op::NextNodup),
        2 => Just(Op::NextDup),
        1 => (0u8..keys).prop_map(Op::Set),
        1 => (0u8..keys).prop_map(Op::SetRange),
        2 => Just(Op::GetCurrent),
        5 => Just(Op::Del),
        1 => Just(Op::DelAll),
        3 => (0u8..keys, 0u16..400).prop_map(|(k, v)| Op::Put(k, v)),
        1 => (0u16..400).prop_map(Op::PutCurrent),
    ]
}

fn mkey(k: u8) -> Vec<u8> {
    format!("key{k:02}").into_bytes()
}

fn mval(v: u16, fixed: bool) -> Vec<u8> {
    if fixed {
        (v as u32).to_be_bytes().to_vec()
    } else {
        format!("val{v:03}{}", "y".repeat(v as usize % 13)).into_bytes()
    }
}

/// The model cursor: a position (the record it stands on or, after a
/// delete, the deleted record) over a sorted set of pairs.
struct ModelCursor {
    set: BTreeSet<Pair>,
    pos: Option<Pair>,
    after_del: bool,
    /// A plain table: one value per key (a put replaces it).
    plain: bool,
}

impl ModelCursor {
    /// The record at the position: itself, or its successor after a delete.
    fn current(&self) -> Option<Pair> {
        let p = self.pos.as_ref()?;
        self.set.range(p.clone()..).next().cloned()
    }

    /// Records after the position.
    fn after(&self) -> Option<Pair> {
        let p = self.pos.as_ref()?;
        let on = !self.after_del && self.set.contains(p);
        let lo = if on { Bound::Excluded(p.clone()) } else { Bound::Included(p.clone()) };
        self.set.range((lo, Bound::Unbounded)).next().cloned()
    }

    fn go(&mut self, to: Option<Pair>) -> Result<Option<Pair>, Error> {
        self.after_del = false;
        if to.is_some() {
            self.pos = to.clone();
        }
        Ok(to)
    }

    fn seek(&mut self, to: Option<Pair>) -> Result<Option<Pair>, Error> {
        self.pos = None;
        self.go(to)
    }

    fn apply(&mut self, op: &Op, fixed: bool) -> Result<Option<Pair>, Error> {
        let first_of = |set: &BTreeSet<Pair>, k: Vec<u8>| set.range((k, vec![])..).next().cloned();
        match op {
            Op::First => self.seek(self.set.first().cloned()),
            Op::Last => self.seek(self.set.last().cloned()),
            Op::Next if self.pos.is_none() => self.go(self.set.first().cloned()),
            Op::Next => self.go(self.after()),
            Op::Prev if self.pos.is_none() => self.go(self.set.last().cloned()),
            Op::Prev => {
                let p = self.pos.clone().unwrap();
                self.go(self.set.range(..p).next_back().cloned())
            }
            Op::NextNodup if self.pos.is_none() => self.go(self.set.first().cloned()),
            Op::NextNodup => {
                let k = self.pos.clone().unwrap().0;
                let to = self.set.range((Bound::Excluded((k.clone(), vec![0xff; 64])), Bound::Unbounded)).next();
                self.go(to.cloned())
            }
            Op::NextDup => {
                let Some(p) = self.pos.clone() else { return Ok(None) };
                self.go(self.after().filter(|n| n.0 == p.0))
            }
            Op::Set(k) => {
                let to = first_of(&self.set, mkey(*k)).filter(|p| p.0 == mkey(*k));
                self.seek(to)
            }
            Op::SetRange(k) => self.seek(first_of(&self.set, mkey(*k))),
            Op::GetCurrent => {
                if self.pos.is_none() {
                    return Err(Error::NoData);
                }
                Ok(self.current())
            }
            Op::Del | Op::DelAll => {
                let t = self.current().ok_or(Error::NoData)?;
                if matches!(op, Op::Del) {
                    self.set.remove(&t);
                } else {
                    self.set.retain(|p| p.0 != t.0);
                }
                self.pos = Some(t);
                self.after_del = true;
                Ok(None)
            }
            Op::Put(k, v) => {
                let p = (mkey(*k), mval(*v, fixed));
                if self.plain {
                    self.set.retain(|q| q.0 != p.0);
                }
                self.set.insert(p.clone());
                self.pos = Some(p);
                self.after_del = false;
                Ok(None)
            }
            Op::PutCurrent(v) => {
                let cur = self.current().ok_or(Error::NoData)?;
                let p = (cur.0.clone(), mval(*v, fixed));
                self.set.remove(&cur);
                self.set.insert(p.clone());
                self.pos = Some(p);
                self.after_del = false;
                Ok(None)
            }
        }
    }
}

fn apply(c: &mut RwCursor<'_, '_>, op: &Op, fixed: bool) -> rdbx::Result<Option<Pair>> {
    match op {
        Op::First => own(c.first()),
        Op::Last => own(c.last()),
        Op::Next => own(c.next()),
        Op::Prev => own(c.prev()),
        Op::NextNodup => own(c.next_nodup()),
        Op::NextDup => own(c.next_dup()),
        Op::Set(k) => own(c.set(&mkey(*k))),
        Op::SetRange(k) => own(c.set_range(&mkey(*k))),
        Op::GetCurrent => own(c.get_current()),
        Op::Del => c.del().map(|_| None),
        Op::DelAll => c.del_all().map(|_| None),
        Op::Put(k, v) => c.put(&mkey(*k), &mval(*v, fixed), PutFlags::empty()).map(|_| None),
        Op::PutCurrent(v) => {
            let Some((k, _)) = own(c.get_current()).unwrap_or(None) else {
                return c.put(b"none", &mval(*v, fixed), PutFlags::CURRENT).map(|_| None);
            };
            c.put(&k, &mval(*v, fixed), PutFlags::CURRENT).map(|_| None)
        }
    }
}

/// The table's kind in [`run`].
#[derive(Clone, Copy, Debug)]
enum Table {
    Plain,
    Multi,
    MultiFixed,
}

fn run(table: Table, init: &[(u8, u16)], ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let env = open_env(256, dir.path());
    let mut txn = env.begin_rw_txn().unwrap();
    let (flags, fixed) = match table {
        Table::Plain => (DbFlags::empty(), false),
        Table::Multi => (DbFlags::DUP_SORT, false),
        Table::MultiFixed => (DbFlags::DUP_SORT | DbFlags::DUP_FIXED, true),
    };
    let db = txn.create_db(Some("t"), flags).unwrap();
    let plain = matches!(table, Table::Plain);
    let mut m = ModelCursor { set: BTreeSet::new(), pos: None, after_del: false, plain };
    for (k, v) in init {
        txn.put(db, &mkey(*k), &mval(*v, fixed), PutFlags::empty()).unwrap();
        if plain {
            m.set.retain(|q| q.0 != mkey(*k));
        }
        m.set.insert((mkey(*k), mval(*v, fixed)));
    }
    {
        let mut c = txn.rw_cursor(db).unwrap();
        for (i, op) in ops.iter().enumerate() {
            let want = m.apply(op, fixed);
            let got = apply(&mut c, op, fixed);
            let ok = match (&got, &want) {
                (Ok(g), Ok(w)) => g == w,
                (Err(Error::NoData), Err(Error::NoData)) => true,
                _ => false,
            };
            prop_assert!(ok, "op #{i} {op:?}: rdbx {got:?}, model {want:?}");
        }
    }
    prop_assert_eq!(content(&txn, db), m.set.iter().cloned().collect::<Vec<_>>());
    txn.verify_table(db).map_err(|e| TestCaseError::fail(format!("verify: {e:?}")))?;
    prop_assert_eq!(txn.db_stat(db).unwrap().entries, m.set.len() as u64);
    txn.commit().unwrap();
    Ok(())
}

fn config() -> ProptestConfig {
    let cases = std::env::var("RDBX_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_cursor_ops_match_the_model(
        fixed in any::<bool>(),
        init in proptest::collection::vec((0u8..12, 0u16..400), 0..160),
        ops in proptest::collection::vec(op(12), 1..120),
    ) {
        run(if fixed { Table::MultiFixed } else { Table::Multi }, &init, &ops)?;
    }

    /// A plain table of up to 150 keys over several levels of 256-byte
    /// pages: deletes at the cursor (which take no search while the cursor
    /// stands where it stepped) empty and merge leaves, and walks cross them.
    #[test]
    fn random_plain_cursor_ops_match_the_model(
        init in proptest::collection::vec((0u8..150, 0u16..400), 0..200),
        ops in proptest::collection::vec(op(150), 1..200),
    ) {
        run(Table::Plain, &init, &ops)?;
    }
}

/// A walk over a plain table that replaces every value with a bigger one
/// at the cursor (`put(.., CURRENT)`): leaves split under the cursor all
/// the time, and the walk still visits every key once, in order.
#[test]
fn walk_replacing_values_with_bigger_ones() {
    let dir = tempfile::tempdir().unwrap();
    let env = open_env(256, dir.path());
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.create_db(Some("plain"), DbFlags::empty()).unwrap();
    let keys: Vec<Vec<u8>> = (0..300).map(|i| format!("k{i:04}").into_bytes()).collect();
    for k in &keys {
        txn.put(db, k, b"v", PutFlags::empty()).unwrap();
    }
    // Committed first: the puts copy the pages on write under the cursor.
    txn.commit().unwrap();
    let mut txn = env.begin_rw_txn().unwrap();
    let big = |k: &[u8]| [k, &[b'x'; 50][..]].concat();
    {
        let mut c = txn.rw_cursor(db).unwrap();
        let mut visited = Vec::new();
        let mut cur = own(c.first()).unwrap();
        while let Some((k, v)) = cur {
            assert!(visited.len() < keys.len(), "the walk does not end");
            assert_eq!(v, b"v", "{k:?}: visited twice or not from the table");
            c.put(&k, &big(&k), PutFlags::CURRENT).unwrap();
            assert_eq!(own(c.get_current()).unwrap(), Some((k.clone(), big(&k))), "get_current after put");
            visited.push(k);
            cur = own(c.next()).unwrap();
        }
        assert_eq!(visited, keys, "keys visited");
    }
    let want: Vec<Pair> = keys.iter().map(|k| (k.clone(), big(k))).collect();
    assert_eq!(content(&txn, db), want);
    txn.verify_table(db).unwrap();
    txn.commit().unwrap();
}
