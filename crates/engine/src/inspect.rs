//! Looking inside a data file: the three metas (read straight from the file,
//! so that also a database whose newest meta is damaged can be examined),
//! one page decoded (header and nodes), and which tree and level a page
//! belongs to in the current snapshot (found with the validating tree walk).

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use crate::btree::walk::{Fault, Kind, NodeEv, PageEv, Spec, Src, Visitor, Walk};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::format::meta::{troika, Meta, META_LEN, META_OFF, SIGN_STEADY, SIGN_WEAK};
use crate::format::node::{self, N_BIG, N_DUP, N_TREE};
use crate::format::page::{flags as pflags, Page};
use crate::format::tree::Tree;
use crate::format::{u32_at, u64_at, MAX_PAGESIZE, MIN_PAGESIZE, NUM_METAS, PAGEHDRSZ};
use crate::txn::Db;

/// One of the three meta pages.
#[derive(Debug, Clone)]
pub struct MetaSlot {
    /// Slot 0, 1 or 2.
    pub index: usize,
    /// What the page holds (zeros for a page beyond the end of the file).
    pub meta: Meta,
    /// Passes libmdbx's meta checks (magic, version, txnid pair, signature,
    /// geometry, trees, page size).
    pub valid: bool,
    /// Why not.
    pub error: Option<String>,
    /// `steady`, `weak`, `none` or `invalid` (the `sign` field).
    pub signature: &'static str,
    /// `head` (the current snapshot), `tail` (the next commit's slot),
    /// `stay`, or `invalid`.
    pub role: &'static str,
}

/// The metas of a data file.
#[derive(Debug, Clone)]
pub struct MetaList {
    /// Page size (from the first meta that tells it).
    pub page_size: usize,
    /// Size of the data file.
    pub file_size: u64,
    /// The three slots.
    pub slots: Vec<MetaSlot>,
    /// The slot of the current snapshot (the head).
    pub head: usize,
    /// The newest steady slot.
    pub steady: usize,
}

impl MetaList {
    /// A damaged meta that claims a newer snapshot than the head (its txnid
    /// or one of its two copies is greater), if any: the newest commit may
    /// be lost, see `rdbx-tools meta --use`.
    pub fn damaged_newer(&self) -> Option<&MetaSlot> {
        let head = self.slots[self.head].meta.txnid();
        self.slots.iter().find(|s| {
            !s.valid
                && (s.meta.magic == 0
                    || s.meta.txnid_a.max(s.meta.txnid_b) > head
                    || (s.meta.txnid_a != s.meta.txnid_b && s.meta.txnid_a.min(s.meta.txnid_b) != 0))
        })
    }
}

fn sign_name(sign: u64) -> &'static str {
    match sign {
        SIGN_STEADY => "steady",
        SIGN_WEAK => "weak",
        0 => "none",
        _ => "invalid",
    }
}

/// Reads the three metas of the data file at `data` (no lock taken, nothing
/// written).
pub fn read_metas(data: &Path) -> Result<MetaList> {
    let mut f = std::fs::File::open(data)?;
    let file_size = f.metadata()?.len();
    let mut head = Vec::new();
    f.by_ref().take(3 * MAX_PAGESIZE as u64).read_to_end(&mut head)?;
    // The page size: from a meta whose magic is right and which sits at the
    // offset its page size puts it.
    let mut ps = None;
    'found: for i in 0..NUM_METAS as usize {
        let mut size = MIN_PAGESIZE;
        while size <= MAX_PAGESIZE {
            if let Some(b) = head.get(i * size..i * size + META_OFF + META_LEN) {
                if let Ok(m) = Meta::read(b, i as u32) {
                    if m.magic >> 8 == crate::format::MAGIC && m.page_size() == size && u32_at(b, 16) == i as u32 {
                        ps = Some(size);
                        break 'found;
                    }
                }
            }
            size *= 2;
        }
    }
    let ps = ps.ok_or_else(|| Error::Invalid(format!("{}: no meta page with the MDBX magic", data.display())))?;
    let slots =
        [0, 1, 2].map(|i| head.get(i * ps..i * ps + META_OFF + META_LEN).map(|b| b.try_into().expect("meta length")));
    let metas = crate::check::read_metas(slots, ps, file_size / ps as u64);
    let t = troika(crate::check::meta_states(&metas));
    let slots = metas
        .into_iter()
        .enumerate()
        .map(|(i, (meta, v))| MetaSlot {
            index: i,
            valid: v.is_ok(),
            role: t.role(i, v.is_ok()),
            error: v.err(),
            signature: sign_name(meta.sign),
            meta,
        })
        .collect();
    Ok(MetaList { page_size: ps, file_size, slots, head: t.recent, steady: t.prefer_steady })
}

