//! An in-memory [`TreeWriter`] for unit tests: the tree editors run on a page
//! store in memory, without an environment, a file or a GC, and the results
//! are checked against a model (`BTreeMap`) in the tests below and in
//! `gc.rs`.
//!
//! Pages live in one map by number (a large chunk under its head page), the
//! committed ones and the dirty ones of the current transaction alike; a set
//! says which are dirty. Copy-on-write, freeing and allocation follow the
//! rules of a write transaction: a page this transaction allocated and frees
//! again is "loose" (reusable at once), any other freed page is "retired"
//! (still readable until the commit); allocation takes loose pages first,
//! then "reclaimed" ones (what the tests or `commit` put there), then the
//! unallocated tail.

use std::collections::HashSet;

use super::pages::Pages;
use super::walk::Kind;
use super::writer::{Counted, TreeWriter, View};
use super::Cmp;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::format::limits::Limits;
use crate::format::page::{self as fpage, Page};
use crate::format::tree::Tree;
use crate::format::NUM_METAS;
use crate::os::mmap::Mmap;
use crate::pool::{Dirty, PageBuf};
use crate::run_list::RunList;

/// A small deterministic generator (xorshift64*) for the tests.
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One table of a [`MemWriter`].
#[derive(Clone, Debug)]
pub(crate) struct MemTable {
    pub tree: Tree,
    pub flags: DbFlags,
    pub kind: Kind,
    pub append_leaf: Option<u32>,
    /// Changed since the last commit.
    pub dirty: bool,
}

/// A page store in memory that the tree editors can write to.
pub(crate) struct MemWriter {
    /// A one-page map of an empty temporary file: `Pages` needs one, and
    /// every page is found in `store` first, so it is never read (a page
    /// missing from `store` reads as "outside the memory map").
    map: Mmap,
    limits: Limits,
    pub txnid: u64,
    /// Every live page, committed or dirty.
    pub store: Dirty,
    /// Pages dirty in the current transaction.
    pub dirty: HashSet<u32>,
    /// First page number never allocated.
    pub next: u32,
    /// Freed in this transaction, allocated in it (descending).
    pub loose: Vec<u32>,
    /// Freed in this transaction, allocated before it.
    pub retired: Vec<u32>,
    /// Free pages at hand for allocation.
    pub reclaimed: RunList,
    /// The radix sort's second buffer (`gc::FreeLists::sorting`).
    pub sorting: Vec<u32>,
    pub tables: Vec<MemTable>,
    pub splits: u64,
    pub merges: u64,
    /// For the GC tests (`gc.rs`): keys of the GC records consumed in this
    /// transaction, whether the update stopped using them, and the newest
    /// record key that may be reclaimed; whether the GC update may fold
    /// leftovers into the own record (`gc::fold_pages`), and whether big
    /// records are taken from in part (`gc::partial_take`).
    pub consumed: Vec<u64>,
    pub no_spare: bool,
    pub detent: u64,
    pub fold: bool,
    pub partial: bool,
}

/// Takes `n` consecutive pages from a descending list.
fn take_run(list: &mut Vec<u32>, n: usize) -> Option<u32> {
    if list.len() < n {
        return None;
    }
    let i = (0..=list.len() - n).find(|&i| list[i] - list[i + n - 1] == (n - 1) as u32)?;
    let low = list[i + n - 1];
    list.drain(i..i + n);
    Some(low)
}

impl MemWriter {
    /// An empty store with pages of `page_size` bytes and the GC (table 0)
    /// and main table (table 1).
    pub fn new(page_size: usize) -> MemWriter {
        let file = tempfile::tempfile().expect("temporary file");
        file.set_len(page_size as u64).expect("size the file");
        let map = Mmap::map(&file, page_size).expect("map");
        let mut w = MemWriter {
            map,
            limits: Limits::new(page_size),
            txnid: NUM_METAS as u64 + 1,
            store: Dirty::default(),
            dirty: HashSet::new(),
            next: NUM_METAS,
            loose: Vec::new(),
            sorting: Vec::new(),
            retired: Vec::new(),
            reclaimed: RunList::default(),
            tables: Vec::new(),
            splits: 0,
            merges: 0,
            consumed: Vec::new(),
            no_spare: false,
            detent: 0,
            fold: false,
            partial: false,
        };
        w.add_table(Kind::Gc, DbFlags::INTEGER_KEY);
        w.add_table(Kind::Main, DbFlags::empty());
        w
    }

