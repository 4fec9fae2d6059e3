//! The three engines behind one face, so that every workload of the
//! benchmark is written once (`main.rs`) and runs the same calls on each:
//! rdbx, libmdbx (through the oracle wrapper of `mdbx-sys`) and LMDB
//! (`lmdb-master-sys`). An adapter only translates calls; each method is a
//! single call of the engine's API (`#[inline]`: the hot loops in `main.rs`
//! must see through them).

use std::path::Path;

use rdbx::{Db, DbFlags, Durability, Env, Geometry, PutFlags};
use rdbx_tests::{lmdb, oracle};

use crate::{page_size, GROWTH, UPPER};

/// How an environment is opened.
#[derive(Clone, Copy)]
pub enum Setup {
    /// The in-memory rows: the benchmark's page size and geometry, commits
    /// not flushed (SafeNoSync, `MDBX_SAFE_NOSYNC`, LMDB's `MDB_NOSYNC`),
    /// with or without a writable map.
    NoSync { write_map: bool },
    /// The durable rows: default geometry, every commit flushed (rdbx
    /// SyncDurable, `MDBX_SYNC_DURABLE`, LMDB's default).
    Durable,
}

/// The kinds of table the workloads use.
#[derive(Clone, Copy)]
pub enum Kind {
    Plain,
    /// DUPSORT.
    Multi,
    /// INTEGER_KEY (8-byte native-endian keys).
    Integer,
}

/// A table's shape: (depth, branch pages, leaf pages), and its entries.
pub struct Shape {
    pub tree: (u32, u64, u64),
    pub entries: u64,
}

pub trait Engine: Sync + Sized {
    type Table: Copy + Sync;
    type Ro<'e>: Read<Table = Self::Table>
    where
        Self: 'e;
    type Rw<'e>: Write<Table = Self::Table>
    where
        Self: 'e;
    fn open(dir: &Path, setup: Setup) -> Self;
    fn begin_ro(&self) -> Self::Ro<'_>;
    fn begin_rw(&self) -> Self::Rw<'_>;
    /// Pages in use: the first unallocated page number.
    fn used_pages(&self) -> u64;
    /// (flushes, write calls) so far, for an engine that counts them.
    fn io_counts(&self) -> Option<(u64, u64)> {
        None
    }
    /// Syncs and closes.
    fn close(self);
}

/// Reads, in a read or a write transaction.
pub trait Read {
    type Table: Copy;
    fn get(&self, t: Self::Table, key: &[u8]) -> Option<&[u8]>;
    /// Calls `f` on every record in key order (one cursor).
    fn scan(&self, t: Self::Table, f: impl FnMut(&[u8], &[u8]));
    fn shape(&self, t: Self::Table) -> Shape;
}

pub trait Write: Read {
    /// The named table (created if missing), or the main one for `None`.
    fn table(&mut self, name: Option<&str>, kind: Kind) -> Self::Table;
    fn put(&mut self, t: Self::Table, key: &[u8], value: &[u8]);
    /// A put with APPEND (keys in ascending order).
    fn append(&mut self, t: Self::Table, key: &[u8], value: &[u8]);
    /// Deletes the key (with `value`: that value of a multimap key).
    fn del(&mut self, t: Self::Table, key: &[u8], value: Option<&[u8]>);
    /// Walks every record with one write cursor, deleting at the cursor
    /// those `pick` selects: (records walked, deleted).
    fn walk_delete(&mut self, t: Self::Table, pick: impl FnMut(&[u8], &[u8]) -> bool) -> (u64, u64);
    fn commit(self);
}

// ---- rdbx

/// rdbx's page buffer reserve, if `RDBX_BENCH_RESERVE` sets one (`max`:
/// keep every buffer, as LMDB does).
fn page_reserve() -> Option<usize> {
    let v = std::env::var("RDBX_BENCH_RESERVE").ok()?;
    Some(if v == "max" { usize::MAX } else { v.parse().expect("RDBX_BENCH_RESERVE: a number of pages or max") })
}

impl Engine for Env {
    type Table = Db;
    type Ro<'e> = rdbx::RoTxn<'e>;
    type Rw<'e> = rdbx::RwTxn<'e>;

    fn open(dir: &Path, setup: Setup) -> Self {
        let b = Env::builder();
        let b = match setup {
            Setup::NoSync { write_map } => {
                b.write_map(write_map).max_dbs(8).durability(Durability::SafeNoSync).geometry(Geometry {
                    page_size: Some(page_size()),
                    size_upper: Some(UPPER),
                    growth_step: Some(GROWTH),
                    ..Default::default()
                })
            }
            Setup::Durable => b.durability(Durability::SyncDurable),
        };
        let b = match page_reserve() {
            Some(pages) => b.page_buffer_reserve(pages),
            None => b,
        };
        b.open(dir).expect("rdbx open")
    }
    #[inline]
    fn begin_ro(&self) -> Self::Ro<'_> {
        self.begin_ro_txn().unwrap()
    }
    #[inline]
    fn begin_rw(&self) -> Self::Rw<'_> {
        self.begin_rw_txn().unwrap()
    }
    fn used_pages(&self) -> u64 {
        self.info().unwrap().first_unallocated
    }
    fn io_counts(&self) -> Option<(u64, u64)> {
        let ops = self.page_ops();
        Some((ops.fsync, ops.wops))
    }
    fn close(self) {
        drop(self);
    }
}