/// Reads page `pgno` of the data file at `data` (page size `ps`).
pub fn read_page(data: &Path, ps: usize, pgno: u32) -> Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(data)?;
    let len = f.metadata()?.len();
    let off = pgno as u64 * ps as u64;
    if off + ps as u64 > len {
        return Err(Error::InvalidArgument(format!(
            "page {pgno} is beyond the end of the file ({} pages)",
            len / ps as u64
        )));
    }
    let mut b = vec![0u8; ps];
    f.read_exact_at(&mut b, off)?;
    Ok(b)
}

/// What a node holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeValue {
    /// Branch node: the child page.
    Child(u32),
    /// A value stored in the node.
    Inline(Vec<u8>),
    /// A large value: its size and the head page of its chunk.
    Large {
        /// Bytes.
        size: u32,
        /// Head page.
        pgno: u32,
    },
    /// A named table's descriptor (main table).
    Table(Tree),
    /// A multimap key's values in a sub-page.
    SubPage(Vec<Vec<u8>>),
    /// A multimap key's values in a nested tree.
    NestedTree(Tree),
    /// An item of a DUPFIX page (a multimap value, no key).
    Item,
    /// The node cannot be decoded.
    Bad(String),
}

/// One node of a decoded page.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Position on the page.
    pub index: usize,
    /// Node flags (`N_BIG` 1, `N_TREE` 2, `N_DUP` 4).
    pub flags: u8,
    /// The key (for DUPFIX items: the item).
    pub key: Vec<u8>,
    /// What it holds.
    pub value: NodeValue,
}

/// A decoded page.
#[derive(Debug, Clone)]
pub struct PageInfo {
    /// Its number.
    pub pgno: u32,
    /// The number in its header.
    pub header_pgno: u32,
    /// Txnid in the header.
    pub txnid: u64,
    /// Flags in the header.
    pub flags: u16,
    /// `branch`, `leaf`, `dupfix-leaf`, `large`, `meta` or `unknown`
    /// (`large-data`: set by callers for a page inside a large chunk).
    pub kind: &'static str,
    /// Entries (nodes).
    pub entries: usize,
    /// Free bytes between the entries and the nodes.
    pub free: usize,
    /// Pages of a large chunk (large pages only).
    pub large_pages: Option<u32>,
    /// The nodes.
    pub nodes: Vec<NodeInfo>,
    /// A header problem found while decoding.
    pub problem: Option<String>,
}

/// Decodes a page (`buf`: its bytes).
pub fn decode_page(buf: &[u8], pgno: u32) -> PageInfo {
    let p = Page { buf };
    let f = p.flags();
    let kind = match f & !pflags::SUBP {
        pflags::BRANCH => "branch",
        pflags::LEAF => "leaf",
        x if x == pflags::LEAF | pflags::DUPFIX => "dupfix-leaf",
        pflags::LARGE => "large",
        pflags::META => "meta",
        _ => "unknown",
    };
    let mut info = PageInfo {
        pgno,
        header_pgno: p.pgno(),
        txnid: p.txnid(),
        flags: f,
        kind,
        entries: 0,
        free: 0,
        large_pages: None,
        nodes: Vec::new(),
        problem: None,
    };
    match kind {
        "large" => info.large_pages = Some(p.large_count()),
        "branch" | "leaf" | "dupfix-leaf" => {
            if let Err(e) = p.check_tree_page(pgno, u64::MAX) {
                info.problem = Some(e.to_string());
            }
            if PAGEHDRSZ + p.lower() > buf.len() || (kind != "dupfix-leaf" && p.lower() > p.upper()) {
                return info;
            }
            info.entries = p.num_entries();
            info.free = if kind == "dupfix-leaf" {
                buf.len().saturating_sub(PAGEHDRSZ + info.entries * p.dupfix_ksize() as usize)
            } else {
                p.room()
            };
            for i in 0..info.entries {
                info.nodes.push(decode_node(p, i, pgno));
            }
        }
        _ => {}
    }
    info
}

