//! The full integrity check (what `mdbx_chk` does), as a library call:
//! [`Env::check`]. The tools only present its [`CheckReport`].
//!
//! Stages, in `mdbx_chk`'s order:
//!
//! 1. **metas**: the three meta pages read straight from the file, validated,
//!    classified (head / stay / tail), clashes, torn or lost newest snapshots;
//! 2. **trees**: a page-by-page walk of the GC, the main table, every named
//!    table and every nested multimap tree of the checked snapshot: page
//!    headers and types, node bounds, key order under the table's comparator
//!    (branch keys bounding their children), multimap value order, tree
//!    height, large values, key/value sizes, and the counters of every tree
//!    descriptor against what was walked. Every page is attributed to its
//!    owner; a page reached twice is reported;
//! 3. **GC**: every record's key and page list (range, strict order, pages
//!    listed twice or also used by a tree);
//! 4. **space**: every page below `first_unallocated` must be owned by exactly
//!    one tree or listed once in the GC; leaked pages are listed;
//! 5. optionally **turn**: make the checked (older) meta the head.
//!
//! The trees are walked with the engine's one validating walk
//! (`btree::walk`, also used by `verify_table`, the compacting copy and the
//! page collection of drop/clear), so they all apply the same structural
//! rules. The check is its visitor: each fault of the walk is reported and the
//! faulty page, node or chunk skipped (the walk goes on); key order, sizes,
//! counters, page ownership and the GC records are the visitor's own rules.
//! The walk never trusts the file: every offset is bounds-checked, a bad page
//! is reported and not descended into, and a page is visited at most once
//! (also with `skip_space`), so any input yields a report at the cost of one
//! visit per page.

use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::btree::walk::{Counts, Fault, Kind, LargeWhy, NodeEv, PageEv, RefWhy, Spec, Src, Visitor, Walk, What};
use crate::btree::{key_at, Cmp};
use crate::env::Env;
use crate::error::{Error, Reason, Result};
use crate::flags::DbFlags;
use crate::format::limits::Limits;
use crate::format::meta::{pv2pages, troika, Meta, META_LEN, META_OFF, SIGN_STEADY};
use crate::format::node::{self, N_BIG, N_DUP, N_TREE};
use crate::format::page::{flags as pflags, Page};
use crate::format::tree::{Tree, TREE_SIZE};
use crate::format::{u64_at, MAX_PAGESIZE, MIN_PAGESIZE, NUM_METAS, P_INVALID};
use crate::os::file;

/// What to check and how.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// Check the snapshot of this meta page (0, 1 or 2) instead of the newest
    /// one (`mdbx_chk -0/-1/-2`). No writer may run meanwhile.
    pub meta: Option<usize>,
    /// After a clean check make the meta chosen with [`CheckOptions::meta`]
    /// the head (`mdbx_chk -w -t`). The environment must be open read-write.
    pub turn: bool,
    /// Turn even when problems were found (`mdbx_chk -T`).
    pub force_turn: bool,
    /// Skip the page-ownership accounting (`mdbx_chk -d`): trees are still
    /// walked (each page once: a page reached twice, or used by a tree and
    /// listed in the GC, is still reported), but lost pages are not detected
    /// and the owner of a doubly used page is not named.
    pub skip_space: bool,
    /// Do not report key-order violations (`mdbx_chk -i`, for databases
    /// written with custom comparators).
    pub ignore_order: bool,
    /// Report per-table details only for this named table (`mdbx_chk -s`).
    /// The whole file is still walked.
    pub table: Option<Vec<u8>>,
    /// With a read-write environment: repair what can be repaired safely
    /// (a weak head meta is made steady, a file whose size is not a multiple
    /// of the system page is extended).
    pub repair: bool,
    /// Polled during the walk: when it becomes true the check stops with an
    /// `Interrupted` I/O error (`mdbx_chk` exit code 5).
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// How serious a problem is: decides the exit code of `chk` (1 or 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The data is intact but something is off (a lost fallback meta, a
    /// suspicious flag, slack).
    Minor,
    /// Structural damage or inconsistent accounting.
    Major,
}

/// Which stage found a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Area {
    /// Meta pages and geometry.
    Meta,
    /// The B-tree walk (structure of any tree).
    Tree,
    /// GC records.
    Gc,
    /// Page accounting.
    Space,
}

impl Area {
    /// Short name.
    pub fn as_str(self) -> &'static str {
        match self {
            Area::Meta => "meta",
            Area::Tree => "tree",
            Area::Gc => "gc",
            Area::Space => "space",
        }
    }
}

/// One problem found by the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Minor or major.
    pub severity: Severity,
    /// Stage that found it.
    pub area: Area,
    /// Table it concerns: `@GC`, `@MAIN`, a table name (lossy UTF-8), `@META`.
    pub table: Option<String>,
    /// Page it concerns.
    pub page: Option<u32>,
    /// What is wrong.
    pub message: String,
}

/// Stages reported through the progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Reading the meta pages.
    Metas,
    /// Walking the trees.
    Trees,
    /// Reading the GC records.
    Gc,
    /// Page accounting.
    Space,
    /// Turning to the selected meta.
    Turn,
}

/// Progress of a running check.
#[derive(Debug, Clone, Copy)]
pub struct CheckProgress {
    /// Current stage.
    pub stage: Stage,
    /// Pages walked so far (trees stage).
    pub done: u64,
    /// Pages to walk (`first_unallocated`).
    pub total: u64,
}

/// One meta page as found in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaReport {
    /// 0, 1 or 2.
    pub index: usize,
    /// `txnid_a` as stored.
    pub txnid_a: u64,
    /// `txnid_b` as stored.
    pub txnid_b: u64,
    /// Passed validation.
    pub valid: bool,
    /// Signed steady.
    pub steady: bool,
    /// `head`, `tail` or `stay` (valid metas), `invalid` otherwise.
    pub role: &'static str,
    /// Why it is not valid.
    pub error: Option<String>,
    /// Geometry `now` and `first_unallocated` (pages).
    pub now: u32,
    /// First never-allocated page.
    pub first_unallocated: u32,
}

/// Figures of one tree as walked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableReport {
    /// `None`: the main table (`@MAIN`); `Some(b"@GC")` is never used: see `is_gc`.
    pub name: Option<Vec<u8>>,
    /// The GC tree.
    pub is_gc: bool,
    /// Persistent flags.
    pub flags: u16,
    /// Height from the descriptor.
    pub depth: u16,
    /// Root page.
    pub root: u32,
    /// Walked branch pages (including nested trees).
    pub branch_pages: u64,
    /// Walked leaf pages (including nested trees).
    pub leaf_pages: u64,
    /// Walked large pages.
    pub large_pages: u64,
    /// Records walked (every value of a multimap).
    pub entries: u64,
    /// Distinct keys walked.
    pub keys: u64,
    /// Sum of key lengths over all records.
    pub key_bytes: u64,
    /// Sum of value lengths over all records.
    pub data_bytes: u64,
    /// Records of the main table that are named tables.
    pub subtables: u64,
    /// Table sequence.
    pub sequence: u64,
    /// Last modifying txn.
    pub mod_txnid: u64,
    /// Problems found in this tree.
    pub problems: u64,
}

impl TableReport {
    /// Display name: `@GC`, `@MAIN` or the name.
    pub fn display_name(&self) -> String {
        if self.is_gc {
            "@GC".into()
        } else {
            match &self.name {
                None => "@MAIN".into(),
                Some(n) => String::from_utf8_lossy(n).into_owned(),
            }
        }
    }
    /// Multi-values beyond the first of each key.
    pub fn dups(&self) -> u64 {
        self.entries.saturating_sub(self.keys)
    }
}

/// Everything the check found.
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    /// Path of the data file.
    pub data_path: std::path::PathBuf,
    /// Page size.
    pub page_size: usize,
    /// The operating system's page size (the data file's size is a multiple
    /// of it).
    pub system_page_size: usize,
    /// Data file size in bytes.
    pub file_size: u64,
    /// The three metas.
    pub metas: Vec<MetaReport>,
    /// Index of the newest usable meta.
    pub recent_meta: usize,
    /// Index of the meta whose snapshot was checked.
    pub checked_meta: usize,
    /// Txnid of the newest usable meta.
    pub recent_txnid: u64,
    /// Txnid of the checked snapshot.
    pub checked_txnid: u64,
    /// Oldest snapshot still read by a reader (or the steady meta).
    pub oldest_reader_txnid: u64,
    /// Geometry of the checked meta, in pages.
    pub geo_lower: u64,
    /// Upper bound.
    pub geo_upper: u64,
    /// Current size per meta.
    pub geo_now: u64,
    /// Growth step.
    pub geo_grow: u64,
    /// Shrink threshold.
    pub geo_shrink: u64,
    /// Pages allocated (`first_unallocated`).
    pub allocated_pages: u64,
    /// Pages backed by the file.
    pub backed_pages: u64,
    /// Pages attributed to a tree (including the GC tree and large values).
    pub walked_pages: u64,
    /// Pages of the GC tree itself.
    pub gc_tree_pages: u64,
    /// Pages listed in GC records.
    pub gc_listed_pages: u64,
    /// Listed pages whose record no reader holds back.
    pub gc_reclaimable_pages: u64,
    /// Pages owned by nobody.
    pub leaked_pages: u64,
    /// Whether the page accounting ran.
    pub space_checked: bool,
    /// Per tree: the GC, the main table, then named tables in key order.
    pub tables: Vec<TableReport>,
    /// Problems (at most [`MAX_LISTED`] are kept; see the counters).
    pub problems: Vec<Problem>,
    /// Problems found, by severity.
    pub major: u64,
    /// Minor problems found.
    pub minor: u64,
    /// Informational notes (warnings that are not problems).
    pub notes: Vec<String>,
    /// Set when the check turned to the selected meta.
    pub turned: bool,
    /// Repairs done (with [`CheckOptions::repair`]).
    pub repairs: Vec<String>,
}

/// Problems kept in the report (all are counted).
pub const MAX_LISTED: usize = 10_000;

impl CheckReport {
    /// Total number of problems.
    pub fn problem_count(&self) -> u64 {
        self.major + self.minor
    }
    /// `mdbx_chk`'s code for a completed check: 0 clean, 1 only minor problems, 2 major ones.
    pub fn exit_code(&self) -> i32 {
        if self.major > 0 {
            2
        } else if self.minor > 0 {
            1
        } else {
            0
        }
    }
    /// Problems counted in `area`.
    pub fn count_in(&self, area: Area) -> usize {
        self.problems.iter().filter(|p| p.area == area).count()
    }
}