/// The read half of both rdbx transactions (they share these calls).
macro_rules! rdbx_read {
    ($txn:ty) => {
        impl Read for $txn {
            type Table = Db;
            #[inline]
            fn get(&self, t: Db, key: &[u8]) -> Option<&[u8]> {
                <$txn>::get(self, t, key).unwrap()
            }
            #[inline]
            fn scan(&self, t: Db, mut f: impl FnMut(&[u8], &[u8])) {
                let mut c = self.cursor(t).unwrap();
                while let Some((k, v)) = c.next().unwrap() {
                    f(k, v);
                }
            }
            fn shape(&self, t: Db) -> Shape {
                let s = self.db_stat(t).unwrap();
                Shape { tree: (s.depth, s.branch_pages, s.leaf_pages), entries: s.entries }
            }
        }
    };
}
rdbx_read!(rdbx::RoTxn<'_>);
rdbx_read!(rdbx::RwTxn<'_>);

impl Write for rdbx::RwTxn<'_> {
    fn table(&mut self, name: Option<&str>, kind: Kind) -> Db {
        match name {
            None => Db::MAIN,
            Some(name) => {
                let flags = match kind {
                    Kind::Plain => DbFlags::empty(),
                    Kind::Multi => DbFlags::DUP_SORT,
                    Kind::Integer => DbFlags::INTEGER_KEY,
                };
                self.create_db(Some(name), flags).unwrap()
            }
        }
    }
    #[inline]
    fn put(&mut self, t: Db, key: &[u8], value: &[u8]) {
        rdbx::RwTxn::put(self, t, key, value, PutFlags::empty()).unwrap();
    }
    #[inline]
    fn append(&mut self, t: Db, key: &[u8], value: &[u8]) {
        rdbx::RwTxn::put(self, t, key, value, PutFlags::APPEND).unwrap();
    }
    #[inline]
    fn del(&mut self, t: Db, key: &[u8], value: Option<&[u8]>) {
        rdbx::RwTxn::del(self, t, key, value).unwrap();
    }
    fn walk_delete(&mut self, t: Db, mut pick: impl FnMut(&[u8], &[u8]) -> bool) -> (u64, u64) {
        let mut c = self.rw_cursor(t).unwrap();
        let (mut walked, mut deleted) = (0, 0);
        let mut at = c.first().unwrap().map(|(k, v)| pick(k, v));
        while let Some(del) = at {
            walked += 1;
            if del {
                c.del().unwrap();
                deleted += 1;
            }
            at = c.next().unwrap().map(|(k, v)| pick(k, v));
        }
        (walked, deleted)
    }
    #[inline]
    fn commit(self) {
        rdbx::RwTxn::commit(self).unwrap();
    }
}

// ---- libmdbx

impl Engine for oracle::Env {
    type Table = oracle::Dbi;
    type Ro<'e> = oracle::Txn<'e>;
    type Rw<'e> = oracle::Txn<'e>;

    fn open(dir: &Path, setup: Setup) -> Self {
        let opts = match setup {
            Setup::NoSync { write_map } => oracle::EnvOptions {
                no_sub_dir: Some(false),
                page_size: Some(page_size()),
                geometry: oracle::Geometry { upper: Some(UPPER), growth: Some(GROWTH), ..Default::default() },
                max_dbs: 8,
                durability: oracle::Durability::SafeNoSync,
                write_map,
                ..Default::default()
            },
            Setup::Durable => oracle::EnvOptions { no_sub_dir: Some(false), max_dbs: 2, ..Default::default() },
        };
        oracle::Env::open(dir, &opts).expect("libmdbx open")
    }
    #[inline]
    fn begin_ro(&self) -> Self::Ro<'_> {
        oracle::Env::begin_ro(self).unwrap()
    }
    #[inline]
    fn begin_rw(&self) -> Self::Rw<'_> {
        oracle::Env::begin_rw(self).unwrap()
    }
    fn used_pages(&self) -> u64 {
        self.info().unwrap().last_pgno + 1
    }
    fn close(self) {
        oracle::Env::close(self).unwrap();
    }
}

impl Read for oracle::Txn<'_> {
    type Table = oracle::Dbi;
    #[inline]
    fn get(&self, t: oracle::Dbi, key: &[u8]) -> Option<&[u8]> {
        self.get_ref(t, key).unwrap()
    }
    #[inline]
    fn scan(&self, t: oracle::Dbi, mut f: impl FnMut(&[u8], &[u8])) {
        self.for_each(t, |k, v| {
            f(k, v);
            Ok(())
        })
        .unwrap();
    }
    fn shape(&self, t: oracle::Dbi) -> Shape {
        let s = self.stat(t).unwrap();
        Shape { tree: (s.depth, s.branch_pages, s.leaf_pages), entries: s.entries }
    }
}