fn decode_node(p: Page<'_>, i: usize, pgno: u32) -> NodeInfo {
    if p.is_dupfix() {
        let k = p.dupfix_ksize() as usize;
        let off = PAGEHDRSZ + i * k;
        let key = p.buf.get(off..off + k).unwrap_or(&[]).to_vec();
        return NodeInfo { index: i, flags: 0, key, value: NodeValue::Item };
    }
    let n = match node::node(p, i, pgno) {
        Ok(n) => n,
        Err(e) => return NodeInfo { index: i, flags: 0, key: Vec::new(), value: NodeValue::Bad(e.to_string()) },
    };
    let value = if p.is_branch() {
        NodeValue::Child(n.child())
    } else {
        match n.flags {
            0 => NodeValue::Inline(n.data.to_vec()),
            N_BIG => NodeValue::Large { size: n.dsize, pgno: n.big_pgno() },
            N_TREE if n.data.len() >= 48 => NodeValue::Table(Tree::read(n.data)),
            N_DUP => {
                let sp = Page { buf: n.data };
                let mut items = Vec::new();
                if n.data.len() >= PAGEHDRSZ {
                    for j in 0..sp.num_entries() {
                        items.push(decode_node(sp, j, pgno).key);
                    }
                }
                NodeValue::SubPage(items)
            }
            x if x == N_DUP | N_TREE && n.data.len() >= 48 => NodeValue::NestedTree(Tree::read(n.data)),
            _ => NodeValue::Bad(format!("node flags {:#x} with a {}-byte value", n.flags, n.data.len())),
        }
    };
    NodeInfo { index: i, flags: n.flags, key: n.key.to_vec(), value }
}

/// Which structure of the current snapshot a page belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageOwner {
    /// Meta page 0, 1 or 2.
    Meta(usize),
    /// A page of a tree: the GC (`gc`), the main table (`table: None`) or a
    /// named table; `level` 1 is the root, `height` the tree's height;
    /// `nested_key`: inside the nested tree of this multimap key (then
    /// `level` and `height` are those in the nested tree).
    Tree {
        /// The GC tree.
        gc: bool,
        /// The table (None: main, or the GC).
        table: Option<Vec<u8>>,
        /// Level from the root (1).
        level: u16,
        /// Height of the tree (its leaves' level).
        height: u16,
        /// The multimap key whose nested tree holds the page.
        nested_key: Option<Vec<u8>>,
    },
    /// A page of the large value of `key` in `table` (chunk `head`, `pages` long).
    Large {
        /// The table (None: main).
        table: Option<Vec<u8>>,
        /// The key.
        key: Vec<u8>,
        /// Head page of the chunk.
        head: u32,
        /// Pages of the chunk.
        pages: u32,
    },
    /// Free: listed in the GC record of this txnid.
    Free {
        /// The GC record's txnid.
        txnid: u64,
    },
    /// At or past the snapshot's first unallocated page.
    Unallocated,
    /// Allocated but referenced by nothing (lost or leaked; see `check`).
    Unreferenced,
}

struct Finder {
    target: u32,
    table: Option<Vec<u8>>,
    gc: bool,
    height: u16,
    levels: HashMap<u32, u16>,
    nested: Option<(Vec<u8>, u16, u16)>,
    tables: Vec<(Vec<u8>, Tree)>,
    found: Option<PageOwner>,
}

