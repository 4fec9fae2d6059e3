//! Multimaps (DUP_SORT tables) between rdbx and the real libmdbx.
//!
//! Every flag combination of the value side — DUP_SORT, DUP_SORT|REVERSE_DUP,
//! DUP_SORT|DUP_FIXED, DUP_SORT|DUP_FIXED|INTEGER_DUP (4- and 8-byte values),
//! DUP_SORT|DUP_FIXED|REVERSE_DUP — with plain, INTEGER_KEY and REVERSE_KEY
//! keys (18 tables in one file), at page sizes 256, 4096 and 65536:
//!
//! * (a) rdbx writes (thousands of values on some keys so their nested trees
//!   get branch pages, 1..30 on most; single and whole-key deletes over several
//!   transactions; NO_DUP_DATA, APPEND_DUP, ALL_DUPS, CURRENT, put_multiple,
//!   nested transactions committed and aborted, an aborted transaction);
//!   libmdbx (`mdbx_env_chk` in a child process after every commit) finds no
//!   problem, reads every pair as the model has it, and its table statistics
//!   are rdbx's.
//! * (b) libmdbx writes the same kind of tables (every put/del result checked
//!   against the model, which so checks the model itself); rdbx reads every
//!   pair (forward, backward, next_dup/prev_dup/next_nodup/prev_nodup, count,
//!   get_both, get_both_range, set_lowerbound/set_upperbound, get_multiple) and
//!   has libmdbx's statistics.
//! * (c) writers alternate on one file (each side closes its environment
//!   before the other opens it): libmdbx, rdbx, libmdbx, rdbx, libmdbx.
//! * (d) cursor scripts (random sequences of positioning and stepping
//!   operations, including the edge cases: stepping past either end,
//!   unpositioned cursors, absent keys and values) run on the same file
//!   through libmdbx's `mdbx_cursor_get` and through rdbx, and must give the
//!   same results wherever the cursor stands on a pair. Differences in the
//!   states the spec leaves open (after a cursor ran off an end or a
//!   positioning op found nothing; `count` and NEXT_DUP/PREV_DUP on a fresh
//!   cursor; SET_LOWERBOUND/SET_UPPERBOUND without a value on a present key)
//!   are tolerated, counted and printed (see `script_differences`).
//!
//! libmdbx 0.14 (mdbx-sys 14.4) defects the tests work around: MDBX_ALLDUPS
//! puts at 256-byte pages can make later lookups of another key fail in the
//! same transaction (the libmdbx writer does a delete and a put instead, see
//! `MdbxOps::put`); MDBX_NEXT_MULTIPLE from an unpositioned cursor and
//! MDBX_GET_CURRENT after running off an end read stale memory (crash / SIGBUS;
//! see `run_script_mdbx`).
//!
//! Engine bugs found here have regression tests (`engine_bug_*`, now fixed);
//! RDBX_MULTIMAP_STRICT=0 leaves their operations out of the workloads
//! (they are in by default).
//!
//! The model is a `BTreeMap<key, BTreeSet<value>>` per table whose byte
//! strings are "sort keys": their lexicographic order is the table's order
//! (REVERSE: the bytes reversed; INTEGER: the native-endian unsigned integer
//! written big-endian).
//!
//! Run: `cargo test --release -p rdbx-tests --test multimap`.

// `u64::is_multiple_of` needs Rust 1.87; the workspace's rust-version is 1.80.
#![allow(clippy::manual_is_multiple_of)]

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};

use rdbx::{Cursor, Db, DbFlags, Env, Geometry, PutFlags, ReadTxn, RwTxn};
use rdbx_tests::engine::{figures, OracleCli};
use rdbx_tests::golden::StatFigures;
use rdbx_tests::oracle;
use rdbx_tests::rng::Rng;

fn cli() -> OracleCli {
    OracleCli::new(env!("CARGO_BIN_EXE_mdbx-oracle"))
}

const MIB: usize = 1 << 20;

// libmdbx error codes (rdbx's `Error::code` gives the same numbers).
const KEYEXIST: i32 = -30799;
const NOTFOUND: i32 = -30798;
const BAD_VALSIZE: i32 = -30781;
const KEYMISMATCH: i32 = -30418;

// Put flags (MDBX_put_flags_t).
const NO_OVERWRITE: u32 = 0x10;
const NO_DUP_DATA: u32 = 0x20;
const CURRENT: u32 = 0x40;
const ALL_DUPS: u32 = 0x80;
const APPEND: u32 = 0x20000;
const APPEND_DUP: u32 = 0x40000;