const OWNER_NONE: u16 = 0;
const OWNER_GC_LISTED: u16 = u16::MAX;

#[derive(Clone, Copy)]
struct Ctx {
    /// Index into `tables`.
    tid: usize,
    kind: Kind,
    flags: DbFlags,
    /// The tree descriptor's DUPFIXED value size (the table's, for a table).
    dupfix_size: u32,
    cmp: Cmp,
    dup_cmp: Option<Cmp>,
}

/// State of one tree being walked: the table's tree, or a nested tree inside
/// it (pushed on `enter`, popped on `leave`).
struct Level<'a> {
    ctx: Ctx,
    /// Last key of the previous leaf of this tree.
    last_key: Option<&'a [u8]>,
    /// INTEGERKEY width seen in this tree.
    key_width: Option<usize>,
    /// Bytes of the values of a nested tree (the sum of its key lengths).
    vbytes: u64,
}

/// The checker's visitor of the shared walk (`btree::walk`): the walk applies
/// the structural rules and hands each fault here to be reported (the faulty
/// page, node or chunk is skipped and the walk goes on); the checker adds key
/// order, key and value sizes, counters, page ownership and the records it
/// collects (GC records, named tables).
struct Walker<'a> {
    limit: u32,
    limits: Limits,
    track: bool,
    ignore_order: bool,
    owner: Vec<u16>,
    tables: Vec<TableReport>,
    problems: Vec<Problem>,
    major: u64,
    minor: u64,
    tree_problems: u64,
    walked_pages: u64,
    /// (key, value, leaf pgno) of every GC record.
    gc_records: Vec<(&'a [u8], &'a [u8], u32)>,
    /// Named tables found in the main tree: (name, descriptor, host leaf txnid, host pgno).
    found_tables: Vec<(&'a [u8], Tree, u64, u32)>,
    /// The tree being walked and the nested tree inside it, if any.
    levels: Vec<Level<'a>>,
    /// DUPFIXED width seen in the current table.
    val_width: Option<usize>,
    progress: &'a mut dyn FnMut(CheckProgress),
    tick: u64,
    interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    stopped: bool,
}

fn reason(e: &Error) -> String {
    match e {
        Error::Corrupted { what: Reason(w), .. } => (*w).to_string(),
        other => other.to_string(),
    }
}

fn hexish(b: &[u8]) -> String {
    if !b.is_empty() && b.iter().all(|c| (0x20..0x7f).contains(c)) {
        let s = String::from_utf8_lossy(&b[..b.len().min(64)]).into_owned();
        if b.len() > 64 {
            return format!("{s}...");
        }
        return s;
    }
    let mut s = String::from("<");
    for c in b.iter().take(32) {
        let _ = write!(s, "{c:02x}");
    }
    if b.len() > 32 {
        s.push_str("...");
    }
    s.push('>');
    s
}

/// Page-number ranges as text ("3-7, 12"), at most `max` ranges.
fn ranges(pages: &[u32], max: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    let mut n = 0;
    while i < pages.len() {
        let start = pages[i];
        let mut end = start;
        while i + 1 < pages.len() && pages[i + 1] == end + 1 {
            i += 1;
            end = pages[i];
        }
        i += 1;
        if n == max {
            out.push_str(", ...");
            break;
        }
        if n > 0 {
            out.push_str(", ");
        }
        if start == end {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        n += 1;
    }
    out
}

impl<'a> Walker<'a> {
    fn report(&mut self, sev: Severity, area: Area, tid: Option<usize>, page: Option<u32>, message: String) {
        match sev {
            Severity::Major => self.major += 1,
            Severity::Minor => self.minor += 1,
        }
        if area == Area::Tree {
            self.tree_problems += 1;
        }
        let table = tid.map(|t| {
            self.tables[t].problems += 1;
            self.tables[t].display_name()
        });
        if self.problems.len() < MAX_LISTED {
            self.problems.push(Problem { severity: sev, area, table, page, message });
        }
    }

    fn bad(&mut self, ctx: &Ctx, page: u32, message: String) {
        self.report(Severity::Major, Area::Tree, Some(ctx.tid), Some(page), message);
    }

    fn tick(&mut self) {
        self.tick += 1;
        if self.tick.is_multiple_of(64)
            && self.interrupt.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
        {
            self.stopped = true;
        }
        if self.tick.is_multiple_of(512) {
            (self.progress)(CheckProgress { stage: Stage::Trees, done: self.walked_pages, total: self.limit as u64 });
        }
    }

    /// Marks `n` pages from `pgno` as owned by table `tid`; returns the pages
    /// that were already taken (and by whom).
    fn claim(&mut self, tid: usize, pgno: u32, n: u32) -> Vec<(u32, u16)> {
        let mut clash = Vec::new();
        for p in pgno..pgno.saturating_add(n) {
            if !self.track {
                self.walked_pages += 1;
                continue;
            }
            match self.owner.get(p as usize).copied() {
                Some(OWNER_NONE) => {
                    self.owner[p as usize] = tid as u16 + 1;
                    self.walked_pages += 1;
                }
                Some(o) => clash.push((p, o)),
                None => {}
            }
        }
        self.tick();
        clash
    }

    fn owner_name(&self, o: u16) -> String {
        if o == OWNER_GC_LISTED {
            "the GC list".into()
        } else {
            self.tables.get(o as usize - 1).map(|t| t.display_name()).unwrap_or_else(|| "?".into())
        }
    }

    /// The tree being walked.
    fn ctx(&self) -> Ctx {
        self.levels.last().expect("a tree is being walked").ctx
    }

    fn level(&mut self) -> &mut Level<'a> {
        self.levels.last_mut().expect("a tree is being walked")
    }

    /// `Err` (stopping the walk) once the interrupt flag was seen.
    fn go_on(&self) -> Result<()> {
        if self.stopped {
            Err(Error::Io(std::io::Error::new(std::io::ErrorKind::Interrupted, "the check was interrupted")))
        } else {
            Ok(())
        }
    }

    /// Walks one tree (and its nested trees) with the shared walk; returns what
    /// the walk counted.
    fn walk_tree(&mut self, walk: &mut Walk<'a>, ctx: Ctx, tree: &Tree, front: u64, host: Option<u32>) -> Counts {
        if self.stopped {
            return Counts::default();
        }
        self.levels.clear();
        self.levels.push(Level { ctx, last_key: None, key_width: None, vbytes: 0 });
        let spec = Spec { kind: ctx.kind, flags: ctx.flags, tree: *tree, front, host };
        let r = walk.tree(&spec, self);
        self.levels.clear();
        match r {
            Ok(c) => c,
            Err(_) if self.stopped => Counts::default(),
            Err(e) => {
                self.bad(&ctx, tree.root, format!("the walk of the tree stopped: {}", reason(&e)));
                Counts::default()
            }
        }
    }

    fn max_key(&self, ctx: &Ctx) -> usize {
        match ctx.kind {
            Kind::Gc => 8,
            Kind::Nested => self.limits.max_value(ctx.flags | DbFlags::DUP_SORT),
            _ => self.limits.max_key(ctx.flags),
        }
    }

    fn check_val_width(&mut self, ctx: &Ctx, pgno: u32, len: usize) {
        if !ctx.flags.contains(DbFlags::DUP_FIXED) {
            return;
        }
        match self.val_width {
            Some(wd) if wd != len => {
                self.bad(ctx, pgno, format!("page #{pgno}: DUPFIXED value of {len} bytes, others have {wd}"));
            }
            Some(_) => {}
            None => self.val_width = Some(len),
        }
    }

    fn record(&mut self, tid: usize, key: &[u8], dlen: u64) {
        let t = &mut self.tables[tid];
        t.entries += 1;
        t.keys += 1;
        t.key_bytes += key.len() as u64;
        t.data_bytes += dlen;
    }

    /// Keys of a page: size, integer width, order, and the bounds its parent
    /// branch gives.
    fn page_keys(&mut self, ctx: &Ctx, ev: &PageEv<'a>, parent_s: &str) {
        let (p, pgno) = (ev.page, ev.pgno);
        let is_branch = p.is_branch();
        let n = p.num_entries();
        // The walk checked that every key is readable.
        let keys: Vec<&'a [u8]> = (0..n).map(|i| key_at(p, i, pgno).unwrap_or(&[])).collect();
        let first = usize::from(is_branch);
        if is_branch && !keys[0].is_empty() {
            self.bad(ctx, pgno, format!("page #{pgno}: branch-node[0] has a non-empty key ({})", hexish(keys[0])));
        }
        let max_key = self.max_key(ctx);
        for i in first..n {
            let k = keys[i];
            if k.len() > max_key {
                self.bad(ctx, pgno, format!("page #{pgno}: node[{i}] too long key ({} > {max_key})", k.len()));
            }
            if ctx.cmp == Cmp::Int {
                if k.len() != 4 && k.len() != 8 {
                    self.bad(
                        ctx,
                        pgno,
                        format!("page #{pgno}: node[{i}] integer key of {} bytes (must be 4 or 8)", k.len()),
                    );
                } else if let Some(wd) = self.level().key_width {
                    if wd != k.len() {
                        self.bad(
                            ctx,
                            pgno,
                            format!("page #{pgno}: node[{i}] integer key of {} bytes, others have {wd}", k.len()),
                        );
                    }
                } else {
                    self.level().key_width = Some(k.len());
                }
            }
            if self.ignore_order {
                continue;
            }
            if i > first && ctx.cmp.cmp(keys[i - 1], k) != Ordering::Less {
                self.bad(
                    ctx,
                    pgno,
                    format!("page #{pgno}: node[{i}] key wrong order ({} >= {})", hexish(keys[i - 1]), hexish(k)),
                );
            }
            if ev.lo.is_some_and(|l| ctx.cmp.cmp(k, l) == Ordering::Less)
                || ev.hi.is_some_and(|h| ctx.cmp.cmp(k, h) != Ordering::Less)
            {
                self.bad(
                    ctx,
                    pgno,
                    format!(
                        "page #{pgno}: node[{i}] key {} outside the range given by the parent branch ({parent_s})",
                        hexish(k)
                    ),
                );
            }
        }
        if is_branch {
            return;
        }
        // Leaf: order against the previous leaf of this tree.
        if !self.ignore_order && n > 0 {
            if let Some(prev) = self.level().last_key {
                if ctx.cmp.cmp(prev, keys[0]) != Ordering::Less {
                    self.bad(
                        ctx,
                        pgno,
                        format!(
                            "page #{pgno}: first key {} is not greater than the last key {} of the previous leaf",
                            hexish(keys[0]),
                            hexish(prev)
                        ),
                    );
                }
            }
        }
        if let Some(k) = keys.last() {
            self.level().last_key = Some(k);
        }
        if p.is_dupfix() {
            // Leaf of a nested DUPFIXED tree: items are values.
            let k = p.dupfix_ksize() as usize;
            self.level().vbytes += (k * n) as u64;
            self.check_val_width(ctx, pgno, k);
        }
    }

    /// The message for a fault of the walk (and the ownership of the pages it
    /// reached).
    fn fault_message(&mut self, ctx: &Ctx, f: &Fault<'a>) -> String {
        let pgno = f.page;
        let parent_s = f.parent.map_or("root".to_string(), |p| format!("parent #{p}"));
        let from = match f.parent {
            Some(p) => format!(" (referenced from page #{p})"),
            None => " (root)".to_string(),
        };
        let bad_ref = |what: &str, pg: u32, why: RefWhy| match why {
            RefWhy::Meta => format!("{what} page #{pg} is a meta page{from}"),
            RefWhy::Unallocated(limit) => {
                format!("{what} page #{pg} is beyond the allocated pages (first unallocated {limit}){from}")
            }
            RefWhy::BeyondFile => format!("{what} page #{pg} is beyond the end of the data file{from}"),
        };
        match f.what {
            What::BadRoot { why } => bad_ref("tree", pgno, why),
            What::BadChild { child, why: RefWhy::BeyondFile, .. } => {
                format!("tree page #{child} is beyond the end of the data file (referenced from page #{pgno})")
            }
            What::BadChild { i, child, .. } => {
                format!("page #{pgno}: branch-node[{i}] wrong pgno ({child}), {parent_s}")
            }
            What::Revisit { branch } => {
                let kind = if branch { "branch" } else { "leaf" };
                match self.owner.get(pgno as usize).copied().filter(|&o| self.track && o != OWNER_NONE) {
                    Some(o) => {
                        let what = if branch && o as usize == ctx.tid + 1 { "loop" } else { "already used" };
                        let by = self.owner_name(o);
                        format!("page #{pgno}: {what} ({kind}-page: by {by}, deep {}, {parent_s})", f.depth)
                    }
                    None => {
                        format!("page #{pgno}: already used ({kind}-page: reached again, deep {}, {parent_s})", f.depth)
                    }
                }
            }
            What::PgnoMismatch { found } => {
                format!("page #{pgno}: pgno mismatch ({found} != expected {pgno}), {parent_s}")
            }
            What::PageType { flags, want_leaf } => {
                let ty = pflags::kind_name(flags);
                format!(
                    "page #{pgno}: unexpected page type {ty} (flags {flags:#x}), expected branch or {} ({parent_s})",
                    pflags::kind_name(want_leaf)
                )
            }
            What::Txnid { txnid, front } => {
                format!("page #{pgno}: invalid page txnid ({txnid}) for parent-page txnid ({front}), {parent_s}")
            }
            What::Header { why, lower, upper } => {
                format!("page #{pgno}: invalid/corrupted: {why} (lower {lower}, upper {upper}), {parent_s}")
            }
            What::Height { leaf, height } => format!(
                "page #{pgno}: wrong tree height ({} at depth {}, tree height {height}), {parent_s}",
                if leaf { "leaf" } else { "branch" },
                f.depth
            ),
            What::TreeHeight { height } if f.nested => {
                format!("page #{pgno}: nested tree height {height} is invalid for a non-empty tree")
            }
            What::TreeHeight { height } => format!("tree height {height} is invalid for a non-empty tree"),
            What::EmptyCounters { height, items } => {
                format!("empty tree has non-zero counters (height {height}, items {items})")
            }
            What::Entry { i, why } | What::Node { i, why } => format!("page #{pgno}: node[{i}]: {why}"),
            What::Child { i, why } => format!("page #{pgno}: branch-node[{i}]: {why}"),
            What::NodeFlags { i, flags, kind, dupsort } => {
                let kind = match kind {
                    Kind::Gc => "the GC",
                    Kind::Main => "the main table",
                    Kind::Nested => "a nested tree",
                    _ if dupsort => "a DUPSORT table",
                    _ => "a table without DUPSORT",
                };
                format!("page #{pgno}: node[{i}] has flags {flags:#x}, invalid in {kind}")
            }
            What::RecordSize { i, len, nested: true, .. } => {
                format!("page #{pgno}: node[{i}] nested tree descriptor has {len} bytes")
            }
            What::RecordSize { i, key, len, .. } => {
                format!("page #{pgno}: node[{i}] table record {} has {len} bytes instead of {TREE_SIZE}", hexish(key))
            }
            What::SubPage { i, why } => format!("page #{pgno}: node[{i}] sub-page: {why}"),
            What::SubPageType { i, flags, want } => {
                format!("page #{pgno}: node[{i}] sub-page has flags {flags:#x}, expected {want:#x}")
            }
            What::NestedEmpty { i, key } => {
                format!("page #{pgno}: node[{i}] nested tree under key {} is empty", hexish(key))
            }
            What::NestedTooDeep { i } => format!("page #{pgno}: node[{i}] nested tree inside a nested tree"),
            What::Large { leaf, head, i, why } => match why {
                LargeWhy::Ref(why) => bad_ref("large", head, why),
                LargeWhy::NotLarge { flags } => {
                    format!("page #{head}: unexpected page type (flags {flags:#x}) instead of large/overflow, value of node[{i}] in leaf #{leaf}")
                }
                LargeWhy::Count { pages, limit } => {
                    if pages == 0 || head as u64 + pages as u64 > limit as u64 {
                        format!("page #{head}: large chunk of {pages} pages runs beyond the allocated pages ({limit}), leaf #{leaf}")
                    } else {
                        format!("page #{head}: large chunk of {pages} pages runs beyond the end of the data file, leaf #{leaf}")
                    }
                }
                LargeWhy::Overlap { at, pages, used } => {
                    // The pages visited before are in the ownership table
                    // (the walk visits the others after this fault).
                    let clash: Vec<(u32, u16)> = if self.track {
                        (at..head + pages)
                            .filter_map(|p| self.owner.get(p as usize).map(|&o| (p, o)))
                            .filter(|&(_, o)| o != OWNER_NONE)
                            .collect()
                    } else {
                        Vec::new()
                    };
                    if clash.is_empty() {
                        format!("page #{head}: large chunk of {pages} pages (value of node[{i}] in leaf #{leaf}) overlaps {used} page(s) already used, the first #{at}")
                    } else {
                        self.overlap_message(head, pages, i, leaf, &clash)
                    }
                }
                LargeWhy::PgnoMismatch { found } => {
                    format!("page #{head}: pgno mismatch ({found} != expected {head}), large page of leaf #{leaf}")
                }
                LargeWhy::Txnid { txnid, leaf_txnid } => {
                    format!("page #{head}: invalid large-page txnid ({txnid}) for leaf txnid ({leaf_txnid})")
                }
                LargeWhy::Short { pages, dsize, need } => {
                    format!("page #{head}: large chunk of {pages} pages is too short for a value of {dsize} bytes ({need} pages)")
                }
            },
        }
    }

    fn overlap_message(&self, head: u32, pages: u32, i: usize, leaf: u32, clash: &[(u32, u16)]) -> String {
        let list: Vec<u32> = clash.iter().map(|c| c.0).collect();
        let mut owners: Vec<String> = clash.iter().map(|c| self.owner_name(c.1)).collect();
        owners.sort();
        owners.dedup();
        format!(
            "page #{head}: large chunk of {pages} pages (value of node[{i}] in leaf #{leaf}) overlaps {} page(s) already used by {}: {}",
            list.len(),
            owners.join(", "),
            ranges(&list, 16)
        )
    }
}