    /// Adds an empty table; its handle.
    pub fn add_table(&mut self, kind: Kind, flags: DbFlags) -> usize {
        let tree = Tree::empty(flags.bits() as u16);
        self.tables.push(MemTable { tree, flags, kind, append_leaf: None, dirty: false });
        self.tables.len() - 1
    }

    /// Commits: retired pages leave the store, retired and loose pages
    /// become reusable (as if the GC gave them back at once), the next
    /// transaction begins.
    pub fn commit(&mut self) {
        for p in &self.retired {
            assert!(self.store.remove(p).is_some() || !self.dirty.contains(p), "retired page {p} was dirty");
        }
        let free: Vec<u32> = self.retired.drain(..).chain(self.loose.drain(..)).collect();
        assert_eq!(self.reclaimed.extend(free), 0, "a page freed twice");
        self.dirty.clear();
        for t in &mut self.tables {
            t.dirty = false;
            t.append_leaf = None;
        }
        self.txnid += 1;
    }

    fn alloc(&mut self, n: usize) -> u32 {
        if let Some(p) = take_run(&mut self.loose, n) {
            return p;
        }
        if let Some(p) = self.reclaimed.take_fit(n) {
            return p;
        }
        let p = self.next;
        self.next += n as u32;
        p
    }

    fn insert_dirty(&mut self, pgno: u32, buf: Box<[u8]>) {
        assert!(self.store.insert(pgno, PageBuf::Heap(buf)).is_none(), "page {pgno} allocated twice");
        self.dirty.insert(pgno);
    }

    /// Every page of table `db` (with its nested trees and large chunks).
    pub fn table_pages(&self, db: usize) -> Vec<u32> {
        let t = &self.tables[db];
        let mut runs = Vec::new();
        super::write::collect_pages(self, &t.tree, t.kind, t.flags, None, &mut runs).expect("walk the table");
        runs.into_iter().flat_map(|(p, n)| p..p + n as u32).collect()
    }

    /// Checks every table's structure and counters, and that the store
    /// holds exactly the pages of the tables (nothing leaked, nothing
    /// missing), once retired pages are gone (after `commit`), and that the
    /// other pages below the tail are free (reclaimed or loose).
    pub fn check(&self) {
        self.check_with_free(self.reclaimed.iter().chain(self.loose.iter().copied()));
    }

    /// [`MemWriter::check`] with the free pages given: every page number
    /// below the tail is in the store or in `free`, exactly once.
    pub fn check_with_free(&self, free: impl IntoIterator<Item = u32>) {
        let mut live = HashSet::new();
        for (db, t) in self.tables.iter().enumerate() {
            super::verify::verify(&self.pages(), &t.tree, t.kind, t.flags)
                .unwrap_or_else(|e| panic!("table {db}: {e}"));
            for p in self.table_pages(db) {
                assert!(live.insert(p), "page {p} used twice");
            }
        }
        let mut stored = HashSet::new();
        for (&p, buf) in &self.store {
            for q in p..p + (buf.len() / self.limits.page_size) as u32 {
                stored.insert(q);
            }
        }
        let mut leaked: Vec<_> = stored.difference(&live).collect();
        leaked.sort();
        assert!(leaked.is_empty(), "pages in the store that no table uses: {leaked:?}");
        let mut missing: Vec<_> = live.difference(&stored).collect();
        missing.sort();
        assert!(missing.is_empty(), "pages of tables missing from the store: {missing:?}");
        // Every page number below the tail is live or free, exactly once.
        let mut seen = stored;
        for p in free {
            assert!((NUM_METAS..self.next).contains(&p), "free page {p} outside the allocated pages");
            assert!(seen.insert(p), "free page {p} is also in use or listed twice");
        }
        let lost: Vec<u32> = (NUM_METAS..self.next).filter(|p| !seen.contains(p)).collect();
        assert!(lost.is_empty(), "pages neither in use nor free: {lost:?}");
    }

