//! The operation-sequence target: a differential test against a `BTreeMap`
//! model.
//!
//! Input: one header byte (page size: bits 0..2 pick 256, 512, 1024 or 4096;
//! bit 2: WRITEMAP; bit 3: a one-page dirty budget, so that transactions
//! spill pages between every two operations),
//! then operations, decoded byte by byte until the input ends (see [`Op`]).
//! Two tables: `plain` and `multi` (DUP_SORT). Operations run in a write
//! transaction, inside nested transactions to any depth (begin, commit,
//! abort); the model keeps one copy per level. After every nested commit or
//! abort the transaction's view must equal the model; after every commit of
//! the top-level transaction a fresh read transaction must see the model and
//! `Env::check` must find no problem. `Reopen` commits, closes the
//! environment and opens it again. `Reader` keeps a read transaction open
//! across the commits that follow, until the next `Reader` or reopen checks
//! that it still sees its snapshot (page reuse must leave its pages alone).
//!
//! A failed operation must leave the model's state: errors the caller can
//! expect (a value too large for the page size, `KeyExist` with
//! `NO_OVERWRITE` on a present key) are checked for; `MapFull` aborts the
//! top-level transaction; any other error is a finding.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rdbx::{CheckOptions, Cursor, Db, DbFlags, Durability, Env, Error, Geometry, PutFlags, RoTxn, RwTxn};

/// Nesting depth limit.
const MAX_DEPTH: usize = 6;

#[derive(Clone, Default, PartialEq, Eq, Debug)]
struct Model {
    plain: BTreeMap<Vec<u8>, Vec<u8>>,
    multi: BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>,
}

/// The operations, by the value of their first byte modulo 16.
#[derive(Debug)]
enum Op {
    /// 0: put into `plain` (bit: NO_OVERWRITE).
    Put { key: Vec<u8>, val: Vec<u8>, no_overwrite: bool },
    /// 1: put into `multi` (bit: NO_DUP_DATA).
    PutDup { key: Vec<u8>, val: Vec<u8>, no_dup: bool },
    /// 2: delete a key of `plain`, maybe only with a given value.
    Del { key: Vec<u8>, val: Option<Vec<u8>> },
    /// 3: delete a key of `multi` with all its values.
    DelKey { key: Vec<u8> },
    /// 4: delete one value of a key of `multi`.
    DelDup { key: Vec<u8>, val: Vec<u8> },
    /// 5: begin a nested transaction.
    Begin,
    /// 6: commit the current (nested or top-level) transaction.
    Commit,
    /// 7: abort the current transaction.
    Abort,
    /// 8: commit, close and reopen the environment.
    Reopen,
    /// 9: put `n` keys with a common prefix into `plain`.
    Bulk { prefix: u8, n: u8, len: u8 },
    /// 10: put `n` values under one key of `multi`.
    BulkDup { key: Vec<u8>, n: u8, len: u8 },
    /// 11: delete records of a table with a write cursor: the first `n`
    /// (`every` 0), or up to `n` while walking the whole table and
    /// deleting every `every`-th record (each record walked is checked
    /// against the model's order).
    CursorDel { multi: bool, n: u8, every: u8 },
    /// 12: clear a table.
    Clear { multi: bool },
    /// 13: get a key of both tables and compare with the model.
    Get { key: Vec<u8> },
    /// 14: delete `n` keys of `plain` from the model's k-th key on.
    DelRange { from: u8, n: u8 },
    /// 15: once this top-level transaction ended, begin a read transaction
    /// on the last commit and keep it (with the model) across the commits
    /// that follow; if one is open already, check that it still sees its
    /// snapshot whole and end it.
    Reader,
}

