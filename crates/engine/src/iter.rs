//! Rust-shaped reading: the [`ReadTxn`] trait that read-only, write and
//! nested transactions share, and [`Iter`], a double-ended iterator over the
//! records of a table between two key bounds (every value of a multimap key
//! in value order).
//!
//! An `Iter` holds two cursors, one per end, and the owned bounds (one
//! allocation per iterator, none per step). The ends meet when the record
//! one end would yield is not strictly before (after) the last record the
//! other end yielded, in the table's order (key, then value for multimaps).

use std::cmp::Ordering;
use std::ops::Bound;

use crate::btree::cursor::Cursor;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::txn::{Db, Stat};

type Pair<'t> = (&'t [u8], &'t [u8]);

/// Records of a table in order, as `(key, value)` pairs borrowed from the
/// transaction; `.rev()` walks backwards. An error is yielded once, then the
/// iterator ends.
pub struct Iter<'t> {
    front: Cursor<'t>,
    back: Cursor<'t>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    front_started: bool,
    back_started: bool,
    last_front: Option<Pair<'t>>,
    last_back: Option<Pair<'t>>,
    done: bool,
}

fn owned(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<'t> Iter<'t> {
    pub(crate) fn new(front: Cursor<'t>, back: Cursor<'t>, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Iter<'t> {
        Iter {
            front,
            back,
            lo: owned(lo),
            hi: owned(hi),
            front_started: false,
            back_started: false,
            last_front: None,
            last_back: None,
            done: false,
        }
    }

    #[inline(always)]
    fn below_hi(&self, key: &[u8]) -> bool {
        match &self.hi {
            Bound::Unbounded => true,
            Bound::Included(h) => self.front.key_order(key, h) != Ordering::Greater,
            Bound::Excluded(h) => self.front.key_order(key, h) == Ordering::Less,
        }
    }

    #[inline(always)]
    fn above_lo(&self, key: &[u8]) -> bool {
        match &self.lo {
            Bound::Unbounded => true,
            Bound::Included(l) => self.front.key_order(key, l) != Ordering::Less,
            Bound::Excluded(l) => self.front.key_order(key, l) == Ordering::Greater,
        }
    }

    fn step_front(&mut self) -> Result<Option<Pair<'t>>> {
        if self.front_started {
            return self.front.next();
        }
        self.front_started = true;
        // Fields borrowed one by one: cloning the bound would allocate.
        let front = &mut self.front;
        match &self.lo {
            Bound::Unbounded => front.first(),
            Bound::Included(k) => front.set_range(k),
            Bound::Excluded(k) => {
                let mut r = front.set_range(k)?;
                while let Some((key, _)) = r {
                    if front.key_order(key, k) != Ordering::Equal {
                        break;
                    }
                    r = front.next_nodup()?;
                }
                Ok(r)
            }
        }
    }

    fn step_back(&mut self) -> Result<Option<Pair<'t>>> {
        if self.back_started {
            return self.back.prev();
        }
        self.back_started = true;
        let back = &mut self.back;
        match &self.hi {
            Bound::Unbounded => back.last(),
            Bound::Included(k) => match back.set_range(k)? {
                Some((key, _)) if back.key_order(key, k) == Ordering::Equal => back.last_dup(),
                Some(_) => back.prev(),
                None => back.last(),
            },
            Bound::Excluded(k) => match back.set_range(k)? {
                Some(_) => back.prev(),
                None => back.last(),
            },
        }
    }

    fn front_item(&mut self) -> Result<Option<Pair<'t>>> {
        let Some(item) = self.step_front()? else { return Ok(None) };
        Ok(self.accept_front(item))
    }

    /// `item`, the front cursor's next record, if it is inside the range and
    /// before what the back end returned.
    #[inline(always)]
    fn accept_front(&mut self, item: Pair<'t>) -> Option<Pair<'t>> {
        if !self.below_hi(item.0) {
            return None;
        }
        if let Some(b) = self.last_back {
            if self.front.pair_order(item, b) != Ordering::Less {
                return None;
            }
        }
        self.last_front = Some(item);
        Some(item)
    }

    fn back_item(&mut self) -> Result<Option<Pair<'t>>> {
        let Some(item) = self.step_back()? else { return Ok(None) };
        Ok(self.accept_back(item))
    }

    #[inline(always)]
    fn accept_back(&mut self, item: Pair<'t>) -> Option<Pair<'t>> {
        if !self.above_lo(item.0) {
            return None;
        }
        if let Some(f) = self.last_front {
            if self.back.pair_order(item, f) != Ordering::Greater {
                return None;
            }
        }
        self.last_back = Some(item);
        Some(item)
    }

    /// The general path of `next`/`next_back`: starting, leaving a leaf,
    /// multi-value keys, large values, errors.
    #[inline(never)]
    fn general(&mut self, forward: bool) -> Option<Result<Pair<'t>>> {
        let r = if forward { self.front_item() } else { self.back_item() };
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r.transpose()
    }
}