impl<'a> Visitor<'a> for Walker<'a> {
    fn visit(&mut self, pgno: u32, n: u32) -> Result<()> {
        // The walk visits a page once across all trees: the ownership table
        // mirrors what it visited (a clash is a fault of the walk).
        let tid = self.ctx().tid;
        self.claim(tid, pgno, n);
        self.go_on()
    }

    fn page(&mut self, _w: &mut Walk<'a>, ev: &PageEv<'a>) -> Result<()> {
        let ctx = self.ctx();
        let parent_s = ev.parent.map_or("root".to_string(), |p| format!("parent #{p}"));
        self.page_keys(&ctx, ev, &parent_s);
        self.go_on()
    }

    fn node(&mut self, _w: &mut Walk<'a>, ev: &NodeEv<'a>) -> Result<()> {
        let ctx = self.ctx();
        let (pgno, i, nd) = (ev.leaf, ev.i, ev.node);
        let key = nd.key;
        let tid = ctx.tid;
        match (ctx.kind, nd.flags) {
            (Kind::Nested, _) => {
                if nd.dsize != 0 {
                    self.bad(
                        &ctx,
                        pgno,
                        format!("page #{pgno}: node[{i}] of a nested tree has data ({} bytes)", nd.dsize),
                    );
                }
                self.level().vbytes += key.len() as u64;
                self.check_val_width(&ctx, pgno, key.len());
            }
            (_, 0) => {
                self.record(tid, key, nd.data.len() as u64);
                if ctx.dup_cmp.is_some() {
                    let max = self.limits.max_value(ctx.flags);
                    if nd.data.len() > max {
                        self.bad(
                            &ctx,
                            pgno,
                            format!(
                                "page #{pgno}: node[{i}] value of {} bytes is too long for a DUPSORT table (max {max})",
                                nd.data.len()
                            ),
                        );
                    }
                    self.check_val_width(&ctx, pgno, nd.data.len());
                }
                if ctx.kind == Kind::Gc {
                    self.gc_records.push((key, nd.data, pgno));
                }
            }
            (_, N_BIG) => {
                self.record(tid, key, nd.dsize as u64);
                if ctx.kind == Kind::Gc {
                    // The value follows with the chunk (stays empty if it is bad).
                    self.gc_records.push((key, &[], pgno));
                }
            }
            (_, N_TREE) => {
                self.record(tid, key, nd.data.len() as u64);
                self.tables[tid].subtables += 1;
                self.found_tables.push((key, Tree::read(nd.data), ev.leaf_txnid, pgno));
            }
            (_, N_DUP) => {}
            _ => {
                // A nested tree (walked next).
                let nt = Tree::read(nd.data);
                let want_flags = sub_flags(ctx.flags);
                if nt.flags != want_flags {
                    self.bad(
                        &ctx,
                        pgno,
                        format!("page #{pgno}: node[{i}] nested tree flags {:#x}, expected {want_flags:#x}", nt.flags),
                    );
                } else if ctx.flags.contains(DbFlags::DUP_FIXED) && nt.dupfix_size != ctx.dupfix_size {
                    // Writers refuse such a tree (it would mix value sizes).
                    self.bad(
                        &ctx,
                        pgno,
                        format!(
                            "page #{pgno}: node[{i}] nested tree of {}-byte values in a DUPFIXED table of {}-byte values",
                            nt.dupfix_size, ctx.dupfix_size
                        ),
                    );
                }
                if nt.mod_txnid > ev.leaf_txnid {
                    self.bad(
                        &ctx,
                        pgno,
                        format!(
                            "page #{pgno}: node[{i}] nested tree mod_txnid {} is newer than its leaf ({})",
                            nt.mod_txnid, ev.leaf_txnid
                        ),
                    );
                }
            }
        }
        self.go_on()
    }

    fn large(&mut self, ev: &NodeEv<'a>, head: u32, pages: u32, value: &'a [u8]) -> Result<()> {
        let ctx = self.ctx();
        let leaf = ev.leaf;
        let dsize = value.len();
        let need = self.limits.large_pages(dsize) as u64;
        if ctx.kind != Kind::Gc && pages as u64 > need + 1 {
            self.report(
                Severity::Minor,
                Area::Tree,
                Some(ctx.tid),
                Some(head),
                format!(
                    "page #{head}: large chunk of {pages} pages for a value of {dsize} bytes ({need} pages needed)"
                ),
            );
        }
        if ctx.kind == Kind::Gc {
            if let Some(r) = self.gc_records.last_mut().filter(|r| r.2 == leaf) {
                r.1 = value;
            }
        }
        self.go_on()
    }

    fn subpage(&mut self, ev: &NodeEv<'a>, sp: Page<'a>) -> Result<()> {
        let ctx = self.ctx();
        let (pgno, i, key) = (ev.leaf, ev.i, ev.node.key);
        let dupfix = ctx.flags.contains(DbFlags::DUP_FIXED);
        let cnt = sp.num_entries();
        let dc = ctx.dup_cmp.unwrap_or(Cmp::Lex);
        let mut prev: Option<&[u8]> = None;
        let mut vbytes = 0u64;
        for j in 0..cnt {
            let v = match key_at(sp, j, pgno) {
                Ok(v) => v,
                Err(e) => {
                    self.bad(&ctx, pgno, format!("page #{pgno}: node[{i}] sub-page value [{j}]: {}", reason(&e)));
                    return self.go_on();
                }
            };
            if !dupfix {
                match node::node(sp, j, pgno) {
                    Ok(sn) if sn.flags == 0 && sn.dsize == 0 => {}
                    Ok(sn) => self.bad(
                        &ctx,
                        pgno,
                        format!(
                            "page #{pgno}: node[{i}] sub-page node [{j}] has flags {:#x} / data {}",
                            sn.flags, sn.dsize
                        ),
                    ),
                    Err(e) => {
                        self.bad(&ctx, pgno, format!("page #{pgno}: node[{i}] sub-page node [{j}]: {}", reason(&e)));
                        return self.go_on();
                    }
                }
            } else {
                self.check_val_width(&ctx, pgno, v.len());
            }
            if v.len() > self.limits.max_value(ctx.flags) {
                self.bad(
                    &ctx,
                    pgno,
                    format!("page #{pgno}: node[{i}] sub-page value [{j}] too long ({} bytes)", v.len()),
                );
            }
            if !self.ignore_order {
                if let Some(pv) = prev {
                    if dc.cmp(pv, v) != Ordering::Less {
                        self.bad(
                            &ctx,
                            pgno,
                            format!(
                                "page #{pgno}: nested-node-key #{j} wrong order ({} >= {}) under key {}",
                                hexish(pv),
                                hexish(v),
                                hexish(key)
                            ),
                        );
                    }
                }
            }
            prev = Some(v);
            vbytes += v.len() as u64;
        }
        let t = &mut self.tables[ctx.tid];
        t.keys += 1;
        t.entries += cnt as u64;
        t.key_bytes += key.len() as u64 * cnt as u64;
        t.data_bytes += vbytes;
        self.go_on()
    }

    fn enter(&mut self, _ev: &NodeEv<'a>, _tree: &Tree) -> Result<bool> {
        self.go_on()?;
        let ctx = self.ctx();
        let nctx = Ctx {
            tid: ctx.tid,
            kind: Kind::Nested,
            flags: ctx.flags,
            dupfix_size: ctx.dupfix_size,
            cmp: ctx.dup_cmp.unwrap_or(Cmp::Lex),
            dup_cmp: None,
        };
        self.levels.push(Level { ctx: nctx, last_key: None, key_width: None, vbytes: 0 });
        Ok(true)
    }

    fn leave(&mut self, ev: &NodeEv<'a>, nt: &Tree, c: &Counts) -> Result<()> {
        let vbytes = self.levels.pop().expect("the nested tree's level").vbytes;
        let ctx = self.ctx();
        let (pgno, i, key) = (ev.leaf, ev.i, ev.node.key);
        if c.branch != nt.branch_pages as u64
            || c.leaf != nt.leaf_pages as u64
            || c.items != nt.items
            || nt.large_pages != 0
        {
            self.bad(
                &ctx,
                pgno,
                format!(
                    "page #{pgno}: node[{i}] nested tree counters (branch {}, leaf {}, large {}, items {}) differ from walked (branch {}, leaf {}, items {})",
                    nt.branch_pages, nt.leaf_pages, nt.large_pages, nt.items, c.branch, c.leaf, c.items
                ),
            );
        }
        let t = &mut self.tables[ctx.tid];
        t.keys += 1;
        t.entries += c.items;
        t.key_bytes += key.len() as u64 * c.items;
        t.data_bytes += vbytes;
        self.go_on()
    }

    fn fault(&mut self, f: Fault<'a>) -> Result<()> {
        let ctx = self.ctx();
        let page = match f.what {
            What::Large { head, why: LargeWhy::Ref(_), .. } => head,
            _ => f.page,
        };
        let m = self.fault_message(&ctx, &f);
        self.bad(&ctx, page, m);
        self.go_on()
    }
}