struct Input<'a> {
    data: &'a [u8],
    pos: usize,
    page_size: usize,
    /// An `Op::Reader` came in the current top-level transaction.
    reader: bool,
}

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }
    fn byte0(&mut self) -> u8 {
        self.byte().unwrap_or(0)
    }
    fn key(&mut self) -> Vec<u8> {
        let b = self.byte0();
        if b < 0xe0 {
            vec![b'k', b % 40]
        } else {
            let n = (b & 0x1f) as usize;
            let end = (self.pos + n).min(self.data.len());
            let k = self.data[self.pos..end].to_vec();
            self.pos = end;
            k
        }
    }
    fn val(&mut self) -> Vec<u8> {
        let b = self.byte0();
        let fill = self.byte0();
        let ps = self.page_size;
        let len = match b >> 6 {
            0 => (b & 0x3f) as usize,
            1 => (b & 0x3f) as usize / 4,
            2 => ps / 2 - 32 + (b & 0x3f) as usize,
            _ => ps + (b & 0x3f) as usize * ps / 8,
        };
        (0..len).map(|i| fill.wrapping_add(i as u8 / 3)).collect()
    }
    fn op(&mut self) -> Option<Op> {
        let b = self.byte()?;
        let bit = b & 0x80 != 0;
        Some(match b % 16 {
            0 => Op::Put { key: self.key(), val: self.val(), no_overwrite: bit },
            1 => Op::PutDup { key: self.key(), val: self.val(), no_dup: bit },
            2 => {
                let key = self.key();
                Op::Del { val: bit.then(|| self.val()), key }
            }
            3 => Op::DelKey { key: self.key() },
            4 => Op::DelDup { key: self.key(), val: self.val() },
            5 => Op::Begin,
            6 => Op::Commit,
            7 => Op::Abort,
            8 => Op::Reopen,
            9 => Op::Bulk { prefix: self.byte0(), n: self.byte0() % 64, len: self.byte0() },
            10 => Op::BulkDup { key: self.key(), n: self.byte0(), len: self.byte0() % 24 },
            11 => Op::CursorDel { multi: bit, n: self.byte0() % 32, every: self.byte0() % 8 },
            12 => Op::Clear { multi: bit },
            13 => Op::Get { key: self.key() },
            14 => Op::DelRange { from: self.byte0(), n: self.byte0() % 32 },
            _ => Op::Reader,
        })
    }
}

/// How a transaction level ended.
enum End {
    Commit,
    Abort,
    Reopen,
    /// The input ran out.
    Eof,
    /// `MapFull`: the top-level transaction is abandoned.
    Full,
}

#[derive(Clone, Copy)]
struct Dbs {
    plain: Db,
    multi: Db,
}

