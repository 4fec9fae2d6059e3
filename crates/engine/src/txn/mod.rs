//! Transactions: read-only snapshots and the single write transaction with its
//! dirty pages. Reads of both kinds go through [`Pages`] (`btree::pages`),
//! which consults the dirty pages of a write transaction first and the memory
//! map otherwise.
//!
//! The write transaction, by concern (libmdbx's file in brackets):
//! * here: the types, table handles, reads, puts and deletes (txn-basal);
//! * `page_ops`: the dirty set, new pages, copy-on-write, freeing (page-ops);
//! * `spill`: bounded memory for huge transactions (spill);
//! * `nested`: child transactions (txn-nested);
//! * `commit`: the commit (txn-commit); GC allocation and GC records stay in
//!   `crate::gc` (gc-get, gc-put);
//! * `write_cursor`: the cursor that writes.

pub(crate) use crate::btree::pages::Pages;
pub(crate) use crate::btree::writer::View;
pub(crate) use crate::pool::{Dirty, PgnoHasher, PgnoSet};

pub(crate) mod commit;
mod nested;
pub(crate) mod page_ops;
pub(crate) mod spill;
mod tree_writer;
mod write_cursor;

pub(crate) use nested::Frame;
pub use nested::NestedTxn;
pub use write_cursor::RwCursor;

use std::cell::RefCell;
use std::sync::Arc;

use crate::btree::{self, cursor::Cursor, Cmp};
use crate::env::{EnvInner, Snapshot};
use crate::error::{Error, Result};
use crate::flags::{DbFlags, PutFlags};
use crate::format::meta::{Meta, MetaGeo};
use crate::format::node::{self, N_TREE};
use crate::format::tree::{Tree, TREE_SIZE};
use crate::format::P_INVALID;
use crate::lck::{ReaderSlot, WriterGuard};
use crate::os::mmap::Mmap;
use crate::pool::empty_kept;

/// A table handle. Valid in every transaction of the environment that opened
/// it, until its table is deleted (`drop_db`, or `clear_db` of the main table).
/// Elsewhere every call refuses it with `Err(BadDbi)`, as libmdbx refuses a
/// stale or foreign handle with `MDBX_BAD_DBI`: a handle of another
/// environment (even one of the same file), and a handle kept across the
/// deletion of its table while the slot went to another table.
///
/// [`Db::MAIN`], the main table, is valid in every environment (each has a
/// main table; `open_db(None)` returns it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Db {
    /// Slot number (0: the GC, 1: the main table).
    pub(crate) dbi: u32,
    /// Generation of the slot when the handle was made (0 for the built-ins).
    pub(crate) gen: u32,
    /// Identity of the environment (`DbRegistry::id`; 0 for the built-ins).
    pub(crate) env: u64,
}

impl Db {
    /// The main (unnamed) table.
    pub const MAIN: Db = Db { dbi: 1, gen: 0, env: 0 };
    pub(crate) const GC: Db = Db { dbi: 0, gen: 0, env: 0 };

    /// Whether this is the handle of the GC or the main table.
    fn is_builtin(self) -> bool {
        self.dbi < 2
    }

    /// `Err(BadDbi)` for a named-table handle of another environment.
    #[inline]
    fn check_env(self, env: &EnvInner) -> Result<()> {
        if self.env != env.dbs.id && !self.is_builtin() {
            return Err(Error::BadDbi);
        }
        Ok(())
    }
}

/// Source of environment identities (0 is never handed out).
static NEXT_ENV_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The named-table slots of an environment. Slot numbers are reused after a
/// table is deleted; each slot counts its reuses (`gen`), and a handle keeps
/// the count it was made with, so a handle of a deleted table stays invalid
/// whatever takes its slot (libmdbx keeps per-slot sequence numbers too).
pub(crate) struct DbRegistry {
    /// Identity of the environment, unique in the process.
    pub id: u64,
    slots: std::sync::Mutex<Vec<DbSlot>>,
    /// Slots freed so far (`forget`): a write transaction's kept tables need
    /// no check for stale entries while it has not changed.
    forgotten: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct DbSlot {
    /// Shared with the transactions' table states (a clone is a count).
    name: Option<Arc<[u8]>>,
    /// Bumped each time the slot is freed (wrapping after 2^32 deletions).
    gen: u32,
}

impl DbRegistry {
    pub(crate) fn new() -> DbRegistry {
        let id = NEXT_ENV_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        DbRegistry {
            id,
            slots: std::sync::Mutex::new(vec![DbSlot::default(), DbSlot::default()]),
            forgotten: Default::default(),
        }
    }

    /// How many slots were freed so far.
    pub(crate) fn forgotten(&self) -> u64 {
        self.forgotten.load(std::sync::atomic::Ordering::Acquire)
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<DbSlot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn handle(&self, dbi: usize, slot: &DbSlot) -> Db {
        Db { dbi: dbi as u32, gen: slot.gen, env: self.id }
    }

    /// The handle of table `name`, taking a free slot if it has none.
    pub(crate) fn register(&self, name: &[u8], max_dbs: u32) -> Result<Db> {
        let mut slots = self.slots();
        if let Some(i) = slots.iter().position(|s| s.name.as_deref() == Some(name)) {
            return Ok(self.handle(i, &slots[i]));
        }
        let used = slots.iter().filter(|s| s.name.is_some()).count();
        if used >= max_dbs as usize {
            return Err(Error::DbsFull);
        }
        let i = match slots.iter().skip(2).position(|s| s.name.is_none()) {
            Some(i) => i + 2,
            None => {
                slots.push(DbSlot::default());
                slots.len() - 1
            }
        };
        slots[i].name = Some(Arc::from(name));
        Ok(self.handle(i, &slots[i]))
    }

    /// The handle of table `name` if it has a slot.
    pub(crate) fn lookup(&self, name: &[u8]) -> Option<Db> {
        let slots = self.slots();
        let i = slots.iter().position(|s| s.name.as_deref() == Some(name))?;
        Some(self.handle(i, &slots[i]))
    }

    /// The name of `db`'s table; `Err(BadDbi)` unless `db` is the current
    /// handle of a named table of this environment.
    pub(crate) fn name_of(&self, db: Db) -> Result<Arc<[u8]>> {
        if db.env != self.id {
            return Err(Error::BadDbi);
        }
        let slots = self.slots();
        match slots.get(db.dbi as usize) {
            Some(DbSlot { name: Some(name), gen }) if *gen == db.gen && db.dbi >= 2 => Ok(name.clone()),
            _ => Err(Error::BadDbi),
        }
    }

    /// Empties the entries of `tables` (named tables, indexed by slot) whose
    /// slot was freed or given to another table since they were loaded.
    pub(crate) fn drop_stale(&self, tables: &mut [Option<Table>]) {
        let slots = self.slots();
        for (i, t) in tables.iter_mut().enumerate().skip(2) {
            let stale = t.as_ref().is_some_and(|t| slots.get(i).is_none_or(|s| s.name.is_none() || s.gen != t.gen));
            if stale {
                *t = None;
            }
        }
    }

    /// Frees slot `dbi`: its handles become stale.
    pub(crate) fn forget(&self, dbi: u32) {
        if let Some(s) = self.slots().get_mut(dbi as usize).filter(|_| dbi >= 2) {
            s.name = None;
            s.gen = s.gen.wrapping_add(1);
            self.forgotten.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
    }
}

/// Statistics of one table (`MDBX_stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Page size.
    pub page_size: u32,
    /// Tree depth (0 for an empty table).
    pub depth: u32,
    /// Branch pages.
    pub branch_pages: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Pages of large values.
    pub overflow_pages: u64,
    /// Records.
    pub entries: u64,
    /// Last transaction that modified the table.
    pub mod_txnid: u64,
}

/// Information about a transaction (`MDBX_txn_info`), sizes in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxnInfo {
    /// Transaction id (the snapshot for read-only transactions).
    pub id: u64,
    /// Read-only: commits since the snapshot; write: how far the oldest
    /// reader lags behind this transaction.
    pub reader_lag: u64,
    /// Bytes up to the last allocated page.
    pub space_used: u64,
    /// The current file size (geometry `now`).
    pub space_limit_soft: u64,
    /// The geometry's upper bound.
    pub space_limit_hard: u64,
    /// Read-only: bytes retired by later commits that this snapshot keeps
    /// from reuse; write: bytes retired so far by this transaction.
    pub space_retired: u64,
    /// Write: bytes of dirty pages; read-only: 0.
    pub space_dirty: u64,
}

/// Per-transaction state of one table.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    pub tree: Tree,
    pub flags: DbFlags,
    pub cmp: Cmp,
    /// Changed in this write transaction (its record must be rewritten).
    pub dirty: bool,
    /// Name (None for the main table and the GC).
    pub name: Option<Arc<[u8]>>,
    /// The rightmost leaf after an APPEND put, dirty, for the next APPEND
    /// (`btree::write::put`). Any other change to the table clears it: every
    /// change goes through `RwTxn::table_mut`.
    pub append_leaf: Option<u32>,
    /// Generation of the handle slot this state belongs to (see `Db`).
    pub gen: u32,
    /// Where the table's record was left in the main tree by the commit
    /// that last wrote it, when that tree is one leaf: (the leaf, the
    /// record's index). The next commit rewrites the record there while the
    /// main tree's root is still that page, unchanged (`txn::commit`).
    pub record_at: Option<(u32, u16)>,
}

