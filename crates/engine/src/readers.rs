//! Information for statistics tools: the reader table of the lock file and a
//! GC / page-usage summary (what `mdbx_reader_list` and `mdbx_gc_info` give).

use crate::env::Env;
use crate::error::{Error, Result};
use crate::format::u64_at;
use crate::txn::Db;

/// One used slot of the reader table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderInfo {
    /// Slot index.
    pub slot: u32,
    /// Owner process.
    pub pid: u32,
    /// Owner thread (`pthread_self`); `u64::MAX` while the transaction is
    /// parked ([`crate::RoTxn::park`]), `u64::MAX - 1` once a writer ousted
    /// it (libmdbx's `MDBX_TID_TXN_PARKED` and `MDBX_TID_TXN_OUSTED`).
    pub tid: u64,
    /// Snapshot read, `None` when the slot holds no snapshot.
    pub txnid: Option<u64>,
    /// Commits since that snapshot.
    pub lag: u64,
    /// Bytes of the snapshot (`first_unallocated` × page size).
    pub bytes_used: u64,
    /// Bytes retired by later commits that this reader keeps from reuse.
    pub bytes_retained: u64,
}

/// What the handle-slow-readers callback ([`crate::EnvBuilder::handle_slow_readers`])
/// is told about a reader that keeps the writer from reusing pages (the
/// arguments of libmdbx's `MDBX_hsr_func`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowReader {
    /// The reader's process (0 in the end-of-loop notification).
    pub pid: u32,
    /// The reader's thread (`pthread_self`; 0 in the end-of-loop notification).
    pub tid: u64,
    /// The snapshot it reads: the oldest still in use.
    pub txnid: u64,
    /// Commits since that snapshot (in the end-of-loop notification: how far
    /// the oldest snapshot moved).
    pub lag: u64,
    /// Bytes retired since that snapshot, which the reader keeps from reuse
    /// (`pages_retired` of the newest commit minus that of the snapshot,
    /// times the page size).
    pub retained_bytes: u64,
    /// 0 on the first call for this allocation, then 1, 2, … while the
    /// callback answers [`SlowReaderAction::Retry`]. Negative (minus the
    /// number of calls) in the one end-of-loop notification that follows
    /// when the callback answered `Retry` at least once; its answer is
    /// ignored.
    pub retry: i32,
}

/// The answer of the handle-slow-readers callback (libmdbx's return codes of
/// `MDBX_hsr_func` in brackets). It must match what the callback did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlowReaderAction {
    /// (0) The callback waited or otherwise dealt with the reader (e.g. it
    /// ended its transaction): the writer scans the reader table again, and
    /// calls back again (`retry + 1`) if the same reader still holds the
    /// oldest snapshot.
    Retry,
    /// (-1) Nothing was done: the writer grows the file, or fails with
    /// `MapFull` at the upper bound.
    Grow,
    /// (1) The reader's transaction was aborted asynchronously and will not
    /// be ended normally: the writer clears the slot's snapshot (if still
    /// the same) and scans again.
    ClearTxn,
    /// (2) The reader's process was killed: the writer clears the whole slot
    /// (txnid all-ones, tid ousted, pid 0) and scans again.
    ClearSlot,
}

/// The type of the handle-slow-readers callback.
pub type SlowReaderFn = dyn Fn(&SlowReader) -> SlowReaderAction + Send + Sync + 'static;

/// GC and page usage (`MDBX_gc_info_t`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcInfo {
    /// Upper bound of the geometry, in pages.
    pub pages_total: u64,
    /// Pages backed by the file (geometry `now`).
    pub pages_backed: u64,
    /// Pages allocated (`first_unallocated`).
    pub pages_allocated: u64,
    /// Pages of the GC tree plus pages listed in GC records.
    pub pages_gc: u64,
    /// Listed pages that no reader holds back.
    pub pages_reclaimable: u64,
    /// Reclaimable spans: (length, count), ascending by length.
    pub reclaimable_spans: Vec<(u64, u64)>,
    /// Snapshot the summary was taken from.
    pub txnid: u64,
    /// Oldest snapshot still in use (readers and the steady meta).
    pub oldest_reader: u64,
    /// What keeps the GC records newer than `oldest_reader` from reuse, when
    /// something does.
    pub retained_by: Option<Retainer>,
    /// Commits since the oldest reader's snapshot (0 without readers).
    pub max_reader_lag: u64,
    /// Pages retired since the oldest reader's snapshot: what it keeps from
    /// reuse (0 without readers).
    pub max_retained_pages: u64,
}

