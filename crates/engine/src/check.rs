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
//! The walk never trusts the file: every offset is bounds-checked and a bad
//! page is reported and not descended into, so any input yields a report.

use std::cmp::Ordering;
use std::fmt::Write as _;

use crate::btree::walk::{legal_node, Kind};
use crate::btree::{check_subpage, key_at, Cmp, MAX_DEPTH};
use crate::env::Env;
use crate::error::{Error, Reason, Result};
use crate::flags::DbFlags;
use crate::format::limits::Limits;
use crate::format::meta::{pv2pages, troika, Meta, META_LEN, META_OFF, SIGN_STEADY};
use crate::format::node::{self, N_BIG, N_DUP, N_TREE};
use crate::format::page::{flags as pflags, Page};
use crate::format::tree::{Tree, TREE_SIZE};
use crate::format::{u32_at, u64_at, MAX_PAGESIZE, MIN_PAGESIZE, NUM_METAS, PAGEHDRSZ, P_INVALID};
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
    /// walked, but lost or doubly used pages are not detected.
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
    cmp: Cmp,
    dup_cmp: Option<Cmp>,
    height: usize,
}

#[derive(Default, Clone, Copy)]
struct Walked {
    branch: u64,
    leaf: u64,
    large: u64,
    items: u64,
}

