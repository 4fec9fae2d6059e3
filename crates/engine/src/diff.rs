//! The records that differ between two tables, possibly of two databases
//! (as `reth db diff`): one merge walk of both tables in key order, streamed
//! to a callback, nothing collected.
//!
//! * Plain tables: a key on one side only is *added* (only in B) or
//!   *removed* (only in A); a key on both sides with other values is
//!   *changed*.
//! * Multimaps (DUPSORT): every (key, value) pair counts on its own: a pair
//!   on one side only is added or removed; there is no "changed".
//! * `keys_only`: only keys are compared (a changed value is no difference;
//!   a multimap key counts once).
//! * In the main table the records that describe named tables are left out
//!   (compare the named tables themselves).
//!
//! Both tables must order their keys (and multimap values) alike: their
//! ordering flags (REVERSE_KEY, INTEGER_KEY, DUP_SORT, REVERSE_DUP,
//! INTEGER_DUP, DUP_FIXED) must be equal, else `Err(Incompatible)`.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::btree::cursor::Cursor;
use crate::checksum::poll;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::iter::ReadTxn;
use crate::txn::Db;

/// What a difference is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffKind {
    /// Only in B.
    Added,
    /// Only in A.
    Removed,
    /// Same key, other value (plain tables only).
    Changed,
}

impl DiffKind {
    /// `added`, `removed` or `changed`.
    pub fn as_str(self) -> &'static str {
        match self {
            DiffKind::Added => "added",
            DiffKind::Removed => "removed",
            DiffKind::Changed => "changed",
        }
    }
}

/// One difference, borrowed from the two transactions.
#[derive(Debug, Clone, Copy)]
pub struct DiffRecord<'a> {
    /// What kind.
    pub kind: DiffKind,
    /// The key.
    pub key: &'a [u8],
    /// The value in A (removed, changed); `None` with `keys_only`.
    pub old: Option<&'a [u8]>,
    /// The value in B (added, changed); `None` with `keys_only`.
    pub new: Option<&'a [u8]>,
}

/// How many differences of each kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiffCounts {
    /// Only in B.
    pub added: u64,
    /// Only in A.
    pub removed: u64,
    /// Other value.
    pub changed: u64,
}

impl DiffCounts {
    /// All differences.
    pub fn total(&self) -> u64 {
        self.added + self.removed + self.changed
    }

    fn add(&mut self, k: DiffKind) {
        match k {
            DiffKind::Added => self.added += 1,
            DiffKind::Removed => self.removed += 1,
            DiffKind::Changed => self.changed += 1,
        }
    }
}

/// Options of a diff.
#[derive(Debug, Clone, Default)]
pub struct DiffOptions {
    /// Compare keys only.
    pub keys_only: bool,
    /// Polled every few thousand records: set, the diff stops with an
    /// `Interrupted` I/O error.
    pub interrupt: Option<Arc<AtomicBool>>,
}

/// The table flags that decide the order of keys and values.
pub const ORDER_FLAGS: DbFlags = DbFlags::REVERSE_KEY
    .union(DbFlags::INTEGER_KEY)
    .union(DbFlags::DUP_SORT)
    .union(DbFlags::REVERSE_DUP)
    .union(DbFlags::INTEGER_DUP)
    .union(DbFlags::DUP_FIXED);

/// One side of the merge: a cursor that skips the main table's table records.
struct Side<'t> {
    c: Cursor<'t>,
    skip: HashSet<Vec<u8>>,
    nodup: bool,
    started: bool,
}

impl<'t> Side<'t> {
    fn new(txn: &'t dyn ReadTxn, db: Db, nodup: bool) -> Result<Side<'t>> {
        let skip = if db == Db::MAIN { txn.table_names()?.into_iter().collect() } else { HashSet::new() };
        Ok(Side { c: txn.cursor(db)?, skip, nodup, started: false })
    }

    fn step(&mut self) -> Result<Option<(&'t [u8], &'t [u8])>> {
        loop {
            let r = if !self.started {
                self.started = true;
                self.c.first()?
            } else if self.nodup {
                self.c.next_nodup()?
            } else {
                self.c.next()?
            };
            match r {
                Some((k, _)) if self.skip.contains(k) => continue,
                r => return Ok(r),
            }
        }
    }
}

/// Compares table `a_name` of `a` with table `b_name` of `b` and passes every
/// difference, in key order, to `sink` (an `Err` from it stops the diff).
pub fn diff_tables(
    a: &dyn ReadTxn,
    a_name: Option<&[u8]>,
    b: &dyn ReadTxn,
    b_name: Option<&[u8]>,
    opts: &DiffOptions,
    sink: &mut dyn FnMut(&DiffRecord<'_>) -> Result<()>,
) -> Result<DiffCounts> {
    let (adb, bdb) = (a.open_db_bytes(a_name)?, b.open_db_bytes(b_name)?);
    let (af, bf) = (a.db_flags(adb)?, b.db_flags(bdb)?);
    if af & ORDER_FLAGS != bf & ORDER_FLAGS {
        return Err(Error::Incompatible(format!(
            "the tables order their records differently (flags {:#x} and {:#x}): they cannot be compared record by record",
            af.bits(),
            bf.bits()
        )));
    }
    let dupsort = af.contains(DbFlags::DUP_SORT);
    let nodup = dupsort && opts.keys_only;
    let (mut sa, mut sb) = (Side::new(a, adb, nodup)?, Side::new(b, bdb, nodup)?);
    let (mut ra, mut rb) = (sa.step()?, sb.step()?);
    let mut counts = DiffCounts::default();
    let mut steps = 0u64;
    let flag = opts.interrupt.as_deref();
    let mut emit = |counts: &mut DiffCounts, kind, key, old: Option<&[u8]>, new: Option<&[u8]>| {
        counts.add(kind);
        let (old, new) = if opts.keys_only { (None, None) } else { (old, new) };
        sink(&DiffRecord { kind, key, old, new })
    };
    loop {
        steps += 1;
        poll(flag, steps)?;
        let ord = match (ra, rb) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(x), Some(y)) => {
                if dupsort && !opts.keys_only {
                    sa.c.pair_order(x, y)
                } else {
                    sa.c.key_order(x.0, y.0)
                }
            }
        };
        match ord {
            Ordering::Less => {
                let (k, v) = ra.expect("a record on side A");
                emit(&mut counts, DiffKind::Removed, k, Some(v), None)?;
                ra = sa.step()?;
            }
            Ordering::Greater => {
                let (k, v) = rb.expect("a record on side B");
                emit(&mut counts, DiffKind::Added, k, None, Some(v))?;
                rb = sb.step()?;
            }
            Ordering::Equal => {
                let ((k, va), (_, vb)) = (ra.expect("side A"), rb.expect("side B"));
                if !opts.keys_only && !dupsort && va != vb {
                    emit(&mut counts, DiffKind::Changed, k, Some(va), Some(vb))?;
                }
                ra = sa.step()?;
                rb = sb.step()?;
            }
        }
    }
    Ok(counts)
}