/// Flags of the nested tree of a DUPSORT table (docs/format.md, "Nested-tree flags").
fn sub_flags(f: DbFlags) -> u16 {
    let b = f.bits();
    ((b & 0x10) | ((b & 0x20) >> 2) | ((b & 0x40) >> 5)) as u16
}

fn ctx_for(tid: usize, kind: Kind, tree: &Tree) -> Ctx {
    let flags = DbFlags::from_bits_truncate(tree.flags as u32);
    Ctx { tid, kind, flags, dupfix_size: tree.dupfix_size, cmp: Cmp::for_keys(flags), dup_cmp: Cmp::for_dups(flags) }
}

/// The bytes of a meta slot (header and body), `None` when it lies beyond the
/// end of the file.
pub(crate) type MetaSlotBytes = Option<[u8; META_OFF + META_LEN]>;

/// Each slot's (txnid, steady) for [`troika`], an unusable meta counted as
/// txnid 0.
pub(crate) fn meta_states(metas: &[(Meta, std::result::Result<(), String>)]) -> [(u64, bool); 3] {
    [0, 1, 2].map(|i| match metas.get(i) {
        Some((m, Ok(()))) => (m.txnid(), m.is_steady()),
        _ => (0, false),
    })
}

/// Decodes and validates the three metas of a file of `file_pages` pages of
/// `ps` bytes, given the bytes of each slot.
pub(crate) fn read_metas(
    slots: [MetaSlotBytes; 3],
    ps: usize,
    file_pages: u64,
) -> Vec<(Meta, std::result::Result<(), String>)> {
    slots
        .iter()
        .enumerate()
        .map(|(i, slot)| match slot {
            None => (
                Meta::read(&[0u8; META_OFF + META_LEN], i as u32).expect("buffer is long enough"),
                Err("meta page is beyond the end of the file".into()),
            ),
            Some(b) => {
                let b = &b[..];
                let m = Meta::read(b, i as u32).expect("buffer is long enough");
                let mut v = m.validate(b, i as u32, Some(file_pages)).map_err(|e| reason(&e));
                if v.is_ok() && m.page_size() != ps {
                    v = Err(format!("page size {} differs from {ps}", m.page_size()));
                }
                (m, v)
            }
        })
        .collect()
}