impl Table {
    pub(crate) fn view(&self) -> View {
        View { tree: self.tree, flags: self.flags, cmp: self.cmp }
    }

    pub(crate) fn new(tree: Tree, name: Option<Arc<[u8]>>) -> Table {
        let flags = DbFlags::from_bits_truncate(tree.flags as u32);
        Table { tree, flags, cmp: Cmp::for_keys(flags), dirty: false, name, append_leaf: None, gen: 0, record_at: None }
    }

    /// The state of named table `db`.
    pub(crate) fn named(tree: Tree, name: Arc<[u8]>, db: Db) -> Table {
        Table { gen: db.gen, ..Table::new(tree, Some(name)) }
    }
}

fn stat_of(tree: &Tree, ps: usize) -> Stat {
    Stat {
        page_size: ps as u32,
        depth: tree.height as u32,
        branch_pages: tree.branch_pages as u64,
        leaf_pages: tree.leaf_pages as u64,
        overflow_pages: tree.large_pages as u64,
        entries: tree.items,
        mod_txnid: tree.mod_txnid,
    }
}

/// Finds the record of table `name` in the main tree.
pub(crate) fn find_table(pages: &Pages<'_>, main: &Tree, name: &[u8]) -> Result<Option<Tree>> {
    if main.root == P_INVALID {
        return Ok(None);
    }
    let cmp = Cmp::for_keys(DbFlags::from_bits_truncate(main.flags as u32));
    let f = btree::descend(pages, main.root, main.height, name, cmp)?;
    if !f.exact {
        return Ok(None);
    }
    let n = node::node(f.leaf, f.idx, f.pgno)?;
    if n.flags != N_TREE || n.data.len() != TREE_SIZE {
        return Err(Error::Incompatible(format!(
            "{:?} is a plain record of the main table, not a table",
            String::from_utf8_lossy(name)
        )));
    }
    let t = Tree::read(n.data);
    if !DbFlags::from_bits_truncate(t.flags as u32).is_valid_persistent() || t.flags & !0x7E != 0 {
        return Err(Error::corrupted(f.pgno, "table record has invalid flags"));
    }
    if t.root == P_INVALID {
        if t.height != 0 || t.items != 0 {
            return Err(Error::corrupted(f.pgno, "empty table record with non-zero height or items"));
        }
    } else if t.root < crate::format::NUM_METAS || t.root >= pages.valid || t.height == 0 {
        return Err(Error::corrupted(f.pgno, "table root outside the allocated pages"));
    }
    Ok(Some(t))
}

/// Lists the named tables: keys of N_TREE records of the main tree, in order.
pub(crate) fn list_tables(pages: &Pages<'_>, main: &Tree) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    if main.root == P_INVALID {
        return Ok(out);
    }
    let cmp = Cmp::for_keys(DbFlags::from_bits_truncate(main.flags as u32));
    let mut c = Cursor::new(*pages, main.root, main.height, cmp);
    let mut r = c.first_node()?;
    while let Some((k, flags)) = r {
        if flags == N_TREE {
            out.push(k.to_vec());
        }
        r = c.next_node()?;
    }
    Ok(out)
}

/// Read-only transaction: a stable snapshot of the database.
pub struct RoTxn<'env> {
    pub(crate) env: &'env EnvInner,
    pub(crate) snap: Snapshot,
    pub(crate) _slot: ReaderSlot<'env>,
    pub(crate) tables: RefCell<Vec<Option<Table>>>,
    /// Whether the transaction is parked (see [`RoTxn::park`]).
    pub(crate) park: Park,
}

/// Parking state of a read transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Park {
    Active,
    /// Parked; the slot's owner thread to give back on unpark.
    Parked {
        owner: u64,
    },
    /// Found ousted by `unpark`: the snapshot is gone for good.
    Ousted,
}

impl Drop for RoTxn<'_> {
    fn drop(&mut self) {
        if let Park::Parked { owner } = self.park {
            self._slot.finish_parked(owner);
        }
    }
}

/// Read-write transaction. Only one exists at a time across all processes.
pub struct RwTxn<'env> {
    pub(crate) env: &'env EnvInner,
    /// The bulk of the state, which the environment keeps between write
    /// transactions (see [`WriteState`]). Before `_guard`: released first.
    pub(crate) st: std::sync::MutexGuard<'env, WriteState>,
    pub(crate) _guard: WriterGuard<'env>,
    pub(crate) txnid: u64,
    pub(crate) geo: MetaGeo,
    /// Pages beyond the first of the large chunks in `dirty` (so that
    /// `dirty.len() + dirty_extra` is the pages held in memory).
    pub(crate) dirty_extra: usize,
    /// The page after the last one allocated: the next allocation continues
    /// that run if it can (commit locality, `gc::alloc`; 0 = none).
    pub(crate) run_next: u32,
    /// `reclaimed.len()` when a scan last found no run worth starting.
    pub(crate) runs_scanned: usize,
    pub(crate) detent: Option<u64>,
    pub(crate) gc_exhausted: bool,
    /// The GC holds no record older than this transaction (it consumed the
    /// last one, left in place for the GC update to rename): nothing in it
    /// can be reclaimed, whatever the readers do.
    pub(crate) gc_spent: bool,
    pub(crate) in_reclaim: bool,
    pub(crate) saving_gc: bool,
    /// The GC update writes no records under spare keys (see `gc::save_gc`).
    pub(crate) no_spare: bool,
    /// Dead readers were swept in this transaction (see `gc::alloc`).
    pub(crate) readers_swept: bool,
    pub(crate) poisoned: bool,
}