impl Write for oracle::Txn<'_> {
    fn table(&mut self, name: Option<&str>, kind: Kind) -> oracle::Dbi {
        match name {
            None => oracle::MAIN_DBI,
            Some(name) => {
                let flags = match kind {
                    Kind::Plain => 0,
                    Kind::Multi => oracle::MDBX_DUPSORT,
                    Kind::Integer => oracle::MDBX_INTEGERKEY,
                };
                self.create_table(Some(name.as_bytes()), flags).unwrap()
            }
        }
    }
    #[inline]
    fn put(&mut self, t: oracle::Dbi, key: &[u8], value: &[u8]) {
        oracle::Txn::put(self, t, key, value, 0).unwrap();
    }
    #[inline]
    fn append(&mut self, t: oracle::Dbi, key: &[u8], value: &[u8]) {
        oracle::Txn::put(self, t, key, value, oracle::MDBX_APPEND).unwrap();
    }
    #[inline]
    fn del(&mut self, t: oracle::Dbi, key: &[u8], value: Option<&[u8]>) {
        oracle::Txn::del(self, t, key, value).unwrap();
    }
    fn walk_delete(&mut self, t: oracle::Dbi, pick: impl FnMut(&[u8], &[u8]) -> bool) -> (u64, u64) {
        oracle::Txn::walk_delete(self, t, pick).unwrap()
    }
    #[inline]
    fn commit(self) {
        oracle::Txn::commit(self).unwrap();
    }
}

// ---- LMDB

impl Engine for lmdb::Env {
    type Table = u32;
    type Ro<'e> = lmdb::Txn<'e>;
    type Rw<'e> = lmdb::Txn<'e>;

    fn open(dir: &Path, setup: Setup) -> Self {
        std::fs::create_dir_all(dir).expect("LMDB directory");
        // LMDB has no automatic growth: the map is the whole upper bound.
        let (map, dbs, flags) = match setup {
            Setup::NoSync { write_map } => {
                (UPPER, 8, lmdb::MDB_NOSYNC | if write_map { lmdb::MDB_WRITEMAP } else { 0 })
            }
            Setup::Durable => (1 << 30, 2, 0),
        };
        lmdb::Env::open(dir, map, dbs, flags).expect("LMDB open")
    }
    #[inline]
    fn begin_ro(&self) -> Self::Ro<'_> {
        lmdb::Env::begin_ro(self).unwrap()
    }
    #[inline]
    fn begin_rw(&self) -> Self::Rw<'_> {
        lmdb::Env::begin_rw(self).unwrap()
    }
    fn used_pages(&self) -> u64 {
        self.last_pgno().unwrap() + 1
    }
    fn close(self) {
        self.sync().unwrap();
    }
}

impl Read for lmdb::Txn<'_> {
    type Table = u32;
    #[inline]
    fn get(&self, t: u32, key: &[u8]) -> Option<&[u8]> {
        self.get_ref(t, key).unwrap()
    }
    #[inline]
    fn scan(&self, t: u32, f: impl FnMut(&[u8], &[u8])) {
        self.for_each(t, f).unwrap();
    }
    fn shape(&self, t: u32) -> Shape {
        let s = self.stat(t).unwrap();
        Shape { tree: (s.depth, s.branch_pages, s.leaf_pages), entries: s.entries }
    }
}

impl Write for lmdb::Txn<'_> {
    fn table(&mut self, name: Option<&str>, kind: Kind) -> u32 {
        match name {
            None => self.main_dbi().unwrap(),
            Some(name) => {
                let flags = match kind {
                    Kind::Plain => 0,
                    Kind::Multi => lmdb::MDB_DUPSORT,
                    Kind::Integer => lmdb::MDB_INTEGERKEY,
                };
                self.create_table(name.as_bytes(), flags).unwrap()
            }
        }
    }
    #[inline]
    fn put(&mut self, t: u32, key: &[u8], value: &[u8]) {
        lmdb::Txn::put(self, t, key, value, 0).unwrap();
    }
    #[inline]
    fn append(&mut self, t: u32, key: &[u8], value: &[u8]) {
        lmdb::Txn::put(self, t, key, value, lmdb::MDB_APPEND).unwrap();
    }
    #[inline]
    fn del(&mut self, t: u32, key: &[u8], value: Option<&[u8]>) {
        lmdb::Txn::del(self, t, key, value).unwrap();
    }
    fn walk_delete(&mut self, t: u32, pick: impl FnMut(&[u8], &[u8]) -> bool) -> (u64, u64) {
        lmdb::Txn::walk_delete(self, t, pick).unwrap()
    }
    #[inline]
    fn commit(self) {
        lmdb::Txn::commit(self).unwrap();
    }
}