impl Env {
    /// Full integrity check of the database: metas, every tree, the GC and the
    /// page accounting (see the module docs). Problems are returned in the
    /// report; `Err` only when the check cannot run at all (the selected meta
    /// is unusable, the newest meta is corrupted and no older one was chosen,
    /// an I/O error, a repair or turn that failed).
    ///
    /// `progress` is called now and then with the current stage and pages walked.
    pub fn check(&self, opts: &CheckOptions, progress: &mut dyn FnMut(CheckProgress)) -> Result<CheckReport> {
        let env = &*self.inner;
        let ps = env.page_size;
        (progress)(CheckProgress { stage: Stage::Metas, done: 0, total: 0 });
        // Hold a reader on the newest snapshot while checking.
        let txn = self.begin_ro_txn()?;
        let mut file_size = file::file_size(&env.file)?;
        let os_page = crate::os::page_size();
        let mut report = CheckReport {
            data_path: env.data_path.clone(),
            page_size: ps,
            system_page_size: os_page,
            file_size,
            ..Default::default()
        };
        let os_page = os_page as u64;
        if opts.repair && !env.read_only && file_size % os_page != 0 {
            let new = file_size.div_ceil(os_page) * os_page;
            env.io.set_len(new)?;
            report.repairs.push(format!(
                "extended the data file from {file_size} to {new} bytes (a multiple of the system page)"
            ));
            file_size = new;
            report.file_size = new;
        } else if file_size % ps as u64 != 0 || file_size % os_page != 0 {
            // libmdbx refuses such a file in read-only mode (MDBX_WANNA_RECOVERY).
            if env.read_only {
                return Err(Error::WannaRecovery);
            }
        }
        let map = env
            .map_for(&txn.snap.meta, 0)
            .or_else(|_| Ok::<_, Error>(env.map.read().unwrap_or_else(|e| e.into_inner()).clone()))?;
        // The pages after the metas, no further than the file reaches: the
        // metas, which commits rewrite in place, are copied, never borrowed.
        let base = NUM_METAS as usize * ps;
        let end = (map.len() as u64).min(file_size) as usize;
        let file_bytes = map.bytes(base, end.saturating_sub(base)).unwrap_or(&[]);
        let file_pages = file_size / ps as u64;
        report.backed_pages = file_pages;
        let slots = [0, 1, 2].map(|i| {
            let inside = (i * ps + META_OFF + META_LEN) as u64 <= file_size;
            if inside {
                crate::env::read_meta_page(&map, i, ps)
            } else {
                None
            }
        });
        let metas = read_metas(slots, ps, file_pages);
        let states = meta_states(&metas);
        let t = troika(states);
        report.recent_meta = t.recent;
        report.recent_txnid = states[t.recent].0;
        for (i, (m, v)) in metas.iter().enumerate() {
            let role = t.role(i, v.is_ok());
            report.metas.push(MetaReport {
                index: i,
                txnid_a: m.txnid_a,
                txnid_b: m.txnid_b,
                valid: v.is_ok(),
                steady: v.is_ok() && m.is_steady(),
                role,
                error: v.clone().err(),
                now: m.geo.now,
                first_unallocated: m.geo.first_unallocated,
            });
        }
        let selected = match opts.meta {
            Some(i) if i > 2 => {
                return Err(Error::InvalidArgument(format!("meta page {i} does not exist (0, 1 or 2)")))
            }
            Some(i) => {
                if let Err(e) = &metas[i].1 {
                    let _ = e;
                    return Err(Error::Corrupted {
                        page: i as u32,
                        what: Reason("the selected meta page is not usable"),
                    });
                }
                i
            }
            // The snapshot our reader holds (a writer may have committed since).
            None => (0..3).find(|&i| states[i].0 == txn.snap.meta.txnid() && states[i].0 != 0).unwrap_or(t.recent),
        };
        report.checked_meta = selected;
        let meta = if opts.meta.is_none() && metas[selected].0.txnid() == txn.snap.meta.txnid() {
            txn.snap.meta.clone()
        } else {
            metas[selected].0.clone()
        };
        let txnid = meta.txnid();
        report.checked_txnid = txnid;
        let mut walk = Walk::new(Src::File { bytes: file_bytes, ps, limit: meta.geo.first_unallocated });
        let mut w = Walker {
            limit: meta.geo.first_unallocated,
            limits: env.limits,
            track: !opts.skip_space,
            ignore_order: opts.ignore_order,
            owner: if opts.skip_space { Vec::new() } else { vec![OWNER_NONE; meta.geo.first_unallocated as usize] },
            tables: Vec::new(),
            problems: Vec::new(),
            major: 0,
            minor: 0,
            tree_problems: 0,
            walked_pages: 0,
            gc_records: Vec::new(),
            found_tables: Vec::new(),
            levels: Vec::new(),
            val_width: None,
            progress,
            tick: 0,
            interrupt: opts.interrupt.clone(),
            stopped: false,
        };

        // -- metas -------------------------------------------------------------
        // Largest txnid of a tree or large page in the file (a sign of lost
        // newer snapshots). Bounded by what the data costs, not the file size:
        // only up to the largest `first_unallocated` any meta claims (clamped
        // to the file), holes skipped, headers read with pread in 1 MiB chunks
        // (reading a sparse file through the map would make every hole page
        // resident).
        let scan_end = metas.iter().map(|(m, _)| m.geo.first_unallocated as u64).max().unwrap_or(0).min(file_pages);
        let newer_pages = || -> Result<u64> {
            let psz = ps as u64;
            let chunk = (1u64 << 20).max(psz);
            let mut buf = vec![0u8; chunk as usize];
            let (mut off, end) = (NUM_METAS as u64 * psz, scan_end * psz);
            let mut max = 0u64;
            while off < end {
                let Some(data) = file::next_data(&env.file, off)? else { break };
                off = off.max(data / psz * psz);
                if off >= end {
                    break;
                }
                let n = chunk.min(end - off) as usize;
                file::pread_exact(&env.file, &mut buf[..n], off)?;
                for h in buf[..n].chunks_exact(ps) {
                    if pflags::TREE_KINDS.contains(&(Page { buf: h }.flags())) {
                        max = max.max(u64_at(h, 0));
                    }
                }
                off += n as u64;
            }
            Ok(max)
        };
        let mut newest_page_txnid: Option<u64> = None;
        for (i, (m, v)) in metas.iter().enumerate() {
            let Err(why) = v else { continue };
            if opts.meta.is_some() {
                report.notes.push(format!(
                    "meta[{i}] is not usable ({why}); ignored since meta {selected} was selected for checking"
                ));
                continue;
            }
            let raw = if m.txnid_a == m.txnid_b { m.txnid_a } else { 0 };
            let torn_new = m.txnid_a.max(m.txnid_b);
            if raw > txnid && raw <= crate::format::MAX_TXNID && m.sign == SIGN_STEADY {
                // libmdbx: "meta[i] with steady txnid T is corrupted, manual recovery needed".
                return Err(Error::Corrupted {
                    page: i as u32,
                    what: Reason("the newest (steady) meta page is corrupted; manual recovery needed: check an older snapshot with --meta N and switch to it with --meta N --write --turn"),
                });
            }
            if m.magic >> 8 == crate::format::MAGIC
                && m.txnid_a != m.txnid_b
                && torn_new > txnid
                && torn_new <= crate::format::MAX_TXNID
            {
                w.report(
                    Severity::Minor,
                    Area::Meta,
                    None,
                    Some(i as u32),
                    format!("meta[{i}] is torn (txnid_a {} != txnid_b {}): the newest snapshot (txn {torn_new}) was not completely written; checking txn {txnid} of meta[{selected}] instead", m.txnid_a, m.txnid_b),
                );
                continue;
            }
            if m.magic >> 8 == crate::format::MAGIC && m.txnid_a == 0 && m.txnid_b == 0 {
                // Wiped on purpose (a rollback or a turn to another meta).
                report.notes.push(format!("meta[{i}] is wiped (txn 0)"));
                continue;
            }
            if raw <= txnid && why.contains("shorter than the allocated pages") {
                // An older snapshot whose pages were cut off by a shrink or truncation.
                report.notes.push(format!(
                    "meta[{i}] (txn {raw}) is an older snapshot that reaches beyond the end of the file"
                ));
                continue;
            }
            let newest = match newest_page_txnid {
                Some(n) => n,
                None => *newest_page_txnid.insert(newer_pages()?),
            };
            if newest > txnid {
                w.report(
                    Severity::Major,
                    Area::Meta,
                    None,
                    Some(i as u32),
                    format!("meta[{i}] is unusable ({why}) and pages written by txn {newest} exist: the newest snapshot(s) after txn {txnid} are lost; checking txn {txnid} of meta[{selected}] instead"),
                );
            } else {
                w.report(
                    Severity::Minor,
                    Area::Meta,
                    None,
                    Some(i as u32),
                    format!("meta[{i}] is unusable ({why}): one fallback snapshot less"),
                );
            }
        }
        if opts.meta.is_none() {
            for a in 0..3 {
                for b in a + 1..3 {
                    if states[a].0 != 0 && states[a] == states[b] {
                        w.report(
                            Severity::Major,
                            Area::Meta,
                            None,
                            Some(b as u32),
                            format!(
                                "meta[{a}] and meta[{b}] clash: both are txn {} with the same steadiness",
                                states[a].0
                            ),
                        );
                    }
                }
            }
            if !meta.is_steady() {
                if crate::bootid::bootid_matches(&meta.bootid) {
                    report.notes.push(format!("head meta[{selected}] (txn {txnid}) is weak: committed but not yet synced (same boot: no rollback needed)"));
                    if opts.repair && !env.read_only {
                        self.sync()?;
                        report.repairs.push(format!("made meta[{selected}] (txn {txnid}) steady"));
                    }
                } else {
                    w.report(Severity::Minor, Area::Meta, None, Some(selected as u32), format!("head meta[{selected}] (txn {txnid}) is weak and from another boot: the next exclusive read-write open rolls it back"));
                }
            }
        }
        let g = &meta.geo;
        report.geo_lower = g.lower as u64;
        report.geo_upper = g.upper as u64;
        report.geo_now = g.now as u64;
        report.geo_grow = pv2pages(g.grow_pv) as u64;
        report.geo_shrink = pv2pages(g.shrink_pv) as u64;
        report.allocated_pages = g.first_unallocated as u64;
        if g.now < g.first_unallocated {
            w.report(
                Severity::Minor,
                Area::Meta,
                None,
                Some(selected as u32),
                format!("meta[{selected}] geometry is inconsistent: now {} pages < allocated {} pages (the next write transaction corrects it)", g.now, g.first_unallocated),
            );
        }
        if file_pages < g.first_unallocated as u64 {
            w.report(
                Severity::Major,
                Area::Meta,
                None,
                None,
                format!(
                    "data file truncated: {} bytes ({file_pages} pages) < allocated {} pages; {} bytes missing",
                    file_size,
                    g.first_unallocated,
                    g.first_unallocated as u64 * ps as u64 - file_size
                ),
            );
        } else if file_pages != g.now as u64 {
            report.notes.push(format!(
                "filesize mismatch (expect {}b/{}p, have {}b/{}p)",
                g.now as u64 * ps as u64,
                g.now,
                file_size,
                file_pages
            ));
        }
        if !(MIN_PAGESIZE..=MAX_PAGESIZE).contains(&ps) {
            return Err(Error::Invalid(format!("{}: page size {ps}", env.data_path.display())));
        }
        // Without touching the shared cache of the oldest reader (writers only).
        let steady = states[t.prefer_steady].0;
        report.oldest_reader_txnid =
            env.lck.oldest_live_reader().map_or(steady, |r| r.min(steady)).min(report.recent_txnid);

        if opts.interrupt.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed)) {
            w.stopped = true;
        }
        // -- trees -------------------------------------------------------------
        (w.progress)(CheckProgress { stage: Stage::Trees, done: 0, total: g.first_unallocated as u64 });
        let gc_tid = 0;
        w.tables.push(TableReport {
            is_gc: true,
            flags: meta.gc.flags,
            depth: meta.gc.height,
            root: meta.gc.root,
            sequence: meta.gc.sequence,
            mod_txnid: meta.gc.mod_txnid,
            ..Default::default()
        });
        w.tables.push(TableReport {
            name: None,
            flags: meta.main.flags,
            depth: meta.main.height,
            root: meta.main.root,
            sequence: meta.main.sequence,
            mod_txnid: meta.main.mod_txnid,
            ..Default::default()
        });
        for (tid, kind, tree) in [(gc_tid, Kind::Gc, meta.gc), (1, Kind::Main, meta.main)] {
            let ctx = ctx_for(tid, kind, &tree);
            if kind == Kind::Gc && tree.flags != DbFlags::INTEGER_KEY.bits() as u16 {
                w.bad(&ctx, tree.root, format!("GC tree flags {:#x} (must be INTEGERKEY)", tree.flags));
            }
            w.val_width = None;
            let got = w.walk_tree(&mut walk, ctx, &tree, txnid, None);
            compare_counts(&mut w, tid, &tree, &got);
        }
        let found = std::mem::take(&mut w.found_tables);
        for (name, tree, host_txnid, host) in found {
            if w.stopped {
                break;
            }
            let tid = w.tables.len();
            w.tables.push(TableReport {
                name: Some(name.to_vec()),
                flags: tree.flags,
                depth: tree.height,
                root: tree.root,
                sequence: tree.sequence,
                mod_txnid: tree.mod_txnid,
                ..Default::default()
            });
            let flags = DbFlags::from_bits_truncate(tree.flags as u32);
            let ctx = ctx_for(tid, Kind::Table, &tree);
            if tree.flags & !0x7E != 0 || !flags.is_valid_persistent() {
                w.bad(&ctx, host, format!("table record has invalid flags {:#x}", tree.flags));
                continue;
            }
            if tree.mod_txnid > host_txnid {
                w.bad(
                    &ctx,
                    host,
                    format!(
                        "table mod_txnid {} is newer than its record's leaf page #{host} (txn {host_txnid})",
                        tree.mod_txnid
                    ),
                );
            }
            if tree.root != P_INVALID && tree.mod_txnid == 0 {
                w.bad(&ctx, host, "non-empty table has mod_txnid 0".to_string());
            }
            w.val_width = None;
            let front = if tree.mod_txnid == 0 || tree.mod_txnid > txnid { txnid } else { tree.mod_txnid };
            let got = w.walk_tree(&mut walk, ctx, &tree, front, Some(host));
            compare_counts(&mut w, tid, &tree, &got);
            if flags.contains(DbFlags::DUP_SORT) && tree.flags & 0x10 != 0 && tree.dupfix_size != 0 {
                if let Some(wd) = w.val_width {
                    if wd != tree.dupfix_size as usize {
                        w.bad(
                            &ctx,
                            tree.root,
                            format!(
                                "DUPFIXED value size {wd} differs from the table's fixed size {}",
                                tree.dupfix_size
                            ),
                        );
                    }
                }
            }
        }

        if w.stopped {
            return Err(Error::Io(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                format!("the check was interrupted after walking {} of {} pages", w.walked_pages, g.first_unallocated),
            )));
        }
        // -- GC records --------------------------------------------------------
        (w.progress)(CheckProgress { stage: Stage::Gc, done: w.walked_pages, total: g.first_unallocated as u64 });
        let records = std::mem::take(&mut w.gc_records);
        let mut listed = 0u64;
        let mut reclaimable = 0u64;
        for (n, (key, val, leaf)) in records.iter().enumerate() {
            let gcp = |w: &mut Walker<'_>, page: Option<u32>, msg: String| {
                w.report(Severity::Major, Area::Gc, Some(gc_tid), page, msg)
            };
            if key.len() != 8 {
                gcp(&mut w, Some(*leaf), format!("entry #{n}: wrong txn-id size (key of {} bytes)", key.len()));
                continue;
            }
            let id = u64_at(key, 0);
            if id < 1 || id > txnid {
                gcp(&mut w, Some(*leaf), format!("entry #{n}: wrong txn-id ({id}), the snapshot is txn {txnid}"));
                continue;
            }
            let Some(pnl) = crate::format::pnl::Pnl::new(val) else {
                gcp(&mut w, Some(*leaf), format!("record txn {id}: wrong pnl size ({} bytes)", val.len()));
                continue;
            };
            let mut count = pnl.declared_len();
            let cap = pnl.capacity();
            if count > cap {
                gcp(
                    &mut w,
                    Some(*leaf),
                    format!("record txn {id}: trimmed idl ({} > {} (corruption))", 4 * (count + 1), val.len()),
                );
                count = cap;
            } else if val.len() - 4 * (count + 1) >= 2 * ps {
                w.report(
                    Severity::Minor,
                    Area::Gc,
                    Some(gc_tid),
                    Some(*leaf),
                    format!("record txn {id}: extra idl space ({} < {}, not a trouble)", 4 * (count + 1), val.len()),
                );
            }
            let reclaim = id <= report.oldest_reader_txnid;
            let mut prev = u32::MAX;
            let mut bad_pages: Vec<(u32, String)> = Vec::new();
            for j in 0..count {
                let pg = pnl.get(j);
                if pg < NUM_METAS {
                    gcp(
                        &mut w,
                        Some(pg),
                        format!("record txn {id}: wrong idl entry (pgno {pg} < meta-pages {NUM_METAS})"),
                    );
                    continue;
                }
                if pg as u64 >= file_pages.max(1) && pg >= meta.geo.first_unallocated {
                    gcp(
                        &mut w,
                        Some(pg),
                        format!("record txn {id}: wrong idl entry (pgno {pg} > backed-pages {file_pages})"),
                    );
                    continue;
                }
                if pg >= meta.geo.first_unallocated {
                    gcp(
                        &mut w,
                        Some(pg),
                        format!(
                            "record txn {id}: wrong idl entry (pgno {pg} > alloc-pages {})",
                            meta.geo.first_unallocated - 1
                        ),
                    );
                    continue;
                }
                if pg >= prev {
                    let op = if pg == prev { '=' } else { '<' };
                    gcp(&mut w, Some(pg), format!("record txn {id}: bad sequence ({prev} {op} [{}].{pg})", j + 1));
                }
                prev = pg;
                listed += 1;
                if reclaim {
                    reclaimable += 1;
                }
                if w.track {
                    match w.owner[pg as usize] {
                        OWNER_NONE => w.owner[pg as usize] = OWNER_GC_LISTED,
                        OWNER_GC_LISTED => bad_pages.push((pg, "already listed in GC".into())),
                        o => bad_pages.push((
                            pg,
                            format!("already used (by {}), but listed in GC record txn {id}", w.owner_name(o)),
                        )),
                    }
                } else if walk.seen(pg) {
                    // Without the ownership table the walk still knows which
                    // pages the trees use.
                    bad_pages.push((pg, format!("already used by a tree, but listed in GC record txn {id}")));
                }
            }
            for (pg, msg) in bad_pages {
                gcp(&mut w, Some(pg), format!("page #{pg}: {msg}"));
            }
        }
        report.gc_listed_pages = listed;
        report.gc_reclaimable_pages = reclaimable;
        report.gc_tree_pages =
            w.tables[gc_tid].branch_pages + w.tables[gc_tid].leaf_pages + w.tables[gc_tid].large_pages;

        // -- space -------------------------------------------------------------
        (w.progress)(CheckProgress { stage: Stage::Space, done: w.walked_pages, total: g.first_unallocated as u64 });
        report.walked_pages = w.walked_pages + NUM_METAS as u64;
        if w.track {
            report.space_checked = true;
            let leaked: Vec<u32> =
                (NUM_METAS..meta.geo.first_unallocated).filter(|&p| w.owner[p as usize] == OWNER_NONE).collect();
            report.leaked_pages = leaked.len() as u64;
            if !leaked.is_empty() {
                let used = g.first_unallocated as u64 - NUM_METAS as u64 - listed;
                let hint =
                    if w.tree_problems > 0 { " (probably pages of the damaged subtrees reported above)" } else { "" };
                w.report(
                    Severity::Major,
                    Area::Space,
                    None,
                    leaked.first().copied(),
                    format!(
                        "used pages mismatch ({}(walked) != {}(allocated - GC)): {} page(s) owned by nobody (neither in a tree nor in the GC){hint}: {}",
                        w.walked_pages + NUM_METAS as u64,
                        used + NUM_METAS as u64,
                        leaked.len(),
                        ranges(&leaked, 32)
                    ),
                );
            }
        }
        report.tables = std::mem::take(&mut w.tables);
        if let Some(only) = &opts.table {
            report.tables.retain(|t| t.is_gc || t.name.is_none() || t.name.as_deref() == Some(only.as_slice()));
        }
        report.problems = std::mem::take(&mut w.problems);
        report.major = w.major;
        report.minor = w.minor;
        drop(txn);

        // -- turn --------------------------------------------------------------
        if opts.turn {
            let Some(target) = opts.meta else {
                return Err(Error::InvalidArgument("a meta page must be selected (0, 1 or 2) to turn to it".into()));
            };
            if env.read_only {
                return Err(Error::Access("turning to a meta page needs a read-write environment"));
            }
            if report.problem_count() == 0 || opts.force_turn {
                self.turn_to(target)?;
                report.turned = true;
            }
        }
        Ok(report)
    }

    /// Makes meta `target` the head: invalid other metas are wiped, the target
    /// gets a txnid above every valid one and a steady sign (libmdbx's
    /// `mdbx_env_turn_for_recovery`).
    fn turn_to(&self, target: usize) -> Result<()> {
        let env = &*self.inner;
        let ps = env.page_size;
        let _w = env.lck.lock_writer()?;
        let size = file::file_size(&env.file)?;
        let file_pages = size / ps as u64;
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        for i in 0..3u32 {
            let mut b = vec![0u8; META_OFF + META_LEN];
            file::pread_exact(&env.file, &mut b, i as u64 * ps as u64)?;
            bufs.push(b);
        }
        let tm = Meta::read(&bufs[target], target as u32)?;
        tm.validate(&bufs[target], target as u32, Some(file_pages))?;
        let mut new_txnid = tm.txnid().max(1);
        for (i, buf) in bufs.iter().enumerate() {
            if i == target {
                continue;
            }
            let m = Meta::read(buf, i as u32)?;
            if m.validate(buf, i as u32, Some(file_pages)).is_err() {
                let mut wiped = tm.clone();
                wiped.txnid_a = 0;
                wiped.txnid_b = 0;
                wiped.sign = SIGN_STEADY;
                env.write_at(&[&wiped.page(i as u32, ps)], i as u64 * ps as u64)?;
            } else if m.txnid() >= new_txnid {
                new_txnid = m.txnid() + 1;
            }
        }
        if new_txnid > crate::format::MAX_TXNID {
            return Err(Error::TxnFull);
        }
        let mut nm = tm;
        nm.txnid_a = new_txnid;
        nm.txnid_b = new_txnid;
        nm.sign = SIGN_STEADY;
        nm.bootid = crate::bootid::boot_id();
        env.write_at(&[&nm.body()], (target * ps + META_OFF) as u64)?;
        env.sync_data()?;
        env.lck.after_commit(new_txnid, true, true);
        Ok(())
    }
}