/// The bulk of a write transaction's state: its meta, table list, dirty
/// set and page lists. It stays in the environment (`EnvInner::writer_state`),
/// and a write transaction holds its lock: a transaction is moved (out of
/// `begin_rw_txn`'s result, into `commit`), and with these inline it was a
/// kilobyte copied each time, and its lists were moved in from the
/// environment and back. Between write transactions the lists are empty
/// with the capacity they grew to (neither allocated again nor rehashed as
/// the next transaction grows them), and the table list holds the tables as
/// the last commit left them (see [`WriteState::tables_for`]).
pub(crate) struct WriteState {
    /// The meta this transaction started from.
    pub(crate) base: Meta,
    /// The meta slot the commit writes (the troika's tail).
    pub(crate) base_slot: usize,
    /// The meta slot of the base meta.
    pub(crate) recent_slot: usize,
    /// The txnid of the last steady commit (a lazy mode may reuse no page
    /// it still needs).
    pub(crate) steady_txnid: u64,
    /// Pages this transaction retired to the GC (the meta's counter).
    pub(crate) retired_count: u64,
    pub(crate) tables: Vec<Option<Table>>,
    pub(crate) dirty: Dirty,
    /// Dirty pages (heads of chunks) written to the data file early to bound
    /// memory (see `spill`); they still belong to this transaction.
    pub(crate) spilled: PgnoSet,
    /// Pages of the base snapshot freed by this transaction (go to the GC under `txnid`).
    pub(crate) retired: Vec<u32>,
    /// Pages allocated by this transaction and freed again (reusable at once).
    pub(crate) loose: Vec<u32>,
    /// Pages taken from consumed GC records and not yet used (as runs).
    pub(crate) reclaimed: crate::run_list::RunList,
    /// Keys of the GC records consumed by this transaction.
    pub(crate) consumed: Vec<u64>,
    /// GC records this transaction took pages from in part: (key, reserved
    /// bytes). Their keys are no reader's: the commit may put pages it took
    /// and did not use back into them (`gc::return_leftovers`).
    pub(crate) partly_taken: Vec<(u64, usize)>,
    /// A GC record this transaction consumed whole and left in place (its
    /// key and where it was): the GC update makes it the own record or
    /// deletes it (`gc::renamable`). Its pages are reclaimed already.
    pub(crate) stale_gc: Option<crate::gc::StaleGc>,
    /// Reclaimed pages the GC update put into the own record while a reader
    /// older than the base snapshot pins it, kept when `partly_taken` is not
    /// empty (`gc::return_leftovers`).
    pub(crate) folded: Vec<u32>,
    pub(crate) canary: [u64; 4],
    /// Open nested transactions, innermost last.
    pub(crate) frames: Vec<Frame>,
    /// Page buffers for reuse (see `pool`).
    pub(crate) pool: crate::pool::PagePool,
    /// Page operations of this transaction, added to the lock file's
    /// counters when it ends (one atomic add per counter, not per page).
    pub(crate) ops: crate::lck::PageOps,
    /// Work lists of the GC.
    pub(crate) gc_scratch: crate::pool::GcScratch,
    /// The GC record the last commit made its own, as written (`gc::OwnRecord`).
    pub(crate) own_record: crate::gc::OwnRecord,
    /// The commit's order of the pages it writes (`txn::commit`).
    pub(crate) write_order: Vec<u64>,
    /// The radix sort's second buffer for `write_order` (kept likewise).
    pub(crate) write_order_scratch: Vec<u64>,
    /// The radix sort's second buffer for the GC's page lists.
    pub(crate) sorting: Vec<u32>,
    /// The debug check's copies of the GC lists (`gc::replan`).
    #[cfg(debug_assertions)]
    pub(crate) replan: crate::gc::ReplanLists,
    /// A multimap node's content being built (`TreeWriter::take_bytes`).
    pub(crate) node_bytes: Vec<u8>,
    /// A page split's entry sizes (`TreeWriter::take_sizes`).
    pub(crate) split_sizes: Vec<usize>,
    /// The main tree of this transaction's commit, once it succeeded; kept
    /// with the table list for the next transaction (`tables_for`).
    pub(crate) committed_main: Option<Tree>,
    /// Named tables a read of this transaction loaded (`table` takes `&self`)
    /// and nothing changed: their trees as the main table records them. An
    /// edit moves the table to `tables` (`loaded_table`); whatever sets or
    /// empties a slot of `tables` empties it here too. A nested abort empties
    /// it all, as a precaution: an entry a child loaded holds for the parent
    /// too (a record changes only by an edit, which moves its table out).
    pub(crate) read_loaded: RefCell<Vec<Option<Table>>>,
    /// What the writer last knew of the meta slots (see
    /// `EnvInner::writer_metas`): kept here, under the lock the write
    /// transaction holds anyway, rather than behind a mutex of its own
    /// taken at every begin and commit.
    pub(crate) metas: Option<crate::env::WriterMetas>,
    /// `DbRegistry::forgotten` when `tables` was last checked for stale
    /// entries (`tables_for`).
    pub(crate) tables_forgotten: u64,
    /// The map write transactions read and write through, kept between
    /// them: a transaction takes the environment's map (a read lock and a
    /// count, and the count back at its end: four locked instructions a
    /// commit) only when `map_gen` says it was replaced since, or when this
    /// one does not cover the base snapshot.
    pub(crate) map: Arc<Mmap>,
    /// `EnvInner::map_gen` when `map` was the environment's map
    /// (`u64::MAX`: not known, look again).
    pub(crate) map_gen: u64,
}

impl WriteState {
    /// The state before the first write transaction (allocates nothing but
    /// what it is given: the environment's map).
    pub(crate) fn new(map: Arc<Mmap>, map_gen: u64, page_reserve: usize) -> WriteState {
        let geo = MetaGeo { grow_pv: 0, shrink_pv: 0, lower: 0, upper: 0, now: 0, first_unallocated: 0 };
        WriteState {
            base: Meta {
                magic: 0,
                txnid_a: 0,
                geo,
                gc: Tree::empty(0),
                main: Tree::empty(0),
                canary: [0; 4],
                sign: 0,
                txnid_b: 0,
                pages_retired: 0,
                bootid: [0; 16],
                dxbid: [0; 16],
            },
            base_slot: 0,
            recent_slot: 0,
            steady_txnid: 0,
            retired_count: 0,
            tables: Vec::new(),
            dirty: Default::default(),
            spilled: Default::default(),
            retired: Vec::new(),
            loose: Vec::new(),
            reclaimed: Default::default(),
            consumed: Vec::new(),
            partly_taken: Vec::new(),
            stale_gc: None,
            folded: Vec::new(),
            canary: [0; 4],
            frames: Vec::new(),
            pool: crate::pool::PagePool::with_reserve(page_reserve),
            ops: Default::default(),
            gc_scratch: Default::default(),
            own_record: Default::default(),
            write_order: Vec::new(),
            write_order_scratch: Vec::new(),
            split_sizes: Vec::new(),
            node_bytes: Vec::new(),
            #[cfg(debug_assertions)]
            replan: Default::default(),
            sorting: Vec::new(),
            committed_main: None,
            read_loaded: Default::default(),
            metas: None,
            tables_forgotten: 0,
            map,
            map_gen,
        }
    }

    /// Sets the state up for a write transaction starting from `self.base`
    /// (set by the caller).
    pub(crate) fn begin(&mut self, dbs: &DbRegistry) {
        self.canary = self.base.canary;
        let (gc, main) = (self.base.gc, self.base.main);
        self.tables_for(gc, main, dbs);
    }

    /// The table list for a write transaction on the base snapshot (its GC
    /// and main trees): the kept named tables if they are current (the main
    /// tree they were committed in is the base's: no other commit changed a
    /// table record since, so a one-put commit into a named table does not
    /// look the table up again), and the GC and the main table. Otherwise
    /// only those two.
    fn tables_for(&mut self, gc: Tree, main: Tree, dbs: &DbRegistry) {
        let tables = &mut self.tables;
        let forgotten = dbs.forgotten();
        let kept = self.committed_main.take() == Some(main);
        if !kept {
            tables.clear();
        } else if tables.len() > 2 && forgotten != self.tables_forgotten {
            // A slot was freed since the tables were kept (only a write
            // transaction frees one, under the writer lock this one holds).
            dbs.drop_stale(tables);
        }
        self.tables_forgotten = forgotten;
        if kept {
            if let [Some(g), Some(m), ..] = &mut tables[..] {
                // As the last commit left them (`end`): the main table's
                // tree is `main`; the GC's differs at most in the meta's
                // `dupfix_size`.
                debug_assert!(m.tree == main && !m.dirty && m.name.is_none());
                g.tree = gc;
                return;
            }
        }
        if tables.len() < 2 {
            // Room for a named table or two without growing (the first time).
            tables.reserve(4);
            tables.resize(2, None);
        }
        tables[0] = Some(Table::new(gc, None));
        tables[1] = Some(Table::new(main, None));
    }