/// Runs the target over `data`.
pub fn run(data: &[u8]) {
    crate::note_input(data);
    let Some((&hdr, ops)) = data.split_first() else { return };
    let page_size = [256, 512, 1024, 4096][(hdr & 3) as usize];
    let dir = crate::scratch();
    let path = dir.path().join("db");
    let mut input = Input { data: ops, pos: 0, page_size, reader: false };
    let mode = Mode { write_map: hdr & 4 != 0, spill: hdr & 8 != 0 };
    {
        let env = open(&path, page_size, mode);
        let mut txn = env.begin_rw_txn().expect("begin_rw_txn");
        txn.create_db(Some("plain"), DbFlags::empty()).expect("create plain");
        txn.create_db(Some("multi"), DbFlags::DUP_SORT).expect("create multi");
        txn.commit().expect("commit");
    }
    let mut committed = Model::default();
    let mut n_commit = 0u32;
    // One environment per pass; `Reopen` starts the next.
    loop {
        let env = open(&path, page_size, mode);
        // Handles belong to one environment.
        let dbs = {
            let txn = env.begin_ro_txn().expect("begin_ro_txn");
            Dbs { plain: txn.open_db(Some("plain")).expect("open"), multi: txn.open_db(Some("multi")).expect("open") }
        };
        if n_commit > 0 {
            verify_committed(&env, &committed, true);
        }
        // The reader `Op::Reader` keeps open, and what it must see.
        let mut reader: Option<(RoTxn<'_>, Model)> = None;
        let end = loop {
            let mut txn = env.begin_rw_txn().expect("begin_rw_txn");
            let mut model = committed.clone();
            let end = level(&mut txn, dbs, &mut input, &mut model, 0);
            match end {
                End::Commit | End::Reopen | End::Eof => match txn.commit() {
                    Ok(()) => committed = model,
                    Err(Error::MapFull) => {}
                    Err(e) => panic!("commit failed: {e:?}"),
                },
                End::Abort | End::Full => drop(txn),
            }
            n_commit += 1;
            if std::mem::take(&mut input.reader) {
                match reader.take() {
                    Some((txn, model)) => verify_reader(&txn, dbs, &model),
                    None => reader = Some((env.begin_ro_txn().expect("begin_ro_txn"), committed.clone())),
                }
            }
            if matches!(end, End::Reopen | End::Eof) {
                break end;
            }
            verify_committed(&env, &committed, n_commit.is_multiple_of(8));
        };
        if let Some((txn, model)) = reader.take() {
            verify_reader(&txn, dbs, &model);
        }
        drop(reader);
        if matches!(end, End::Eof) {
            verify_committed(&env, &committed, true);
            if crate::verbose() {
                eprintln!(
                    "ops: page size {page_size}, {n_commit} commits, {} + {} keys",
                    committed.plain.len(),
                    committed.multi.len()
                );
            }
            break;
        }
    }
}

/// A reader kept open across commits still sees its snapshot, `model`.
fn verify_reader(txn: &RoTxn<'_>, dbs: Dbs, model: &Model) {
    let got = read_model(txn.cursor(dbs.plain).expect("cursor"), txn.cursor(dbs.multi).expect("cursor"));
    compare(&got, model, "in a reader kept open across commits");
}

/// How the environment writes (from the header byte).
#[derive(Clone, Copy)]
struct Mode {
    write_map: bool,
    spill: bool,
}

fn open(path: &Path, page_size: usize, mode: Mode) -> Env {
    let geometry = Geometry {
        page_size: Some(page_size),
        size_lower: Some(0),
        size_now: Some(0),
        size_upper: Some(32 << 20),
        growth_step: Some(64 << 10),
        shrink_threshold: Some(128 << 10),
    };
    let b = Env::builder().write_map(mode.write_map);
    let b = if mode.spill { b.dirty_page_limit(1) } else { b };
    b.max_dbs(4).durability(Durability::UtterlyNoSync).geometry(geometry).open(path).expect("opening the environment")
}

fn verify_committed(env: &Env, model: &Model, check: bool) {
    let txn = env.begin_ro_txn().expect("begin_ro_txn");
    let plain = txn.open_db(Some("plain")).expect("open plain");
    let multi = txn.open_db(Some("multi")).expect("open multi");
    let got = read_model(txn.cursor(plain).expect("cursor"), txn.cursor(multi).expect("cursor"));
    compare(&got, model, "after a commit");
    txn.verify_table(plain).expect("verify plain");
    txn.verify_table(multi).expect("verify multi");
    drop(txn);
    if check {
        let r = env.check(&CheckOptions::default(), &mut |_| {}).expect("check");
        assert!(
            r.problem_count() == 0,
            "the check found problems after a commit: {:?}",
            &r.problems[..r.problems.len().min(5)]
        );
    }
}

fn read_model(mut plain: Cursor<'_>, mut multi: Cursor<'_>) -> Model {
    let mut m = Model::default();
    let mut r = plain.first().expect("first");
    while let Some((k, v)) = r {
        assert!(m.plain.insert(k.to_vec(), v.to_vec()).is_none(), "a key of plain seen twice");
        r = plain.next().expect("next");
    }
    let mut r = multi.first().expect("first");
    while let Some((k, v)) = r {
        assert!(m.multi.entry(k.to_vec()).or_default().insert(v.to_vec()), "a pair of multi seen twice");
        r = multi.next().expect("next");
    }
    m
}

fn compare(got: &Model, want: &Model, when: &str) {
    if got == want {
        return;
    }
    let diff_plain: Vec<_> = got
        .plain
        .iter()
        .filter(|(k, v)| want.plain.get(*k) != Some(v))
        .map(|(k, _)| k)
        .chain(want.plain.keys().filter(|k| !got.plain.contains_key(*k)))
        .take(5)
        .collect();
    let diff_multi: Vec<_> = got
        .multi
        .iter()
        .filter(|(k, v)| want.multi.get(*k) != Some(v))
        .map(|(k, _)| k)
        .chain(want.multi.keys().filter(|k| !got.multi.contains_key(*k)))
        .take(5)
        .collect();
    panic!(
        "{when}: the database differs from the model: plain {} vs {} keys (differing {diff_plain:02x?}), multi {} vs {} keys (differing {diff_multi:02x?})",
        got.plain.len(),
        want.plain.len(),
        got.multi.len(),
        want.multi.len()
    );
}

fn txn_view(txn: &RwTxn<'_>, dbs: Dbs) -> Model {
    read_model(txn.cursor(dbs.plain).expect("cursor"), txn.cursor(dbs.multi).expect("cursor"))
}

/// Result of one write: applied (the model changes), refused in an expected
/// way (the model stays), or `MapFull`.
enum W {
    Done,
    Refused,
    Full,
}

fn write_result<T>(r: rdbx::Result<T>, what: &str) -> (W, Option<T>) {
    match r {
        Ok(v) => (W::Done, Some(v)),
        Err(Error::BadValSize(_)) => (W::Refused, None),
        Err(Error::MapFull) => (W::Full, None),
        Err(e) => panic!("{what}: unexpected error {e:?}"),
    }
}

/// Runs operations in `txn` (at nesting `depth`) until the level ends.
fn level(txn: &mut RwTxn<'_>, dbs: Dbs, input: &mut Input<'_>, model: &mut Model, depth: usize) -> End {
    while let Some(op) = input.op() {
        let full = match op {
            Op::Begin if depth < MAX_DEPTH => {
                let mut child = txn.begin_nested_txn().expect("begin_nested_txn");
                let mut cm = model.clone();
                match level(&mut child, dbs, input, &mut cm, depth + 1) {
                    End::Commit => {
                        child.commit().expect("nested commit");
                        *model = cm;
                    }
                    End::Abort => child.abort(),
                    End::Full => {
                        child.abort();
                        return End::Full;
                    }
                    End::Eof | End::Reopen => {
                        drop(child);
                        let view = txn_view(txn, dbs);
                        compare(&view, model, "after dropping a nested transaction");
                        return End::Eof;
                    }
                }
                let view = txn_view(txn, dbs);
                compare(&view, model, "after a nested transaction");
                false
            }
            Op::Begin => false,
            Op::Commit => return End::Commit,
            Op::Abort => return End::Abort,
            Op::Reopen if depth == 0 => return End::Reopen,
            Op::Reopen => false,
            Op::Reader => {
                input.reader = true;
                false
            }
            op => apply(txn, dbs, op, model),
        };
        if full {
            return End::Full;
        }
    }
    End::Eof
}

/// Applies a write or read operation; true on `MapFull`.
fn apply(txn: &mut RwTxn<'_>, dbs: Dbs, op: Op, m: &mut Model) -> bool {
    match op {
        Op::Put { key, val, no_overwrite } => {
            let flags = if no_overwrite { PutFlags::NO_OVERWRITE } else { PutFlags::empty() };
            let r = txn.put(dbs.plain, &key, &val, flags);
            if no_overwrite && m.plain.contains_key(&key) {
                assert!(matches!(r, Err(Error::KeyExist)), "NO_OVERWRITE on a present key gave {r:?}");
                return false;
            }
            match write_result(r, "put").0 {
                W::Done => {
                    m.plain.insert(key, val);
                }
                W::Refused => {}
                W::Full => return true,
            }
        }
        Op::PutDup { key, val, no_dup } => {
            let flags = if no_dup { PutFlags::NO_DUP_DATA } else { PutFlags::empty() };
            let r = txn.put(dbs.multi, &key, &val, flags);
            if no_dup && m.multi.get(&key).is_some_and(|s| s.contains(&val)) {
                assert!(matches!(r, Err(Error::KeyExist)), "NO_DUP_DATA on a present pair gave {r:?}");
                return false;
            }
            match write_result(r, "put into multi").0 {
                W::Done => {
                    m.multi.entry(key).or_default().insert(val);
                }
                W::Refused => {}
                W::Full => return true,
            }
        }
        Op::Del { key, val } => {
            let present = match (&val, m.plain.get(&key)) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(v), Some(cur)) => v == cur,
            };
            let (w, r) = write_result(txn.del(dbs.plain, &key, val.as_deref()), "del");
            match w {
                W::Done => {
                    assert_eq!(r, Some(present), "del of {key:02x?} (value {val:02x?})");
                    if present {
                        m.plain.remove(&key);
                    }
                }
                W::Refused => {}
                W::Full => return true,
            }
        }
        Op::DelKey { key } => {
            let (w, r) = write_result(txn.del(dbs.multi, &key, None), "del from multi");
            match w {
                W::Done => {
                    assert_eq!(r, Some(m.multi.remove(&key).is_some()), "del of {key:02x?} from multi");
                }
                W::Refused => {}
                W::Full => return true,
            }
        }
        Op::DelDup { key, val } => {
            let (w, r) = write_result(txn.del(dbs.multi, &key, Some(&val)), "del-dup");
            match w {
                W::Done => {
                    let present = m.multi.get_mut(&key).is_some_and(|s| s.remove(&val));
                    if m.multi.get(&key).is_some_and(|s| s.is_empty()) {
                        m.multi.remove(&key);
                    }
                    assert_eq!(r, Some(present), "del-dup of {key:02x?}/{val:02x?}");
                }
                W::Refused => {}
                W::Full => return true,
            }
        }
        Op::Bulk { prefix, n, len } => {
            for i in 0..n {
                let key = format!("b{prefix:02x}{i:03}").into_bytes();
                let val: Vec<u8> = (0..len as usize % 48).map(|j| (j as u8) ^ i).collect();
                match write_result(txn.put(dbs.plain, &key, &val, PutFlags::empty()), "bulk put").0 {
                    W::Done => {
                        m.plain.insert(key, val);
                    }
                    W::Refused => {}
                    W::Full => return true,
                }
            }
        }
        Op::BulkDup { key, n, len } => {
            for i in 0..n {
                let mut val = format!("v{i:03}").into_bytes();
                val.resize(4 + len as usize, b'.');
                match write_result(txn.put(dbs.multi, &key, &val, PutFlags::empty()), "bulk put into multi").0 {
                    W::Done => {
                        m.multi.entry(key.clone()).or_default().insert(val);
                    }
                    W::Refused => {}
                    W::Full => return true,
                }
            }
        }
        Op::CursorDel { multi, n, every } if every > 0 => {
            let db = if multi { dbs.multi } else { dbs.plain };
            let order: Vec<(Vec<u8>, Vec<u8>)> = if multi {
                m.multi.iter().flat_map(|(k, s)| s.iter().map(move |v| (k.clone(), v.clone()))).collect()
            } else {
                m.plain.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
            };
            let own = |p: Option<(&[u8], &[u8])>| p.map(|(k, v)| (k.to_vec(), v.to_vec()));
            let mut c = txn.rw_cursor(db).expect("rw_cursor");
            let mut gone = Vec::new();
            let mut i = 0;
            let mut r = own(c.first().expect("rw_cursor first"));
            while let Some(p) = r {
                assert_eq!(Some(&p), order.get(i), "write cursor walk: record #{i}");
                if i % every as usize == 0 && gone.len() < n as usize {
                    match c.del() {
                        Ok(()) => gone.push(i),
                        Err(Error::MapFull) => return true,
                        Err(e) => panic!("cursor del in a walk: {e:?}"),
                    }
                }
                i += 1;
                r = own(c.next().expect("rw_cursor next"));
            }
            assert_eq!(i, order.len(), "write cursor walk: records walked");
            for i in gone {
                let (k, v) = &order[i];
                if multi {
                    let s = m.multi.get_mut(k).expect("walked key in the model");
                    s.remove(v);
                    if s.is_empty() {
                        m.multi.remove(k);
                    }
                } else {
                    m.plain.remove(k);
                }
            }
        }
        Op::CursorDel { multi, n, .. } => {
            let db = if multi { dbs.multi } else { dbs.plain };
            let mut c = txn.rw_cursor(db).expect("rw_cursor");
            let mut deleted = 0;
            let mut r = c.first().expect("rw_cursor first").is_some();
            while r && deleted < n {
                match c.del() {
                    Ok(()) => deleted += 1,
                    Err(Error::MapFull) => return true,
                    Err(e) => panic!("cursor del: {e:?}"),
                }
                r = c.get_current().map(|p| p.is_some()).unwrap_or(false);
            }
            for _ in 0..deleted {
                if multi {
                    let (k, s) = m.multi.iter_mut().next().expect("model has a record to delete");
                    let k = k.clone();
                    let v = s.iter().next().expect("values").clone();
                    s.remove(&v);
                    if s.is_empty() {
                        m.multi.remove(&k);
                    }
                } else {
                    m.plain.pop_first();
                }
            }
        }
        Op::Clear { multi } => {
            let db = if multi { dbs.multi } else { dbs.plain };
            match write_result(txn.clear_db(db), "clear_db").0 {
                W::Done if multi => m.multi.clear(),
                W::Done => m.plain.clear(),
                W::Refused => {}
                W::Full => return true,
            }
        }
        Op::Get { key } => {
            let got = txn.get(dbs.plain, &key).expect("get").map(<[u8]>::to_vec);
            assert_eq!(got.as_ref(), m.plain.get(&key), "get {key:02x?} from plain");
            let got = txn.get(dbs.multi, &key).expect("get").map(<[u8]>::to_vec);
            let want = m.multi.get(&key).and_then(|s| s.first());
            assert_eq!(got.as_ref(), want, "get {key:02x?} from multi");
            let mut c = txn.cursor(dbs.multi).expect("cursor");
            let n = match c.set(&key).expect("set") {
                Some(_) => c.count().expect("count"),
                None => 0,
            };
            assert_eq!(n as usize, m.multi.get(&key).map_or(0, BTreeSet::len), "count of {key:02x?}");
        }
        Op::DelRange { from, n } => {
            let keys: Vec<Vec<u8>> = m.plain.keys().skip(from as usize).take(n as usize).cloned().collect();
            for k in keys {
                match write_result(txn.del(dbs.plain, &k, None), "del range") {
                    (W::Done, r) => {
                        assert_eq!(r, Some(true), "del of present key {k:02x?}");
                        m.plain.remove(&k);
                    }
                    (W::Refused, _) => {}
                    (W::Full, _) => return true,
                }
            }
        }
        Op::Begin | Op::Commit | Op::Abort | Op::Reopen | Op::Reader => unreachable!("handled by the caller"),
    }
    false
}