fn compare_counts(w: &mut Walker<'_>, tid: usize, tree: &Tree, got: &Counts) {
    let t = &mut w.tables[tid];
    t.branch_pages = got.branch;
    t.leaf_pages = got.leaf;
    t.large_pages = got.large;
    let items = got.items;
    let ctx_root = tree.root;
    let mut msgs: Vec<String> = Vec::new();
    if tree.root == P_INVALID {
        return;
    }
    if items != tree.items {
        msgs.push(format!("different number of entries {items} (walked) != {} (table record)", tree.items));
    }
    if got.branch != tree.branch_pages as u64 {
        msgs.push(format!("branch pages mismatch ({} != walked {})", tree.branch_pages, got.branch));
    }
    if got.leaf != tree.leaf_pages as u64 {
        msgs.push(format!("all-leaf pages mismatch ({} != walked {})", tree.leaf_pages, got.leaf));
    }
    if got.large != tree.large_pages as u64 {
        msgs.push(format!("large/overflow pages mismatch ({} != walked {})", tree.large_pages, got.large));
    }
    for m in msgs {
        w.report(Severity::Major, Area::Tree, Some(tid), Some(ctx_root), m);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{Db, DbFlags, PutFlags};

    fn filled(dir: &std::path::Path) -> Env {
        let env = Env::builder().max_dbs(8).no_sub_dir(true).open(dir.join("db")).unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let plain = txn.create_db(Some("plain"), DbFlags::empty()).unwrap();
        let dups = txn.create_db(Some("dups"), DbFlags::DUP_SORT).unwrap();
        let fixed =
            txn.create_db(Some("fixed"), DbFlags::DUP_SORT | DbFlags::DUP_FIXED | DbFlags::INTEGER_DUP).unwrap();
        for i in 0u32..3000 {
            txn.put(plain, format!("key{i:06}").as_bytes(), &vec![i as u8; (i % 50) as usize], PutFlags::empty())
                .unwrap();
            txn.put(dups, format!("k{:03}", i % 40).as_bytes(), format!("v{i}").as_bytes(), PutFlags::empty()).unwrap();
            txn.put(fixed, &(i % 7).to_le_bytes(), &i.to_le_bytes(), PutFlags::empty()).unwrap();
        }
        txn.put(plain, b"big", &vec![7u8; 20_000], PutFlags::empty()).unwrap();
        txn.put(Db::MAIN, b"main-record", b"x", PutFlags::empty()).unwrap();
        txn.commit().unwrap();
        let mut txn = env.begin_rw_txn().unwrap();
        let plain = txn.open_db(Some("plain")).unwrap();
        for i in 0u32..1000 {
            txn.del(plain, format!("key{i:06}").as_bytes(), None).unwrap();
        }
        txn.commit().unwrap();
        env
    }

    #[test]
    fn rdbx_written_database_checks_clean() {
        let d = tempfile::tempdir().unwrap();
        let env = filled(d.path());
        let mut stages = Vec::new();
        let r = env.check(&CheckOptions::default(), &mut |p| stages.push(p.stage)).unwrap();
        assert_eq!(r.problem_count(), 0, "{:?}", r.problems);
        assert_eq!(r.exit_code(), 0);
        assert!(r.space_checked);
        assert_eq!(r.leaked_pages, 0);
        assert_eq!(r.walked_pages + r.gc_listed_pages, r.allocated_pages);
        assert!(r.gc_listed_pages > 0, "the deletes freed pages");
        let names: Vec<String> = r.tables.iter().map(|t| t.display_name()).collect();
        assert_eq!(names, ["@GC", "@MAIN", "dups", "fixed", "plain"]);
        let plain = &r.tables[4];
        assert_eq!(plain.entries, 2001);
        assert!(plain.large_pages >= 5);
        let dups = &r.tables[2];
        assert_eq!((dups.entries, dups.keys), (3000, 40));
        assert!(stages.contains(&Stage::Trees) && stages.contains(&Stage::Space));
    }

    #[test]
    fn damaged_counter_is_a_major_problem_and_interrupt_stops() {
        let d = tempfile::tempdir().unwrap();
        let env = filled(d.path());
        drop(env);
        // Raise the item counter of the main table in every meta.
        let path = d.path().join("db");
        let mut b = std::fs::read(&path).unwrap();
        let head = (0..3).max_by_key(|&i| u64_at(&b, i * 4096 + META_OFF + 8)).unwrap();
        let o = head * 4096 + META_OFF + 88 + 32;
        let v = u64_at(&b, o) + 1;
        b[o..o + 8].copy_from_slice(&v.to_le_bytes());
        std::fs::write(&path, &b).unwrap();
        let env = Env::builder().max_dbs(8).read_only(true).open(&path).unwrap();
        let r = env.check(&CheckOptions::default(), &mut |_| {}).unwrap();
        assert_eq!(r.exit_code(), 2);
        assert_eq!(r.problems[0].table.as_deref(), Some("@MAIN"));
        assert!(r.problems[0].message.contains("different number of entries"), "{:?}", r.problems);
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let e = env.check(&CheckOptions { interrupt: Some(flag), ..Default::default() }, &mut |_| {});
        assert!(matches!(e, Err(Error::Io(ref io)) if io.kind() == std::io::ErrorKind::Interrupted), "{e:?}");
    }

    /// With `skip_space` (no ownership table) a branch naming one leaf many
    /// times is still walked once per page: the shared walk's revisit
    /// detection reports every further reference.
    #[test]
    fn skip_space_walks_a_page_named_many_times_once() {
        let d = tempfile::tempdir().unwrap();
        let env = filled(d.path());
        let clean = env.check(&CheckOptions { skip_space: true, ..Default::default() }, &mut |_| {}).unwrap();
        assert_eq!(clean.problem_count(), 0, "{:?}", clean.problems);
        let plain = clean.tables.iter().find(|t| t.name.as_deref() == Some(b"plain")).unwrap().clone();
        assert_eq!(plain.depth, 2, "a branch root over leaves");
        drop(env);
        let path = d.path().join("db");
        let mut b = std::fs::read(&path).unwrap();
        let ps = clean.page_size;
        let root = Page { buf: &b[plain.root as usize * ps..(plain.root as usize + 1) * ps] };
        let n = root.num_entries();
        assert!(n > 4, "{n} children");
        let first = crate::btree::child_at(root, 0, plain.root).unwrap();
        let offs: Vec<usize> =
            (1..n).map(|i| plain.root as usize * ps + crate::format::PAGEHDRSZ + root.entry(i)).collect();
        for o in offs {
            b[o..o + 4].copy_from_slice(&first.to_le_bytes());
        }
        std::fs::write(&path, &b).unwrap();
        let env = Env::builder().max_dbs(8).read_only(true).open(&path).unwrap();
        let r = env.check(&CheckOptions { skip_space: true, ..Default::default() }, &mut |_| {}).unwrap();
        assert_eq!(r.exit_code(), 2);
        let again: Vec<&Problem> = r.problems.iter().filter(|p| p.message.contains("already used")).collect();
        assert_eq!(again.len(), n - 1, "{:?}", r.problems);
        assert!(again.iter().all(|p| p.page == Some(first) && p.table.as_deref() == Some("plain")), "{again:?}");
        // The leaf is walked once: the root and one leaf instead of n leaves.
        let t = r.tables.iter().find(|t| t.name.as_deref() == Some(b"plain")).unwrap();
        assert_eq!((t.branch_pages, t.leaf_pages), (1, 1));
        assert_eq!(r.walked_pages, clean.walked_pages - (n as u64 - 1));
    }

    /// A key longer than its table allows, and a value of a DUPSORT table
    /// longer than its nested tree allows (there values are keys), are
    /// problems; at the limits they are not. (The engine's puts refuse
    /// both: the long key is written below those checks, the long value by
    /// raising a key size in the file.)
    #[test]
    fn keys_and_dup_values_over_the_limits_are_problems() {
        use crate::btree::write::{self, Val};
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("db");
        let write = |over: usize| {
            let env = fresh_env(&path);
            let limits = crate::format::limits::Limits::new(env.stat().unwrap().page_size as usize);
            let (max_key, max_dup) = (limits.max_key(DbFlags::empty()), limits.max_value(DbFlags::DUP_SORT));
            let mut txn = env.begin_rw_txn().unwrap();
            let plain = txn.create_db(Some("plain"), DbFlags::empty()).unwrap();
            let dups = txn.create_db(Some("dups"), DbFlags::DUP_SORT).unwrap();
            // The key beside a value in large pages (its node stays in the
            // leaf).
            write::put(&mut txn, plain, &vec![b'k'; max_key + over], Val::Bytes(&[1; 5000]), PutFlags::empty(), 0)
                .unwrap();
            // Values that long go into a nested tree, two to a leaf: the
            // third one alone in its leaf.
            for v in [b'a', b'b', b'c'] {
                txn.put(dups, b"key", &vec![v; max_dup], PutFlags::empty()).unwrap();
            }
            // A key's only value stays in the table's leaf.
            txn.put(dups, b"lone", &vec![b'l'; max_dup], PutFlags::empty()).unwrap();
            txn.commit().unwrap();
            let ps = limits.page_size;
            drop(env);
            let mut b = std::fs::read(&path).unwrap();
            let mut raised = 0;
            for pgno in 3..b.len() / ps {
                let page = Page { buf: &b[pgno * ps..(pgno + 1) * ps] };
                let lone = (0..page.num_entries())
                    .find(|&i| node::node(page, i, pgno as u32).is_ok_and(|nd| nd.key == b"lone" && nd.flags == 0));
                if let (Some(i), true) = (lone, over > 0 && page.is_leaf()) {
                    // The key's last bytes become the value's first: the
                    // node keeps its size, the value is `over` bytes longer.
                    let at = pgno * ps + crate::format::PAGEHDRSZ + page.entry(i);
                    b[at..at + 4].copy_from_slice(&((max_dup + over) as u32).to_le_bytes());
                    b[at + 6..at + 8].copy_from_slice(&((4 - over) as u16).to_le_bytes());
                    raised += 1;
                    continue;
                }
                if over == 0 || !page.is_leaf() || page.num_entries() != 1 {
                    continue;
                }
                let nd = node::node(page, 0, pgno as u32).unwrap();
                if nd.key.len() != max_dup || nd.dsize != 0 {
                    continue;
                }
                // The node moves `over` bytes down (into the free room
                // below it) and its key grows by as much: it still ends at
                // the page's end, its new last bytes those before them.
                let (off, upper) = (page.entry(0), page.upper());
                assert!(upper >= over && over.is_multiple_of(2));
                let buf = &mut b[pgno * ps..(pgno + 1) * ps];
                let at = crate::format::PAGEHDRSZ + off;
                buf.copy_within(at..ps, at - over);
                buf.copy_within(ps - 2 * over..ps - over, ps - over);
                crate::format::page::set_upper(buf, upper - over);
                buf[crate::format::PAGEHDRSZ..crate::format::PAGEHDRSZ + 2]
                    .copy_from_slice(&((off - over) as u16).to_le_bytes());
                buf[at - over + 6..at - over + 8].copy_from_slice(&((max_dup + over) as u16).to_le_bytes());
                raised += 1;
            }
            assert_eq!(raised, 2 * usize::from(over > 0), "a leaf of one value in the nested tree, a lone value");
            std::fs::write(&path, &b).unwrap();
            let env = Env::builder().max_dbs(8).no_sub_dir(true).read_only(true).open(&path).unwrap();
            env.check(&CheckOptions::default(), &mut |_| {}).unwrap()
        };
        let at_limits = write(0);
        assert_eq!(at_limits.problem_count(), 0, "{:?}", at_limits.problems);
        let dups = at_limits.tables.iter().find(|t| t.name.as_deref() == Some(b"dups")).unwrap();
        let max_dup = crate::format::limits::Limits::new(at_limits.page_size).max_value(DbFlags::DUP_SORT) as u64;
        // A key counts once per value: "key" 3 times, "lone" once.
        assert_eq!((dups.entries, dups.keys, dups.key_bytes, dups.data_bytes), (4, 2, 3 * 3 + 4, 4 * max_dup));
        let main = at_limits.tables.iter().find(|t| t.name.is_none() && t.display_name() == "@MAIN").unwrap();
        assert_eq!(main.subtables, 2, "{main:?}");
        let over = write(2);
        let says = |t: &str, what: &str| {
            over.problems.iter().any(|p| p.table.as_deref() == Some(t) && p.message.contains(what))
        };
        assert!(says("plain", "too long key") && says("dups", "too long key"), "{:?}", over.problems);
        assert!(says("dups", "too long for a DUPSORT table"), "{:?}", over.problems);
    }

    /// A DUPFIXED table's values all have one width: a key's value of
    /// another width is a problem. (The engine's puts refuse it: the table
    /// is written as a plain DUPSORT one, then its record says DUPFIXED.)
    #[test]
    fn a_dupfixed_value_of_another_width_is_a_problem() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("db");
        let write = |b_width: usize| {
            let env = fresh_env(&path);
            let mut txn = env.begin_rw_txn().unwrap();
            let dups = txn.create_db(Some("fixed"), DbFlags::DUP_SORT).unwrap();
            for (k, w) in [(b"a", 4), (b"b", b_width), (b"c", 4)] {
                txn.put(dups, k, &vec![k[0]; w], PutFlags::empty()).unwrap();
            }
            txn.commit().unwrap();
            // The table's record: DUP_SORT | DUP_FIXED, values of 4 bytes
            // (the descriptor's flags, then its value size at byte 4).
            let (records, env) = patch_nodes(env, &path, b"fixed", |flags, at, page| {
                assert_eq!(flags, N_TREE);
                let at = at + crate::format::NODESIZE + b"fixed".len();
                let flags = (DbFlags::DUP_SORT | DbFlags::DUP_FIXED).bits() as u16;
                page[at..at + 2].copy_from_slice(&flags.to_le_bytes());
                page[at + 4..at + 8].copy_from_slice(&4u32.to_le_bytes());
            });
            assert_eq!(records, 1);
            env.check(&CheckOptions::default(), &mut |_| {}).unwrap()
        };
        let same = write(4);
        assert_eq!(same.problem_count(), 0, "{:?}", same.problems);
        let other = write(2);
        assert!(
            other
                .problems
                .iter()
                .any(|p| p.table.as_deref() == Some("fixed") && p.message.contains("DUPFIXED value of")),
            "{:?}",
            other.problems
        );
    }

    /// A new environment at `path` (a file, its lock file beside it), in
    /// place of the one a previous case left there.
    pub(crate) fn fresh_env(path: &std::path::Path) -> Env {
        let mut lck = path.as_os_str().to_owned();
        lck.push("-lck");
        let _ = std::fs::remove_file(path);
        let _ = std::fs::remove_file(lck);
        Env::builder().max_dbs(8).no_sub_dir(true).open(path).unwrap()
    }

    /// Patches the file of `env` at `path` (closed first): `f` gets each leaf page
    /// (not DUPFIXED) holding a node keyed `key`, the node's flags and its
    /// offset in the page, and the page's bytes to change. Returns how many
    /// it found, and the environment opened again read-only.
    pub(crate) fn patch_nodes(
        env: Env,
        path: &std::path::Path,
        key: &[u8],
        mut f: impl FnMut(u8, usize, &mut [u8]),
    ) -> (usize, Env) {
        let ps = env.stat().unwrap().page_size as usize;
        drop(env);
        let mut b = std::fs::read(path).unwrap();
        let mut found = 0;
        for pgno in 3..b.len() / ps {
            let page = Page { buf: &b[pgno * ps..(pgno + 1) * ps] };
            if !page.is_leaf() || page.is_dupfix() {
                continue;
            }
            let hit = (0..page.num_entries()).find_map(|i| {
                let nd = node::node(page, i, pgno as u32).ok()?;
                (nd.key == key).then_some((nd.flags, crate::format::PAGEHDRSZ + page.entry(i)))
            });
            if let Some((flags, at)) = hit {
                f(flags, at, &mut b[pgno * ps..(pgno + 1) * ps]);
                found += 1;
            }
        }
        std::fs::write(path, &b).unwrap();
        (found, Env::builder().max_dbs(8).no_sub_dir(true).read_only(true).open(path).unwrap())
    }

    /// A table "dups" with `flags` holding 2,000 four-byte values under key
    /// "k" (a nested tree), checked clean; then `wrong` written into the
    /// nested tree's descriptor, in its field of `width` bytes at byte
    /// `field`. The reports of the check before and after.
    fn with_nested_descriptor_field(
        path: &std::path::Path,
        flags: DbFlags,
        field: usize,
        width: usize,
        wrong: u64,
    ) -> (CheckReport, CheckReport) {
        let env = fresh_env(path);
        let mut txn = env.begin_rw_txn().unwrap();
        let dups = txn.create_db(Some("dups"), DbFlags::DUP_SORT | flags).unwrap();
        for v in 0u32..2_000 {
            txn.put(dups, b"k", &v.to_be_bytes(), PutFlags::empty()).unwrap();
        }
        txn.commit().unwrap();
        let clean = env.check(&CheckOptions::default(), &mut |_| {}).unwrap();
        let (found, env) = patch_nodes(env, path, b"k", |flags, node, page| {
            assert_eq!(flags, N_DUP | N_TREE, "a nested tree");
            let o = node + crate::format::NODESIZE + b"k".len() + field;
            page[o..o + width].copy_from_slice(&wrong.to_le_bytes()[..width]);
        });
        assert_eq!(found, 1);
        (clean, env.check(&CheckOptions::default(), &mut |_| {}).unwrap())
    }

    /// A nested tree of a DUPFIXED table whose value size differs from the
    /// table's is a problem.
    #[test]
    fn a_nested_tree_of_another_value_size_is_a_problem() {
        let d = tempfile::tempdir().unwrap();
        // The descriptor's value size (at byte 4) says 8-byte values.
        let (clean, r) = with_nested_descriptor_field(&d.path().join("db"), DbFlags::DUP_FIXED, 4, 4, 8);
        assert_eq!(clean.problem_count(), 0, "{:?}", clean.problems);
        let t = clean.tables.iter().find(|t| t.name.as_deref() == Some(b"dups")).unwrap();
        assert_eq!((t.entries, t.data_bytes), (2_000, 8_000), "{t:?}");
        assert!(
            r.problems.iter().any(|p| p.message.contains("nested tree of 8-byte values in a DUPFIXED table of 4-byte")),
            "{:?}",
            r.problems
        );
    }

    /// A nested tree whose descriptor counts other branch, leaf or large
    /// pages or another number of values than the tree holds is a problem
    /// (one count wrong at a time, the others agreeing).
    #[test]
    fn a_nested_tree_counting_otherwise_is_a_problem() {
        let d = tempfile::tempdir().unwrap();
        // (The descriptor's field: its offset, its width, and the wrong
        // count the check then names.)
        for (field, width, wrong, says) in
            [(12, 4, 7, "branch 7,"), (16, 4, 99, "leaf 99,"), (20, 4, 1, "large 1,"), (32, 8, 1_999, "items 1999)")]
        {
            let (clean, r) = with_nested_descriptor_field(&d.path().join("db"), DbFlags::empty(), field, width, wrong);
            assert_eq!(clean.problem_count(), 0, "{:?}", clean.problems);
            assert!(
                r.problems.iter().any(|p| p.table.as_deref() == Some("dups")
                    && p.message.contains("nested tree counters")
                    && p.message.contains(says)),
                "{says}: {:?}",
                r.problems
            );
        }
    }

    /// A value's chunk of large pages more than one page longer than the
    /// value needs is a minor problem (exit code 1); one page more is let
    /// pass. (libmdbx's writers leave no extra page outside the GC, and
    /// one in the GC; its `mdbx_env_chk` counts neither case as a problem:
    /// checked with the oracle on both files of this test.)
    #[test]
    fn a_large_chunk_longer_than_its_value_needs_is_a_problem() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("db");
        let check_with = |len: u32| {
            let env = fresh_env(&path);
            let mut txn = env.begin_rw_txn().unwrap();
            // A chunk of 5 pages (4 KiB).
            txn.put(Db::MAIN, b"blob", &[3u8; 20_000], PutFlags::empty()).unwrap();
            txn.commit().unwrap();
            assert_eq!(env.stat().unwrap().page_size, 4096);
            // The node says the value is `len` bytes.
            let (found, env) = patch_nodes(env, &path, b"blob", |flags, at, page| {
                assert_eq!(flags, N_BIG);
                page[at..at + 4].copy_from_slice(&len.to_le_bytes());
            });
            assert_eq!(found, 1);
            env.check(&CheckOptions::default(), &mut |_| {}).unwrap()
        };
        // 4 pages needed: one more is allowed.
        let one_more = check_with(13_000);
        assert_eq!(one_more.problem_count(), 0, "{:?}", one_more.problems);
        // 3 pages needed: two more are not.
        let two_more = check_with(10_000);
        assert!(
            two_more.problems.iter().any(|p| p.severity == Severity::Minor
                && p.message.contains("large chunk of 5 pages for a value of 10000 bytes (3 pages needed)")),
            "{:?}",
            two_more.problems
        );
    }
}