    /// Empties the state at the end of a transaction, for the next one:
    /// the lists keep their capacity (unless a bulk transaction grew them
    /// past `pool::LIST_KEEP`), the table list keeps the tables as committed
    /// if the transaction committed (`main`), and the page operations are
    /// returned.
    // Inline: a one-put commit runs 26 more instructions without it
    // (docs/design.md, "Inlining on the commit path").
    #[inline]
    pub(crate) fn end(&mut self, main: Option<Tree>) -> crate::lck::PageOps {
        self.pool.keep_dirty_set(&mut self.dirty);
        if self.spilled.capacity() > crate::pool::LIST_KEEP {
            // A huge transaction's (its table is not kept).
            self.spilled = Default::default();
        }
        self.spilled.clear();
        empty_kept(&mut self.retired);
        empty_kept(&mut self.loose);
        empty_kept(&mut self.consumed);
        empty_kept(&mut self.partly_taken);
        self.stale_gc = None;
        empty_kept(&mut self.folded);
        if self.reclaimed.capacity() > crate::pool::LIST_KEEP {
            self.reclaimed = Default::default();
        }
        self.reclaimed.clear();
        self.frames.clear();
        self.gc_scratch.empty_kept();
        empty_kept(&mut self.write_order);
        empty_kept(&mut self.write_order_scratch);
        empty_kept(&mut self.split_sizes);
        empty_kept(&mut self.node_bytes);
        #[cfg(debug_assertions)]
        if self.replan.over(crate::pool::LIST_KEEP) {
            // A bulk transaction's copies (as for the lists above).
            self.replan = Default::default();
        }
        empty_kept(&mut self.sorting);
        let read_loaded = self.read_loaded.get_mut();
        if main.is_some() {
            // Tables only read are as committed too.
            for (i, r) in read_loaded.drain(..).enumerate() {
                let Some(r) = r else { continue };
                if self.tables.len() <= i {
                    self.tables.resize(i + 1, None);
                }
                self.tables[i].get_or_insert(r);
            }
            for t in self.tables.iter_mut().flatten() {
                t.dirty = false;
                t.append_leaf = None;
            }
        } else {
            read_loaded.clear();
            self.tables.clear();
        }
        self.committed_main = main;
        std::mem::take(&mut self.ops)
    }
}

// A transaction is moved out of `begin_rw_txn`'s result and into `commit`:
// its bulk belongs in `WriteState`, not here. At 128 bytes or less the
// compiler moves it with a few vector stores instead of a `memcpy` call.
const _: () = assert!(std::mem::size_of::<RwTxn<'static>>() <= 128);

impl Drop for RwTxn<'_> {
    /// Gives the dirty buffers to the pool and leaves the state emptied for
    /// the next transaction.
    fn drop(&mut self) {
        self.recycle_dirty([]);
        let main = self.st.committed_main.filter(|_| !self.poisoned);
        let ops = self.st.end(main);
        self.env.lck.add_page_ops(&ops);
    }
}

impl RwTxn<'_> {
    /// Gives every dirty buffer to the pool, those of `first` first and in
    /// that order (the pool hands out the last one given first). The pool
    /// notes how many pages were dirty: it sizes the dirty-set table it
    /// keeps for the next transaction by that count.
    // Inline: a one-put commit runs 24 more instructions without it
    // (docs/design.md, "Inlining on the commit path").
    #[inline]
    pub(crate) fn recycle_dirty(&mut self, first: impl IntoIterator<Item = u32>) {
        let ps = self.env.page_size;
        let st = &mut *self.st;
        st.pool.note_dirty_pages(st.dirty.len());
        for pgno in first {
            if let Some(buf) = st.dirty.remove(&pgno) {
                st.pool.recycle(buf, ps);
            }
        }
        for (_, buf) in st.dirty.drain() {
            st.pool.recycle(buf, ps);
        }
        self.dirty_extra = 0;
    }
}

/// Read methods shared by both transaction kinds.
macro_rules! read_methods {
    () => {
        /// The transaction id (the snapshot id for read-only transactions).
        pub fn id(&self) -> u64 {
            self.txn_id()
        }

        /// Opens a table: `None` is the main table. `Err(NotFound)` if it does not exist.
        pub fn open_db(&self, name: Option<&str>) -> Result<Db> {
            self.open_db_bytes(name.map(str::as_bytes))
        }

        /// Opens a table by a binary name.
        pub fn open_db_bytes(&self, name: Option<&[u8]>) -> Result<Db> {
            let Some(name) = name else {
                return Ok(Db::MAIN);
            };
            if let Some(db) = self.env.lookup_db(name) {
                if self.has_table(db) {
                    return Ok(db);
                }
            }
            let pages = self.pages();
            let main = self.table(Db::MAIN)?.tree;
            let tree = find_table(&pages, &main, name)?.ok_or(Error::NotFound)?;
            let db = self.env.register_db(name)?;
            self.remember(db, Table::named(tree, Arc::from(name), db));
            Ok(db)
        }

        /// The first value of `key`, borrowed from the transaction; `None` if absent.
        pub fn get(&self, db: Db, key: &[u8]) -> Result<Option<&[u8]>> {
            let t = self.table(db)?;
            btree::get(&self.pages(), t.tree.root, t.tree.height, key, t.cmp)
        }

        /// A cursor over `db`.
        pub fn cursor(&self, db: Db) -> Result<Cursor<'_>> {
            let t = self.table(db)?;
            let mut c = Cursor::new(self.pages(), t.tree.root, t.tree.height, t.cmp);
            c.set_dup_cmp(Cmp::for_dups(t.flags));
            Ok(c)
        }

        /// Statistics of `db`.
        pub fn db_stat(&self, db: Db) -> Result<Stat> {
            Ok(stat_of(&self.table(db)?.tree, self.env.page_size))
        }

        /// Flags `db` was created with.
        pub fn db_flags(&self, db: Db) -> Result<DbFlags> {
            Ok(self.table(db)?.flags)
        }

        /// The table's sequence counter.
        pub fn db_sequence(&self, db: Db) -> Result<u64> {
            Ok(self.table(db)?.tree.sequence)
        }

        /// Names of the named tables, in main-table order.
        pub fn table_names(&self) -> Result<Vec<Vec<u8>>> {
            let main = self.table(Db::MAIN)?.tree;
            list_tables(&self.pages(), &main)
        }

        /// Walks `db` and checks its structure and counters; `Err(Corrupted)`
        /// names the first bad page. (The full integrity check builds on this.)
        pub fn verify_table(&self, db: Db) -> Result<()> {
            let t = self.table(db)?;
            let kind = match db.dbi {
                0 => btree::walk::Kind::Gc,
                1 => btree::walk::Kind::Main,
                _ => btree::walk::Kind::Table,
            };
            btree::verify::verify(&self.pages(), &t.tree, kind, t.flags).map(|_| ())
        }

        /// Estimated number of records with keys in `[lo, hi)` (`None`: from the
        /// first / to the end), computed from the two boundary paths only (no
        /// walk over the range); 0 when `hi` comes before `lo`. See
        /// `btree/estimate.rs` for the method and its expected error.
        pub fn estimate_range(&self, db: Db, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<u64> {
            let t = self.table(db)?;
            Ok(btree::estimate::estimate_range(&self.pages(), &t.tree, t.cmp, lo, hi)?.max(0) as u64)
        }

        /// The canary markers x, y, z and v (the txnid that set them).
        pub fn canary(&self) -> [u64; 4] {
            self.canary_values()
        }

        /// Every record of `db` in order (see [`crate::Iter`]).
        pub fn iter(&self, db: Db) -> Result<crate::Iter<'_>> {
            <Self as crate::ReadTxn>::iter(self, db)
        }

        /// The records whose keys lie in `range`, e.g. `b"a"..b"m"` (see [`crate::ReadTxn::range`]).
        pub fn range<R: crate::KeyRange>(&self, db: Db, range: R) -> Result<crate::Iter<'_>> {
            <Self as crate::ReadTxn>::range(self, db, range)
        }

        /// The records whose keys start with `prefix` (lexicographic tables).
        pub fn prefix(&self, db: Db, prefix: &[u8]) -> Result<crate::Iter<'_>> {
            <Self as crate::ReadTxn>::prefix(self, db, prefix)
        }

        /// The values of `key` (every value of a multimap key, in order).
        pub fn iter_dup(&self, db: Db, key: &[u8]) -> Result<crate::Iter<'_>> {
            <Self as crate::ReadTxn>::iter_dup(self, db, key)
        }
    };
}

