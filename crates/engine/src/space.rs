//! Why the data file is as big as it is: pages per table, the GC (its tree,
//! its records and the free pages they list: reclaimable now or retained by
//! readers), which reader retains how much, the free tail and the geometry,
//! in one answer (the figures of `mdbx_stat -ef -r` together).

use crate::env::{Env, EnvInfo};
use crate::error::Result;
use crate::format::u64_at;
use crate::readers::{GcInfo, ReaderInfo};
use crate::txn::Db;

/// Pages of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSpace {
    /// `None`: the main table.
    pub name: Option<Vec<u8>>,
    /// Branch pages.
    pub branch_pages: u64,
    /// Leaf pages (with the pages of nested trees).
    pub leaf_pages: u64,
    /// Large-value pages.
    pub large_pages: u64,
    /// Records.
    pub entries: u64,
}

impl TableSpace {
    /// All its pages.
    pub fn pages(&self) -> u64 {
        self.branch_pages + self.leaf_pages + self.large_pages
    }
}

/// One GC record: the pages the commit `txnid` freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcRecord {
    /// The commit that freed them.
    pub txnid: u64,
    /// How many pages it lists.
    pub pages: u64,
    /// No reader's snapshot (nor the last steady commit) needs them.
    pub reclaimable: bool,
}

/// The space report ([`Env::space`]).
#[derive(Debug, Clone)]
pub struct SpaceReport {
    /// Geometry and counters of the environment.
    pub info: EnvInfo,
    /// Size of the data file in bytes.
    pub file_size: u64,
    /// The GC summary (`Env::gc_info`).
    pub gc: GcInfo,
    /// Pages of the GC tree itself.
    pub gc_tree_pages: u64,
    /// The GC records, oldest first.
    pub gc_records: Vec<GcRecord>,
    /// Free pages listed in the GC that readers still need.
    pub retained_pages: u64,
    /// Pages in the tables (main table included).
    pub tables: Vec<TableSpace>,
    /// The reader slots (each with the pages it retains).
    pub readers: Vec<ReaderInfo>,
    /// Pages of the file past the allocated ones (`now - first_unallocated`).
    pub free_tail_pages: u64,
}

impl Env {
    /// Where the pages of the data file go (see [`SpaceReport`]).
    pub fn space(&self) -> Result<SpaceReport> {
        let info = self.info()?;
        let gc = self.gc_info()?;
        let readers = self.readers()?;
        let file_size = std::fs::metadata(self.data_path()).map(|m| m.len()).unwrap_or(0);
        let txn = self.begin_ro_txn()?;
        let m = &txn.snap.meta;
        let gc_tree_pages = m.gc.branch_pages as u64 + m.gc.leaf_pages as u64 + m.gc.large_pages as u64;
        let mut gc_records = Vec::new();
        let mut c = txn.cursor(Db::GC)?;
        let mut rec = c.first()?;
        while let Some((k, v)) = rec {
            if let Some(pnl) = crate::format::pnl::Pnl::new(v).filter(|_| k.len() == 8) {
                let id = u64_at(k, 0);
                let n = pnl.len() as u64;
                gc_records.push(GcRecord { txnid: id, pages: n, reclaimable: id <= gc.oldest_reader });
            }
            rec = c.next()?;
        }
        let listed: u64 = gc_records.iter().map(|r| r.pages).sum();
        let retained_pages = listed - gc.pages_reclaimable.min(listed);
        let mut tables = Vec::new();
        for name in std::iter::once(None).chain(txn.table_names()?.into_iter().map(Some)) {
            let db = txn.open_db_bytes(name.as_deref())?;
            let st = txn.db_stat(db)?;
            tables.push(TableSpace {
                name,
                branch_pages: st.branch_pages,
                leaf_pages: st.leaf_pages,
                large_pages: st.overflow_pages,
                entries: st.entries,
            });
        }
        let free_tail_pages = (m.geo.now as u64).saturating_sub(m.geo.first_unallocated as u64);
        Ok(SpaceReport {
            info,
            file_size,
            gc,
            gc_tree_pages,
            gc_records,
            retained_pages,
            tables,
            readers,
            free_tail_pages,
        })
    }
}