struct Walker<'a> {
    file: &'a [u8],
    ps: usize,
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
    /// Last key of the previous leaf in the current tree walk.
    last_key: Option<&'a [u8]>,
    /// INTEGERKEY / DUPFIXED widths seen in the current tree.
    key_width: Option<usize>,
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

    /// The bytes of page `pgno` if it lies inside the allocated pages and the file.
    fn page(&self, pgno: u32) -> Option<&'a [u8]> {
        if pgno < NUM_METAS || pgno >= self.limit {
            return None;
        }
        let off = pgno as usize * self.ps;
        self.file.get(off..off + self.ps)
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

    /// Checks a page reference before loading: in range and inside the file.
    fn check_ref(&mut self, ctx: &Ctx, pgno: u32, what: &str, parent: Option<u32>) -> Option<&'a [u8]> {
        let from = match parent {
            Some(p) => format!(" (referenced from page #{p})"),
            None => " (root)".to_string(),
        };
        if pgno < NUM_METAS {
            self.bad(ctx, pgno, format!("{what} page #{pgno} is a meta page{from}"));
            return None;
        }
        if pgno >= self.limit {
            self.bad(
                ctx,
                pgno,
                format!("{what} page #{pgno} is beyond the allocated pages (first unallocated {}){from}", self.limit),
            );
            return None;
        }
        match self.page(pgno) {
            Some(p) => Some(p),
            None => {
                self.bad(ctx, pgno, format!("{what} page #{pgno} is beyond the end of the data file{from}"));
                None
            }
        }
    }

    /// Walks one tree; returns what was walked.
    fn walk_tree(&mut self, ctx: Ctx, tree: &Tree, front: u64, parent: Option<u32>) -> Walked {
        let mut w = Walked::default();
        self.last_key = None;
        if tree.root == P_INVALID {
            if tree.height != 0
                || tree.items != 0
                || tree.branch_pages != 0
                || tree.leaf_pages != 0
                || tree.large_pages != 0
            {
                self.bad(
                    &ctx,
                    P_INVALID,
                    format!("empty tree has non-zero counters (height {}, items {})", tree.height, tree.items),
                );
            }
            return w;
        }
        if tree.height == 0 || tree.height as usize > MAX_DEPTH {
            self.bad(&ctx, tree.root, format!("tree height {} is invalid for a non-empty tree", tree.height));
            return w;
        }
        self.walk_page(&ctx, tree.root, parent, front, 1, None, None, &mut w);
        w
    }

    #[allow(clippy::too_many_arguments)]
    fn walk_page(
        &mut self,
        ctx: &Ctx,
        pgno: u32,
        parent: Option<u32>,
        front: u64,
        depth: usize,
        lo: Option<&'a [u8]>,
        hi: Option<&'a [u8]>,
        w: &mut Walked,
    ) {
        // Interrupted: unwind at once (the check returns `Interrupted`).
        if self.stopped {
            return;
        }
        let Some(buf) = self.check_ref(ctx, pgno, "tree", parent) else {
            return;
        };
        let p = Page { buf };
        let flags = p.flags();
        let is_branch = flags == pflags::BRANCH;
        let want_leaf =
            if ctx.kind == Kind::Nested && ctx.flags.contains(DbFlags::DUP_FIXED) { 0x22 } else { pflags::LEAF };
        let parent_s = parent.map_or("root".to_string(), |p| format!("parent #{p}"));
        // Ownership first: a page reached twice is not walked again (cycles).
        let clash = self.claim(ctx.tid, pgno, 1);
        if let Some(&(_, o)) = clash.first() {
            let by = self.owner_name(o);
            let what = if is_branch && o as usize == ctx.tid + 1 { "loop" } else { "already used" };
            self.bad(
                ctx,
                pgno,
                format!(
                    "page #{pgno}: {what} ({}-page: by {by}, deep {depth}, {parent_s})",
                    if is_branch { "branch" } else { "leaf" }
                ),
            );
            return;
        }
        if p.pgno() != pgno {
            self.bad(ctx, pgno, format!("page #{pgno}: pgno mismatch ({} != expected {pgno}), {parent_s}", p.pgno()));
            return;
        }
        if flags != pflags::BRANCH && flags != want_leaf {
            let ty = match flags {
                0x01 => "branch",
                0x02 => "leaf",
                0x22 => "dupfix-leaf",
                0x04 => "large",
                0x08 => "meta",
                _ => "unknown",
            };
            self.bad(
                ctx,
                pgno,
                format!(
                    "page #{pgno}: unexpected page type {ty} (flags {flags:#x}), expected branch or {} ({parent_s})",
                    if want_leaf == 0x22 { "dupfix-leaf" } else { "leaf" }
                ),
            );
            return;
        }
        if is_branch {
            w.branch += 1;
        } else {
            w.leaf += 1;
        }
        if p.txnid() > front {
            self.bad(
                ctx,
                pgno,
                format!("page #{pgno}: invalid page txnid ({}) for parent-page txnid ({front}), {parent_s}", p.txnid()),
            );
            return;
        }
        let header = p.check_tree_page(pgno, front);
        let area = || if p.is_dupfix() { Ok(()) } else { node::check_node_area(p, pgno) };
        if let Err(e) = header.and_then(|()| area()) {
            self.bad(
                ctx,
                pgno,
                format!(
                    "page #{pgno}: invalid/corrupted: {} (lower {}, upper {}), {parent_s}",
                    reason(&e),
                    p.lower(),
                    p.upper()
                ),
            );
            return;
        }
        let is_leaf = !is_branch;
        if is_leaf != (depth == ctx.height) {
            self.bad(
                ctx,
                pgno,
                format!(
                    "page #{pgno}: wrong tree height ({} at depth {depth}, tree height {}), {parent_s}",
                    if is_leaf { "leaf" } else { "branch" },
                    ctx.height
                ),
            );
            return;
        }
        if depth >= MAX_DEPTH && is_branch {
            self.bad(ctx, pgno, format!("page #{pgno}: tree deeper than {MAX_DEPTH} levels"));
            return;
        }
        let n = p.num_entries();
        // Keys: bounds, order.
        let mut keys: Vec<&'a [u8]> = Vec::with_capacity(n);
        for i in 0..n {
            match key_at(p, i, pgno) {
                Ok(k) => keys.push(k),
                Err(e) => {
                    self.bad(ctx, pgno, format!("page #{pgno}: node[{i}]: {}", reason(&e)));
                    return;
                }
            }
        }
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
                } else if let Some(wd) = self.key_width {
                    if wd != k.len() {
                        self.bad(
                            ctx,
                            pgno,
                            format!("page #{pgno}: node[{i}] integer key of {} bytes, others have {wd}", k.len()),
                        );
                    }
                } else {
                    self.key_width = Some(k.len());
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
            if lo.is_some_and(|l| ctx.cmp.cmp(k, l) == Ordering::Less)
                || hi.is_some_and(|h| ctx.cmp.cmp(k, h) != Ordering::Less)
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
            for i in 0..n {
                let child = match crate::btree::child_at(p, i, pgno) {
                    Ok(c) => c,
                    Err(e) => {
                        self.bad(ctx, pgno, format!("page #{pgno}: branch-node[{i}]: {}", reason(&e)));
                        continue;
                    }
                };
                if child < NUM_METAS || child >= self.limit {
                    self.bad(ctx, pgno, format!("page #{pgno}: branch-node[{i}] wrong pgno ({child}), {parent_s}"));
                    continue;
                }
                let clo = if i == 0 { lo } else { Some(keys[i]) };
                let chi = if i + 1 < n { Some(keys[i + 1]) } else { hi };
                self.walk_page(ctx, child, Some(pgno), p.txnid(), depth + 1, clo, chi, w);
            }
            return;
        }
        // Leaf: order against the previous leaf of this tree.
        if !self.ignore_order && n > 0 {
            if let Some(prev) = self.last_key {
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
            self.last_key = Some(k);
        }
        if p.is_dupfix() {
            // Leaf of a nested DUPFIXED tree: items are values.
            let k = p.dupfix_ksize() as usize;
            w.items += n as u64;
            self.check_val_width(ctx, pgno, k);
            return;
        }
        for (i, key) in keys.iter().enumerate() {
            let nd = match node::node(p, i, pgno) {
                Ok(nd) => nd,
                Err(e) => {
                    self.bad(ctx, pgno, format!("page #{pgno}: node[{i}]: {}", reason(&e)));
                    continue;
                }
            };
            self.leaf_node(ctx, pgno, p.txnid(), i, key, nd, w);
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

    /// A record of a leaf node.
    #[allow(clippy::too_many_arguments)]
    fn leaf_node(
        &mut self,
        ctx: &Ctx,
        pgno: u32,
        leaf_txnid: u64,
        i: usize,
        key: &'a [u8],
        nd: node::Node<'a>,
        w: &mut Walked,
    ) {
        let is_dupsort = ctx.dup_cmp.is_some();
        let tid = ctx.tid;
        // Which flags are legal where is the shared walk's rule (btree/walk.rs).
        let legal = legal_node(ctx.kind, is_dupsort, nd.flags);
        match (ctx.kind, nd.flags) {
            _ if !legal => {
                let kind = match ctx.kind {
                    Kind::Gc => "the GC",
                    Kind::Main => "the main table",
                    Kind::Nested => "a nested tree",
                    _ if is_dupsort => "a DUPSORT table",
                    _ => "a table without DUPSORT",
                };
                self.bad(ctx, pgno, format!("page #{pgno}: node[{i}] has flags {:#x}, invalid in {kind}", nd.flags));
            }
            (Kind::Nested, 0) => {
                if nd.dsize != 0 {
                    self.bad(
                        ctx,
                        pgno,
                        format!("page #{pgno}: node[{i}] of a nested tree has data ({} bytes)", nd.dsize),
                    );
                }
                w.items += 1;
                self.check_val_width(ctx, pgno, key.len());
            }
            (_, 0) => {
                w.items += 1;
                self.record(tid, key, nd.data.len() as u64);
                if is_dupsort {
                    let max = self.limits.max_value(ctx.flags);
                    if nd.data.len() > max {
                        self.bad(
                            ctx,
                            pgno,
                            format!(
                                "page #{pgno}: node[{i}] value of {} bytes is too long for a DUPSORT table (max {max})",
                                nd.data.len()
                            ),
                        );
                    }
                    if ctx.flags.contains(DbFlags::DUP_FIXED) {
                        self.check_val_width(ctx, pgno, nd.data.len());
                    }
                }
                if ctx.kind == Kind::Gc {
                    self.gc_records.push((key, nd.data, pgno));
                }
            }
            (Kind::Gc | Kind::Main | Kind::Table, N_BIG) if !is_dupsort => {
                w.items += 1;
                let v = self.large(ctx, pgno, leaf_txnid, i, nd.big_pgno(), nd.dsize as usize, w);
                self.record(tid, key, nd.dsize as u64);
                if ctx.kind == Kind::Gc {
                    if let Some(v) = v {
                        self.gc_records.push((key, v, pgno));
                    } else {
                        self.gc_records.push((key, &[], pgno));
                    }
                }
            }
            (Kind::Main, N_TREE) if !is_dupsort => {
                w.items += 1;
                self.record(tid, key, nd.data.len() as u64);
                if nd.data.len() != TREE_SIZE {
                    self.bad(
                        ctx,
                        pgno,
                        format!(
                            "page #{pgno}: node[{i}] table record {} has {} bytes instead of {TREE_SIZE}",
                            hexish(key),
                            nd.data.len()
                        ),
                    );
                    return;
                }
                self.tables[tid].subtables += 1;
                self.found_tables.push((key, Tree::read(nd.data), leaf_txnid, pgno));
            }
            (Kind::Main | Kind::Table, N_DUP) if is_dupsort => {
                let sp = Page { buf: nd.data };
                if let Err(e) = check_subpage(sp, pgno) {
                    self.bad(ctx, pgno, format!("page #{pgno}: node[{i}] sub-page: {}", reason(&e)));
                    return;
                }
                let want = if ctx.flags.contains(DbFlags::DUP_FIXED) { 0x62 } else { 0x42 };
                if sp.flags() & !0x10 != want {
                    self.bad(
                        ctx,
                        pgno,
                        format!("page #{pgno}: node[{i}] sub-page has flags {:#x}, expected {want:#x}", sp.flags()),
                    );
                    return;
                }
                let cnt = sp.num_entries();
                let dc = ctx.dup_cmp.unwrap_or(Cmp::Lex);
                let mut prev: Option<&[u8]> = None;
                let mut vbytes = 0u64;
                for j in 0..cnt {
                    let v = match key_at(sp, j, pgno) {
                        Ok(v) => v,
                        Err(e) => {
                            self.bad(
                                ctx,
                                pgno,
                                format!("page #{pgno}: node[{i}] sub-page value [{j}]: {}", reason(&e)),
                            );
                            return;
                        }
                    };
                    if want == 0x42 {
                        match node::node(sp, j, pgno) {
                            Ok(sn) if sn.flags == 0 && sn.dsize == 0 => {}
                            Ok(sn) => self.bad(
                                ctx,
                                pgno,
                                format!(
                                    "page #{pgno}: node[{i}] sub-page node [{j}] has flags {:#x} / data {}",
                                    sn.flags, sn.dsize
                                ),
                            ),
                            Err(e) => {
                                self.bad(
                                    ctx,
                                    pgno,
                                    format!("page #{pgno}: node[{i}] sub-page node [{j}]: {}", reason(&e)),
                                );
                                return;
                            }
                        }
                    } else {
                        self.check_val_width(ctx, pgno, v.len());
                    }
                    if v.len() > self.limits.max_value(ctx.flags) {
                        self.bad(
                            ctx,
                            pgno,
                            format!("page #{pgno}: node[{i}] sub-page value [{j}] too long ({} bytes)", v.len()),
                        );
                    }
                    if !self.ignore_order {
                        if let Some(pv) = prev {
                            if dc.cmp(pv, v) != Ordering::Less {
                                self.bad(
                                    ctx,
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
                w.items += cnt as u64;
                let t = &mut self.tables[tid];
                t.keys += 1;
                t.entries += cnt as u64;
                t.key_bytes += key.len() as u64 * cnt as u64;
                t.data_bytes += vbytes;
            }
            (Kind::Main | Kind::Table, f) if is_dupsort && f == N_DUP | N_TREE => {
                if nd.data.len() != TREE_SIZE {
                    self.bad(
                        ctx,
                        pgno,
                        format!("page #{pgno}: node[{i}] nested tree descriptor has {} bytes", nd.data.len()),
                    );
                    return;
                }
                let nt = Tree::read(nd.data);
                let want_flags = sub_flags(ctx.flags);
                if nt.flags != want_flags {
                    self.bad(
                        ctx,
                        pgno,
                        format!("page #{pgno}: node[{i}] nested tree flags {:#x}, expected {want_flags:#x}", nt.flags),
                    );
                }
                if nt.mod_txnid > leaf_txnid {
                    self.bad(
                        ctx,
                        pgno,
                        format!(
                            "page #{pgno}: node[{i}] nested tree mod_txnid {} is newer than its leaf ({leaf_txnid})",
                            nt.mod_txnid
                        ),
                    );
                }
                if nt.root == P_INVALID || nt.items == 0 {
                    self.bad(
                        ctx,
                        pgno,
                        format!("page #{pgno}: node[{i}] nested tree under key {} is empty", hexish(key)),
                    );
                    return;
                }
                let nctx = Ctx {
                    tid,
                    kind: Kind::Nested,
                    flags: ctx.flags,
                    cmp: ctx.dup_cmp.unwrap_or(Cmp::Lex),
                    dup_cmp: None,
                    height: nt.height as usize,
                };
                let saved = (self.last_key, self.key_width);
                let sub = self.walk_tree(nctx, &nt, leaf_txnid, Some(pgno));
                self.last_key = saved.0;
                self.key_width = saved.1;
                if sub.branch != nt.branch_pages as u64
                    || sub.leaf != nt.leaf_pages as u64
                    || sub.items != nt.items
                    || nt.large_pages != 0
                {
                    self.bad(
                        ctx,
                        pgno,
                        format!(
                            "page #{pgno}: node[{i}] nested tree counters (branch {}, leaf {}, large {}, items {}) differ from walked (branch {}, leaf {}, items {})",
                            nt.branch_pages, nt.leaf_pages, nt.large_pages, nt.items, sub.branch, sub.leaf, sub.items
                        ),
                    );
                }
                w.branch += sub.branch;
                w.leaf += sub.leaf;
                w.items += sub.items;
                let vbytes = self.nested_value_bytes(&nt, sub.items);
                let t = &mut self.tables[tid];
                t.keys += 1;
                t.entries += sub.items;
                t.key_bytes += key.len() as u64 * sub.items;
                t.data_bytes += vbytes;
            }
            (_, f) => {
                let kind = match ctx.kind {
                    Kind::Gc => "the GC",
                    Kind::Main => "the main table",
                    _ if is_dupsort => "a DUPSORT table",
                    _ => "a table without DUPSORT",
                };
                self.bad(ctx, pgno, format!("page #{pgno}: node[{i}] has flags {f:#x}, invalid in {kind}"));
            }
        }
    }

    /// Value bytes of a nested tree: DUPFIXED = items * width; otherwise
    /// summed while walking (approximated by re-reading the leaves).
    fn nested_value_bytes(&self, nt: &Tree, items: u64) -> u64 {
        if nt.dupfix_size != 0 {
            return items * nt.dupfix_size as u64;
        }
        // Sum the key lengths of the nested leaves (bounded walk, no checks:
        // the structure was just verified).
        let mut sum = 0u64;
        let mut stack = vec![(nt.root, 1usize)];
        while let Some((pg, d)) = stack.pop() {
            let Some(buf) = self.page(pg) else { continue };
            let p = Page { buf };
            if p.check_tree_page(pg, u64::MAX).is_err() || d > MAX_DEPTH {
                continue;
            }
            for i in 0..p.num_entries() {
                if p.is_branch() {
                    if let Ok(c) = crate::btree::child_at(p, i, pg) {
                        stack.push((c, d + 1));
                    }
                } else if let Ok(k) = key_at(p, i, pg) {
                    sum += k.len() as u64;
                }
            }
        }
        sum
    }

    fn record(&mut self, tid: usize, key: &[u8], dlen: u64) {
        let t = &mut self.tables[tid];
        t.entries += 1;
        t.keys += 1;
        t.key_bytes += key.len() as u64;
        t.data_bytes += dlen;
    }

    /// A large value: checks the chunk and claims its pages; returns its bytes.
    #[allow(clippy::too_many_arguments)]
    fn large(
        &mut self,
        ctx: &Ctx,
        leaf: u32,
        leaf_txnid: u64,
        i: usize,
        big: u32,
        dsize: usize,
        w: &mut Walked,
    ) -> Option<&'a [u8]> {
        let buf = self.check_ref(ctx, big, "large", Some(leaf))?;
        let p = Page { buf };
        if p.flags() != pflags::LARGE {
            let clash = self.claim(ctx.tid, big, 1);
            if clash.is_empty() {
                w.large += 1;
            }
            self.bad(ctx, big, format!("page #{big}: unexpected page type (flags {:#x}) instead of large/overflow, value of node[{i}] in leaf #{leaf}", p.flags()));
            return None;
        }
        let npages = p.large_count();
        let need = self.limits.large_pages(dsize) as u64;
        if npages == 0 || big as u64 + npages as u64 > self.limit as u64 {
            self.bad(
                ctx,
                big,
                format!(
                    "page #{big}: large chunk of {npages} pages runs beyond the allocated pages ({}), leaf #{leaf}",
                    self.limit
                ),
            );
            let clash = self.claim(ctx.tid, big, 1);
            if clash.is_empty() {
                w.large += 1;
            }
            return None;
        }
        let clash = self.claim(ctx.tid, big, npages);
        w.large += npages as u64 - clash.len() as u64;
        let mut ok = true;
        if !clash.is_empty() {
            let pages: Vec<u32> = clash.iter().map(|c| c.0).collect();
            let mut owners: Vec<String> = clash.iter().map(|c| self.owner_name(c.1)).collect();
            owners.sort();
            owners.dedup();
            self.bad(
                ctx,
                big,
                format!(
                    "page #{big}: large chunk of {npages} pages (value of node[{i}] in leaf #{leaf}) overlaps {} page(s) already used by {}: {}",
                    pages.len(),
                    owners.join(", "),
                    ranges(&pages, 16)
                ),
            );
            ok = false;
        }
        if p.pgno() != big {
            self.bad(
                ctx,
                big,
                format!("page #{big}: pgno mismatch ({} != expected {big}), large page of leaf #{leaf}", p.pgno()),
            );
            return None;
        }
        if p.txnid() > leaf_txnid {
            self.bad(
                ctx,
                big,
                format!("page #{big}: invalid large-page txnid ({}) for leaf txnid ({leaf_txnid})", p.txnid()),
            );
            ok = false;
        }
        if (npages as u64) < need {
            self.bad(ctx, big, format!("page #{big}: large chunk of {npages} pages is too short for a value of {dsize} bytes ({need} pages)"));
            return None;
        }
        if ctx.kind != Kind::Gc && npages as u64 > need + 1 && clash.is_empty() {
            self.report(
                Severity::Minor,
                Area::Tree,
                Some(ctx.tid),
                Some(big),
                format!(
                    "page #{big}: large chunk of {npages} pages for a value of {dsize} bytes ({need} pages needed)"
                ),
            );
        }
        let off = big as usize * self.ps + PAGEHDRSZ;
        let v = self.file.get(off..off + dsize);
        if v.is_none() {
            self.bad(ctx, big, format!("page #{big}: large value of {dsize} bytes runs beyond the end of the file"));
        }
        if ok {
            v
        } else {
            None
        }
    }
}

/// Flags of the nested tree of a DUPSORT table (format doc §10.3).
fn sub_flags(f: DbFlags) -> u16 {
    let b = f.bits();
    ((b & 0x10) | ((b & 0x20) >> 2) | ((b & 0x40) >> 5)) as u16
}

fn ctx_for(tid: usize, kind: Kind, tree: &Tree) -> Ctx {
    let flags = DbFlags::from_bits_truncate(tree.flags as u32);
    Ctx { tid, kind, flags, cmp: Cmp::for_keys(flags), dup_cmp: Cmp::for_dups(flags), height: tree.height as usize }
}

/// Reads the three metas from `file` (bytes of the data file) with page size `ps`.
fn read_metas(file: &[u8], ps: usize, file_pages: u64) -> Vec<(Meta, std::result::Result<(), String>)> {
    (0..NUM_METAS as usize)
        .map(|i| {
            let off = i * ps;
            match file.get(off..off + META_OFF + META_LEN) {
                None => (
                    Meta::read(&[0u8; META_OFF + META_LEN], i as u32).expect("buffer is long enough"),
                    Err("meta page is beyond the end of the file".into()),
                ),
                Some(b) => {
                    let m = Meta::read(b, i as u32).expect("buffer is long enough");
                    let mut v = m.validate(b, i as u32, Some(file_pages)).map_err(|e| reason(&e));
                    if v.is_ok() && m.page_size() != ps {
                        v = Err(format!("page size {} differs from {ps}", m.page_size()));
                    }
                    (m, v)
                }
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
        let mut report =
            CheckReport { data_path: env.data_path.clone(), page_size: ps, file_size, ..Default::default() };
        if opts.repair && !env.read_only && file_size % 4096 != 0 {
            let new = file_size.div_ceil(4096) * 4096;
            env.io.set_len(new)?;
            report.repairs.push(format!(
                "extended the data file from {file_size} to {new} bytes (a multiple of the system page)"
            ));
            file_size = new;
            report.file_size = new;
        } else if file_size % ps as u64 != 0 || file_size % 4096 != 0 {
            // libmdbx refuses such a file in read-only mode (MDBX_WANNA_RECOVERY).
            if env.read_only {
                return Err(Error::WannaRecovery);
            }
        }
        let map = env
            .map_for(&txn.snap.meta, 0)
            .or_else(|_| Ok::<_, Error>(env.map.read().unwrap_or_else(|e| e.into_inner()).clone()))?;
        let mapped = map.bytes(0, map.len()).unwrap_or(&[]);
        let file_bytes = &mapped[..mapped.len().min(file_size as usize)];
        let file_pages = file_size / ps as u64;
        report.backed_pages = file_pages;
        let metas = read_metas(file_bytes, ps, file_pages);
        let states: [(u64, bool); 3] = [0, 1, 2].map(|i| match &metas[i].1 {
            Ok(()) => (metas[i].0.txnid(), metas[i].0.is_steady()),
            Err(_) => (0, false),
        });
        let t = troika(states);
        report.recent_meta = t.recent;
        report.recent_txnid = states[t.recent].0;
        for (i, (m, v)) in metas.iter().enumerate() {
            let role = if v.is_err() {
                "invalid"
            } else if i == t.recent {
                "head"
            } else if i == t.tail {
                "tail"
            } else {
                "stay"
            };
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
        let mut w = Walker {
            file: file_bytes,
            ps,
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
            last_key: None,
            key_width: None,
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
                    if matches!(u16::from_le_bytes([h[10], h[11]]), 0x01 | 0x02 | 0x22 | 0x04) {
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
            w.key_width = None;
            w.val_width = None;
            let got = w.walk_tree(ctx, &tree, txnid, None);
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
            w.key_width = None;
            w.val_width = None;
            let front = if tree.mod_txnid == 0 || tree.mod_txnid > txnid { txnid } else { tree.mod_txnid };
            let got = w.walk_tree(ctx, &tree, front, Some(host));
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
            if val.len() < 4 || val.len() % 4 != 0 {
                gcp(&mut w, Some(*leaf), format!("record txn {id}: wrong pnl size ({} bytes)", val.len()));
                continue;
            }
            let mut count = u32_at(val, 0) as usize;
            let cap = val.len() / 4 - 1;
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
                let pg = u32_at(val, 4 + 4 * j);
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

fn compare_counts(w: &mut Walker<'_>, tid: usize, tree: &Tree, got: &Walked) {
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
mod tests {
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
}