    /// Every (key, value) of table `db` in order.
    pub fn records(&self, db: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let t = &self.tables[db];
        let mut c = super::cursor::Cursor::new(self.pages(), t.tree.root, t.tree.height, Cmp::for_keys(t.flags));
        c.set_dup_cmp(Cmp::for_dups(t.flags));
        let mut out = Vec::new();
        let mut r = c.first().expect("first");
        while let Some((k, v)) = r {
            out.push((k.to_vec(), v.to_vec()));
            r = c.next().expect("next");
        }
        out
    }
}

impl TreeWriter for MemWriter {
    type Db = usize;

    fn pages(&self) -> Pages<'_> {
        Pages {
            map: &self.map,
            ps: self.limits.page_size,
            valid: self.next,
            dirty: Some(&self.store),
            front: self.txnid,
        }
    }
    fn limits(&self) -> Limits {
        self.limits
    }
    fn txnid(&self) -> u64 {
        self.txnid
    }
    fn dirty_ref(&self, pgno: u32) -> &[u8] {
        assert!(self.dirty.contains(&pgno), "page {pgno} is not dirty");
        &self.store[&pgno][..self.limits.page_size]
    }
    fn dirty_mut(&mut self, pgno: u32) -> &mut [u8] {
        let ps = self.limits.page_size;
        &mut self.dirty_mut_full(pgno)[..ps]
    }
    fn dirty_mut_full(&mut self, pgno: u32) -> &mut [u8] {
        assert!(self.dirty.contains(&pgno), "page {pgno} is not dirty");
        self.store.get_mut(&pgno).expect("dirty page is stored")
    }
    fn page_is_dirty(&self, pgno: u32) -> bool {
        self.dirty.contains(&pgno)
    }
    fn copy_dirty(&mut self, pgno: u32) -> Box<[u8]> {
        self.dirty_ref(pgno).into()
    }
    fn recycle(&mut self, buf: Box<[u8]>) {
        assert_eq!(buf.len(), self.limits.page_size);
    }
    fn new_page(&mut self, flags: u16) -> Result<u32> {
        let pgno = self.alloc(1);
        let mut buf = vec![0u8; self.limits.page_size].into_boxed_slice();
        fpage::init_page(&mut buf, pgno, flags, self.txnid);
        self.insert_dirty(pgno, buf);
        Ok(pgno)
    }
    fn new_large(&mut self, n: usize, _value_len: usize) -> Result<u32> {
        let pgno = self.alloc(n);
        let mut buf = vec![0u8; n * self.limits.page_size].into_boxed_slice();
        fpage::init_large(&mut buf, pgno, n as u32, self.txnid);
        self.insert_dirty(pgno, buf);
        Ok(pgno)
    }
    fn touch(&mut self, pgno: u32) -> Result<u32> {
        if self.dirty.contains(&pgno) {
            return Ok(pgno);
        }
        let mut buf: Box<[u8]> = self.pages().get(pgno)?.into();
        if (Page { buf: &buf }).pgno() != pgno {
            return Err(Error::corrupted(pgno, "page number mismatch"));
        }
        let new = self.alloc(1);
        fpage::set_pgno(&mut buf, new);
        fpage::set_txnid(&mut buf, self.txnid);
        self.insert_dirty(new, buf);
        self.retired.push(pgno);
        Ok(new)
    }
    fn free(&mut self, pgno: u32, n: usize) {
        let range = pgno..pgno + n as u32;
        if self.dirty.remove(&pgno) {
            let buf = self.store.remove(&pgno).expect("dirty page is stored");
            assert_eq!(buf.len(), n * self.limits.page_size, "freed {n} pages of a chunk of another size");
            self.loose.extend(range);
            self.loose.sort_unstable_by(|a, b| b.cmp(a));
        } else {
            assert!(self.store.contains_key(&pgno), "freeing page {pgno} that is not stored");
            assert!(!self.retired.contains(&pgno), "page {pgno} retired twice");
            self.retired.extend(range);
        }
    }
    fn count(&mut self, op: Counted) {
        match op {
            Counted::Split => self.splits += 1,
            Counted::Merge => self.merges += 1,
        }
    }
    fn table(&self, db: usize) -> Result<View> {
        let t = self.tables.get(db).ok_or(Error::BadDbi)?;
        Ok(View { tree: t.tree, flags: t.flags, cmp: Cmp::for_keys(t.flags) })
    }
    fn set_tree(&mut self, db: usize, tree: Tree, append_leaf: Option<u32>) -> Result<()> {
        let t = self.tables.get_mut(db).ok_or(Error::BadDbi)?;
        t.tree = tree;
        t.dirty = true;
        t.append_leaf = append_leaf;
        Ok(())
    }
    fn append_leaf(&self, db: usize) -> Option<u32> {
        self.tables.get(db)?.append_leaf
    }
    fn kind(&self, db: usize) -> Kind {
        self.tables[db].kind
    }
}

mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::btree::{dupsort, write};
    use crate::flags::PutFlags;
    use crate::format::P_INVALID;

    fn put(w: &mut MemWriter, db: usize, k: &[u8], v: &[u8], flags: PutFlags) -> Result<()> {
        write::put(w, db, k, write::Val::Bytes(v), flags, 0).map(|_| ())
    }

    fn key(i: u64) -> Vec<u8> {
        format!("key-{i:06}").into_bytes()
    }

    fn value(rng: &mut Rng, large: usize) -> Vec<u8> {
        let len =
            if rng.below(20) == 0 { large + rng.below(3 * large as u64) as usize } else { rng.below(40) as usize };
        let b = rng.next() as u8;
        (0..len).map(|i| b.wrapping_add(i as u8)).collect()
    }

    fn same(w: &MemWriter, db: usize, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
        let got = w.records(db);
        let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(got.len(), want.len(), "record count");
        assert!(got == want, "records differ from the model");
        assert_eq!(w.tables[db].tree.items, model.len() as u64);
    }

    /// Random puts (small and large values, overwrites) and deletes in many
    /// transactions: the tree, its counters and the page store agree with a
    /// model after each one.
    #[test]
    fn plain_table_against_model() {
        for (seed, ps) in [(1u64, 256usize), (2, 512), (3, 1024)] {
            let mut w = MemWriter::new(ps);
            let db = w.add_table(Kind::Table, DbFlags::empty());
            let mut model = BTreeMap::new();
            let mut rng = Rng::new(seed);
            let large = w.limits.leaf_nodemax;
            for round in 0..40 {
                let ops = 1 + rng.below(120);
                for _ in 0..ops {
                    let k = key(rng.below(600));
                    // The table grows for 20 rounds, then shrinks.
                    if rng.below(12) < if round < 20 { 3 } else { 8 } {
                        let had = model.remove(&k).is_some();
                        assert_eq!(write::del(&mut w, db, &k, None).unwrap(), had);
                    } else {
                        let v = value(&mut rng, large);
                        put(&mut w, db, &k, &v, PutFlags::empty()).unwrap();
                        model.insert(k, v);
                    }
                }
                w.commit();
                same(&w, db, &model);
                w.check();
                assert!(w.tables[db].tree.height <= 6, "round {round}: tree too deep");
            }
            assert!(w.splits > 0 && w.merges > 0, "page size {ps}: splits {} merges {}", w.splits, w.merges);
            // Delete everything: no page stays behind.
            for k in model.keys() {
                assert!(write::del(&mut w, db, k, None).unwrap());
            }
            w.commit();
            assert_eq!(w.tables[db].tree.root, P_INVALID);
            assert!(w.store.is_empty(), "pages left: {:?}", w.store.keys().collect::<Vec<_>>());
            w.check();
        }
    }

    /// Deletes that make branches borrow an entry from a sibling in both
    /// directions: long keys (so two branches and their separator do not fit
    /// one page) loaded in order (so the branches are full), then deleted
    /// from the front, from the back or at random. The tree agrees with the
    /// model after each transaction.
    #[test]
    fn branches_borrow_from_both_sides() {
        let long = |i: u64| format!("{i:06}-{}", "k".repeat(93)).into_bytes();
        let before = write::BORROWS.with(|b| b.get());
        for seed in 1..=4u64 {
            let mut w = MemWriter::new(256);
            let db = w.add_table(Kind::Table, DbFlags::empty());
            let mut model = BTreeMap::new();
            let mut rng = Rng::new(seed);
            for i in 0..400 {
                let v = vec![i as u8; 4];
                put(&mut w, db, &long(i), &v, PutFlags::empty()).unwrap();
                model.insert(long(i), v);
            }
            w.commit();
            while !model.is_empty() {
                for _ in 0..1 + rng.below(8) {
                    let k = match seed {
                        1 => model.keys().next().cloned(),
                        2 => model.keys().next_back().cloned(),
                        _ if model.is_empty() => None,
                        _ => model.keys().nth(rng.below(model.len() as u64) as usize).cloned(),
                    };
                    let Some(k) = k else { break };
                    assert!(write::del(&mut w, db, &k, None).unwrap());
                    model.remove(&k);
                }
                w.commit();
                same(&w, db, &model);
                w.check();
            }
            assert!(w.store.is_empty(), "pages left: {:?}", w.store.keys().collect::<Vec<_>>());
        }
        let after = write::BORROWS.with(|b| b.get());
        let (left, right) = (after.0 - before.0, after.1 - before.1);
        eprintln!("borrows from the left {left}, from the right {right}");
        assert!(left > 0 && right > 0, "borrows from the left {left}, from the right {right}");
    }

    /// Flags of a put: NO_OVERWRITE, CURRENT, conditional delete.
    #[test]
    fn put_flags_and_conditional_delete() {
        let mut w = MemWriter::new(512);
        let db = w.add_table(Kind::Table, DbFlags::empty());
        assert!(matches!(put(&mut w, db, b"a", b"1", PutFlags::CURRENT), Err(Error::NotFound)));
        put(&mut w, db, b"a", b"1", PutFlags::empty()).unwrap();
        assert!(matches!(put(&mut w, db, b"a", b"2", PutFlags::NO_OVERWRITE), Err(Error::KeyExist)));
        assert!(matches!(put(&mut w, db, b"b", b"2", PutFlags::CURRENT), Err(Error::NotFound)));
        put(&mut w, db, b"a", b"3", PutFlags::CURRENT).unwrap();
        assert!(!write::del(&mut w, db, b"a", Some(b"1")).unwrap());
        assert!(write::del(&mut w, db, b"a", Some(b"3")).unwrap());
        assert!(!write::del(&mut w, db, b"a", None).unwrap());
        w.commit();
        w.check();
    }

    /// A sequential APPEND load leaves every leaf but the last full (the
    /// split at the right edge), uses the APPEND hint, and refuses a key
    /// that is not greater than the last.
    #[test]
    fn append_load_fills_pages() {
        let mut w = MemWriter::new(512);
        let db = w.add_table(Kind::Table, DbFlags::empty());
        let mut model = BTreeMap::new();
        for i in 0..2000u64 {
            let (k, v) = (key(i), i.to_le_bytes().to_vec());
            put(&mut w, db, &k, &v, PutFlags::APPEND).unwrap();
            model.insert(k, v);
        }
        assert!(w.append_leaf(db).is_some(), "the APPEND hint is kept");
        assert!(matches!(put(&mut w, db, &key(5), b"x", PutFlags::APPEND), Err(Error::KeyMismatch(_))));
        w.commit();
        same(&w, db, &model);
        w.check();
        // Entry size: node header 8 + key 10 + value 8 = 26, plus a 2-byte slot.
        let per_leaf = (512 - crate::format::PAGEHDRSZ) / 28;
        let leaves = w.tables[db].tree.leaf_pages as usize;
        assert_eq!(leaves, 2000usize.div_ceil(per_leaf), "leaves of an APPEND load are full");
    }

    /// Clearing a table frees all its pages, large chunks included.
    #[test]
    fn clear_frees_everything() {
        let mut w = MemWriter::new(512);
        let db = w.add_table(Kind::Table, DbFlags::empty());
        let mut rng = Rng::new(9);
        for i in 0..500 {
            let v = value(&mut rng, 400);
            put(&mut w, db, &key(i), &v, PutFlags::empty()).unwrap();
        }
        w.commit();
        w.check();
        assert!(w.tables[db].tree.large_pages > 0);
        write::clear(&mut w, db).unwrap();
        w.commit();
        assert!(w.store.is_empty());
        assert_eq!(w.tables[db].tree.items, 0);
        w.check();
    }

    type MultiModel = BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>;

    fn same_multi(w: &MemWriter, db: usize, model: &MultiModel) {
        let got = w.records(db);
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone()))).collect();
        assert_eq!(got.len(), want.len(), "value count");
        assert!(got == want, "values differ from the model");
        assert_eq!(w.tables[db].tree.items, want.len() as u64);
    }

    /// Multimap puts and deletes (single values and whole keys) with keys
    /// of few and of many values, so values move through plain nodes,
    /// sub-pages (grown in place and copied) and nested trees.
    fn multimap_against_model(flags: DbFlags, seed: u64, val: impl Fn(&mut Rng) -> Vec<u8>) {
        let mut w = MemWriter::new(1024);
        let db = w.add_table(Kind::Table, flags);
        let mut model: MultiModel = BTreeMap::new();
        let mut rng = Rng::new(seed);
        let mut peak = 0;
        for round in 0..60 {
            // Values pile up for 30 rounds, then most go again.
            let (del_one, puts) = if round < 30 { (20, 75) } else { (60, 35) };
            for _ in 0..1 + rng.below(150) {
                // Keys 0..4 collect many values, the others few.
                let ki = if rng.below(2) == 0 { rng.below(4) } else { 4 + rng.below(200) };
                let k = key(ki);
                let op = rng.below(100);
                match op {
                    _ if op >= del_one + puts && (round >= 30 || ki >= 4) => {
                        let had = model.remove(&k).is_some();
                        assert_eq!(dupsort::del(&mut w, db, &k, None).unwrap(), had);
                    }
                    _ if op < del_one => {
                        let v = match model.get(&k) {
                            Some(vs) if rng.below(2) == 0 => {
                                vs.iter().nth(rng.below(vs.len() as u64) as usize).unwrap().clone()
                            }
                            _ => val(&mut rng),
                        };
                        let had = model.get_mut(&k).is_some_and(|vs| vs.remove(&v));
                        if model.get(&k).is_some_and(BTreeSet::is_empty) {
                            model.remove(&k);
                        }
                        assert_eq!(dupsort::del(&mut w, db, &k, Some(&v)).unwrap(), had);
                    }
                    _ => {
                        let v = val(&mut rng);
                        put(&mut w, db, &k, &v, PutFlags::empty()).unwrap();
                        model.entry(k).or_default().insert(v);
                    }
                }
            }
            w.commit();
            same_multi(&w, db, &model);
            w.check();
            peak = peak.max(model.values().map(BTreeSet::len).max().unwrap_or(0));
        }
        assert!(peak > 150, "a key had {peak} values at most: no nested tree");
        assert!(w.merges > 0, "no merges");
    }

    #[test]
    fn multimap_against_model_dupsort() {
        multimap_against_model(DbFlags::DUP_SORT, 11, |r| {
            let n = r.below(400);
            let len = 1 + r.below(12) as usize;
            format!("{n:03}").into_bytes().into_iter().cycle().take(len.max(3)).collect()
        });
    }

    #[test]
    fn multimap_against_model_dupfixed() {
        multimap_against_model(DbFlags::DUP_SORT | DbFlags::DUP_FIXED, 12, |r| r.below(600).to_be_bytes().to_vec());
    }

    /// A multimap put of flags NO_DUP_DATA and ALL_DUPS (replace all values).
    #[test]
    fn multimap_flags() {
        let mut w = MemWriter::new(512);
        let db = w.add_table(Kind::Table, DbFlags::DUP_SORT);
        for v in 0..300u32 {
            put(&mut w, db, b"k", &v.to_be_bytes(), PutFlags::empty()).unwrap();
        }
        assert!(matches!(put(&mut w, db, b"k", &7u32.to_be_bytes(), PutFlags::NO_DUP_DATA), Err(Error::KeyExist)));
        w.commit();
        w.check();
        assert_eq!(w.tables[db].tree.items, 300);
        put(&mut w, db, b"k", b"only", PutFlags::ALL_DUPS).unwrap();
        w.commit();
        w.check();
        assert_eq!(w.records(db), vec![(b"k".to_vec(), b"only".to_vec())]);
    }
}