/// `ReadTxn` by the inherent read methods.
macro_rules! impl_read_txn {
    ($t:ty) => {
        impl crate::ReadTxn for $t {
            fn id(&self) -> u64 {
                <$t>::id(self)
            }
            fn open_db(&self, name: Option<&str>) -> Result<Db> {
                <$t>::open_db(self, name)
            }
            fn open_db_bytes(&self, name: Option<&[u8]>) -> Result<Db> {
                <$t>::open_db_bytes(self, name)
            }
            fn get(&self, db: Db, key: &[u8]) -> Result<Option<&[u8]>> {
                <$t>::get(self, db, key)
            }
            fn cursor(&self, db: Db) -> Result<Cursor<'_>> {
                <$t>::cursor(self, db)
            }
            fn db_stat(&self, db: Db) -> Result<Stat> {
                <$t>::db_stat(self, db)
            }
            fn db_flags(&self, db: Db) -> Result<DbFlags> {
                <$t>::db_flags(self, db)
            }
            fn db_sequence(&self, db: Db) -> Result<u64> {
                <$t>::db_sequence(self, db)
            }
            fn table_names(&self) -> Result<Vec<Vec<u8>>> {
                <$t>::table_names(self)
            }
            fn estimate_range(&self, db: Db, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<u64> {
                <$t>::estimate_range(self, db, lo, hi)
            }
            fn verify_table(&self, db: Db) -> Result<()> {
                <$t>::verify_table(self, db)
            }
            fn canary(&self) -> [u64; 4] {
                <$t>::canary(self)
            }
        }
    };
}