impl<'t> Iterator for Iter<'t> {
    type Item = Result<Pair<'t>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        // The common step (the next plain record of the same leaf) stays
        // inline and returns its pair by value, as `Cursor::next` does.
        if self.front_started {
            if let Some(item) = self.front.neighbour_in_leaf(true) {
                if matches!(self.hi, Bound::Unbounded) && self.last_back.is_none() {
                    // Nothing to compare with: the pair stays in registers.
                    self.last_front = Some(item);
                    return Some(Ok(item));
                }
                let r = self.accept_front(item);
                self.done = r.is_none();
                return r.map(Ok);
            }
        }
        self.general(true)
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.back_started {
            if let Some(item) = self.back.neighbour_in_leaf(false) {
                if matches!(self.lo, Bound::Unbounded) && self.last_front.is_none() {
                    self.last_back = Some(item);
                    return Some(Ok(item));
                }
                let r = self.accept_back(item);
                self.done = r.is_none();
                return r.map(Ok);
            }
        }
        self.general(false)
    }
}

impl std::iter::FusedIterator for Iter<'_> {}

/// A range of keys given as byte strings: `a..b`, `a..=b`, `a..`, `..b`,
/// `..=b`, `..` and `(Bound, Bound)` pairs, for any key type that is
/// `AsRef<[u8]>` (`&[u8]`, `&[u8; N]`, `Vec<u8>`, `&str`, ...). (The standard
/// `RangeBounds` cannot express this without type annotations at every call.)
pub trait KeyRange {
    /// The two bounds, borrowed.
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>);
}

impl<T: AsRef<[u8]>> KeyRange for std::ops::Range<T> {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Included(self.start.as_ref()), Bound::Excluded(self.end.as_ref()))
    }
}

impl<T: AsRef<[u8]>> KeyRange for std::ops::RangeInclusive<T> {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Included(self.start().as_ref()), Bound::Included(self.end().as_ref()))
    }
}

impl<T: AsRef<[u8]>> KeyRange for std::ops::RangeFrom<T> {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Included(self.start.as_ref()), Bound::Unbounded)
    }
}

impl<T: AsRef<[u8]>> KeyRange for std::ops::RangeTo<T> {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Unbounded, Bound::Excluded(self.end.as_ref()))
    }
}

impl<T: AsRef<[u8]>> KeyRange for std::ops::RangeToInclusive<T> {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Unbounded, Bound::Included(self.end.as_ref()))
    }
}

impl KeyRange for std::ops::RangeFull {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (Bound::Unbounded, Bound::Unbounded)
    }
}

impl<T: AsRef<[u8]>> KeyRange for (Bound<T>, Bound<T>) {
    fn key_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (self.0.as_ref().map(|k| k.as_ref()), self.1.as_ref().map(|k| k.as_ref()))
    }
}