// ---------------------------------------------------------------------------
// Table kinds and orders

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyKind {
    Bytes,
    Int,
    Rev,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ValKind {
    /// DUP_SORT: variable-length values, lexicographic.
    Sorted,
    /// DUP_SORT|REVERSE_DUP.
    Rev,
    /// DUP_SORT|DUP_FIXED, 12-byte values.
    Fixed,
    /// DUP_SORT|DUP_FIXED|INTEGER_DUP, u32 values.
    Int4,
    /// DUP_SORT|DUP_FIXED|INTEGER_DUP, u64 values.
    Int8,
    /// DUP_SORT|DUP_FIXED|REVERSE_DUP, 10-byte values.
    FixedRev,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Kind {
    key: KeyKind,
    val: ValKind,
}

const KEY_KINDS: [KeyKind; 3] = [KeyKind::Bytes, KeyKind::Int, KeyKind::Rev];
const VAL_KINDS: [ValKind; 6] =
    [ValKind::Sorted, ValKind::Rev, ValKind::Fixed, ValKind::Int4, ValKind::Int8, ValKind::FixedRev];

impl Kind {
    fn all() -> Vec<Kind> {
        let mut v = Vec::new();
        for val in VAL_KINDS {
            for key in KEY_KINDS {
                v.push(Kind { key, val });
            }
        }
        v
    }

    fn flags(self) -> u32 {
        let k = match self.key {
            KeyKind::Bytes => 0,
            KeyKind::Int => 0x08,
            KeyKind::Rev => 0x02,
        };
        let v = match self.val {
            ValKind::Sorted => 0x04,
            ValKind::Rev => 0x44,
            ValKind::Fixed => 0x14,
            ValKind::Int4 | ValKind::Int8 => 0x34,
            ValKind::FixedRev => 0x54,
        };
        k | v
    }

    fn name(self) -> String {
        let k = match self.key {
            KeyKind::Bytes => "bytekey",
            KeyKind::Int => "intkey",
            KeyKind::Rev => "revkey",
        };
        let v = match self.val {
            ValKind::Sorted => "dupsort",
            ValKind::Rev => "dupsort-revdup",
            ValKind::Fixed => "dupfixed",
            ValKind::Int4 => "dupfixed-intdup4",
            ValKind::Int8 => "dupfixed-intdup8",
            ValKind::FixedRev => "dupfixed-revdup",
        };
        format!("{v}.{k}")
    }

    /// The value size of DUP_FIXED tables.
    fn fixed(self) -> Option<usize> {
        match self.val {
            ValKind::Fixed => Some(12),
            ValKind::Int4 => Some(4),
            ValKind::Int8 => Some(8),
            ValKind::FixedRev => Some(10),
            ValKind::Sorted | ValKind::Rev => None,
        }
    }

    /// Width of INTEGER_KEY keys.
    fn key_width(self) -> usize {
        if self.val == ValKind::Int4 {
            4
        } else {
            8
        }
    }
}

fn int_sk(b: &[u8]) -> Vec<u8> {
    match b.len() {
        4 => u32::from_ne_bytes(b.try_into().unwrap()).to_be_bytes().to_vec(),
        8 => u64::from_ne_bytes(b.try_into().unwrap()).to_be_bytes().to_vec(),
        n => panic!("integer of {n} bytes"),
    }
}

fn int_real(sk: &[u8]) -> Vec<u8> {
    match sk.len() {
        4 => u32::from_be_bytes(sk.try_into().unwrap()).to_ne_bytes().to_vec(),
        8 => u64::from_be_bytes(sk.try_into().unwrap()).to_ne_bytes().to_vec(),
        n => panic!("integer of {n} bytes"),
    }
}

fn rev(b: &[u8]) -> Vec<u8> {
    b.iter().rev().copied().collect()
}

fn key_sk(kind: Kind, k: &[u8]) -> Vec<u8> {
    match kind.key {
        KeyKind::Bytes => k.to_vec(),
        KeyKind::Rev => rev(k),
        KeyKind::Int => int_sk(k),
    }
}

fn key_real(kind: Kind, sk: &[u8]) -> Vec<u8> {
    match kind.key {
        KeyKind::Bytes => sk.to_vec(),
        KeyKind::Rev => rev(sk),
        KeyKind::Int => int_real(sk),
    }
}

fn val_sk(kind: Kind, v: &[u8]) -> Vec<u8> {
    match kind.val {
        ValKind::Sorted | ValKind::Fixed => v.to_vec(),
        ValKind::Rev | ValKind::FixedRev => rev(v),
        ValKind::Int4 | ValKind::Int8 => int_sk(v),
    }
}

fn val_real(kind: Kind, sk: &[u8]) -> Vec<u8> {
    match kind.val {
        ValKind::Sorted | ValKind::Fixed => sk.to_vec(),
        ValKind::Rev | ValKind::FixedRev => rev(sk),
        ValKind::Int4 | ValKind::Int8 => int_real(sk),
    }
}

// ---------------------------------------------------------------------------
// Sizes (docs/format.md, "Size limits")

#[derive(Clone, Copy, Debug)]
struct Sizes {
    /// Values of the big keys.
    heavy: usize,
    /// Number of keys with 1..30 values.
    light_keys: usize,
    /// Largest key of a DUP_SORT table.
    max_key: usize,
    /// Largest value of a DUP_SORT table.
    max_val: usize,
}

fn sizes(ps: usize, heavy: usize, light_keys: usize) -> Sizes {
    let space = ps - 20;
    let branch_nodemax = ((space - 10) / 2 - 2) & !1;
    let leaf_nodemax = ((space / 2) & !1) - 2;
    Sizes { heavy, light_keys, max_key: (branch_nodemax - 8).min(leaf_nodemax - 56), max_val: branch_nodemax - 8 }
}

/// Sizes of (a) and (b): the big keys' nested trees get branch pages at every
/// page size (at 64 KiB a nested leaf holds up to 16379 four-byte values).
fn full_sizes(ps: usize) -> Sizes {
    match ps {
        256 => sizes(ps, 1500, 60),
        4096 => sizes(ps, 6000, 150),
        _ => sizes(ps, 20000, 120),
    }
}

/// Values of a big key: `sz.heavy` for u32 values, half as many for the
/// larger values of the other kinds (still more than a nested leaf holds).
fn heavy_count(kind: Kind, sz: &Sizes) -> u64 {
    if kind.val == ValKind::Int4 {
        sz.heavy as u64
    } else {
        sz.heavy as u64 / 2
    }
}

// ---------------------------------------------------------------------------
// Keys and values

fn key_of(kind: Kind, id: u64, sz: &Sizes) -> Vec<u8> {
    match kind.key {
        KeyKind::Int => {
            let n = Rng::new(id).next_u64();
            let n = if id % 3 == 0 { n % 5000 } else { n };
            if kind.key_width() == 4 {
                (n as u32).to_ne_bytes().to_vec()
            } else {
                n.to_ne_bytes().to_vec()
            }
        }
        KeyKind::Bytes | KeyKind::Rev => {
            if id == 0 {
                return Vec::new();
            }
            if id == 1 {
                // The longest key a multimap accepts.
                return (0..sz.max_key).map(|i| b'a' + (i % 7) as u8).collect();
            }
            let mut r = Rng::new(id ^ 0x5eed);
            let len = r.range(1, 12);
            let mut k: Vec<u8> = (0..len).map(|_| b"abcxyz\x00\xff"[r.below(8) as usize]).collect();
            if kind.key == KeyKind::Rev {
                // Shared suffixes make the reverse order matter.
                let suffixes: [&[u8]; 4] = [b"", b".com", b".org", b"-x"];
                k.extend_from_slice(suffixes[r.below(4) as usize]);
            }
            k
        }
    }
}

/// The keys that get thousands of values (never equal to `key_of` keys).
fn heavy_key(kind: Kind, which: u8) -> Vec<u8> {
    match kind.key {
        KeyKind::Int if kind.key_width() == 4 => (4_000_000_000u32 + which as u32).to_ne_bytes().to_vec(),
        KeyKind::Int => (4_000_000_000_000u64 + which as u64).to_ne_bytes().to_vec(),
        KeyKind::Bytes => format!("heavy-{which}").into_bytes(),
        KeyKind::Rev => format!("{which}-yvaeh").into_bytes(),
    }
}

const SMALL_ALPHABET: &[u8] = b"abcd\x00\xfe";

fn rand_val(kind: Kind, rng: &mut Rng, sz: &Sizes) -> Vec<u8> {
    let pick = |n: usize, rng: &mut Rng| -> Vec<u8> {
        (0..n).map(|_| SMALL_ALPHABET[rng.below(SMALL_ALPHABET.len() as u64) as usize]).collect()
    };
    match kind.val {
        ValKind::Sorted | ValKind::Rev => {
            let len = if rng.chance(1, 30) {
                0
            } else if rng.chance(1, 80) {
                rng.range(sz.max_val / 2, sz.max_val)
            } else {
                rng.range(1, 24)
            };
            pick(len, rng)
        }
        ValKind::Fixed | ValKind::FixedRev => pick(kind.fixed().unwrap(), rng),
        ValKind::Int4 => {
            let n = if rng.chance(1, 2) { rng.below(1000) } else { rng.next_u64() };
            (n as u32).to_ne_bytes().to_vec()
        }
        ValKind::Int8 => {
            let n = if rng.chance(1, 2) { rng.below(1000) } else { rng.next_u64() };
            n.to_ne_bytes().to_vec()
        }
    }
}

/// Values that increase with `i` in the table's value order.
fn seq_val(kind: Kind, i: u64) -> Vec<u8> {
    match kind.val {
        ValKind::Sorted => format!("v{i:08}").into_bytes(),
        ValKind::Rev => rev(format!("v{i:08}").as_bytes()),
        ValKind::Fixed => format!("{i:012}").into_bytes(),
        ValKind::FixedRev => rev(format!("{i:010}").as_bytes()),
        ValKind::Int4 => (i as u32).to_ne_bytes().to_vec(),
        ValKind::Int8 => (i * 1_000_003).to_ne_bytes().to_vec(),
    }
}

fn hex(b: &[u8]) -> String {
    let mut s: String = b.iter().take(24).map(|x| format!("{x:02x}")).collect();
    if b.len() > 24 {
        s.push_str(&format!("..({} bytes)", b.len()));
    }
    if b.is_empty() {
        s.push_str("<empty>");
    }
    s
}

// ---------------------------------------------------------------------------
// The model

#[derive(Clone, Debug)]
struct Table {
    kind: Kind,
    name: String,
    /// Page size of the database (limits of probes).
    ps: usize,
    /// sort key -> sort values
    map: BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>,
}

impl Table {
    fn new(kind: Kind, ps: usize) -> Table {
        Table { kind, name: kind.name(), ps, map: BTreeMap::new() }
    }

    /// Limits of probes (no big-key counts).
    fn sizes(&self) -> Sizes {
        sizes(self.ps, 0, 0)
    }

    fn len(&self) -> usize {
        self.map.values().map(BTreeSet::len).sum()
    }

    fn values(&self, k: &[u8]) -> Option<&BTreeSet<Vec<u8>>> {
        self.map.get(&key_sk(self.kind, k))
    }

    /// Every pair in cursor order, as stored bytes.
    fn pairs(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::with_capacity(self.len());
        for (k, vs) in &self.map {
            let k = key_real(self.kind, k);
            for v in vs {
                out.push((k.clone(), val_real(self.kind, v)));
            }
        }
        out
    }

    fn keys(&self) -> Vec<Vec<u8>> {
        self.map.keys().map(|k| key_real(self.kind, k)).collect()
    }

    fn real(&self, ksk: &[u8], vsk: &[u8]) -> (Vec<u8>, Vec<u8>) {
        (key_real(self.kind, ksk), val_real(self.kind, vsk))
    }

    /// First pair `>= (k, v)` (`v = None`: the first value of the first key `>= k`).
    fn lower(&self, k: &[u8], v: Option<&[u8]>) -> Option<(Vec<u8>, Vec<u8>)> {
        let ksk = key_sk(self.kind, k);
        if let (Some(v), Some(vs)) = (v, self.map.get(&ksk)) {
            let vsk = val_sk(self.kind, v);
            if let Some(x) = vs.range(vsk..).next() {
                return Some(self.real(&ksk, x));
            }
            return self.first_after(&ksk);
        }
        let (k2, vs) = self.map.range(ksk..).next()?;
        Some(self.real(k2, vs.first().unwrap()))
    }

    /// First pair `> (k, v)`.
    fn upper(&self, k: &[u8], v: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        let ksk = key_sk(self.kind, k);
        let vsk = val_sk(self.kind, v);
        if let Some(vs) = self.map.get(&ksk) {
            if let Some(x) = vs.range((Bound::Excluded(vsk), Bound::Unbounded)).next() {
                return Some(self.real(&ksk, x));
            }
            return self.first_after(&ksk);
        }
        self.lower(k, None)
    }

    /// First value of the first key `> ksk`.
    fn first_after(&self, ksk: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        let (k2, vs) = self.map.range((Bound::Excluded(ksk.to_vec()), Bound::Unbounded)).next()?;
        Some(self.real(k2, vs.first().unwrap()))
    }
}

fn new_model(ps: usize) -> Vec<Table> {
    Kind::all().into_iter().map(|k| Table::new(k, ps)).collect()
}

/// A probe key: mostly absent keys of the table's kind (never the longest key).
fn probe_id(rng: &mut Rng) -> u64 {
    match rng.below(1000) {
        1 => 2,
        id => id,
    }
}

// ---------------------------------------------------------------------------
// Writers: the same operations through rdbx and through libmdbx

/// An operation that failed: the libmdbx error code and a description.
#[derive(Debug)]
struct Fail {
    code: i32,
    #[allow(dead_code)] // shown through Debug
    text: String,
}

trait Ops {
    fn put(&mut self, t: usize, key: &[u8], val: &[u8], flags: u32) -> Result<(), Fail>;
    /// DUP_FIXED: `packed` holds values of `size` bytes each.
    fn put_multiple(&mut self, t: usize, key: &[u8], packed: &[u8], size: usize, flags: u32) -> Result<usize, Fail>;
    fn del(&mut self, t: usize, key: &[u8], val: Option<&[u8]>) -> Result<bool, Fail>;
    /// Walks the table with one write cursor, deleting at the cursor (one
    /// value) each record `pick` selects; the records walked and deleted.
    fn prune(&mut self, t: usize, pick: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<(u64, u64), Fail>;
    /// The values stored under `key` now (for failure reports).
    fn values(&mut self, t: usize, key: &[u8]) -> Result<Vec<Vec<u8>>, String>;
}

fn rdbx_fail(e: rdbx::Error) -> Fail {
    Fail { code: e.code(), text: format!("{e:?}") }
}

struct RdbxOps<'a, 'e> {
    txn: &'a mut RwTxn<'e>,
    dbs: &'a [Db],
}

impl Ops for RdbxOps<'_, '_> {
    fn put(&mut self, t: usize, key: &[u8], val: &[u8], flags: u32) -> Result<(), Fail> {
        self.txn.put(self.dbs[t], key, val, PutFlags::from_bits_retain(flags)).map_err(rdbx_fail)
    }
    fn put_multiple(&mut self, t: usize, key: &[u8], packed: &[u8], size: usize, flags: u32) -> Result<usize, Fail> {
        self.txn.put_multiple(self.dbs[t], key, packed, size, PutFlags::from_bits_retain(flags)).map_err(rdbx_fail)
    }
    fn del(&mut self, t: usize, key: &[u8], val: Option<&[u8]>) -> Result<bool, Fail> {
        self.txn.del(self.dbs[t], key, val).map_err(rdbx_fail)
    }
    fn prune(&mut self, t: usize, pick: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<(u64, u64), Fail> {
        let mut c = self.txn.rw_cursor(self.dbs[t]).map_err(rdbx_fail)?;
        let (mut walked, mut deleted) = (0, 0);
        let mut at = c.first().map_err(rdbx_fail)?.map(|(k, v)| pick(k, v));
        while let Some(doomed) = at {
            walked += 1;
            if doomed {
                c.del().map_err(rdbx_fail)?;
                deleted += 1;
            }
            at = c.next().map_err(rdbx_fail)?.map(|(k, v)| pick(k, v));
        }
        Ok((walked, deleted))
    }
    fn values(&mut self, t: usize, key: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let mut c = self.txn.cursor(self.dbs[t]).map_err(|e| format!("{e:?}"))?;
        let mut out = Vec::new();
        let mut x = c.set(key).map_err(|e| format!("{e:?}"))?;
        while let Some((_, v)) = x {
            out.push(v.to_vec());
            x = c.next_dup().map_err(|e| format!("{e:?}"))?;
        }
        Ok(out)
    }
}

fn oracle_fail(e: String) -> Fail {
    Fail { code: oracle::error_code(&e).unwrap_or(i32::MIN), text: e }
}

struct MdbxOps<'a, 'e> {
    txn: &'a mut oracle::Txn<'e>,
    dbis: &'a [oracle::Dbi],
}

impl Ops for MdbxOps<'_, '_> {
    /// ALL_DUPS and CURRENT (which libmdbx turns into a delete of all values
    /// and an insert) are done as a whole-key delete and a put: with them,
    /// libmdbx 0.14 (mdbx-sys 14.4) at 256-byte pages sometimes fails to find
    /// another key of the table later in the same transaction (`mdbx_get`
    /// says NOTFOUND, a put adds a second node for the key) although the key
    /// is there and the committed file checks clean. The results are the same
    /// (see `plan_put`).
    fn put(&mut self, t: usize, key: &[u8], val: &[u8], flags: u32) -> Result<(), Fail> {
        let dbi = self.dbis[t];
        if flags & (ALL_DUPS | CURRENT) != 0 {
            let exists = self.txn.get(dbi, key).map_err(oracle_fail)?.is_some();
            if flags & CURRENT != 0 && !exists {
                return Err(Fail { code: NOTFOUND, text: "CURRENT on an absent key".into() });
            }
            if exists {
                self.txn.del(dbi, key, None).map_err(oracle_fail)?;
            }
            return self.txn.put(dbi, key, val, flags & !(ALL_DUPS | CURRENT)).map_err(oracle_fail);
        }
        self.txn.put(dbi, key, val, flags).map_err(oracle_fail)
    }
    /// The oracle has no MDBX_MULTIPLE: one put per value (the same result).
    fn put_multiple(&mut self, t: usize, key: &[u8], packed: &[u8], size: usize, flags: u32) -> Result<usize, Fail> {
        let mut n = 0;
        for v in packed.chunks_exact(size) {
            self.put(t, key, v, flags)?;
            n += 1;
        }
        Ok(n)
    }
    fn del(&mut self, t: usize, key: &[u8], val: Option<&[u8]>) -> Result<bool, Fail> {
        self.txn.del(self.dbis[t], key, val).map_err(oracle_fail)
    }
    fn prune(&mut self, t: usize, pick: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<(u64, u64), Fail> {
        self.txn.walk_delete(self.dbis[t], pick).map_err(oracle_fail)
    }
    fn values(&mut self, t: usize, key: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let all = self.txn.read_all(self.dbis[t])?;
        Ok(all.into_iter().filter(|(k, _)| k == key).map(|(_, v)| v).collect())
    }
}

/// What a put must return (libmdbx's behaviour, spec B.9 and libmdbx's
/// `cursor_put`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    Ok,
    Code(i32),
    /// APPEND_DUP of a value the key already has, when the key has one value:
    /// libmdbx answers SUCCESS for a plain node and EKEYMISMATCH for a
    /// sub-page or nested tree holding that single value.
    OkOrMismatch,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    None,
    Insert,
    ReplaceAll,
}

fn plan_put(t: &Table, k: &[u8], v: &[u8], flags: u32) -> (Want, Effect) {
    let set = t.values(k);
    let vsk = val_sk(t.kind, v);
    if flags & CURRENT != 0 {
        // A multimap key's values are all replaced (spec B.9, observed).
        return match set {
            None => (Want::Code(NOTFOUND), Effect::None),
            Some(_) => (Want::Ok, Effect::ReplaceAll),
        };
    }
    if flags & APPEND != 0 {
        if let Some(last) = t.map.keys().last() {
            if key_sk(t.kind, k) < *last {
                return (Want::Code(KEYMISMATCH), Effect::None);
            }
        }
    }
    if flags & NO_OVERWRITE != 0 && set.is_some() {
        return (Want::Code(KEYEXIST), Effect::None);
    }
    if flags & ALL_DUPS != 0 {
        return (Want::Ok, Effect::ReplaceAll);
    }
    let Some(s) = set else { return (Want::Ok, Effect::Insert) };
    if s.contains(&vsk) {
        if flags & NO_DUP_DATA != 0 {
            (Want::Code(KEYEXIST), Effect::None)
        } else if flags & APPEND_DUP != 0 {
            (if s.len() >= 2 { Want::Code(KEYMISMATCH) } else { Want::OkOrMismatch }, Effect::None)
        } else {
            (Want::Ok, Effect::None)
        }
    } else if flags & APPEND_DUP != 0 && *s.last().unwrap() > vsk {
        (Want::Code(KEYMISMATCH), Effect::None)
    } else {
        (Want::Ok, Effect::Insert)
    }
}

/// Applies operations through a writer, checks each result against the model,
/// and updates the model.
struct Drv<'a> {
    m: &'a mut [Table],
    ops: &'a mut dyn Ops,
    who: &'a str,
    count: u64,
    /// The writer is rdbx: operations that hit a known engine bug are left
    /// out unless RDBX_MULTIMAP_STRICT is set (see `known_engine_bug`).
    rdbx: bool,
}

/// The workloads include the operations of the engine bugs found earlier
/// (fixed; RDBX_MULTIMAP_STRICT=0 leaves them out to bisect a regression).
fn strict() -> bool {
    std::env::var_os("RDBX_MULTIMAP_STRICT").is_none_or(|v| v != "0")
}

/// Engine bugs an rdbx put used to hit (each has its regression test below,
/// `engine_bug_*`; the third,
/// `engine_bug_emptying_a_multimap_by_value_deletes`, is left out in
/// `Drv::del`).
fn known_engine_bug(t: &Table, k: &[u8], v: &[u8], flags: u32) -> Option<&'static str> {
    let ksk = key_sk(t.kind, k);
    let last = t.map.keys().last();
    if flags & APPEND != 0 && t.map.contains_key(&ksk) && last.is_some_and(|l| *l > ksk) {
        return Some("engine_bug_append_of_a_present_key_before_the_last");
    }
    let present = t.map.get(&ksk).filter(|s| s.len() >= 2 && s.contains(&val_sk(t.kind, v)));
    if flags & APPEND_DUP != 0 && flags & NO_DUP_DATA == 0 && present.is_some() {
        return Some("engine_bug_append_dup_of_a_present_value");
    }
    None
}

impl<'a> Drv<'a> {
    fn new(m: &'a mut [Table], ops: &'a mut dyn Ops, who: &'a str) -> Drv<'a> {
        let rdbx = who.starts_with("rdbx");
        Drv { m, ops, who, count: 0, rdbx }
    }

    /// A failure report: the operation's context, the model's state of the
    /// key, and what the writer stores under the key now.
    fn describe(&mut self, t: usize, k: &[u8], v: Option<&[u8]>) -> String {
        let now = match self.ops.values(t, k) {
            Ok(vals) => {
                let shown: Vec<String> = vals.iter().take(6).map(|v| hex(v)).collect();
                format!(
                    "the writer now stores {} values under the key: [{}{}]",
                    vals.len(),
                    shown.join(", "),
                    if vals.len() > 6 { ", .." } else { "" }
                )
            }
            Err(e) => format!("reading the key back failed: {e}"),
        };
        let tb = &self.m[t];
        let last_key = tb.map.keys().last().is_some_and(|l| *l == key_sk(tb.kind, k));
        let state = match tb.values(k) {
            None => "the key is absent".to_string(),
            Some(s) => format!(
                "the key has {} values (first {}, last {}){}",
                s.len(),
                hex(&val_real(tb.kind, s.first().unwrap())),
                hex(&val_real(tb.kind, s.last().unwrap())),
                match v {
                    Some(v) if s.contains(&val_sk(tb.kind, v)) => ", the value is present",
                    Some(_) => ", the value is absent",
                    None => "",
                }
            ),
        };
        format!(
            "{}: table {} (flags {:#x}), op #{}, key {}{}: in the model {state}{}; table has {} pairs; {now}",
            self.who,
            tb.name,
            tb.kind.flags(),
            self.count,
            hex(k),
            v.map(|v| format!(", value {}", hex(v))).unwrap_or_default(),
            if last_key { " (the table's last key)" } else { "" },
            tb.len()
        )
    }

    fn apply(&mut self, t: usize, k: &[u8], v: &[u8], eff: Effect) {
        let kind = self.m[t].kind;
        let map = &mut self.m[t].map;
        match eff {
            Effect::None => {}
            Effect::Insert => {
                map.entry(key_sk(kind, k)).or_default().insert(val_sk(kind, v));
            }
            Effect::ReplaceAll => {
                map.insert(key_sk(kind, k), BTreeSet::from([val_sk(kind, v)]));
            }
        }
    }

    fn put(&mut self, t: usize, k: &[u8], v: &[u8], flags: u32) {
        self.count += 1;
        if self.rdbx && !strict() && known_engine_bug(&self.m[t], k, v, flags).is_some() {
            return;
        }
        let (want, eff) = plan_put(&self.m[t], k, v, flags);
        let got = self.ops.put(t, k, v, flags);
        let ok = match (&got, want) {
            (Ok(()), Want::Ok | Want::OkOrMismatch) => true,
            (Err(f), Want::Code(c)) => f.code == c,
            (Err(f), Want::OkOrMismatch) => f.code == KEYMISMATCH,
            _ => false,
        };
        if !ok {
            panic!("{}: put(flags {flags:#x}) returned {got:?}, expected {want:?}", self.describe(t, k, Some(v)));
        }
        self.apply(t, k, v, eff);
    }

    /// A put that must fail with `code` and change nothing.
    fn put_fails(&mut self, t: usize, k: &[u8], v: &[u8], flags: u32, code: i32) {
        self.count += 1;
        match self.ops.put(t, k, v, flags) {
            Err(f) if f.code == code => {}
            other => panic!(
                "{}: put(flags {flags:#x}) returned {other:?}, expected error {code}",
                self.describe(t, k, Some(v))
            ),
        }
    }

    /// Several values at once (DUP_FIXED tables); each must be accepted.
    fn put_multiple(&mut self, t: usize, k: &[u8], vals: &[Vec<u8>], flags: u32) {
        self.count += 1;
        let kind = self.m[t].kind;
        let size = kind.fixed().expect("put_multiple on a DUP_FIXED table");
        assert!(flags & !APPEND_DUP == 0, "put_multiple with flags {flags:#x}");
        // Values must append (APPEND_DUP) or are added when absent.
        let mut last = self.m[t].values(k).and_then(|s| s.last().cloned());
        for v in vals {
            let vsk = val_sk(kind, v);
            if flags & APPEND_DUP != 0 {
                assert!(last.as_ref().is_none_or(|l| *l < vsk), "put_multiple(APPEND_DUP) of unsorted values");
            }
            last = Some(vsk);
        }
        let packed: Vec<u8> = vals.concat();
        match self.ops.put_multiple(t, k, &packed, size, flags) {
            Ok(n) if n == vals.len() => {}
            other => panic!(
                "{}: put_multiple of {} values (flags {flags:#x}) returned {other:?}",
                self.describe(t, k, None),
                vals.len()
            ),
        }
        for v in vals {
            self.apply(t, k, v, Effect::Insert);
        }
    }

    fn del(&mut self, t: usize, k: &[u8], v: Option<&[u8]>) {
        self.count += 1;
        let kind = self.m[t].kind;
        // Known engine bug (engine_bug_emptying_a_multimap_by_value_deletes).
        let empties = v
            .is_some_and(|v| self.m[t].len() == 1 && self.m[t].values(k).is_some_and(|s| s.contains(&val_sk(kind, v))));
        if self.rdbx && !strict() && empties {
            return;
        }
        let ksk = key_sk(kind, k);
        let want = match (v, self.m[t].map.get(&ksk)) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(v), Some(s)) => s.contains(&val_sk(kind, v)),
        };
        match self.ops.del(t, k, v) {
            Ok(got) if got == want => {}
            other => panic!("{}: del returned {other:?}, expected Ok({want})", self.describe(t, k, v)),
        }
        if want {
            match v {
                None => {
                    self.m[t].map.remove(&ksk);
                }
                Some(v) => {
                    let s = self.m[t].map.get_mut(&ksk).unwrap();
                    s.remove(&val_sk(kind, v));
                    if s.is_empty() {
                        self.m[t].map.remove(&ksk);
                    }
                }
            }
        }
    }

    /// Walks table `t` with a write cursor deleting the `i`-th record
    /// walked when `doomed(i)`: the walk must visit the model's records in
    /// its order, and the model loses the same ones.
    fn prune(&mut self, t: usize, doomed: fn(usize) -> bool) {
        self.count += 1;
        let kind = self.m[t].kind;
        let want: Vec<(Vec<u8>, Vec<u8>)> = self.m[t]
            .map
            .iter()
            .flat_map(|(k, s)| s.iter().map(move |v| (key_real(kind, k), val_real(kind, v))))
            .collect();
        let mut walked = Vec::new();
        let got = self.ops.prune(t, &mut |k, v| {
            walked.push((k.to_vec(), v.to_vec()));
            doomed(walked.len() - 1)
        });
        let gone = (0..want.len()).filter(|&i| doomed(i)).count() as u64;
        match got {
            Ok((w, d)) if w == want.len() as u64 && d == gone => {}
            other => panic!(
                "{}: a pruning walk returned {other:?}, expected Ok(({}, {gone}))",
                self.describe(t, &[], None),
                want.len()
            ),
        }
        if let Some(i) = (0..want.len()).find(|&i| walked[i] != want[i]) {
            panic!(
                "{}: the pruning walk's record #{i} is {} = {}, the model's {} = {}",
                self.describe(t, &walked[i].0, Some(&walked[i].1)),
                hex(&walked[i].0),
                hex(&walked[i].1),
                hex(&want[i].0),
                hex(&want[i].1)
            );
        }
        for (i, (k, v)) in want.iter().enumerate() {
            if doomed(i) {
                let ksk = key_sk(kind, k);
                let s = self.m[t].map.get_mut(&ksk).unwrap();
                s.remove(&val_sk(kind, v));
                if s.is_empty() {
                    self.m[t].map.remove(&ksk);
                }
            }
        }
    }

    /// A key of the table picked at random (`None` if the table is empty).
    fn some_key(&self, t: usize, rng: &mut Rng) -> Option<Vec<u8>> {
        let tb = &self.m[t];
        if tb.map.is_empty() {
            return None;
        }
        let i = rng.below(tb.map.len() as u64) as usize;
        tb.map.keys().nth(i).map(|k| key_real(tb.kind, k))
    }

    fn some_value(&self, t: usize, k: &[u8], rng: &mut Rng) -> Option<Vec<u8>> {
        let tb = &self.m[t];
        let s = tb.values(k)?;
        let i = rng.below(s.len() as u64) as usize;
        s.iter().nth(i).map(|v| val_real(tb.kind, v))
    }

    fn sorted_values(&self, t: usize, k: &[u8]) -> Vec<Vec<u8>> {
        let tb = &self.m[t];
        tb.values(k).map(|s| s.iter().map(|v| val_real(tb.kind, v)).collect()).unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------
// Workload phases (one write transaction each)

type Phase = fn(&mut Drv<'_>, &mut Rng, &Sizes);

/// Big keys, 1..30 values on many keys, the longest key, the empty key, the
/// largest values.
fn phase_fill(d: &mut Drv<'_>, rng: &mut Rng, sz: &Sizes) {
    for t in 0..d.m.len() {
        let kind = d.m[t].kind;
        // Heavy key 0: increasing values with APPEND_DUP (put_multiple in
        // sorted chunks on DUP_FIXED tables).
        let k0 = heavy_key(kind, 0);
        let vals: Vec<Vec<u8>> = (0..heavy_count(kind, sz)).map(|i| seq_val(kind, 3 * i + 1)).collect();
        if kind.fixed().is_some() {
            for chunk in vals.chunks(777) {
                d.put_multiple(t, &k0, chunk, APPEND_DUP);
            }
        } else {
            for v in &vals {
                d.put(t, &k0, v, APPEND_DUP);
            }
        }
        // Heavy key 1: random order, some values twice, some NO_DUP_DATA.
        let k1 = heavy_key(kind, 1);
        for _ in 0..heavy_count(kind, sz) / 2 {
            let v = if rng.chance(1, 3) {
                rand_val(kind, rng, sz)
            } else {
                seq_val(kind, rng.below(2 * heavy_count(kind, sz)))
            };
            d.put(t, &k1, &v, if rng.chance(1, 4) { NO_DUP_DATA } else { 0 });
        }
        // Light keys.
        for id in 2..2 + sz.light_keys as u64 {
            let k = key_of(kind, id, sz);
            for _ in 0..rng.range(1, 30) {
                let v = rand_val(kind, rng, sz);
                d.put(t, &k, &v, if rng.chance(1, 5) { NO_DUP_DATA } else { 0 });
            }
        }
        if kind.key != KeyKind::Int {
            // The empty key and the longest key.
            for id in [0, 1] {
                let k = key_of(kind, id, sz);
                for _ in 0..rng.range(1, 40) {
                    let v = rand_val(kind, rng, sz);
                    d.put(t, &k, &v, 0);
                }
            }
        }
        if kind.fixed().is_none() {
            // The largest values: alone on a key (too big for a plain node
            // next to most keys), and several on one key.
            let k = key_of(kind, 7001, sz);
            d.put(t, &k, &vec![b'm'; sz.max_val], 0);
            let k = key_of(kind, 7002, sz);
            for i in 0..4u8 {
                let mut v = vec![b'n'; sz.max_val - i as usize];
                v[0] = b'0' + i;
                d.put(t, &k, &v, 0);
            }
            // The empty value.
            let k = key_of(kind, 7003, sz);
            d.put(t, &k, b"", 0);
            d.put(t, &k, b"x", 0);
        }
    }
}

/// Single values and whole keys deleted; operations that must fail.
fn phase_delete(d: &mut Drv<'_>, rng: &mut Rng, sz: &Sizes) {
    for t in 0..d.m.len() {
        let kind = d.m[t].kind;
        let k0 = heavy_key(kind, 0);
        let vals = d.sorted_values(t, &k0);
        // Every third value, then a run from the middle: nested leaves empty,
        // merge, and the nested root may collapse.
        for v in vals.iter().step_by(3) {
            d.del(t, &k0, Some(v));
        }
        let n = vals.len();
        for v in &vals[n / 3..n / 3 + n / 4] {
            d.del(t, &k0, Some(v));
        }
        // A whole big key: its nested tree is freed.
        d.del(t, &heavy_key(kind, 1), None);
        // Light keys.
        let keys: Vec<Vec<u8>> = d.m[t].keys();
        for k in keys {
            if k == k0 {
                continue;
            }
            match rng.below(12) {
                0..=3 => {
                    let v = d.some_value(t, &k, rng).unwrap();
                    d.del(t, &k, Some(&v));
                }
                4 => d.del(t, &k, None),
                5 => {
                    let v = rand_val(kind, rng, sz);
                    d.del(t, &k, Some(&v));
                }
                6 => {
                    // Every value, one by one.
                    for v in d.sorted_values(t, &k) {
                        d.del(t, &k, Some(&v));
                    }
                }
                _ => {}
            }
        }
        d.del(t, &key_of(kind, 999_999, sz), None);
        d.del(t, &key_of(kind, 999_998, sz), Some(&seq_val(kind, 1)));

        // Operations that fail and change nothing.
        let k = d.some_key(t, rng).unwrap();
        let v = d.some_value(t, &k, rng).unwrap();
        d.put(t, &k, &v, NO_DUP_DATA); // KEYEXIST
        d.put(t, &k, &v, 0); // present: SUCCESS, nothing changes
        d.put(t, &k, &rand_val(kind, rng, sz), NO_OVERWRITE); // KEYEXIST
        d.put(t, &k0, &seq_val(kind, 0), APPEND_DUP); // smaller than the last value: EKEYMISMATCH
        if let Some(f) = kind.fixed() {
            d.put_fails(t, &k, &vec![7u8; f + 1], 0, BAD_VALSIZE);
            d.put_fails(t, &k, &vec![7u8; f - 1], 0, BAD_VALSIZE);
        } else {
            d.put_fails(t, &k, &vec![b'z'; sz.max_val + 1], 0, BAD_VALSIZE);
        }
        match kind.key {
            KeyKind::Int => {
                let other = if kind.key_width() == 4 { 8 } else { 4 };
                d.put_fails(t, &vec![1u8; other], &seq_val(kind, 5), 0, BAD_VALSIZE);
                d.put_fails(t, &[1u8; 3], &seq_val(kind, 5), 0, BAD_VALSIZE);
            }
            _ => d.put_fails(t, &vec![b'q'; sz.max_key + 1], &seq_val(kind, 5), 0, BAD_VALSIZE),
        }
    }
}

/// A write cursor walks each table deleting 2 records in 3 at the cursor:
/// single values, values of sub-pages (in place, and shrinking them out of
/// their nodes) and of nested trees, whose leaves run under a quarter
/// full and merge under the cursor.
fn phase_prune(d: &mut Drv<'_>, _rng: &mut Rng, _sz: &Sizes) {
    for t in 0..d.m.len() {
        d.prune(t, |i| i % 3 != 1);
    }
}

/// ALL_DUPS and CURRENT replace every value of a key; single values grow into
/// sub-pages and nested trees; APPEND of a new last key.
fn phase_replace(d: &mut Drv<'_>, rng: &mut Rng, sz: &Sizes) {
    for t in 0..d.m.len() {
        let kind = d.m[t].kind;
        let k0 = heavy_key(kind, 0);
        let keys: Vec<Vec<u8>> = d.m[t].keys();
        let mut grown = 0;
        for k in keys {
            if k == k0 {
                continue;
            }
            match rng.below(10) {
                0 => d.put(t, &k, &rand_val(kind, rng, sz), ALL_DUPS),
                1 => d.put(t, &k, &rand_val(kind, rng, sz), CURRENT),
                2 if grown < 3 => {
                    // Past the sub-page limit: a nested tree.
                    grown += 1;
                    for i in 0..300 {
                        let v =
                            if kind.fixed().is_some() { seq_val(kind, 50_000 + i) } else { rand_val(kind, rng, sz) };
                        d.put(t, &k, &v, 0);
                    }
                }
                3 => {
                    let v = rand_val(kind, rng, sz);
                    d.put(t, &k, &v, NO_DUP_DATA);
                }
                _ => {}
            }
        }
        d.put(t, &key_of(kind, 999_997, sz), &rand_val(kind, rng, sz), CURRENT); // absent key: NOTFOUND
        d.put(t, &key_of(kind, 999_996, sz), &rand_val(kind, rng, sz), NO_OVERWRITE); // absent: inserted
                                                                                      // A big key built and replaced by one value within the transaction.
        let k2 = heavy_key(kind, 2);
        let vals: Vec<Vec<u8>> = (0..heavy_count(kind, sz) / 3).map(|i| seq_val(kind, 7 * i)).collect();
        if kind.fixed().is_some() {
            d.put_multiple(t, &k2, &vals, 0);
        } else {
            for v in &vals {
                d.put(t, &k2, v, 0);
            }
        }
        d.put(t, &k2, &seq_val(kind, 3), ALL_DUPS);
        // More values on the first big key, at both ends and in between.
        for i in 0..heavy_count(kind, sz) / 4 {
            d.put(t, &k0, &seq_val(kind, 3 * heavy_count(kind, sz) + 10 + i), APPEND_DUP);
            d.put(t, &k0, &seq_val(kind, 3 * i + 2), 0);
        }
        // APPEND of a key after the last one, and of a smaller one.
        let last = d.m[t].map.keys().last().cloned().unwrap();
        let after = match kind.key {
            KeyKind::Int => {
                let n = u64::from_be_bytes({
                    let mut b = [0u8; 8];
                    b[8 - last.len()..].copy_from_slice(&last);
                    b
                });
                let next = n + 1;
                if kind.key_width() == 4 {
                    (next <= u32::MAX as u64).then(|| (next as u32).to_ne_bytes().to_vec())
                } else {
                    Some(next.to_ne_bytes().to_vec())
                }
            }
            _ if last.len() < sz.max_key => {
                let mut sk = last.clone();
                sk.push(0x01);
                Some(key_real(kind, &sk))
            }
            _ => None,
        };
        if let Some(k) = after {
            d.put(t, &k, &seq_val(kind, 11), APPEND);
            d.put(t, &k, &seq_val(kind, 12), APPEND | APPEND_DUP);
        }
        // A key before the last one: EKEYMISMATCH, whether the key is absent or
        // present (libmdbx compares with the last key before anything else).
        let absent_small = key_of(kind, 999_995, sz);
        if key_sk(kind, &absent_small) < *d.m[t].map.keys().last().unwrap() {
            d.put(t, &absent_small, &seq_val(kind, 11), APPEND);
        }
        let first = d.m[t].keys()[0].clone();
        d.put(t, &first, &seq_val(kind, 13), APPEND);
    }
}

/// The first big key loses every value one by one; then it is built again.
fn phase_drain(d: &mut Drv<'_>, rng: &mut Rng, sz: &Sizes) {
    for t in 0..d.m.len() {
        let kind = d.m[t].kind;
        let k0 = heavy_key(kind, 0);
        let mut vals = d.sorted_values(t, &k0);
        rng.shuffle(&mut vals);
        for v in &vals {
            d.del(t, &k0, Some(v));
        }
        assert!(d.m[t].values(&k0).is_none());
        for i in 0..heavy_count(kind, sz) {
            d.put(t, &k0, &seq_val(kind, 2 * i), if i % 2 == 0 { 0 } else { NO_DUP_DATA });
        }
    }
    random_ops(d, rng, sz, 400);
}

/// Random operations on random tables.
fn random_ops(d: &mut Drv<'_>, rng: &mut Rng, sz: &Sizes, n: usize) {
    for _ in 0..n {
        let t = rng.below(d.m.len() as u64) as usize;
        let kind = d.m[t].kind;
        let k = match rng.below(10) {
            0..=4 => d.some_key(t, rng).unwrap_or_else(|| key_of(kind, 2, sz)),
            5 => heavy_key(kind, rng.below(3) as u8),
            _ => key_of(kind, 2 + rng.below(2 * sz.light_keys as u64), sz),
        };
        let heavy = d.m[t].values(&k).is_some_and(|s| s.len() > 1000);
        // The first big key keeps its nested tree (whole-key deletes and
        // replacements happen to the others).
        let keep = k == heavy_key(kind, 0);
        match rng.below(100) {
            0..=39 => {
                let flags = match rng.below(20) {
                    0..=11 => 0,
                    12..=14 => NO_DUP_DATA,
                    15..=17 => APPEND_DUP,
                    18 if !heavy && !keep => ALL_DUPS,
                    19 if !heavy && !keep => CURRENT,
                    _ => 0,
                };
                let v = rand_val(kind, rng, sz);
                d.put(t, &k, &v, flags);
            }
            40..=49 => {
                let many = rng.range(50, 400);
                let base = rng.below(1 << 20);
                if kind.fixed().is_some() && rng.chance(1, 2) {
                    let vals: Vec<Vec<u8>> = (0..many as u64).map(|i| seq_val(kind, base + 5 * i)).collect();
                    d.put_multiple(t, &k, &vals, 0);
                } else {
                    for _ in 0..many {
                        let v = rand_val(kind, rng, sz);
                        d.put(t, &k, &v, 0);
                    }
                }
            }
            50..=74 => {
                let v = d.some_value(t, &k, rng).unwrap_or_else(|| rand_val(kind, rng, sz));
                d.del(t, &k, Some(&v));
            }
            75..=81 if !keep => d.del(t, &k, None),
            82..=89 if !keep => {
                let vals = d.sorted_values(t, &k);
                for v in vals.iter().skip(rng.below(2) as usize).step_by(2) {
                    d.del(t, &k, Some(v));
                }
            }
            _ => {
                // A value after the key's last one.
                let last = d.sorted_values(t, &k).pop();
                let v = match (kind.val, last) {
                    (ValKind::Sorted, Some(mut l)) if l.len() < sz.max_val => {
                        l.push(b'+');
                        l
                    }
                    (ValKind::Rev, Some(l)) if l.len() < sz.max_val => [b"+".as_slice(), &l].concat(),
                    _ => rand_val(kind, rng, sz),
                };
                d.put(t, &k, &v, APPEND_DUP);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// rdbx side

fn rdbx_open(path: &Path, ps: usize) -> Env {
    Env::builder()
        .max_dbs(32)
        .no_sub_dir(true)
        .geometry(Geometry { page_size: Some(ps), size_upper: Some(2048 * MIB), ..Default::default() })
        .open(path)
        .unwrap_or_else(|e| panic!("rdbx open {path:?} (page size {ps}): {e:?}"))
}

/// Opens (creating) every table of the model; returns the handles.
fn rdbx_tables(env: &Env, model: &[Table]) -> Vec<Db> {
    let mut txn = env.begin_rw_txn().unwrap();
    let dbs = model
        .iter()
        .map(|t| {
            txn.create_db(Some(&t.name), DbFlags::from_bits_retain(t.kind.flags()))
                .unwrap_or_else(|e| panic!("rdbx create_db {}: {e:?}", t.name))
        })
        .collect();
    txn.commit().unwrap();
    dbs
}

type Kv = Option<(Vec<u8>, Vec<u8>)>;
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn own(r: rdbx::Result<Option<(&[u8], &[u8])>>) -> Result<Kv, String> {
    r.map(|o| o.map(|(k, v)| (k.to_vec(), v.to_vec()))).map_err(|e| format!("{e:?}"))
}

fn show(kv: &Kv) -> String {
    match kv {
        None => "None".into(),
        Some((k, v)) => format!("({}, {})", hex(k), hex(v)),
    }
}

/// Checks one table of rdbx against the model; returns the problems found.
/// `full`: besides walks, entries and the structural check, every key's
/// values through set/count/next_dup/prev_dup/first_dup/last_dup/get (and
/// get_multiple on DUP_FIXED tables), next_nodup/prev_nodup walks, and
/// sampled get_both/get_both_range/set_range/set_lowerbound/set_upperbound.
fn check_table<R: ReadTxn>(r: &R, db: Db, t: &Table, full: bool, seed: u64) -> Vec<String> {
    let mut p = Vec::new();
    let name = &t.name;
    macro_rules! problem {
        ($($arg:tt)*) => {{
            if p.len() < 12 {
                p.push(format!("table {name}: {}", format!($($arg)*)));
            }
        }};
    }
    let want = t.pairs();
    let walk = |forward: bool| -> Result<Pairs, String> {
        let mut c = r.cursor(db).map_err(|e| format!("cursor: {e:?}"))?;
        let mut out = Vec::new();
        let mut x = own(if forward { c.first() } else { c.last() })?;
        while let Some(kv) = x {
            out.push(kv);
            if out.len() > want.len() + 1 {
                break;
            }
            x = own(if forward { c.next() } else { c.prev() })?;
        }
        if !forward {
            out.reverse();
        }
        Ok(out)
    };
    for forward in [true, false] {
        match walk(forward) {
            Ok(got) => {
                let what = if forward { "forward walk (first/next)" } else { "backward walk (last/prev)" };
                if let Some(d) = rdbx_tests::model::diff_records(what, &want, &got) {
                    problem!("{d}");
                }
            }
            Err(e) => problem!("walk: {e}"),
        }
    }
    match r.db_stat(db) {
        Ok(st) if st.entries == want.len() as u64 => {}
        other => problem!("db_stat: {other:?}, the model has {} pairs", want.len()),
    }
    if let Err(e) = r.verify_table(db) {
        problem!("verify_table: {e:?}");
    }
    if !full || !p.is_empty() {
        return p;
    }
    let mut c = r.cursor(db).unwrap();
    let fixed = t.kind.fixed();
    let mut nodup_fwd = Vec::new();
    for (ksk, vs) in &t.map {
        let k = key_real(t.kind, ksk);
        let vals: Vec<Vec<u8>> = vs.iter().map(|v| val_real(t.kind, v)).collect();
        let first = Some((k.clone(), vals[0].clone()));
        let last = Some((k.clone(), vals[vals.len() - 1].clone()));
        nodup_fwd.push(first.clone());
        let got = own(c.set(&k));
        if got.as_ref() != Ok(&first) {
            problem!("set({}) -> {got:?}, want {}", hex(&k), show(&first));
            continue;
        }
        match c.count() {
            Ok(n) if n == vals.len() as u64 => {}
            other => problem!("count at {} -> {other:?}, want {}", hex(&k), vals.len()),
        }
        match r.get(db, &k).map(|o| o.map(<[u8]>::to_vec)) {
            Ok(Some(v)) if v == vals[0] => {}
            other => problem!("get({}) -> {other:?}, want the first value {}", hex(&k), hex(&vals[0])),
        }
        let mut dups = vec![vals[0].clone()];
        loop {
            match own(c.next_dup()) {
                Ok(Some((gk, gv))) if gk == k && dups.len() <= vals.len() => dups.push(gv),
                Ok(None) => break,
                other => {
                    problem!("next_dup at {} after {} values -> {other:?}", hex(&k), dups.len());
                    break;
                }
            }
        }
        if dups != vals {
            problem!("next_dup walk of {} gave {} values, the model has {}", hex(&k), dups.len(), vals.len());
            continue;
        }
        // next_dup at the last value keeps the position.
        let cur = own(c.get_current());
        if cur.as_ref() != Ok(&last) {
            problem!("get_current after next_dup ran off {} -> {cur:?}, want {}", hex(&k), show(&last));
        }
        let mut back = vec![vals[vals.len() - 1].clone()];
        loop {
            match own(c.prev_dup()) {
                Ok(Some((gk, gv))) if gk == k && back.len() <= vals.len() => back.push(gv),
                Ok(None) => break,
                other => {
                    problem!("prev_dup at {} after {} values -> {other:?}", hex(&k), back.len());
                    break;
                }
            }
        }
        back.reverse();
        if back != vals {
            problem!("prev_dup walk of {} gave {} values, the model has {}", hex(&k), back.len(), vals.len());
        }
        let got = own(c.last_dup());
        if got.as_ref() != Ok(&last) {
            problem!("last_dup at {} -> {got:?}, want {}", hex(&k), show(&last));
        }
        let got = own(c.first_dup());
        if got.as_ref() != Ok(&first) {
            problem!("first_dup at {} -> {got:?}, want {}", hex(&k), show(&first));
        }
        if let Some(size) = fixed {
            // get_multiple from the first value, then next_multiple.
            let mut all = Vec::new();
            let mut chunks = 0;
            let mut m = c.get_multiple().map(|o| o.map(<[u8]>::to_vec));
            loop {
                match m {
                    Ok(Some(b)) if !b.is_empty() && b.len() % size == 0 && all.len() < vals.len() * size => {
                        all.extend_from_slice(&b);
                        chunks += 1;
                        // The cursor stands on the chunk's last value.
                        let cur = own(c.get_current());
                        let want_cur = Some((k.clone(), b[b.len() - size..].to_vec()));
                        if cur.as_ref() != Ok(&want_cur) {
                            problem!("get_current after get/next_multiple chunk {chunks} of {} -> {cur:?}", hex(&k));
                        }
                    }
                    Ok(None) => break,
                    other => {
                        problem!("get/next_multiple chunk {} of {} -> {other:?}", chunks + 1, hex(&k));
                        break;
                    }
                }
                m = c.next_multiple().map(|o| o.map(<[u8]>::to_vec));
            }
            if all != vals.concat() {
                problem!(
                    "get_multiple/next_multiple of {} gave {} bytes in {chunks} chunks, want {} values of {size} bytes",
                    hex(&k),
                    all.len(),
                    vals.len()
                );
            }
        }
    }
    // next_nodup / prev_nodup walks.
    let mut c = r.cursor(db).unwrap();
    let mut got = Vec::new();
    let mut x = own(c.first());
    while let Ok(Some(kv)) = &x {
        got.push(Some(kv.clone()));
        if got.len() > nodup_fwd.len() {
            break;
        }
        x = own(c.next_nodup());
    }
    if got != nodup_fwd || x.is_err() {
        problem!("first/next_nodup walk: {} keys ({x:?} at the end), the model has {}", got.len(), nodup_fwd.len());
    }
    let nodup_back: Vec<Kv> = t.map.iter().rev().map(|(k, vs)| Some(t.real(k, vs.last().unwrap()))).collect();
    let mut got = Vec::new();
    let mut x = own(c.last());
    while let Ok(Some(kv)) = &x {
        got.push(Some(kv.clone()));
        if got.len() > nodup_back.len() {
            break;
        }
        x = own(c.prev_nodup());
    }
    if got != nodup_back || x.is_err() {
        problem!("last/prev_nodup walk: {} keys ({x:?} at the end), the model has {}", got.len(), nodup_back.len());
    }
    // Sampled point operations.
    let mut rng = Rng::new(seed);
    let sz = t.sizes();
    let keys = t.keys();
    for _ in 0..400 {
        let k = match rng.below(4) {
            0 | 1 if !keys.is_empty() => keys[rng.below(keys.len() as u64) as usize].clone(),
            _ => key_of(t.kind, probe_id(&mut rng), &sz),
        };
        let v = match (t.values(&k), rng.below(3)) {
            (Some(vs), 0 | 1) => val_real(t.kind, vs.iter().nth(rng.below(vs.len() as u64) as usize).unwrap()),
            _ => rand_val(t.kind, &mut rng, &sz),
        };
        let present = t.values(&k).is_some_and(|vs| vs.contains(&val_sk(t.kind, &v)));
        let want = present.then(|| (k.clone(), v.clone()));
        let got = own(c.get_both(&k, &v));
        if got.as_ref() != Ok(&want) {
            problem!("get_both({}, {}) -> {got:?}, want {}", hex(&k), hex(&v), show(&want));
        }
        let want = t.lower(&k, Some(&v)).filter(|(wk, _)| *wk == k);
        let got = own(c.get_both_range(&k, &v));
        if got.as_ref() != Ok(&want) {
            problem!("get_both_range({}, {}) -> {got:?}, want {}", hex(&k), hex(&v), show(&want));
        }
        let want = t.lower(&k, None);
        let got = own(c.set_range(&k));
        if got.as_ref() != Ok(&want) {
            problem!("set_range({}) -> {got:?}, want {}", hex(&k), show(&want));
        }
        let want = t.lower(&k, Some(&v));
        let exact = present;
        match c.set_lowerbound(&k, Some(&v)) {
            Ok(Some((e, (gk, gv)))) if want.as_ref() == Some(&(gk.to_vec(), gv.to_vec())) && e == exact => {}
            Ok(None) if want.is_none() => {}
            other => problem!(
                "set_lowerbound({}, {}) -> {:?}, want {} (exact {exact})",
                hex(&k),
                hex(&v),
                other.map(|o| o.map(|(e, (a, b))| (e, hex(a), hex(b)))),
                show(&want)
            ),
        }
        let want = t.upper(&k, &v);
        let got = own(c.set_upperbound(&k, Some(&v)));
        if got.as_ref() != Ok(&want) {
            problem!("set_upperbound({}, {}) -> {got:?}, want {}", hex(&k), hex(&v), show(&want));
        }
        // Without a value: the first key >= k (exact when equal), and the
        // first key > k.
        let want = t.lower(&k, None);
        let exact = t.values(&k).is_some();
        match c.set_lowerbound(&k, None) {
            Ok(Some((e, (gk, gv)))) if want.as_ref() == Some(&(gk.to_vec(), gv.to_vec())) && e == exact => {}
            Ok(None) if want.is_none() => {}
            other => problem!(
                "set_lowerbound({}, None) -> {:?}, want {} (exact {exact})",
                hex(&k),
                other.map(|o| o.map(|(e, (a, b))| (e, hex(a), hex(b)))),
                show(&want)
            ),
        }
        let want = t.first_after(&key_sk(t.kind, &k));
        let got = own(c.set_upperbound(&k, None));
        if got.as_ref() != Ok(&want) {
            problem!("set_upperbound({}, None) -> {got:?}, want {}", hex(&k), show(&want));
        }
    }
    p
}

/// Every table of rdbx against the model (panics with all problems found).
fn rdbx_verify_tables<R: ReadTxn>(r: &R, dbs: &[Db], model: &[Table], full: bool, what: &str) {
    let mut problems = Vec::new();
    for (i, t) in model.iter().enumerate() {
        problems.extend(check_table(r, dbs[i], t, full, i as u64 + 17));
    }
    assert!(problems.is_empty(), "{what}: rdbx differs from the model:\n{}", problems.join("\n"));
}

fn rdbx_verify(env: &Env, dbs: &[Db], model: &[Table], full: bool, what: &str) {
    let txn = env.begin_ro_txn().unwrap_or_else(|e| panic!("{what}: begin_ro_txn: {e:?}"));
    rdbx_verify_tables(&txn, dbs, model, full, what);
}

fn rdbx_stats(env: &Env, dbs: &[Db], model: &[Table]) -> BTreeMap<Option<Vec<u8>>, StatFigures> {
    let txn = env.begin_ro_txn().unwrap();
    let mut out = BTreeMap::new();
    out.insert(None, figures(&txn.db_stat(Db::MAIN).unwrap()));
    for (i, t) in model.iter().enumerate() {
        out.insert(Some(t.name.clone().into_bytes()), figures(&txn.db_stat(dbs[i]).unwrap()));
    }
    out
}

/// One rdbx write transaction running `f` over the model.
fn rdbx_txn(env: &Env, dbs: &[Db], model: &mut [Table], what: &str, f: impl FnOnce(&mut Drv<'_>)) {
    let mut txn = env.begin_rw_txn().unwrap_or_else(|e| panic!("{what}: begin_rw_txn: {e:?}"));
    {
        let mut ops = RdbxOps { txn: &mut txn, dbs };
        let who = format!("rdbx, {what}");
        let mut d = Drv::new(model, &mut ops, &who);
        f(&mut d);
    }
    txn.commit().unwrap_or_else(|e| panic!("{what}: rdbx commit: {e:?}"));
}

/// Nested transactions at depths 1..=3, each committed, aborted or dropped at
/// random; a model per level. Checks every level's view before it ends and the
/// parent's view after.
fn nested(txn: &mut RwTxn<'_>, dbs: &[Db], model: &mut Vec<Table>, rng: &mut Rng, sz: &Sizes, depth: usize) -> usize {
    {
        let mut ops = RdbxOps { txn: &mut *txn, dbs };
        let who = format!("rdbx nested txn depth {depth}");
        let mut d = Drv::new(model, &mut ops, &who);
        random_ops(&mut d, rng, sz, 40);
    }
    let mut children = 0;
    if depth < 3 {
        for i in 0..2 {
            let mut child_model = model.clone();
            let how = rng.below(3);
            {
                let mut child = txn.begin_nested_txn().unwrap_or_else(|e| panic!("begin_nested_txn: {e:?}"));
                children += 1 + nested(&mut child, dbs, &mut child_model, rng, sz, depth + 1);
                rdbx_verify_tables(&*child, dbs, &child_model, false, &format!("nested depth {} #{i}", depth + 1));
                match how {
                    0 => child.commit().unwrap_or_else(|e| panic!("nested commit at depth {}: {e:?}", depth + 1)),
                    1 => child.abort(),
                    _ => drop(child),
                }
            }
            if how == 0 {
                *model = child_model;
            }
            let what =
                format!("depth {depth} after its child #{i} was {}", ["committed", "aborted", "dropped"][how as usize]);
            rdbx_verify_tables(&*txn, dbs, model, false, &what);
        }
    }
    children
}

// ---------------------------------------------------------------------------
// libmdbx side

fn oracle_opts(ps: usize) -> oracle::EnvOptions {
    oracle::EnvOptions {
        no_sub_dir: Some(true),
        page_size: Some(ps),
        durability: oracle::Durability::SafeNoSync,
        geometry: oracle::Geometry { upper: Some(2048 * MIB), ..Default::default() },
        ..Default::default()
    }
}

/// libmdbx (this process) reads every table and must match the model.
fn oracle_verify(env: &oracle::Env, model: &[Table], what: &str) {
    let txn = env.begin_ro().unwrap();
    let mut problems = Vec::new();
    for t in model {
        let dbi = txn.open_table(Some(t.name.as_bytes())).unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = txn.read_all(dbi).unwrap_or_else(|e| panic!("{what}: {e}"));
        if let Some(d) = rdbx_tests::model::diff_records(&format!("table {}", t.name), &t.pairs(), &got) {
            problems.push(d);
        }
    }
    assert!(problems.is_empty(), "{what}: libmdbx reads something else than the model:\n{}", problems.join("\n"));
}

/// One libmdbx write session (this process): opens the file, creates the
/// tables, runs `f` in one write transaction per call of `txn_fns`, closes.
fn oracle_session(
    path: &Path,
    ps: usize,
    model: &mut [Table],
    what: &str,
    phases: &[(&str, Phase)],
    rng: &mut Rng,
    sz: &Sizes,
) {
    let env = oracle::Env::open(path, &oracle_opts(ps)).unwrap_or_else(|e| panic!("{what}: {e}"));
    if model.iter().any(|t| !t.map.is_empty()) {
        oracle_verify(&env, model, &format!("{what}: before writing"));
    }
    let dbis: Vec<oracle::Dbi> = {
        let mut txn = env.begin_rw().unwrap();
        let d = model.iter().map(|t| txn.create_table(Some(t.name.as_bytes()), t.kind.flags()).unwrap()).collect();
        txn.commit().unwrap();
        d
    };
    for (name, phase) in phases {
        let mut txn = env.begin_rw().unwrap();
        {
            let mut ops = MdbxOps { txn: &mut txn, dbis: &dbis };
            let who = format!("libmdbx, {what}, {name}");
            let mut d = Drv::new(model, &mut ops, &who);
            phase(&mut d, rng, sz);
        }
        txn.commit().unwrap_or_else(|e| panic!("{what}: {name}: libmdbx commit: {e}"));
    }
    oracle_verify(&env, model, &format!("{what}: after writing"));
    env.close().unwrap();
}

/// `mdbx_env_chk` in a child process: no problem.
fn libmdbx_chk(path: &Path, what: &str) {
    if let Err(e) = cli().chk(path) {
        panic!("{what}: {e}");
    }
}

/// libmdbx (child process) reads every pair: equal to the model.
fn libmdbx_dump_verify(path: &Path, model: &[Table], what: &str) {
    let secs = cli().dump(path).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut problems = Vec::new();
    for t in model {
        let Some(s) = secs.iter().find(|s| s.name.as_deref() == Some(t.name.as_bytes())) else {
            problems.push(format!("table {} missing from libmdbx's dump", t.name));
            continue;
        };
        if s.flags != t.kind.flags() {
            problems.push(format!("table {}: libmdbx sees flags {:#x}, want {:#x}", t.name, s.flags, t.kind.flags()));
        }
        if let Some(d) = rdbx_tests::model::diff_records(&format!("table {}", t.name), &t.pairs(), &s.records) {
            problems.push(d);
        }
    }
    assert!(problems.is_empty(), "{what}: libmdbx reads something else than the model:\n{}", problems.join("\n"));
}

/// Table statistics of libmdbx (child process) and rdbx are equal.
fn compare_stats(path: &Path, rdbx: &BTreeMap<Option<Vec<u8>>, StatFigures>, what: &str) {
    let lib = cli().stat(path).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut problems = Vec::new();
    for (name, st) in rdbx {
        let n = name.as_deref().map(String::from_utf8_lossy).unwrap_or("<main>".into());
        match lib.get(name) {
            Some(l) if l == st => {}
            other => problems.push(format!("table {n}: rdbx {st:?}, libmdbx {other:?}")),
        }
    }
    assert!(problems.is_empty(), "{what}: statistics differ:\n{}", problems.join("\n"));
}

/// libmdbx's `mdbx_dbi_dupsort_depthmask` of every table (this process; the
/// file must not be open in rdbx): bit 0 = a key with one plain value, bit 1 =
/// a sub-page (or a one-page nested tree), bit h = a nested tree of height h.
fn depth_masks(path: &Path, model: &[Table]) -> BTreeMap<String, u32> {
    let env = raw::Env::open_ro(path).unwrap();
    let txn = env.begin_ro().unwrap();
    model.iter().map(|t| (t.name.clone(), txn.depthmask(t.name.as_bytes()).unwrap())).collect()
}

// ---------------------------------------------------------------------------
// (d) Cursor scripts through libmdbx's mdbx_cursor_get and through rdbx

/// libmdbx read-only access with cursors (the oracle has no cursor API).
mod raw {
    use std::ffi::CString;
    use std::marker::PhantomData;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::ptr;

    use mdbx_sys as ffi;

    pub struct Env(*mut ffi::MDBX_env);

    impl Env {
        pub fn open_ro(path: &Path) -> Result<Env, i32> {
            let c = CString::new(path.as_os_str().as_bytes()).unwrap();
            let mut env: *mut ffi::MDBX_env = ptr::null_mut();
            // SAFETY: out-pointer to a local; the env is closed by Drop.
            let rc = unsafe { ffi::mdbx_env_create(&mut env) };
            if rc != 0 {
                return Err(rc);
            }
            let me = Env(env);
            let mut flags = ffi::MDBX_RDONLY;
            if path.is_file() {
                flags |= ffi::MDBX_NOSUBDIR;
            }
            // SAFETY: a live, not yet opened env; the path is NUL-terminated.
            let rc = unsafe {
                ffi::mdbx_setup_debug(ffi::MDBX_LOG_WARN, ffi::MDBX_DBG_DONTCHANGE, None);
                let rc = ffi::mdbx_env_set_option(me.0, ffi::MDBX_opt_max_db, 64);
                if rc != 0 {
                    rc
                } else {
                    ffi::mdbx_env_open(me.0, c.as_ptr(), flags, 0o644)
                }
            };
            if rc != 0 {
                return Err(rc);
            }
            Ok(me)
        }

        pub fn begin_ro(&self) -> Result<Txn<'_>, i32> {
            let mut txn: *mut ffi::MDBX_txn = ptr::null_mut();
            // SAFETY: live env, out-pointer to a local.
            let rc = unsafe {
                ffi::mdbx_txn_begin_ex(self.0, ptr::null_mut(), ffi::MDBX_TXN_RDONLY, &mut txn, ptr::null_mut())
            };
            if rc != 0 {
                return Err(rc);
            }
            Ok(Txn { txn, _env: PhantomData })
        }
    }

    impl Drop for Env {
        fn drop(&mut self) {
            // SAFETY: live env, closed once.
            unsafe {
                ffi::mdbx_env_close_ex(self.0, false);
            }
        }
    }

    pub struct Txn<'e> {
        txn: *mut ffi::MDBX_txn,
        _env: PhantomData<&'e Env>,
    }

    impl Txn<'_> {
        pub fn cursor(&self, name: &[u8]) -> Result<Cursor<'_>, i32> {
            let n = ffi::MDBX_val { iov_base: name.as_ptr() as *mut libc::c_void, iov_len: name.len() };
            let mut dbi: ffi::MDBX_dbi = 0;
            // SAFETY: live txn; `n` describes a live slice.
            let rc = unsafe { ffi::mdbx_dbi_open2(self.txn, &n, ffi::MDBX_DB_ACCEDE, &mut dbi) };
            if rc != 0 {
                return Err(rc);
            }
            let mut c: *mut ffi::MDBX_cursor = ptr::null_mut();
            // SAFETY: live txn and dbi, out-pointer to a local.
            let rc = unsafe { ffi::mdbx_cursor_open(self.txn, dbi, &mut c) };
            if rc != 0 {
                return Err(rc);
            }
            Ok(Cursor { c, _txn: PhantomData })
        }
    }

    impl Txn<'_> {
        pub fn depthmask(&self, name: &[u8]) -> Result<u32, i32> {
            let n = ffi::MDBX_val { iov_base: name.as_ptr() as *mut libc::c_void, iov_len: name.len() };
            let mut dbi: ffi::MDBX_dbi = 0;
            let mut mask = 0u32;
            // SAFETY: live txn; `n` describes a live slice; out-pointers to locals.
            let rc = unsafe {
                let rc = ffi::mdbx_dbi_open2(self.txn, &n, ffi::MDBX_DB_ACCEDE, &mut dbi);
                if rc != 0 {
                    rc
                } else {
                    ffi::mdbx_dbi_dupsort_depthmask(self.txn, dbi, &mut mask)
                }
            };
            if rc != 0 {
                return Err(rc);
            }
            Ok(mask)
        }
    }

    impl Drop for Txn<'_> {
        fn drop(&mut self) {
            // SAFETY: live txn, ended once (its cursors are closed before: they borrow it).
            unsafe {
                ffi::mdbx_txn_abort_ex(self.txn, ptr::null_mut());
            }
        }
    }

    pub struct Cursor<'t> {
        c: *mut ffi::MDBX_cursor,
        _txn: PhantomData<&'t Txn<'t>>,
    }

    fn to_vec(v: &ffi::MDBX_val) -> Vec<u8> {
        if v.iov_base.is_null() || v.iov_len == 0 {
            Vec::new()
        } else {
            // SAFETY: libmdbx returned a pointer into the map (or a live
            // input slice), valid until the next cursor operation.
            unsafe { std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len).to_vec() }
        }
    }

    impl Cursor<'_> {
        /// `mdbx_cursor_get(op)`; `val = None` passes a null data pointer.
        /// Returns the code and the key and data after the call.
        pub fn get(
            &mut self,
            op: ffi::MDBX_cursor_op,
            key: Option<&[u8]>,
            val: Option<&[u8]>,
        ) -> (i32, Vec<u8>, Vec<u8>) {
            let mk = |b: Option<&[u8]>| match b {
                Some(b) => ffi::MDBX_val { iov_base: b.as_ptr() as *mut libc::c_void, iov_len: b.len() },
                None => ffi::MDBX_val { iov_base: ptr::null_mut(), iov_len: 0 },
            };
            let mut k = mk(key);
            let mut v = mk(val);
            // SAFETY: live cursor; k/v describe live slices or are empty.
            let rc = unsafe { ffi::mdbx_cursor_get(self.c, &mut k, &mut v, op) };
            (rc, to_vec(&k), to_vec(&v))
        }

        pub fn count(&self) -> (i32, u64) {
            let mut n: usize = 0;
            // SAFETY: live cursor, out-pointer to a local.
            let rc = unsafe { ffi::mdbx_cursor_count(self.c, &mut n) };
            (rc, n as u64)
        }
    }

    impl Drop for Cursor<'_> {
        fn drop(&mut self) {
            // SAFETY: live cursor, closed once.
            unsafe { ffi::mdbx_cursor_close(self.c) }
        }
    }
}