/// Who keeps GC pages from being reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retainer {
    /// A read transaction (possibly of a process that died without ending
    /// it: `Env::reader_check`, or the next writer that needs space, clears
    /// such slots).
    Reader {
        /// Owner process.
        pid: u32,
        /// Its snapshot.
        txnid: u64,
        /// Commits since that snapshot.
        lag: u64,
    },
    /// In the lazy durability modes, the last steady commit: a crash
    /// returns to it, so pages it uses stay until the next sync.
    SteadyCommit {
        /// Its txnid.
        txnid: u64,
    },
}

impl Env {
    /// The used slots of the reader table.
    pub fn readers(&self) -> Result<Vec<ReaderInfo>> {
        let env = &*self.inner;
        let info = self.info()?;
        let ps = env.page_size as u64;
        // pages_retired of the recent meta: read it from the map.
        let map = env.map.read().unwrap_or_else(|e| e.into_inner()).clone();
        let (metas, t) = env.read_troika(&map)?;
        let retired_now = metas[t.recent].pages_retired;
        Ok(env
            .lck
            .readers()
            .into_iter()
            .map(|r| ReaderInfo {
                slot: r.slot,
                pid: r.pid,
                tid: r.tid,
                txnid: r.txnid,
                lag: r.txnid.map_or(0, |x| info.last_txnid.saturating_sub(x)),
                bytes_used: r.txnid.map_or(0, |_| r.pages_used as u64 * ps),
                bytes_retained: r.txnid.map_or(0, |_| retired_now.saturating_sub(r.pages_retired) * ps),
            })
            .collect())
    }

    /// Clears the reader slots of dead processes; returns how many.
    pub fn reader_check(&self) -> Result<u32> {
        self.inner.lck.sweep_dead_readers()
    }

    /// GC and page-usage summary of the newest snapshot.
    pub fn gc_info(&self) -> Result<GcInfo> {
        let env = &*self.inner;
        let txn = self.begin_ro_txn()?;
        let meta = &txn.snap.meta;
        let map = env.map.read().unwrap_or_else(|e| e.into_inner()).clone();
        let (metas, t) = env.read_troika(&map)?;
        let steady = metas[t.prefer_steady].txnid();
        // A scan that does not touch the lock file's cached oldest txnid:
        // only a writer (holding the writer lock) may update it, and a libmdbx
        // writer asserts on it.
        let oldest = env.lck.oldest_live_reader().map_or(steady, |r| r.min(steady)).min(meta.txnid());
        let gc = meta.gc;
        let mut info = GcInfo {
            pages_total: meta.geo.upper as u64,
            pages_backed: meta.geo.now as u64,
            pages_allocated: meta.geo.first_unallocated as u64,
            pages_gc: gc.branch_pages as u64 + gc.leaf_pages as u64 + gc.large_pages as u64,
            txnid: meta.txnid(),
            oldest_reader: oldest,
            ..Default::default()
        };
        let ps = env.page_size as u64;
        let last = meta.txnid();
        let readers = self.readers()?;
        let oldest_live = readers.iter().filter(|r| r.txnid.is_some()).min_by_key(|r| r.txnid);
        if let Some(r) = oldest_live {
            info.max_reader_lag = r.lag;
            info.max_retained_pages = r.bytes_retained / ps;
        }
        info.retained_by = match oldest_live {
            Some(r) if r.txnid == Some(oldest) && oldest < last => {
                Some(Retainer::Reader { pid: r.pid, txnid: oldest, lag: r.lag })
            }
            _ if steady == oldest && steady < last => Some(Retainer::SteadyCommit { txnid: steady }),
            _ => None,
        };
        let mut spans: std::collections::BTreeMap<u64, u64> = Default::default();
        let mut c = txn.cursor(Db::GC)?;
        let mut rec = c.first()?;
        while let Some((k, v)) = rec {
            let Some(pnl) = crate::format::pnl::Pnl::new(v).filter(|_| k.len() == 8) else {
                return Err(Error::corrupted(gc.root, "corrupted GC record"));
            };
            let id = u64_at(k, 0);
            let n = pnl.len();
            info.pages_gc += n as u64;
            let reclaimable = id <= oldest;
            if reclaimable {
                info.pages_reclaimable += n as u64;
                let mut i = 0;
                while i < n {
                    let mut len = 1;
                    while i + len < n && pnl.get(i + len).wrapping_add(1) == pnl.get(i + len - 1) {
                        len += 1;
                    }
                    *spans.entry(len as u64).or_default() += 1;
                    i += len;
                }
            }
            rec = c.next()?;
        }
        info.reclaimable_spans = spans.into_iter().collect();
        Ok(info)
    }
}