/// The smallest key greater than every key starting with `p` (lexicographic
/// order), `None` when there is none (`p` is empty or all 0xFF).
fn prefix_end(p: &[u8]) -> Option<Vec<u8>> {
    let mut end = p.to_vec();
    while let Some(last) = end.pop() {
        if last != 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// ```
/// # fn main() -> rdbx::Result<()> {
/// use rdbx::{Db, Env, PutFlags, ReadTxn};
/// # let dir = std::env::temp_dir().join(format!("rdbx-doc-iter-{}", std::process::id()));
/// let env = Env::builder().open(&dir)?;
/// let mut txn = env.begin_rw_txn()?;
/// for k in [&b"apple"[..], b"banana", b"cherry"] {
///     txn.put(Db::MAIN, k, b"x", PutFlags::empty())?;
/// }
/// // Written once, used with any transaction kind.
/// fn keys(t: &impl ReadTxn, lo: &[u8], hi: &[u8]) -> rdbx::Result<Vec<Vec<u8>>> {
///     t.range(Db::MAIN, lo..hi)?.map(|r| r.map(|(k, _)| k.to_vec())).collect()
/// }
/// assert_eq!(keys(&txn, b"b", b"z")?, [b"banana".to_vec(), b"cherry".to_vec()]);
/// txn.commit()?;
/// let ro = env.begin_ro_txn()?;
/// let last = ro.range(Db::MAIN, b"a"..b"c")?.rev().next().transpose()?;
/// assert_eq!(last.map(|(k, _)| k), Some(&b"banana"[..]));
/// # drop(ro); drop(env); std::fs::remove_dir_all(&dir).ok();
/// # Ok(()) }
/// ```
///
/// Reading, shared by [`crate::RoTxn`], [`crate::RwTxn`] and
/// [`crate::NestedTxn`]: write code that only reads once, generic over
/// `T: ReadTxn` (or `&dyn ReadTxn`: every method but the generic `range`
/// works on a trait object). Each transaction type also has these as
/// inherent methods.
pub trait ReadTxn {
    /// The transaction id (the snapshot id for read-only transactions).
    fn id(&self) -> u64;
    /// Opens a table: `None` is the main table. `Err(NotFound)` if it does not exist.
    fn open_db(&self, name: Option<&str>) -> Result<Db>;
    /// Opens a table by a binary name.
    fn open_db_bytes(&self, name: Option<&[u8]>) -> Result<Db>;
    /// The first value of `key`, borrowed from the transaction.
    fn get(&self, db: Db, key: &[u8]) -> Result<Option<&[u8]>>;
    /// A cursor over `db`.
    fn cursor(&self, db: Db) -> Result<Cursor<'_>>;
    /// Statistics of `db`.
    fn db_stat(&self, db: Db) -> Result<Stat>;
    /// Flags `db` was created with.
    fn db_flags(&self, db: Db) -> Result<DbFlags>;
    /// The table's sequence counter.
    fn db_sequence(&self, db: Db) -> Result<u64>;
    /// Names of the named tables, in main-table order.
    fn table_names(&self) -> Result<Vec<Vec<u8>>>;
    /// Estimated number of records with keys in `[lo, hi)`.
    fn estimate_range(&self, db: Db, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<u64>;
    /// Walks `db` and checks its structure and counters.
    fn verify_table(&self, db: Db) -> Result<()>;
    /// The canary markers x, y, z and v.
    fn canary(&self) -> [u64; 4];

    /// Every record of `db` in order.
    fn iter(&self, db: Db) -> Result<Iter<'_>> {
        Ok(Iter::new(self.cursor(db)?, self.cursor(db)?, Bound::Unbounded, Bound::Unbounded))
    }

    /// The records whose keys lie in `range`, in the table's key order: any
    /// range of byte strings ([`KeyRange`]), e.g. `b"a"..b"m"`, `..=key`,
    /// `(Bound::Excluded(k), Bound::Unbounded)`.
    fn range<R: KeyRange>(&self, db: Db, range: R) -> Result<Iter<'_>>
    where
        Self: Sized,
    {
        let (lo, hi) = range.key_bounds();
        Ok(Iter::new(self.cursor(db)?, self.cursor(db)?, lo, hi))
    }

    /// The records whose keys start with `prefix` (tables with the default,
    /// lexicographic key order; `Err(Incompatible)` for REVERSE_KEY and
    /// INTEGER_KEY tables, where a prefix is not a range).
    fn prefix(&self, db: Db, prefix: &[u8]) -> Result<Iter<'_>> {
        let flags = self.db_flags(db)?;
        if flags.intersects(DbFlags::REVERSE_KEY | DbFlags::INTEGER_KEY) {
            return Err(Error::Incompatible(
                "prefix iteration needs a table with lexicographic keys (not REVERSE_KEY or INTEGER_KEY)".into(),
            ));
        }
        let end = prefix_end(prefix);
        let hi = match &end {
            Some(e) => Bound::Excluded(&e[..]),
            None => Bound::Unbounded,
        };
        Ok(Iter::new(self.cursor(db)?, self.cursor(db)?, Bound::Included(prefix), hi))
    }

    /// The values of `key` in a multimap, in value order (one record on
    /// other tables, none if the key is absent).
    fn iter_dup(&self, db: Db, key: &[u8]) -> Result<Iter<'_>> {
        Ok(Iter::new(self.cursor(db)?, self.cursor(db)?, Bound::Included(key), Bound::Included(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }
}