impl_read_txn!(RoTxn<'_>);
impl_read_txn!(RwTxn<'_>);

/// A nested transaction reads like its parent write transaction (it derefs
/// to it).
impl crate::ReadTxn for NestedTxn<'_, '_> {
    fn id(&self) -> u64 {
        (**self).id()
    }
    fn open_db(&self, name: Option<&str>) -> Result<Db> {
        (**self).open_db(name)
    }
    fn open_db_bytes(&self, name: Option<&[u8]>) -> Result<Db> {
        (**self).open_db_bytes(name)
    }
    fn get(&self, db: Db, key: &[u8]) -> Result<Option<&[u8]>> {
        (**self).get(db, key)
    }
    fn cursor(&self, db: Db) -> Result<Cursor<'_>> {
        (**self).cursor(db)
    }
    fn db_stat(&self, db: Db) -> Result<Stat> {
        (**self).db_stat(db)
    }
    fn db_flags(&self, db: Db) -> Result<DbFlags> {
        (**self).db_flags(db)
    }
    fn db_sequence(&self, db: Db) -> Result<u64> {
        (**self).db_sequence(db)
    }
    fn table_names(&self) -> Result<Vec<Vec<u8>>> {
        (**self).table_names()
    }
    fn estimate_range(&self, db: Db, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<u64> {
        (**self).estimate_range(db, lo, hi)
    }
    fn verify_table(&self, db: Db) -> Result<()> {
        (**self).verify_table(db)
    }
    fn canary(&self) -> [u64; 4] {
        (**self).canary()
    }
}

impl<'env> RoTxn<'env> {
    read_methods!();

    fn txn_id(&self) -> u64 {
        self.snap.meta.txnid()
    }

    /// Information about this snapshot.
    pub fn info(&self) -> Result<TxnInfo> {
        let latest = self.env.latest_meta()?;
        let ps = self.env.page_size as u64;
        let g = &self.snap.meta.geo;
        Ok(TxnInfo {
            id: self.txn_id(),
            reader_lag: latest.txnid().saturating_sub(self.txn_id()),
            space_used: g.first_unallocated as u64 * ps,
            space_limit_soft: g.now as u64 * ps,
            space_limit_hard: g.upper as u64 * ps,
            space_retired: latest.pages_retired.saturating_sub(self.snap.meta.pages_retired) * ps,
            space_dirty: 0,
        })
    }

    fn canary_values(&self) -> [u64; 4] {
        self.snap.meta.canary
    }

    pub(crate) fn pages(&self) -> Pages<'_> {
        Pages {
            map: &self.snap.map,
            ps: self.env.page_size,
            valid: self.snap.meta.geo.first_unallocated,
            dirty: None,
            front: self.txn_id(),
        }
    }

    fn has_table(&self, db: Db) -> bool {
        self.tables.borrow().get(db.dbi as usize).is_some_and(|t| t.as_ref().is_some_and(|t| t.gen == db.gen))
    }

    fn remember(&self, db: Db, t: Table) {
        let mut tables = self.tables.borrow_mut();
        if tables.len() <= db.dbi as usize {
            tables.resize(db.dbi as usize + 1, None);
        }
        tables[db.dbi as usize] = Some(t);
    }

    /// Parks the transaction (libmdbx `mdbx_txn_park` without autounpark):
    /// it keeps its snapshot, but a writer that needs the pages the snapshot
    /// holds back may oust it instead of growing the file. Reads of a parked
    /// transaction fail with [`Error::BadTxn`] until [`RoTxn::unpark`]; the
    /// `&mut` receiver ends every borrow of earlier reads first, since their
    /// pages may be recycled once the transaction is ousted. Parking a parked
    /// transaction does nothing.
    ///
    /// In the lock file the slot keeps its snapshot txnid and its `tid`
    /// becomes `u64::MAX` (`MDBX_TID_TXN_PARKED`), as libmdbx writes it, so
    /// libmdbx writers oust rdbx's parked readers and rdbx's writers theirs.
    pub fn park(&mut self) -> Result<()> {
        match self.park {
            Park::Active => {}
            Park::Parked { .. } => return Ok(()),
            Park::Ousted => return Err(Error::Ousted),
        }
        let owner = self._slot.tid();
        self._slot.park(owner, self.txn_id())?;
        self.park = Park::Parked { owner };
        Ok(())
    }

    /// Unparks the transaction (libmdbx `mdbx_txn_unpark` without restart):
    /// `Ok(())` when it still holds its snapshot (or was not parked), then it
    /// reads as before; `Err(Error::Ousted)` when a writer ousted it while it
    /// was parked: the snapshot is gone, the reader slot is released for
    /// reuse, and every later read fails with `Ousted` too (begin a new read
    /// transaction).
    pub fn unpark(&mut self) -> Result<()> {
        match self.park {
            Park::Active => Ok(()),
            Park::Ousted => Err(Error::Ousted),
            Park::Parked { owner } => {
                if self._slot.unpark(owner, self.txn_id())? {
                    self.park = Park::Active;
                    Ok(())
                } else {
                    self.park = Park::Ousted;
                    Err(Error::Ousted)
                }
            }
        }
    }

    /// Whether the transaction is parked ([`RoTxn::park`]) and not yet
    /// unparked.
    pub fn is_parked(&self) -> bool {
        matches!(self.park, Park::Parked { .. })
    }

    fn check_active(&self) -> Result<()> {
        match self.park {
            Park::Active => Ok(()),
            Park::Parked { .. } => Err(Error::BadTxn("the read transaction is parked (unpark it first)")),
            Park::Ousted => Err(Error::Ousted),
        }
    }

    /// The table of `db`: `Err(BadDbi)` for a foreign or stale handle.
    pub(crate) fn table(&self, db: Db) -> Result<View> {
        self.check_active()?;
        db.check_env(self.env)?;
        if let Some(Some(t)) = self.tables.borrow().get(db.dbi as usize) {
            if t.gen == db.gen {
                return Ok(t.view());
            }
            // Another generation of the slot: load the table (or refuse)
            // below. The cached one is clean (read-only), so it may go.
        }
        let t = match db.dbi {
            0 => Table::new(self.snap.meta.gc, None),
            1 => Table::new(self.snap.meta.main, None),
            _ => {
                let name = self.env.db_name(db)?;
                let tree = find_table(&self.pages(), &self.snap.meta.main, &name)?.ok_or(Error::BadDbi)?;
                Table::named(tree, name, db)
            }
        };
        let v = t.view();
        self.remember(db, t);
        Ok(v)
    }
}

impl<'env> RwTxn<'env> {
    read_methods!();

    fn txn_id(&self) -> u64 {
        self.txnid
    }

    /// Information about this write transaction.
    pub fn info(&self) -> Result<TxnInfo> {
        let ps = self.env.page_size as u64;
        let g = &self.geo;
        let oldest = self.env.lck.oldest_live_reader().unwrap_or(self.txnid - 1);
        Ok(TxnInfo {
            id: self.txnid,
            reader_lag: self.txnid.saturating_sub(oldest),
            space_used: g.first_unallocated as u64 * ps,
            space_limit_soft: g.now as u64 * ps,
            space_limit_hard: g.upper as u64 * ps,
            space_retired: self.st.retired.len() as u64 * ps,
            space_dirty: self.st.dirty.values().map(|b| b.len() as u64).sum(),
        })
    }

    fn canary_values(&self) -> [u64; 4] {
        self.st.canary
    }

    pub(crate) fn pages(&self) -> Pages<'_> {
        let st = &*self.st;
        Pages {
            map: &st.map,
            ps: self.env.page_size,
            valid: self.geo.first_unallocated,
            dirty: Some(&st.dirty),
            front: self.txnid,
        }
    }

    /// [`RwTxn::pages`] and the page pool, borrowed together: a copy on
    /// write reads a page and takes a buffer for its copy.
    pub(crate) fn pages_and_pool(&mut self) -> (Pages<'_>, &mut crate::pool::PagePool) {
        let st = &mut *self.st;
        let pages = Pages {
            map: &st.map,
            ps: self.env.page_size,
            valid: self.geo.first_unallocated,
            dirty: Some(&st.dirty),
            front: self.txnid,
        };
        (pages, &mut st.pool)
    }

    fn has_table(&self, db: Db) -> bool {
        self.st.tables.get(db.dbi as usize).is_some_and(|t| t.as_ref().is_some_and(|t| t.gen == db.gen))
    }

    fn remember(&self, _db: Db, _t: Table) {
        // Write transactions load tables through `table_mut` (below); the
        // shared `open_db_bytes` path only needs the registry entry.
    }

    /// The table of `db`: `Err(BadDbi)` for a foreign or stale handle.
    pub(crate) fn table(&self, db: Db) -> Result<View> {
        db.check_env(self.env)?;
        if let Some(Some(t)) = self.st.tables.get(db.dbi as usize) {
            // A table of this transaction (maybe changed): only its own
            // generation of handles reaches it.
            return if t.gen == db.gen { Ok(t.view()) } else { Err(Error::BadDbi) };
        }
        self.read_table(db)
    }

    /// [`RwTxn::table`] of a table the transaction has not changed: loaded
    /// once by reads (`read_loaded`). Apart, so that `table` stays small
    /// enough to inline on the hot paths.
    #[inline(never)]
    fn read_table(&self, db: Db) -> Result<View> {
        let i = db.dbi as usize;
        if let Some(Some(t)) =
            self.st.read_loaded.borrow().get(i).filter(|t| t.as_ref().is_some_and(|t| t.gen == db.gen))
        {
            return Ok(t.view());
        }
        // Not loaded yet (or under an older handle of the slot: the load
        // checks `db` against the registry).
        let t = self.load_table(db)?;
        let v = t.view();
        let mut loaded = self.st.read_loaded.borrow_mut();
        if loaded.len() <= i {
            loaded.resize(i + 1, None);
        }
        loaded[i] = Some(t);
        Ok(v)
    }

    fn load_table(&self, db: Db) -> Result<Table> {
        let name = self.env.db_name(db)?;
        let main = self.st.tables[1].as_ref().expect("main table").tree;
        let tree = find_table(&self.pages(), &main, &name)?.ok_or(Error::BadDbi)?;
        Ok(Table::named(tree, name, db))
    }

    /// The table state for editing (loaded on first use). Clears the APPEND
    /// hint: the caller may change the tree.
    // Not inlined: as `#[inline]` a one-put commit ran 42 fewer instructions
    // but took 2% more time against LMDB's (its callers' copies; 14
    // alternating runs of `scripts/ab_time.py`).
    pub(crate) fn table_mut(&mut self, db: Db) -> Result<&mut Table> {
        let t = self.loaded_table(db)?;
        t.append_leaf = None;
        Ok(t)
    }

    /// The table state of `db`, loaded into this transaction on first use
    /// (taken from `read_loaded` if a read loaded it). Inline: every tree
    /// edit ends here (`set_tree`), half a dozen times a one-put commit, and
    /// the table is loaded but for the first.
    #[inline]
    fn loaded_table(&mut self, db: Db) -> Result<&mut Table> {
        db.check_env(self.env)?;
        let i = db.dbi as usize;
        match self.st.tables.get(i) {
            Some(Some(t)) if t.gen == db.gen => {}
            Some(Some(_)) => return Err(Error::BadDbi),
            _ => self.load_into_tables(db)?,
        }
        Ok(self.st.tables[i].as_mut().expect("loaded above"))
    }

    /// [`RwTxn::loaded_table`] of a table not in `tables` yet.
    #[inline(never)]
    fn load_into_tables(&mut self, db: Db) -> Result<()> {
        let i = db.dbi as usize;
        let read = self.st.read_loaded.get_mut().get_mut(i).and_then(Option::take).filter(|t| t.gen == db.gen);
        let t = match read {
            Some(t) => t,
            None => self.load_table(db)?,
        };
        if self.st.tables.len() <= i {
            self.st.tables.resize(i + 1, None);
        }
        self.st.tables[i] = Some(t);
        Ok(())
    }

    /// The APPEND hint of a table (see `Table::append_leaf`).
    pub(crate) fn append_leaf(&self, db: Db) -> Option<u32> {
        self.st.tables.get(db.dbi as usize)?.as_ref()?.append_leaf
    }

    fn check_usable(&self) -> Result<()> {
        if self.poisoned {
            return Err(Error::BadTxn("an earlier error left the transaction unusable; abort it"));
        }
        Ok(())
    }

    /// Runs a mutation; any error other than the expected "soft" ones poisons the txn.
    fn guarded<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.check_usable()?;
        // Between operations: the only place where dirty pages may leave memory.
        let r = self.spill_if_needed().and_then(|()| f(self));
        if let Err(e) = &r {
            if !matches!(
                e,
                Error::KeyExist
                    | Error::NotFound
                    | Error::BadValSize(_)
                    | Error::KeyMismatch(_)
                    | Error::Incompatible(_)
                    | Error::BadDbi
                    | Error::DbsFull
                    | Error::MultiVal
                    | Error::InvalidArgument(_)
            ) {
                self.poisoned = true;
            }
        }
        r
    }

    /// Opens or creates a table. `None` is the main table (whose flags can be
    /// set only while it is empty). Stored flags must equal `flags` (ignoring CREATE).
    pub fn create_db(&mut self, name: Option<&str>, flags: DbFlags) -> Result<Db> {
        self.create_db_bytes(name.map(str::as_bytes), flags)
    }

    /// [`RwTxn::create_db`] with a binary name.
    pub fn create_db_bytes(&mut self, name: Option<&[u8]>, flags: DbFlags) -> Result<Db> {
        self.guarded(|t| t.create_db_inner(name, flags))
    }

    fn create_db_inner(&mut self, name: Option<&[u8]>, flags: DbFlags) -> Result<Db> {
        let want = flags & DbFlags::PERSISTENT;
        if !want.is_valid_persistent() {
            return Err(Error::Incompatible(format!("invalid table flag combination {:#x}", want.bits())));
        }
        let Some(name) = name else {
            let main = self.table_mut(Db::MAIN)?;
            if main.flags != want {
                if main.tree.items != 0 {
                    return Err(Error::Incompatible("the main table is not empty; its flags cannot change".into()));
                }
                main.tree.flags = want.bits() as u16;
                *main = Table { dirty: true, ..Table::new(main.tree, None) };
            }
            return Ok(Db::MAIN);
        };
        if name.len() > self.env.limits.max_key(DbFlags::empty()) || name.is_empty() {
            return Err(Error::BadValSize(format!("table name of {} bytes", name.len())));
        }
        // Already open in this transaction (maybe created here)?
        if let Some(db) = self.env.lookup_db(name) {
            if let Ok(t) = self.table(db) {
                if t.flags != want {
                    return Err(Error::Incompatible(format!("table exists with flags {:#x}", t.flags.bits())));
                }
                self.table_mut(db)?;
                return Ok(db);
            }
        }
        let main = self.table(Db::MAIN)?.tree;
        if let Some(tree) = find_table(&self.pages(), &main, name)? {
            let db = self.env.register_db(name)?;
            let t = Table::named(tree, Arc::from(name), db);
            if t.flags != want {
                return Err(Error::Incompatible(format!("table exists with flags {:#x}", t.flags.bits())));
            }
            self.set_table(db.dbi, t);
            return Ok(db);
        }
        if btree::get(&self.pages(), main.root, main.height, name, self.table(Db::MAIN)?.cmp)?.is_some() {
            return Err(Error::Incompatible("a plain record of the main table has this name".into()));
        }
        let db = self.env.register_db(name)?;
        let mut tree = Tree::empty(want.bits() as u16);
        tree.mod_txnid = self.txnid;
        // The record goes into the main table now (as libmdbx does), so the
        // table is listed and can be opened in this transaction.
        crate::btree::write::put(
            self,
            Db::MAIN,
            name,
            crate::btree::write::Val::Bytes(&tree.to_bytes()),
            PutFlags::empty(),
            N_TREE,
        )?;
        let mut t = Table::named(tree, Arc::from(name), db);
        t.dirty = true;
        self.set_table(db.dbi, t);
        Ok(db)
    }

    fn set_table(&mut self, dbi: u32, t: Table) {
        let i = dbi as usize;
        if self.st.tables.len() <= i {
            self.st.tables.resize(i + 1, None);
        }
        self.st.tables[i] = Some(t);
        self.forget_read_loaded(i);
    }

    /// Empties slot `i` of `read_loaded` (see there).
    fn forget_read_loaded(&mut self, i: usize) {
        if let Some(t) = self.st.read_loaded.get_mut().get_mut(i) {
            *t = None;
        }
    }

    /// Stores `val` under `key`.
    pub fn put(&mut self, db: Db, key: &[u8], val: &[u8], flags: PutFlags) -> Result<()> {
        self.guarded(|t| t.put_inner(db, key, crate::btree::write::Val::Bytes(val), flags, 0).map(|_| ()))
    }

    /// DUP_FIXED tables: stores `values` (a packed array of `size`-byte values)
    /// under `key` (libmdbx's `MDBX_MULTIPLE`); returns how many were stored.
    pub fn put_multiple(&mut self, db: Db, key: &[u8], values: &[u8], size: usize, flags: PutFlags) -> Result<usize> {
        let t = self.table(db)?;
        if !t.flags.contains(DbFlags::DUP_FIXED) {
            return Err(Error::Incompatible("MULTIPLE needs a DUP_FIXED table".into()));
        }
        if size == 0 || !values.len().is_multiple_of(size) {
            return Err(Error::BadValSize(format!(
                "{} bytes are not a whole number of {size}-byte values",
                values.len()
            )));
        }
        let flags = flags - PutFlags::MULTIPLE;
        let mut n = 0;
        for v in values.chunks_exact(size) {
            self.put(db, key, v, flags)?;
            n += 1;
        }
        Ok(n)
    }

    /// Replaces the value of `key` with `new` (deletes it with `None`) and
    /// returns the previous value (libmdbx's `mdbx_replace`). On a multimap
    /// key with several values this is ambiguous: `Err(MultiVal)` unless
    /// `flags` has `ALL_DUPS` (replace them all).
    pub fn replace(&mut self, db: Db, key: &[u8], new: Option<&[u8]>, flags: PutFlags) -> Result<Option<Vec<u8>>> {
        let t = self.table(db)?;
        let old = self.get(db, key)?.map(<[u8]>::to_vec);
        if old.is_some() && t.flags.contains(DbFlags::DUP_SORT) && !flags.contains(PutFlags::ALL_DUPS) {
            let mut c = self.cursor(db)?;
            if c.set(key)?.is_some() && c.count()? > 1 {
                return Err(Error::MultiVal);
            }
        }
        match new {
            Some(v) => {
                // A multimap key ends up with exactly this one value.
                let f = if t.flags.contains(DbFlags::DUP_SORT) {
                    flags | PutFlags::ALL_DUPS
                } else {
                    flags - PutFlags::ALL_DUPS
                };
                self.put(db, key, v, f)?;
            }
            None => {
                self.del(db, key, None)?;
            }
        }
        Ok(old)
    }

    /// Whether `data` (a slice returned by this transaction) lives on a page
    /// this transaction has changed (libmdbx's `mdbx_is_dirty`).
    pub fn is_dirty(&self, data: &[u8]) -> bool {
        let p = data.as_ptr() as usize;
        let in_memory = self.st.dirty.values().any(|b| {
            let start = b.as_ptr() as usize;
            p >= start && p < start + b.len()
        });
        // A spilled page is read through the map but still this transaction's.
        let base = self.st.map.as_ptr() as usize;
        let spilled = p >= base
            && p < base + self.st.map.len()
            && self.st.spilled.contains(&(((p - base) / self.env.page_size) as u32));
        in_memory || spilled
    }

    /// Reserves `len` bytes for the value of `key` and returns them to be filled.
    pub fn reserve(&mut self, db: Db, key: &[u8], len: usize, flags: PutFlags) -> Result<&mut [u8]> {
        let loc = self
            .guarded(|t| t.put_inner(db, key, crate::btree::write::Val::Reserve(len), flags | PutFlags::RESERVE, 0))?;
        Ok(self.value_mut(loc))
    }

    // Inline: a one-put commit runs 18 more instructions without it
    // (docs/design.md, "Inlining on the commit path").
    #[inline(always)]
    fn put_inner(
        &mut self,
        db: Db,
        key: &[u8],
        val: crate::btree::write::Val<'_>,
        flags: PutFlags,
        nflags: u8,
    ) -> Result<crate::btree::write::ValLoc> {
        if db.dbi == Db::GC.dbi {
            return Err(Error::BadDbi);
        }
        // Only the flags: copying the whole table view here cost a store-
        // forwarding stall per put (its fields moved by overlapping copies).
        let table_flags = self.loaded_table(db)?.flags;
        self.env.check_key(table_flags, key)?;
        // A plain put over a table record is refused inside `write::put`.
        crate::btree::write::put(self, db, key, val, flags, nflags)
    }

    fn main_node_flags(&self, key: &[u8]) -> Result<Option<u8>> {
        let t = self.table(Db::MAIN)?;
        if t.tree.root == P_INVALID {
            return Ok(None);
        }
        let f = btree::descend(&self.pages(), t.tree.root, t.tree.height, key, t.cmp)?;
        if !f.exact {
            return Ok(None);
        }
        Ok(Some(node::node(f.leaf, f.idx, f.pgno)?.flags))
    }

    /// Deletes `key` (with `Some(val)`: only if its value equals `val`).
    /// Returns whether something was deleted.
    pub fn del(&mut self, db: Db, key: &[u8], val: Option<&[u8]>) -> Result<bool> {
        self.guarded(|t| {
            if db.dbi == Db::GC.dbi {
                return Err(Error::BadDbi);
            }
            if db.dbi == Db::MAIN.dbi && t.main_node_flags(key)?.is_some_and(|f| f & N_TREE != 0) {
                return Err(Error::Incompatible("the key names a table; use drop_db".into()));
            }
            crate::btree::write::del(t, db, key, val)
        })
    }

    /// Removes every record of `db` (its pages go to the GC).
    ///
    /// Clearing the main table also deletes every named table, freeing its
    /// pages (libmdbx leaves those pages leaked).
    pub fn clear_db(&mut self, db: Db) -> Result<()> {
        self.guarded(|t| {
            if db.dbi == Db::MAIN.dbi {
                for name in t.table_names()? {
                    let handle = match t.env.lookup_db(&name) {
                        Some(db) => Some(db),
                        None => t.env.register_db(&name).ok(),
                    };
                    let Some(named) = handle else {
                        // No handle slot: free the pages straight from the record.
                        let main = t.table(Db::MAIN)?.tree;
                        if let Some(tree) = find_table(&t.pages(), &main, &name)? {
                            let mut runs = Vec::new();
                            let flags = DbFlags::from_bits_truncate(tree.flags as u32);
                            let kind = crate::btree::walk::Kind::Table;
                            crate::btree::write::collect_pages(t, &tree, kind, flags, None, &mut runs)?;
                            for (pg, n) in runs {
                                page_ops::free(t, pg, n);
                            }
                        }
                        continue;
                    };
                    crate::btree::write::clear(t, named)?;
                    if let Some(slot) = t.st.tables.get_mut(named.dbi as usize) {
                        *slot = None;
                    }
                    t.forget_read_loaded(named.dbi as usize);
                    t.env.forget_db(named.dbi);
                }
            }
            crate::btree::write::clear(t, db)
        })
    }

    /// Deletes table `db` and its record in the main table.
    pub fn drop_db(&mut self, db: Db) -> Result<()> {
        self.guarded(|t| {
            if db.is_builtin() {
                return crate::btree::write::clear(t, db);
            }
            crate::btree::write::clear(t, db)?;
            let name = t.table_mut(db)?.name.clone().ok_or(Error::BadDbi)?;
            crate::btree::write::del(t, Db::MAIN, &name, None)?;
            t.st.tables[db.dbi as usize] = None;
            t.forget_read_loaded(db.dbi as usize);
            t.env.forget_db(db.dbi);
            Ok(())
        })
    }

    /// Adds `increment` to the table's sequence and returns the previous value.
    pub fn sequence(&mut self, db: Db, increment: u64) -> Result<u64> {
        self.guarded(|t| {
            let tb = t.table_mut(db)?;
            let old = tb.tree.sequence;
            if increment != 0 {
                tb.tree.sequence =
                    old.checked_add(increment).ok_or(Error::InvalidArgument("sequence overflow".into()))?;
                tb.dirty = true;
            }
            Ok(old)
        })
    }

    /// Sets the canary markers x, y, z (v becomes this transaction's id).
    pub fn set_canary(&mut self, x: u64, y: u64, z: u64) {
        self.st.canary = [x, y, z, self.txnid];
    }

    /// Changes the geometry as part of this transaction (bytes; `None` keeps the
    /// current value; the page size cannot change). The new `size_now` is
    /// applied by growing the file now; it never drops below the allocated pages.
    pub fn set_geometry(&mut self, g: &crate::Geometry) -> Result<()> {
        self.guarded(|t| t.set_geometry_inner(g))
    }

    fn set_geometry_inner(&mut self, g: &crate::Geometry) -> Result<()> {
        use crate::format::meta::pages2pv;
        let ps = self.env.page_size;
        if let Some(p) = g.page_size {
            if p != ps {
                return Err(Error::Incompatible(format!("the page size is fixed at {ps}; {p} was requested")));
            }
        }
        let unit = ps.max(crate::os::page_size());
        let pages = |bytes: usize| -> Result<u32> {
            let b = bytes.div_ceil(unit) * unit;
            u32::try_from(b / ps).ok().filter(|&p| p <= crate::format::MAX_PAGENO + 1).ok_or(Error::TooLarge)
        };
        let mut geo = self.geo;
        if let Some(l) = g.size_lower {
            geo.lower = pages(l.max(3 * ps))?;
        }
        if let Some(u) = g.size_upper {
            geo.upper = pages(u)?;
        }
        if let Some(x) = g.growth_step {
            geo.grow_pv = pages2pv(pages(x)?);
        }
        if let Some(x) = g.shrink_threshold {
            geo.shrink_pv = pages2pv(pages(x)?);
        }
        if geo.lower > geo.upper {
            return Err(Error::InvalidArgument(format!(
                "geometry lower {} exceeds upper {}",
                geo.lower as usize * ps,
                geo.upper as usize * ps
            )));
        }
        if geo.upper < geo.first_unallocated {
            return Err(Error::MapFull);
        }
        let want_now = match g.size_now {
            Some(n) => pages(n)?,
            None => geo.now,
        };
        let now = want_now.clamp(geo.lower, geo.upper).max(geo.first_unallocated);
        if now > geo.now {
            self.env.set_file_len(now as u64 * ps as u64)?;
        }
        geo.now = now;
        self.geo = geo;
        Ok(())
    }

    /// A cursor that can also write.
    pub fn rw_cursor(&mut self, db: Db) -> Result<RwCursor<'_, 'env>> {
        let dupsort = self.table(db)?.flags.contains(DbFlags::DUP_SORT);
        Ok(RwCursor::new(self, db, dupsort))
    }

    /// Commits: writes dirty pages, syncs as the durability mode says, then the meta.
    pub fn commit(mut self) -> Result<()> {
        self.check_usable()?;
        let r = commit::commit(&mut self);
        if r.is_err() {
            self.poisoned = true;
        }
        r
    }

    /// Discards every change (dropping the transaction does the same).
    pub fn abort(self) {}

    pub(crate) fn value_mut(&mut self, loc: crate::btree::write::ValLoc) -> &mut [u8] {
        &mut self.dirty_mut_full(loc.pgno)[loc.off..loc.off + loc.len]
    }
}