impl<'t> Visitor<'t> for Finder {
    fn page(&mut self, _w: &mut Walk<'t>, ev: &PageEv<'t>) -> Result<()> {
        let level = ev.parent.and_then(|p| self.levels.get(&p).copied()).map_or(1, |l| l + 1);
        self.levels.insert(ev.pgno, level);
        if ev.pgno == self.target {
            let (nested_key, level, height) = match (&self.nested, ev.nested) {
                (Some((k, base, h)), true) => (Some(k.clone()), level.saturating_sub(*base), *h),
                _ => (None, level, self.height),
            };
            self.found = Some(PageOwner::Tree { gc: self.gc, table: self.table.clone(), level, height, nested_key });
            return Err(Error::NotFound);
        }
        Ok(())
    }
    fn node(&mut self, _w: &mut Walk<'t>, ev: &NodeEv<'t>) -> Result<()> {
        if !self.gc && self.table.is_none() && ev.node.flags == N_TREE && ev.node.data.len() >= 48 && !ev.nested {
            self.tables.push((ev.node.key.to_vec(), Tree::read(ev.node.data)));
        }
        Ok(())
    }
    fn large(&mut self, ev: &NodeEv<'t>, head: u32, pages: u32, _value: &'t [u8]) -> Result<()> {
        if (head..head.saturating_add(pages)).contains(&self.target) {
            self.found = Some(PageOwner::Large { table: self.table.clone(), key: ev.node.key.to_vec(), head, pages });
            return Err(Error::NotFound);
        }
        Ok(())
    }
    fn enter(&mut self, ev: &NodeEv<'t>, tree: &Tree) -> Result<bool> {
        let base = self.levels.get(&ev.leaf).copied().unwrap_or(0);
        self.nested = Some((ev.node.key.to_vec(), base, tree.height));
        Ok(true)
    }
    fn leave(&mut self, _ev: &NodeEv<'t>, _tree: &Tree, _c: &crate::btree::walk::Counts) -> Result<()> {
        self.nested = None;
        Ok(())
    }
    fn fault(&mut self, _f: Fault<'t>) -> Result<()> {
        Ok(())
    }
}

impl Env {
    /// Which structure of the newest snapshot page `pgno` belongs to: walks
    /// the GC, the main table and the named tables until it is found, then
    /// looks in the GC records. Damaged parts of the trees are skipped.
    pub fn page_owner(&self, pgno: u32) -> Result<PageOwner> {
        if pgno < NUM_METAS {
            return Ok(PageOwner::Meta(pgno as usize));
        }
        let txn = self.begin_ro_txn()?;
        let meta = txn.snap.meta.clone();
        if pgno >= meta.geo.first_unallocated {
            return Ok(PageOwner::Unallocated);
        }
        let mut walk = Walk::new(Src::Txn(txn.pages()));
        let mut f = Finder {
            target: pgno,
            table: None,
            gc: true,
            height: meta.gc.height,
            levels: HashMap::new(),
            nested: None,
            tables: Vec::new(),
            found: None,
        };
        let txnid = meta.txnid();
        let spec = |kind, tree: Tree| Spec {
            kind,
            flags: DbFlags::from_bits_truncate(tree.flags as u32),
            tree,
            front: txnid,
            host: None,
        };
        let _ = walk.tree(&spec(Kind::Gc, meta.gc), &mut f);
        if let Some(o) = f.found.take() {
            return Ok(o);
        }
        f.gc = false;
        f.height = meta.main.height;
        let _ = walk.tree(&spec(Kind::Main, meta.main), &mut f);
        if let Some(o) = f.found.take() {
            return Ok(o);
        }
        for (name, tree) in std::mem::take(&mut f.tables) {
            f.table = Some(name);
            f.height = tree.height;
            f.levels.clear();
            let _ = walk.tree(&spec(Kind::Table, tree), &mut f);
            if let Some(o) = f.found.take() {
                return Ok(o);
            }
        }
        let mut c = txn.cursor(Db::GC)?;
        let mut rec = c.first()?;
        while let Some((k, v)) = rec {
            if let Some(pnl) = crate::format::pnl::Pnl::new(v).filter(|_| k.len() == 8) {
                if pnl.iter().any(|p| p == pgno) {
                    return Ok(PageOwner::Free { txnid: u64_at(k, 0) });
                }
            }
            rec = c.next()?;
        }
        Ok(PageOwner::Unreferenced)
    }
}