#[derive(Clone, Debug)]
enum COp {
    First,
    Last,
    Next,
    Prev,
    NextDup,
    PrevDup,
    NextNodup,
    PrevNodup,
    FirstDup,
    LastDup,
    Current,
    Count,
    Set(Vec<u8>),
    SetRange(Vec<u8>),
    GetBoth(Vec<u8>, Vec<u8>),
    GetBothRange(Vec<u8>, Vec<u8>),
    Lower(Vec<u8>, Option<Vec<u8>>),
    Upper(Vec<u8>, Option<Vec<u8>>),
    GetMultiple,
    NextMultiple,
}

impl COp {
    fn label(&self) -> &'static str {
        match self {
            COp::First => "first",
            COp::Last => "last",
            COp::Next => "next",
            COp::Prev => "prev",
            COp::NextDup => "next_dup",
            COp::PrevDup => "prev_dup",
            COp::NextNodup => "next_nodup",
            COp::PrevNodup => "prev_nodup",
            COp::FirstDup => "first_dup",
            COp::LastDup => "last_dup",
            COp::Current => "get_current",
            COp::Count => "count",
            COp::Set(_) => "set",
            COp::SetRange(_) => "set_range",
            COp::GetBoth(..) => "get_both",
            COp::GetBothRange(..) => "get_both_range",
            COp::Lower(_, Some(_)) => "set_lowerbound(k, v)",
            COp::Lower(_, None) => "set_lowerbound(k, None)",
            COp::Upper(_, Some(_)) => "set_upperbound(k, v)",
            COp::Upper(_, None) => "set_upperbound(k, None)",
            COp::GetMultiple => "get_multiple",
            COp::NextMultiple => "next_multiple",
        }
    }

    fn show(&self) -> String {
        match self {
            COp::Set(k) | COp::SetRange(k) => format!("{}({})", self.label(), hex(k)),
            COp::GetBoth(k, v) | COp::GetBothRange(k, v) | COp::Lower(k, Some(v)) | COp::Upper(k, Some(v)) => {
                format!("{}({}, {})", self.label(), hex(k), hex(v))
            }
            COp::Lower(k, None) | COp::Upper(k, None) => format!("{}({}, None)", self.label(), hex(k)),
            _ => self.label().to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum COut {
    Pair(Vec<u8>, Vec<u8>),
    /// set_lowerbound: (exact, key, value).
    Bound(bool, Vec<u8>, Vec<u8>),
    NotFound,
    Count(u64),
    Multi(Vec<u8>),
    Err(i32),
    /// next_multiple not issued: the previous result was not a multiple read.
    Skipped,
}

impl COut {
    fn show(&self) -> String {
        match self {
            COut::Pair(k, v) => format!("({}, {})", hex(k), hex(v)),
            COut::Bound(e, k, v) => format!("({}, {}) exact={e}", hex(k), hex(v)),
            COut::NotFound => "NOTFOUND".into(),
            COut::Count(n) => format!("count {n}"),
            COut::Multi(b) => format!("{} bytes", b.len()),
            COut::Err(c) => format!("error {c} ({})", oracle::strerror(*c)),
            COut::Skipped => "skipped".into(),
        }
    }
}

fn gen_scripts(t: &Table, n: usize, seed: u64) -> Vec<Vec<COp>> {
    let mut rng = Rng::new(seed);
    let sz = t.sizes();
    let keys = t.keys();
    let fixed = t.kind.fixed().is_some();
    let probe_key = |rng: &mut Rng| -> Vec<u8> {
        match rng.below(10) {
            0..=5 if !keys.is_empty() => keys[rng.below(keys.len() as u64) as usize].clone(),
            6 if !keys.is_empty() => keys[0].clone(),
            7 if !keys.is_empty() => keys[keys.len() - 1].clone(),
            _ => key_of(t.kind, probe_id(rng), &sz),
        }
    };
    let probe_val = |k: &[u8], rng: &mut Rng| -> Vec<u8> {
        match (t.values(k), rng.below(10)) {
            (Some(vs), 0..=4) => val_real(t.kind, vs.iter().nth(rng.below(vs.len() as u64) as usize).unwrap()),
            (Some(vs), 5) => val_real(t.kind, vs.first().unwrap()),
            (Some(vs), 6) => val_real(t.kind, vs.last().unwrap()),
            _ => rand_val(t.kind, rng, &sz),
        }
    };
    let mut out = Vec::new();
    for _ in 0..n {
        let len = rng.range(1, 9);
        let mut s = Vec::new();
        for i in 0..len {
            let positioning = i == 0 && rng.chance(3, 4) || rng.chance(1, 6);
            let op = if positioning {
                let k = probe_key(&mut rng);
                match rng.below(9) {
                    0 => COp::First,
                    1 => COp::Last,
                    2 => COp::Set(k),
                    3 => COp::SetRange(k),
                    4 => {
                        let v = probe_val(&k, &mut rng);
                        COp::GetBoth(k, v)
                    }
                    5 => {
                        let v = probe_val(&k, &mut rng);
                        COp::GetBothRange(k, v)
                    }
                    6 => {
                        let v = probe_val(&k, &mut rng);
                        COp::Lower(k, rng.chance(3, 4).then_some(v))
                    }
                    _ => {
                        let v = probe_val(&k, &mut rng);
                        COp::Upper(k, rng.chance(3, 4).then_some(v))
                    }
                }
            } else {
                match rng.below(if fixed { 14 } else { 12 }) {
                    0 | 1 => COp::Next,
                    2 | 3 => COp::Prev,
                    4 => COp::NextDup,
                    5 => COp::PrevDup,
                    6 => COp::NextNodup,
                    7 => COp::PrevNodup,
                    8 => COp::FirstDup,
                    9 => COp::LastDup,
                    10 => COp::Current,
                    11 => COp::Count,
                    12 => COp::GetMultiple,
                    _ => COp::NextMultiple,
                }
            };
            s.push(op);
        }
        out.push(s);
    }
    out
}

fn run_script_rdbx(c: &mut Cursor<'_>, script: &[COp]) -> Vec<COut> {
    let mut last_multi = false;
    let mut out = Vec::new();
    for op in script {
        let r = match op {
            COp::NextMultiple if !last_multi => COut::Skipped,
            op => run_op_rdbx(c, op),
        };
        last_multi = matches!(r, COut::Multi(_));
        out.push(r);
    }
    out
}

fn run_op_rdbx(c: &mut Cursor<'_>, op: &COp) -> COut {
    let pair = |r: rdbx::Result<Option<(&[u8], &[u8])>>| match r {
        Ok(Some((k, v))) => COut::Pair(k.to_vec(), v.to_vec()),
        Ok(None) => COut::NotFound,
        Err(e) => COut::Err(e.code()),
    };
    let multi = |r: rdbx::Result<Option<&[u8]>>| match r {
        Ok(Some(b)) => COut::Multi(b.to_vec()),
        Ok(None) => COut::NotFound,
        Err(e) => COut::Err(e.code()),
    };
    match op {
        COp::First => pair(c.first()),
        COp::Last => pair(c.last()),
        COp::Next => pair(c.next()),
        COp::Prev => pair(c.prev()),
        COp::NextDup => pair(c.next_dup()),
        COp::PrevDup => pair(c.prev_dup()),
        COp::NextNodup => pair(c.next_nodup()),
        COp::PrevNodup => pair(c.prev_nodup()),
        COp::FirstDup => pair(c.first_dup()),
        COp::LastDup => pair(c.last_dup()),
        COp::Current => pair(c.get_current()),
        COp::Count => match c.count() {
            Ok(n) => COut::Count(n),
            Err(e) => COut::Err(e.code()),
        },
        COp::Set(k) => pair(c.set(k)),
        COp::SetRange(k) => pair(c.set_range(k)),
        COp::GetBoth(k, v) => pair(c.get_both(k, v)),
        COp::GetBothRange(k, v) => pair(c.get_both_range(k, v)),
        COp::Lower(k, v) => match c.set_lowerbound(k, v.as_deref()) {
            Ok(Some((e, (k, v)))) => COut::Bound(e, k.to_vec(), v.to_vec()),
            Ok(None) => COut::NotFound,
            Err(e) => COut::Err(e.code()),
        },
        COp::Upper(k, v) => pair(c.set_upperbound(k, v.as_deref())),
        COp::GetMultiple => multi(c.get_multiple()),
        COp::NextMultiple => multi(c.next_multiple()),
    }
}

fn run_script_mdbx(c: &mut raw::Cursor<'_>, script: &[COp]) -> Vec<COut> {
    use mdbx_sys as ffi;
    let pair = |(rc, k, v): (i32, Vec<u8>, Vec<u8>)| match rc {
        0 => COut::Pair(k, v),
        ffi::MDBX_NOTFOUND => COut::NotFound,
        rc => COut::Err(rc),
    };
    let multi = |(rc, _k, v): (i32, Vec<u8>, Vec<u8>)| match rc {
        0 => COut::Multi(v),
        ffi::MDBX_NOTFOUND => COut::NotFound,
        rc => COut::Err(rc),
    };
    // libmdbx 0.14 dereferences an unset inner cursor on MDBX_NEXT_MULTIPLE
    // when NEXT_DUP lands on a key with one plain value (from an
    // unpositioned cursor it acts as FIRST): issue it only after a
    // successful GET_MULTIPLE / NEXT_MULTIPLE.
    //
    // After a cursor ran off an end (or a positioning op found nothing),
    // libmdbx 0.14's MDBX_GET_CURRENT may return data from a stale position
    // (garbage bytes, or a pointer past the end of the map: SIGBUS): neither
    // GET_CURRENT nor GET_MULTIPLE is issued then (`script_differences` does
    // not compare such states anyway).
    let mut last_multi = false;
    let mut lost = false;
    let mut out = Vec::new();
    for op in script {
        let r = match op {
            COp::NextMultiple if !last_multi => COut::Skipped,
            COp::Current | COp::GetMultiple if lost => COut::Skipped,
            COp::First => pair(c.get(ffi::MDBX_FIRST, None, None)),
            COp::Last => pair(c.get(ffi::MDBX_LAST, None, None)),
            COp::Next => pair(c.get(ffi::MDBX_NEXT, None, None)),
            COp::Prev => pair(c.get(ffi::MDBX_PREV, None, None)),
            COp::NextDup => pair(c.get(ffi::MDBX_NEXT_DUP, None, None)),
            COp::PrevDup => pair(c.get(ffi::MDBX_PREV_DUP, None, None)),
            COp::NextNodup => pair(c.get(ffi::MDBX_NEXT_NODUP, None, None)),
            COp::PrevNodup => pair(c.get(ffi::MDBX_PREV_NODUP, None, None)),
            COp::FirstDup => pair(c.get(ffi::MDBX_FIRST_DUP, None, None)),
            COp::LastDup => pair(c.get(ffi::MDBX_LAST_DUP, None, None)),
            COp::Current => pair(c.get(ffi::MDBX_GET_CURRENT, None, None)),
            COp::Count => match c.count() {
                (0, n) => COut::Count(n),
                (rc, _) => COut::Err(rc),
            },
            COp::Set(k) => pair(c.get(ffi::MDBX_SET, Some(k), None)),
            COp::SetRange(k) => pair(c.get(ffi::MDBX_SET_RANGE, Some(k), None)),
            COp::GetBoth(k, v) => pair(c.get(ffi::MDBX_GET_BOTH, Some(k), Some(v))),
            COp::GetBothRange(k, v) => pair(c.get(ffi::MDBX_GET_BOTH_RANGE, Some(k), Some(v))),
            COp::Lower(k, v) => match c.get(ffi::MDBX_SET_LOWERBOUND, Some(k), v.as_deref()) {
                (0, k, v) => COut::Bound(true, k, v),
                (ffi::MDBX_RESULT_TRUE, k, v) => COut::Bound(false, k, v),
                (ffi::MDBX_NOTFOUND, ..) => COut::NotFound,
                (rc, ..) => COut::Err(rc),
            },
            COp::Upper(k, v) => pair(c.get(ffi::MDBX_SET_UPPERBOUND, Some(k), v.as_deref())),
            COp::GetMultiple => multi(c.get(ffi::MDBX_GET_MULTIPLE, None, None)),
            COp::NextMultiple => multi(c.get(ffi::MDBX_NEXT_MULTIPLE, None, None)),
        };
        last_multi = matches!(r, COut::Multi(_));
        lost = end_state(op, &r, lost);
        out.push(r);
    }
    out
}

/// Whether, after `op` gave `r`, the cursor is in one of libmdbx's end states
/// (see `script_differences`); `lost` is the state before.
fn end_state(op: &COp, r: &COut, lost: bool) -> bool {
    let found = !matches!(r, COut::NotFound | COut::Err(_) | COut::Skipped);
    match op {
        COp::First
        | COp::Last
        | COp::Set(_)
        | COp::SetRange(_)
        | COp::GetBoth(..)
        | COp::GetBothRange(..)
        | COp::Lower(..)
        | COp::Upper(..) => !found,
        COp::Next | COp::NextNodup | COp::NextMultiple if !found => true,
        COp::Next | COp::Prev | COp::NextNodup | COp::PrevNodup if found => false,
        _ => lost,
    }
}

/// Divergences between libmdbx and rdbx that the scripts tolerate (counted
/// and printed, with an example each): libmdbx behaviour that is unspecified
/// or defective, see the comments at their uses.
type Known = BTreeMap<&'static str, (usize, String)>;

/// Differences between the two sides' results of the same scripts, as
/// (op label, description); a script stops being compared at its first
/// difference (the cursors stand in different places after it).
fn script_differences(
    t: &Table,
    scripts: &[Vec<COp>],
    rdbx: &[Vec<COut>],
    mdbx: &[Vec<COut>],
    known: &mut Known,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let exists = |k: &[u8], v: &[u8]| t.values(k).is_some_and(|s| s.contains(&val_sk(t.kind, v)));
    for (i, s) in scripts.iter().enumerate() {
        // Where the cursor stands, as far as both sides agree on it. While it
        // is on a pair, every result must be equal (NEXT_DUP / PREV_DUP /
        // PREV / PREV_NODUP that find nothing keep the position, spec B.10).
        // Once a side has run off an end, or a positioning operation found
        // nothing, libmdbx's cursor is in one of its end states
        // (unpositioned, "soft" or "hard" EOF) that the spec leaves open and
        // rdbx does not copy: only positioning operations are compared until
        // one succeeds, and a difference is tallied as tolerated.
        let mut fresh = true;
        let mut lost: Option<&'static str> = None;
        for (j, op) in s.iter().enumerate() {
            let (r, m) = (&rdbx[i][j], &mdbx[i][j]);
            let positioning = matches!(
                op,
                COp::First
                    | COp::Last
                    | COp::Set(_)
                    | COp::SetRange(_)
                    | COp::GetBoth(..)
                    | COp::GetBothRange(..)
                    | COp::Lower(..)
                    | COp::Upper(..)
            );
            let trail = || {
                let ops: Vec<String> = s[..=j].iter().map(COp::show).collect();
                format!("table {}: [{}]: rdbx {}, libmdbx {}", t.name, ops.join(", "), r.show(), m.show())
            };
            let mut note = |what: &'static str| {
                let e = known.entry(what).or_insert_with(|| (0, trail()));
                e.0 += 1;
                // Prefer an example where libmdbx answered.
                if e.1.ends_with("libmdbx skipped") && *m != COut::Skipped {
                    e.1 = trail();
                }
            };
            if r != m {
                if let (Some(why), false) = (lost, positioning) {
                    note(why);
                    break;
                }
                if matches!((op, r, m), (COp::Count, COut::Err(61), COut::Count(0))) {
                    // mdbx_cursor_count on an unpositioned cursor gives 0 and
                    // MDBX_SUCCESS (the spec's text says EINVAL); rdbx: NoData.
                    note("count on an unpositioned cursor: libmdbx Ok(0), rdbx ENODATA");
                    continue;
                }
                match (op, r, m) {
                    (COp::Lower(_, None), COut::Bound(true, rk, rv), COut::Bound(false, mk, mv))
                        if rk == mk && rv == mv =>
                    {
                        // libmdbx's SET_LOWERBOUND without data does not look
                        // into the values and answers MDBX_RESULT_TRUE even
                        // for an equal key; rdbx reports the equal key exact.
                        note("set_lowerbound(k, None) on a present key: libmdbx exact=false, rdbx exact=true");
                        continue;
                    }
                    (COp::Upper(k, None), ..) if t.values(k).is_some() => {
                        // libmdbx's SET_UPPERBOUND without data stays on the
                        // key's first value; rdbx moves to the next key (its
                        // documented meaning, checked against the model).
                        note(
                            "set_upperbound(k, None) on a present key: libmdbx stays on k, rdbx moves to the next key",
                        );
                        break;
                    }
                    _ => {}
                }
                if fresh && matches!(op, COp::NextDup | COp::PrevDup) {
                    // libmdbx: NEXT_DUP/PREV_DUP on a fresh cursor act as
                    // FIRST/LAST (spec B.10 shows it for a plain table).
                    note("next_dup/prev_dup on a fresh cursor: libmdbx acts as first/last, rdbx NOTFOUND");
                    break;
                }
                if let COut::Pair(k, v) = m {
                    if !exists(k, v) {
                        note("libmdbx returned a pair that does not exist");
                        break;
                    }
                }
                out.push((op.label(), trail()));
                break;
            }
            let found = !matches!(r, COut::NotFound | COut::Err(_) | COut::Skipped);
            lost = if !end_state(op, r, lost.is_some()) {
                None
            } else if positioning {
                Some("after a positioning op found nothing")
            } else if !found && matches!(op, COp::NextMultiple) {
                Some("after next_multiple found no further page")
            } else if !found && matches!(op, COp::Next | COp::NextNodup) {
                Some("after next/next_nodup ran off the end")
            } else {
                lost
            };
            fresh &= !(positioning || found);
        }
    }
    out
}

/// Runs the cursor scripts on the file through rdbx and through libmdbx
/// (this process, one after the other) and panics on any difference.
fn compare_cursor_scripts(path: &Path, ps: usize, model: &[Table], scripts_per_table: usize, what: &str) {
    let scripts: Vec<Vec<Vec<COp>>> =
        model.iter().enumerate().map(|(i, t)| gen_scripts(t, scripts_per_table, 1000 + i as u64)).collect();
    let rdbx_out: Vec<Vec<Vec<COut>>> = {
        let env = Env::builder().max_dbs(32).read_only(true).open(path).unwrap();
        assert_eq!(env.page_size(), ps);
        let txn = env.begin_ro_txn().unwrap();
        model
            .iter()
            .zip(&scripts)
            .map(|(t, ss)| {
                let db = txn.open_db(Some(&t.name)).unwrap();
                ss.iter().map(|s| run_script_rdbx(&mut txn.cursor(db).unwrap(), s)).collect()
            })
            .collect()
    };
    let mdbx_out: Vec<Vec<Vec<COut>>> = {
        let env = raw::Env::open_ro(path).unwrap_or_else(|rc| panic!("{what}: libmdbx open: {rc}"));
        let txn = env.begin_ro().unwrap();
        model
            .iter()
            .zip(&scripts)
            .map(|(t, ss)| ss.iter().map(|s| run_script_mdbx(&mut txn.cursor(t.name.as_bytes()).unwrap(), s)).collect())
            .collect()
    };
    let mut diffs = Vec::new();
    let mut known = Known::new();
    for (i, t) in model.iter().enumerate() {
        diffs.extend(script_differences(t, &scripts[i], &rdbx_out[i], &mdbx_out[i], &mut known));
    }
    let ops: usize = scripts.iter().flatten().map(Vec::len).sum();
    eprintln!("{what}: {ops} cursor operations in {} scripts compared", scripts.iter().map(Vec::len).sum::<usize>());
    for (what_, (n, example)) in &known {
        eprintln!("{what}: tolerated divergence ({n} scripts): {what_}; e.g. {example}");
    }
    if !diffs.is_empty() {
        let mut by_op: BTreeMap<&str, (usize, Vec<String>)> = BTreeMap::new();
        for (label, d) in diffs {
            let e = by_op.entry(label).or_default();
            e.0 += 1;
            if e.1.len() < 3 {
                e.1.push(d);
            }
        }
        let mut msg = String::new();
        for (label, (n, examples)) in by_op {
            msg.push_str(&format!("{label}: {n} scripts differ, e.g.\n  {}\n", examples.join("\n  ")));
        }
        panic!("{what}: rdbx and libmdbx cursors disagree:\n{msg}");
    }
}

// ---------------------------------------------------------------------------
// (a) rdbx writes, libmdbx reads

fn rdbx_writes_libmdbx_reads(ps: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("mm.mdbx");
    let sz = full_sizes(ps);
    let mut model = new_model(ps);
    let mut rng = Rng::new(ps as u64 * 7 + 1);
    let env = rdbx_open(&path, ps);
    let dbs = rdbx_tables(&env, &model);
    let phases: [(&str, Phase); 5] = [
        ("fill", phase_fill),
        ("delete", phase_delete),
        ("replace", phase_replace),
        ("prune", phase_prune),
        ("drain", phase_drain),
    ];
    let clock = std::time::Instant::now();
    let lap = |what: &str| eprintln!("ps {ps}: {:>7.2} s  {what}", clock.elapsed().as_secs_f64());
    for (name, phase) in phases {
        let what = format!("ps {ps}, rdbx txn '{name}'");
        rdbx_txn(&env, &dbs, &mut model, &what, |d| phase(d, &mut rng, &sz));
        lap(&format!("{name}: written"));
        rdbx_verify(&env, &dbs, &model, name != "fill", &what);
        lap(&format!("{name}: verified"));
        libmdbx_chk(&path, &what);
        lap(&format!("{name}: checked by libmdbx"));
    }
    // Nested transactions, committed at the top.
    {
        let what = format!("ps {ps}, rdbx nested transactions");
        let mut txn = env.begin_rw_txn().unwrap();
        let mut m = model.clone();
        let n = nested(&mut txn, &dbs, &mut m, &mut rng, &sz, 0);
        assert!(n >= 2, "{what}: only {n} nested transactions");
        txn.commit().unwrap_or_else(|e| panic!("{what}: commit: {e:?}"));
        model = m;
        lap("nested transactions");
        rdbx_verify(&env, &dbs, &model, true, &what);
        libmdbx_chk(&path, &what);
    }
    // An aborted transaction leaves nothing behind.
    {
        let mut txn = env.begin_rw_txn().unwrap();
        let mut m = model.clone();
        {
            let mut ops = RdbxOps { txn: &mut txn, dbs: &dbs };
            let mut d = Drv::new(&mut m, &mut ops, "rdbx, aborted txn");
            random_ops(&mut d, &mut rng, &sz, 300);
        }
        txn.abort();
        rdbx_verify(&env, &dbs, &model, false, &format!("ps {ps}, after an aborted txn"));
    }
    let stats = rdbx_stats(&env, &dbs, &model);
    drop(env);

    lap("aborted transaction");
    let what = format!("ps {ps}, written by rdbx");
    libmdbx_chk(&path, &what);
    libmdbx_dump_verify(&path, &model, &what);
    compare_stats(&path, &stats, &what);
    lap("libmdbx dump and stat");
    let masks = depth_masks(&path, &model);
    let pairs: usize = model.iter().map(Table::len).sum();
    eprintln!("{what}: {pairs} pairs in {} tables; libmdbx's dupsort depth masks: {masks:?}", model.len());
    for (name, m) in &masks {
        // Plain single values, sub-pages, and nested trees with branch pages.
        assert!(m & 3 == 3 && *m >= 4, "{what}: table {name}: depth mask {m:#b}");
    }
    compare_cursor_scripts(&path, ps, &model, 300, &what);
    lap("cursor scripts");
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps256() {
    rdbx_writes_libmdbx_reads(256);
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps4096() {
    rdbx_writes_libmdbx_reads(4096);
}

#[test]
fn a_rdbx_writes_libmdbx_reads_ps65536() {
    rdbx_writes_libmdbx_reads(65536);
}

// ---------------------------------------------------------------------------
// (b) libmdbx writes, rdbx reads

fn libmdbx_writes_rdbx_reads(ps: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("mm.mdbx");
    let sz = full_sizes(ps);
    let mut model = new_model(ps);
    let mut rng = Rng::new(ps as u64 * 13 + 5);
    let what = format!("ps {ps}, written by libmdbx");
    oracle_session(
        &path,
        ps,
        &mut model,
        &what,
        &[
            ("fill", phase_fill),
            ("delete", phase_delete),
            ("replace", phase_replace),
            ("prune", phase_prune),
            ("drain", phase_drain),
        ],
        &mut rng,
        &sz,
    );
    let lstats = {
        let env = oracle::Env::open(&path, &oracle::EnvOptions { read_only: true, ..Default::default() }).unwrap();
        let txn = env.begin_ro().unwrap();
        let mut out = BTreeMap::new();
        for t in &model {
            let st = txn.stat(txn.open_table(Some(t.name.as_bytes())).unwrap()).unwrap();
            out.insert(t.name.clone(), (st.depth, st.branch_pages, st.leaf_pages, st.overflow_pages, st.entries));
        }
        drop(txn);
        env.close().unwrap();
        out
    };
    libmdbx_chk(&path, &what);
    {
        let env = Env::builder().max_dbs(32).read_only(true).open(&path).unwrap();
        assert_eq!(env.page_size(), ps);
        let txn = env.begin_ro_txn().unwrap();
        let dbs: Vec<Db> = model.iter().map(|t| txn.open_db(Some(&t.name)).unwrap()).collect();
        for (i, t) in model.iter().enumerate() {
            assert_eq!(txn.db_flags(dbs[i]).unwrap().bits() & 0x7e, t.kind.flags(), "{what}: flags of {}", t.name);
            let r = txn.db_stat(dbs[i]).unwrap();
            assert_eq!(
                (r.depth, r.branch_pages, r.leaf_pages, r.overflow_pages, r.entries),
                lstats[&t.name],
                "{what}: stat of table {}: rdbx vs libmdbx",
                t.name
            );
        }
        rdbx_verify_tables(&txn, &dbs, &model, true, &what);
    }
    let masks = depth_masks(&path, &model);
    eprintln!("{what}: libmdbx's dupsort depth masks: {masks:?}");
    for (name, m) in &masks {
        assert!(m & 3 == 3 && *m >= 4, "{what}: table {name}: depth mask {m:#b}");
    }
    compare_cursor_scripts(&path, ps, &model, 300, &what);
}

#[test]
fn b_libmdbx_writes_rdbx_reads_ps256() {
    libmdbx_writes_rdbx_reads(256);
}

#[test]
fn b_libmdbx_writes_rdbx_reads_ps4096() {
    libmdbx_writes_rdbx_reads(4096);
}

#[test]
fn b_libmdbx_writes_rdbx_reads_ps65536() {
    libmdbx_writes_rdbx_reads(65536);
}

// ---------------------------------------------------------------------------
// (c) alternating writers

fn alternating(ps: usize, sz: Sizes) {
    let tmp = tempfile::tempdir().unwrap();
    let path: PathBuf = tmp.path().join("mm.mdbx");
    let mut model = new_model(ps);
    let mut rng = Rng::new(ps as u64 + 99);
    let random: Phase = |d, rng, sz| random_ops(d, rng, sz, 600);

    // libmdbx creates and fills.
    oracle_session(&path, ps, &mut model, "turn 1 (libmdbx)", &[("fill", phase_fill)], &mut rng, &sz);
    libmdbx_chk(&path, "after turn 1 (libmdbx)");
    // rdbx deletes (nested transactions too).
    {
        let env = rdbx_open(&path, ps);
        let dbs = rdbx_tables(&env, &model);
        rdbx_verify(&env, &dbs, &model, true, "turn 2 (rdbx): before writing");
        rdbx_txn(&env, &dbs, &mut model, "turn 2 (rdbx), delete", |d| phase_delete(d, &mut rng, &sz));
        let mut txn = env.begin_rw_txn().unwrap();
        let mut m = model.clone();
        nested(&mut txn, &dbs, &mut m, &mut rng, &sz, 1);
        txn.commit().unwrap();
        model = m;
        rdbx_verify(&env, &dbs, &model, true, "turn 2 (rdbx): after writing");
    }
    libmdbx_chk(&path, "after turn 2 (rdbx)");
    libmdbx_dump_verify(&path, &model, "after turn 2 (rdbx)");
    // libmdbx replaces.
    oracle_session(
        &path,
        ps,
        &mut model,
        "turn 3 (libmdbx)",
        &[("replace", phase_replace), ("random", random)],
        &mut rng,
        &sz,
    );
    libmdbx_chk(&path, "after turn 3 (libmdbx)");
    // rdbx drains and refills.
    {
        let env = rdbx_open(&path, ps);
        let dbs = rdbx_tables(&env, &model);
        rdbx_verify(&env, &dbs, &model, true, "turn 4 (rdbx): before writing");
        rdbx_txn(&env, &dbs, &mut model, "turn 4 (rdbx), drain", |d| phase_drain(d, &mut rng, &sz));
        rdbx_txn(&env, &dbs, &mut model, "turn 4 (rdbx), random", |d| random_ops(d, &mut rng, &sz, 600));
        rdbx_verify(&env, &dbs, &model, true, "turn 4 (rdbx): after writing");
    }
    libmdbx_chk(&path, "after turn 4 (rdbx)");
    // libmdbx once more.
    oracle_session(&path, ps, &mut model, "turn 5 (libmdbx)", &[("random", random)], &mut rng, &sz);
    libmdbx_chk(&path, "after turn 5 (libmdbx)");
    libmdbx_dump_verify(&path, &model, "at the end");
    let env = rdbx_open(&path, ps);
    let dbs = rdbx_tables(&env, &model);
    rdbx_verify(&env, &dbs, &model, true, "rdbx at the end");
    let stats = rdbx_stats(&env, &dbs, &model);
    drop(env);
    compare_stats(&path, &stats, "at the end");
}

#[test]
fn c_alternating_writers_ps256() {
    alternating(256, sizes(256, 800, 40));
}

#[test]
fn c_alternating_writers_ps4096() {
    alternating(4096, sizes(4096, 3000, 100));
}

#[test]
fn c_alternating_writers_ps65536() {
    alternating(65536, sizes(65536, 20000, 40));
}

// ---------------------------------------------------------------------------
// Engine bugs found by this suite (fixed): minimal reproductions against
// libmdbx, kept as regression tests.

/// The same put on a fresh DUP_SORT table through libmdbx and through rdbx:
/// returns (libmdbx's code, rdbx's code), 0 = success.
fn put_codes(setup: &[(&[u8], &[u8])], key: &[u8], val: &[u8], flags: u32) -> (i32, i32) {
    let tmp = tempfile::tempdir().unwrap();
    let lib = {
        let env = oracle::Env::open(tmp.path().join("l.mdbx"), &oracle_opts(4096)).unwrap();
        let mut txn = env.begin_rw().unwrap();
        let d = txn.create_table(Some(b"m"), 0x04).unwrap();
        for (k, v) in setup {
            txn.put(d, k, v, 0).unwrap();
        }
        txn.put(d, key, val, flags).err().map_or(0, |e| oracle::error_code(&e).unwrap())
    };
    let env = rdbx_open(&tmp.path().join("r.mdbx"), 4096);
    let mut txn = env.begin_rw_txn().unwrap();
    let db = txn.create_db(Some("m"), DbFlags::DUP_SORT).unwrap();
    for (k, v) in setup {
        txn.put(db, k, v, PutFlags::empty()).unwrap();
    }
    let r = txn.put(db, key, val, PutFlags::from_bits_retain(flags)).err().map_or(0, |e| e.code());
    (lib, r)
}

/// put(APPEND) of a key that is present but not the last one: libmdbx
/// compares with the last key first (MDBX_EKEYMISMATCH); rdbx adds the value.
#[test]
fn engine_bug_append_of_a_present_key_before_the_last() {
    let (lib, r) = put_codes(&[(b"a", b"1"), (b"b", b"1")], b"a", b"2", APPEND);
    assert_eq!(lib, KEYMISMATCH);
    assert_eq!(r, lib, "rdbx put(APPEND) of key a (keys a, b) returned {r}, libmdbx {lib}");
}

/// put(APPEND_DUP) of a value the key already has (the key has several):
/// libmdbx MDBX_EKEYMISMATCH; rdbx Ok.
#[test]
fn engine_bug_append_dup_of_a_present_value() {
    for v in [b"1", b"2"] {
        let (lib, r) = put_codes(&[(b"a", b"1"), (b"a", b"2")], b"a", v, APPEND_DUP);
        assert_eq!(lib, KEYMISMATCH);
        assert_eq!(r, lib, "rdbx put(APPEND_DUP) of present value {v:?} returned {r}, libmdbx {lib}");
    }
}

/// Deleting a multimap's last pair with del(key, Some(value)) leaves the
/// table's `items` at 2^64-1 (the emptied tree's count is reset, then
/// decremented): rdbx can no longer open the table ("empty table record with
/// non-zero height or items") and libmdbx's checker reports "different number
/// of entries 0 != 18446744073709551615". libmdbx itself ends with an empty,
/// clean table.
#[test]
fn engine_bug_emptying_a_multimap_by_value_deletes() {
    // A plain single value, a sub-page and a nested tree as the last key.
    for (flags, n) in [(0x04u32, 1u64), (0x04, 5), (0x04, 3000), (0x14, 1), (0x14, 5), (0x14, 3000)] {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("e.mdbx");
        let vals: Vec<Vec<u8>> = (0..n).map(|i| format!("{i:08}").into_bytes()).collect();
        {
            let env = rdbx_open(&path, 4096);
            let mut txn = env.begin_rw_txn().unwrap();
            let db = txn.create_db(Some("m"), DbFlags::from_bits_retain(flags)).unwrap();
            for v in &vals {
                txn.put(db, b"k", v, PutFlags::empty()).unwrap();
            }
            txn.commit().unwrap();
            let mut txn = env.begin_rw_txn().unwrap();
            for v in &vals {
                assert!(txn.del(db, b"k", Some(v)).unwrap());
            }
            let st = txn.db_stat(db).unwrap();
            assert_eq!(st.entries, 0, "flags {flags:#x}, {n} values: entries after deleting them all: {st:?}");
            txn.commit().unwrap();
        }
        let what = format!("flags {flags:#x}, {n} values deleted one by one");
        libmdbx_chk(&path, &what);
        let env = rdbx_open(&path, 4096);
        let txn = env.begin_ro_txn().unwrap();
        let db = txn.open_db(Some("m")).unwrap_or_else(|e| panic!("{what}: open_db: {e:?}"));
        assert_eq!(txn.db_stat(db).unwrap().entries, 0, "{what}");
    }
}
