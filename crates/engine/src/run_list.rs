//! A set of free page numbers kept as its maximal runs of consecutive pages:
//! the pages a write transaction reclaimed from the GC (`RwTxn::reclaimed`).
//!
//! It answers what the page allocator asks (`gc::alloc`) without walking or
//! moving the pages one by one: the lowest page, the lowest pages of the
//! run that fits `n` pages best, whether a page is free (a binary search
//! over runs, or none at all when the page is next to where the last one
//! was taken), and the longest run (lowest on ties) from a small index of
//! the runs of [`INDEXED`] pages or more. Taking the lowest page of a run,
//! as the commit-locality policy does page after page, changes that run in
//! place. The order of the pages is the descending order of the page lists
//! it replaced: the runs are kept highest first, and [`RunList::to_vec`]
//! lists the pages descending.

/// Runs of at least this many pages are indexed for [`RunList::longest`].
pub(crate) const INDEXED: u32 = 4;
// `RunList::pop_lowest` drops a run of one page without looking in the index.
const _: () = assert!(INDEXED > 1);

/// Lists of up to this many pages are added one page at a time.
const FEW: usize = 8;

/// [`RunList::drain_into`] writes each run's top pages as a block of this
/// many slots.
const DRAIN_STEP: usize = 8;

/// Pages `start..start + len` (`len >= 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    start: u32,
    len: u32,
}

impl Run {
    fn end(self) -> u32 {
        self.start + self.len
    }
}

/// Free pages as maximal runs (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct RunList {
    /// Highest first; maximal: a run ends at least one page below the start
    /// of the run before it.
    runs: Vec<Run>,
    /// Pages in all runs.
    len: usize,
    /// The runs of [`INDEXED`] pages or more, highest first (copies),
    /// unless `long_stale`.
    long: Vec<Run>,
    /// Whether `long` is out of date: a merge or a fill of the runs leaves
    /// it to be rebuilt when it is next asked for (often never: the blob
    /// probe's commits merged 9,599 times and searched the index 5,931).
    long_stale: bool,
    /// Where the last page was looked up or taken (an index into `runs`):
    /// the next look-up tries there first.
    hint: usize,
    /// Work space of [`RunList::merge`]: slots it writes the merged runs
    /// into, as many as the biggest merge needed (their contents are stale
    /// between merges).
    spare: Vec<Run>,
}

impl Clone for RunList {
    fn clone(&self) -> RunList {
        let mut l = RunList::default();
        l.clone_from(self);
        l
    }

    /// A copy into this list's own buffers (kept: copying allocates
    /// nothing once they have grown).
    fn clone_from(&mut self, src: &RunList) {
        self.runs.clone_from(&src.runs);
        self.len = src.len;
        self.long.clone_from(&src.long);
        self.long_stale = src.long_stale;
        self.hint = src.hint;
    }
}

impl RunList {
    /// The pages of a list sorted descending (duplicates are kept once).
    pub(crate) fn from_desc(pages: &[u32]) -> RunList {
        let mut l = RunList::default();
        l.extend_desc(pages);
        l
    }

    /// How many pages.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pages, highest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.runs.iter().flat_map(|r| (r.start..r.end()).rev())
    }

    /// The pages, highest first.
    pub(crate) fn to_vec(&self) -> Vec<u32> {
        let mut v = Vec::with_capacity(self.len);
        v.extend(self.iter());
        v
    }

    /// Takes every page (highest first), leaving the list empty.
    pub(crate) fn take_vec(&mut self) -> Vec<u32> {
        let v = self.to_vec();
        *self = RunList::default();
        v
    }

    /// Moves every page (highest first) to the end of `out`, leaving the
    /// list empty with its capacity.
    #[inline]
    pub(crate) fn drain_into(&mut self, out: &mut Vec<u32>) {
        // (Inline for the usual small commit's empty list.)
        if self.len != 0 {
            self.drain_into_some(out);
        }
    }

    /// [`RunList::drain_into`] of a list that is not empty.
    fn drain_into_some(&mut self, out: &mut Vec<u32>) {
        // Branch-free for runs of up to `DRAIN_STEP` pages, the usual kind
        // in a GC record: each run's top pages are written as one block of
        // `DRAIN_STEP` slots (a vector store), the slots past the run
        // overwritten by the next run or cut off at the end; only a longer
        // run loops over the rest. A test per run of its length (one page
        // or more) mispredicted on the mixed lengths of a blob workload's
        // records (callgrind's branch simulation: about 57 mispredictions a
        // commit of the blob probe). The slots are zeroed first (a memset
        // of the list, cheaper than the mispredictions).
        let base = out.len();
        out.resize(base + self.len + DRAIN_STEP, 0);
        let w = &mut out[base..];
        let mut pos = 0;
        for r in &self.runs {
            let top = r.end() - 1;
            let block = &mut w[pos..pos + DRAIN_STEP];
            for (k, slot) in block.iter_mut().enumerate() {
                *slot = top.wrapping_sub(k as u32);
            }
            if r.len as usize > DRAIN_STEP {
                for (k, slot) in w[pos..pos + r.len as usize].iter_mut().enumerate().skip(DRAIN_STEP) {
                    *slot = top - k as u32;
                }
            }
            pos += r.len as usize;
        }
        out.truncate(base + pos);
        self.clear();
    }

    /// Runs it has room for without growing: the most any of its buffers
    /// holds (the runs, and the merge's work space, which keeps the size of
    /// the biggest merge), so that a caller
    /// dropping an oversized list drops all of its memory.
    pub(crate) fn capacity(&self) -> usize {
        self.spare.capacity().max(self.runs.capacity())
    }

    /// Empties the list; it keeps its capacity.
    pub(crate) fn clear(&mut self) {
        self.runs.clear();
        self.long.clear();
        self.long_stale = false;
        self.len = 0;
        self.hint = 0;
    }

    /// Whether `pgno` is in the list.
    #[cfg(test)]
    pub(crate) fn contains(&self, pgno: u32) -> bool {
        self.locate(pgno).is_ok()
    }

    /// Adds pages (in any order); pages already in the list are kept once.
    /// Returns how many were already there.
    #[cfg(test)]
    pub(crate) fn extend(&mut self, mut pages: Vec<u32>) -> usize {
        if !pages.is_sorted_by(|a, b| a >= b) {
            pages.sort_unstable_by(|a, b| b.cmp(a));
        }
        self.extend_desc(&pages)
    }

    /// Adds pages sorted descending; pages already in the list are kept
    /// once. Returns how many were already there. (The test for nothing to
    /// add is inline: the GC update passes its loose pages, usually none,
    /// twice a commit.)
    #[inline]
    pub(crate) fn extend_desc(&mut self, pages: &[u32]) -> usize {
        if pages.is_empty() {
            return 0;
        }
        self.extend_desc_some(pages)
    }

    /// [`RunList::extend_desc`] of at least one page.
    #[inline(never)]
    fn extend_desc_some(&mut self, pages: &[u32]) -> usize {
        debug_assert!(pages.is_sorted_by(|a, b| a >= b), "pages not sorted descending");
        let before = self.len;
        if self.runs.is_empty() {
            // Into an empty list (a reclaimed GC record, usually): the runs
            // in one pass, in the list's kept capacity.
            self.fill_empty(pages);
        } else if pages.len() <= FEW {
            for &p in pages {
                self.insert(p);
            }
        } else if self.len <= FEW {
            // Many pages into few (a big GC record reclaimed after a small
            // one): the runs of the many in one pass, then the few inserted,
            // rather than a merge that rebuilds every run.
            let mut few = [0u32; FEW];
            let n = self.len;
            for (slot, p) in few.iter_mut().zip(self.iter()) {
                *slot = p;
            }
            self.clear();
            self.fill_empty(pages);
            for &p in &few[..n] {
                self.insert(p);
            }
        } else {
            self.merge(pages);
        }
        before + pages.len() - self.len
    }

    /// [`RunList::extend_desc`] into an empty list.
    #[inline(always)]
    fn fill_empty(&mut self, pages: &[u32]) {
        debug_assert!(self.runs.is_empty() && self.len == 0);
        self.len = runs_of_desc(pages, &mut self.runs);
        self.long_stale = true;
        self.hint = 0;
    }

    /// Adds one page; false if it was there.
    fn insert(&mut self, p: u32) -> bool {
        let i = match self.locate(p) {
            Ok(i) => {
                self.hint = i;
                return false;
            }
            Err(i) => i,
        };
        let joins_above = i > 0 && self.runs[i - 1].start == p + 1;
        let joins_below = i < self.runs.len() && self.runs[i].end() == p;
        match (joins_above, joins_below) {
            (true, true) => {
                let (above, below) = (self.runs[i - 1], self.runs[i]);
                self.remove_run(i);
                self.set_run(i - 1, Run { start: below.start, len: below.len + 1 + above.len });
                self.hint = i - 1;
            }
            (true, false) => {
                let above = self.runs[i - 1];
                self.set_run(i - 1, Run { start: p, len: above.len + 1 });
                self.hint = i - 1;
            }
            (false, true) => {
                let below = self.runs[i];
                self.set_run(i, Run { start: below.start, len: below.len + 1 });
                self.hint = i;
            }
            (false, false) => {
                self.insert_run(i, Run { start: p, len: 1 });
                self.hint = i;
            }
        }
        self.len += 1;
        true
    }

    /// Merges pages sorted descending into the runs at once (a new list of
    /// runs and a new index): for more than a few pages. A chunk's search
    /// merges whole GC records of a thousand pages into a list of
    /// thousands, where a merge page by page cost 30 instructions a page
    /// (building the pages' runs first and then merging two lists of runs
    /// cost more than one pass over both, twice measured).
    fn merge(&mut self, pages: &[u32]) {
        // Every run of the merge holds at least one of its old runs or
        // pages, so this many slots are enough. The merge writes them by
        // index into the work space, which keeps its length (slots are
        // filled only when it grows), and the runs are copied from there:
        // pushing them kept the loop's state in memory (the blob probe's
        // commits: 46,450 -> 45,640 instructions each, callgrind).
        let need = self.runs.len() + pages.len() + 1;
        if self.spare.len() < need {
            self.spare.resize(need, Run { start: 0, len: 0 });
        }
        let (n, len) = merge_runs_desc(&self.runs, pages, &mut self.spare);
        self.runs.clear();
        self.runs.extend_from_slice(&self.spare[1..n]);
        self.long_stale = true;
        self.len = len;
        self.hint = 0;
    }

    /// Removes `pgno`; whether it was there.
    #[inline]
    pub(crate) fn take(&mut self, pgno: u32) -> bool {
        match self.locate(pgno) {
            Ok(i) => {
                self.take_at(i, pgno);
                true
            }
            Err(_) => false,
        }
    }

    /// Removes `pgno` from run `i`, which holds it.
    fn take_at(&mut self, i: usize, pgno: u32) {
        let r = self.runs[i];
        if r.len == 1 {
            self.remove_run(i);
        } else if pgno == r.start {
            self.set_run(i, Run { start: pgno + 1, len: r.len - 1 });
        } else if pgno == r.end() - 1 {
            self.set_run(i, Run { start: r.start, len: r.len - 1 });
        } else {
            // The middle of a run: its lower part becomes a run of its own.
            self.set_run(i, Run { start: pgno + 1, len: r.end() - pgno - 1 });
            self.insert_run(i + 1, Run { start: r.start, len: pgno - r.start });
        }
        self.hint = i;
        self.len -= 1;
    }

    /// Takes the lowest page.
    pub(crate) fn pop_lowest(&mut self) -> Option<u32> {
        let i = self.runs.len().checked_sub(1)?;
        let r = self.runs[i];
        if r.len == 1 {
            // The usual case (a GC record's pages are mostly runs of one):
            // the last run goes, and it is not indexed.
            self.runs.pop();
            self.hint = i;
            self.len -= 1;
            return Some(r.start);
        }
        self.take_at(i, r.start);
        Some(r.start)
    }

    /// Takes `n` consecutive pages from the run that fits them best: the
    /// shortest run of `n` pages or more (the lowest of those), its lowest
    /// `n` pages; returns the first of them. A large value's chunk that
    /// takes the first run long enough splits a longer run than it needs,
    /// and the piece left over is often too short for the next chunk: in
    /// the blob probe (values of 3 to 8 pages rewritten at random) the file
    /// held 6,736 pages taking the highest run long enough, 6,623 taking the
    /// best fit (docs/design.md, "A large value's chunk").
    pub(crate) fn take_fit(&mut self, n: usize) -> Option<u32> {
        let n = u32::try_from(n).ok().filter(|&n| n > 0)?;
        let i = self.fit(n)?;
        let r = self.runs[i];
        if r.len == n {
            self.remove_run(i);
        } else {
            self.set_run(i, Run { start: r.start + n, len: r.len - n });
        }
        self.hint = i;
        self.len -= n as usize;
        Some(r.start)
    }

    /// Where the run [`RunList::take_fit`] takes from is (an index into
    /// `runs`). Runs shorter than [`INDEXED`] are searched from the lowest
    /// (an exact fit ends the search); longer ones in the index (brought
    /// up to date only then).
    fn fit(&mut self, n: u32) -> Option<usize> {
        if n < INDEXED {
            let mut best: Option<(usize, u32)> = None;
            for (i, r) in self.runs.iter().enumerate().rev() {
                if r.len == n {
                    return Some(i);
                }
                if r.len > n && r.len < INDEXED && best.is_none_or(|(_, len)| r.len < len) {
                    best = Some((i, r.len));
                }
            }
            if let Some((i, _)) = best {
                return Some(i);
            }
        }
        self.index_long();
        let mut best: Option<Run> = None;
        for &r in self.long.iter().rev() {
            if r.len == n {
                best = Some(r);
                break;
            }
            if r.len > n && best.is_none_or(|b| r.len < b.len) {
                best = Some(r);
            }
        }
        let r = best?;
        // The index holds copies: the run's place among all runs.
        self.runs.binary_search_by(|x| r.start.cmp(&x.start)).ok()
    }

    /// How many of the list's highest pages lie right below `end`, up to `n`.
    pub(crate) fn touching(&self, end: u32, n: usize) -> usize {
        match self.runs.first() {
            Some(r) if r.end() == end => (r.len as usize).min(n),
            _ => 0,
        }
    }

    /// Removes the `k` highest pages, which [`RunList::touching`] counted.
    /// (The test for none is inline: every commit's GC update asks, and
    /// usually there are none.)
    #[inline]
    pub(crate) fn drain_top(&mut self, k: usize) {
        if k != 0 {
            self.drain_top_some(k);
        }
    }

    /// [`RunList::drain_top`] of at least one page.
    fn drain_top_some(&mut self, k: usize) {
        let r = self.runs[0];
        assert!(k <= r.len as usize, "drain_top: {k} pages from a run of {}", r.len);
        if k == r.len as usize {
            self.remove_run(0);
        } else {
            self.set_run(0, Run { start: r.start, len: r.len - k as u32 });
        }
        self.hint = 0;
        self.len -= k;
    }

    /// Keeps the `keep` highest pages and returns the others (highest first).
    pub(crate) fn split_off_low(&mut self, keep: usize) -> Vec<u32> {
        if keep >= self.len {
            return Vec::new();
        }
        let all = self.take_vec();
        *self = RunList::from_desc(&all[..keep]);
        all[keep..].to_vec()
    }

    /// The longest run of [`INDEXED`] pages or more (the lowest of the
    /// longest): its first page and length.
    pub(crate) fn longest(&mut self) -> Option<(u32, usize)> {
        self.index_long();
        let mut best: Option<Run> = None;
        for &r in &self.long {
            if best.is_none_or(|b| r.len >= b.len) {
                best = Some(r);
            }
        }
        best.map(|r| (r.start, r.len as usize))
    }

    /// Brings the index of long runs up to date if it is stale.
    /// Branch-free: every run is written to the next slot of the work space
    /// `spare` (grown, never shrunk: its slots are stale between uses),
    /// which is kept only for a long run (a filter's test mispredicted on
    /// the mixed lengths of a blob workload's runs).
    #[inline]
    fn index_long(&mut self) {
        if !self.long_stale {
            return;
        }
        self.long_stale = false;
        let (runs, spare) = (&self.runs, &mut self.spare);
        if spare.len() < runs.len() {
            spare.resize(runs.len(), Run { start: 0, len: 0 });
        }
        let mut j = 0;
        for &r in runs {
            spare[j] = r;
            j += usize::from(r.len >= INDEXED);
        }
        self.long.clear();
        self.long.extend_from_slice(&spare[..j]);
    }

    /// The run holding `p` (`Ok`), or where a run starting at `p` would go
    /// (`Err`). Tries the hint, then both ends, then searches.
    #[inline]
    fn locate(&self, p: u32) -> Result<usize, usize> {
        let n = self.runs.len();
        let h = self.hint.min(n);
        if h < n && self.runs[h].start <= p && p < self.runs[h].end() {
            return Ok(h);
        }
        if (h == 0 || self.runs[h - 1].start > p) && (h == n || self.runs[h].end() <= p) {
            return Err(h);
        }
        // The page after the highest one (the tail, when it is free) or
        // below the lowest.
        if self.runs[0].end() <= p {
            return Err(0);
        }
        if self.runs[n - 1].start > p {
            return Err(n);
        }
        self.search(p)
    }

    #[inline(never)]
    fn search(&self, p: u32) -> Result<usize, usize> {
        self.runs.binary_search_by(|r| {
            if r.start > p {
                std::cmp::Ordering::Less
            } else if r.end() <= p {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
    }

    /// Where run `r` (one of the indexed runs) is in the index.
    fn long_at(&self, r: Run) -> usize {
        let j = self.long.binary_search_by(|x| r.start.cmp(&x.start));
        debug_assert_eq!(j.map(|j| self.long[j]), Ok(r), "run not in the index");
        j.expect("an indexed run is in the index")
    }

    /// Where run `r` (not in the index) goes in it.
    fn long_slot(&self, r: Run) -> usize {
        self.long.binary_search_by(|x| r.start.cmp(&x.start)).unwrap_err()
    }

    /// Replaces run `i`, which covers no other run, by `new`.
    fn set_run(&mut self, i: usize, new: Run) {
        let old = std::mem::replace(&mut self.runs[i], new);
        if self.long_stale {
            return;
        }
        match (old.len >= INDEXED, new.len >= INDEXED) {
            (true, true) => {
                let j = self.long_at(old);
                self.long[j] = new;
            }
            (true, false) => {
                let j = self.long_at(old);
                self.long.remove(j);
            }
            (false, true) => {
                let j = self.long_slot(new);
                self.long.insert(j, new);
            }
            (false, false) => {}
        }
    }

    #[inline]
    fn remove_run(&mut self, i: usize) {
        let old = self.runs.remove(i);
        if old.len >= INDEXED && !self.long_stale {
            let j = self.long_at(old);
            self.long.remove(j);
        }
    }

    fn insert_run(&mut self, i: usize, r: Run) {
        self.runs.insert(i, r);
        if r.len >= INDEXED && !self.long_stale {
            let j = self.long_slot(r);
            self.long.insert(j, r);
        }
    }

    /// Panics unless the runs are maximal, highest first, counted, and the
    /// index holds exactly the long ones (for tests).
    #[cfg(test)]
    pub(crate) fn check(&self) {
        for w in self.runs.windows(2) {
            assert!(w[1].end() < w[0].start, "runs {:?} and {:?} touch or are out of order", w[0], w[1]);
        }
        assert!(self.runs.iter().all(|r| r.len > 0), "an empty run");
        assert_eq!(self.len, self.runs.iter().map(|r| r.len as usize).sum::<usize>(), "page count");
        if !self.long_stale {
            let long: Vec<Run> = self.runs.iter().filter(|r| r.len >= INDEXED).copied().collect();
            assert_eq!(self.long, long, "index of long runs");
        }
    }
}

impl PartialEq for RunList {
    fn eq(&self, other: &RunList) -> bool {
        self.runs == other.runs
    }
}

/// Writes to `out` the maximal runs of the pages of `old` (maximal runs,
/// highest first) and of `pages` (sorted descending; a page in both, or
/// listed twice, counts once), highest first, from `out[1]` on (`out[0]`
/// holds an empty run): how many slots it wrote, `out[0]` included, and
/// how many pages the runs hold. `out` has a slot for each run of `old`
/// and each page, and one more. One pass over both, each page or old run
/// joining the run being built or starting the next.
#[inline]
fn merge_runs_desc(old: &[Run], pages: &[u32], out: &mut [Run]) -> (usize, usize) {
    let (mut k, mut len) = (0, 0usize);
    // The run being built: pages `cs..ce`; at first an empty one at the
    // top of the page numbers, which the first pages close (it goes to
    // `out[0]`, which the caller skips, and adds nothing to `len`). Page
    // numbers stay far below it (at most 2^31), so nothing joins it.
    debug_assert!(pages.first().is_none_or(|&p| p < u32::MAX - 1));
    debug_assert!(old.first().is_none_or(|r| r.end() < u32::MAX));
    let (mut cs, mut ce) = (u32::MAX, u32::MAX);
    // Pages `s..e`, the highest left, join the run being built if they
    // touch or overlap it, else that run is done and they start the next.
    // Branch-free: the run being built is written to its slot every time
    // and the slot kept only when the run is done (a branch on joining
    // mispredicted on mixed GC records, about 57 times a commit of the blob
    // probe under callgrind's branch simulation). The page count stays in
    // the loop: counted after it over the runs written, the blob probe took
    // 742 instructions a commit fewer but 5% more time (the compiler then
    // branched on the join again: 5.6 more mispredictions a commit).
    let mut absorb = |s: u32, e: u32| {
        let join = e >= cs;
        out[k] = Run { start: cs, len: ce - cs };
        let done = usize::from(!join);
        k += done;
        len += done * (ce - cs) as usize;
        cs = if join { cs.min(s) } else { s };
        ce = if join { ce } else { e };
    };
    // The next old run and where it ends (0 when none is left: every page
    // ends above that).
    let mut i = 0;
    let mut old_end = old.first().map_or(0, |r| r.end());
    for &p in pages {
        // The old runs ending above the page come first.
        while old_end > p {
            absorb(old[i].start, old_end);
            i += 1;
            old_end = old.get(i).map_or(0, |r| r.end());
        }
        absorb(p, p + 1);
    }
    for r in &old[i..] {
        absorb(r.start, r.end());
    }
    out[k] = Run { start: cs, len: ce - cs };
    (k + 1, len + (ce - cs) as usize)
}

/// Appends the maximal runs of `pages` (sorted descending; a page listed
/// twice counts once) to `out`, highest first; returns how many pages they
/// hold. One tight loop: a GC record's pages are mostly scattered, a run
/// each (a loop that also counted and indexed as it went took 35
/// instructions a page). [`RunList::merge`] into the empty list does the
/// same work but costs a one-put commit about 80 instructions more (its
/// reclaim fills an empty list every time).
#[inline]
fn runs_of_desc(pages: &[u32], out: &mut Vec<Run>) -> usize {
    out.reserve(pages.len());
    let mut len = 0usize;
    let mut i = 0;
    while let Some(&top) = pages.get(i) {
        // Sorted descending: a page equal to the lowest so far is a
        // duplicate, one below it extends the run.
        let mut low = top;
        i += 1;
        while let Some(&p) = pages.get(i) {
            if low.wrapping_sub(p) > 1 {
                break;
            }
            low = p;
            i += 1;
        }
        len += (top - low) as usize + 1;
        out.push(Run { start: low, len: top - low + 1 });
    }
    len
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::{RunList, INDEXED};

    /// The longest run of a descending list, as the allocator computed it on
    /// a plain list: the index of its lowest page and its length (the
    /// lowest run on ties). Also the reference of gc.rs's policy tests.
    pub(crate) fn longest_in_vec(list: &[u32]) -> (usize, usize) {
        let (mut best_at, mut best_len) = (0, 0);
        let mut len = 0;
        for i in 0..list.len() {
            len = if i > 0 && list[i - 1] == list[i] + 1 { len + 1 } else { 1 };
            if len >= best_len {
                (best_at, best_len) = (i, len);
            }
        }
        (best_at, best_len)
    }

    /// `n` consecutive pages taken from a descending list by the rule of
    /// `take_fit`: the lowest `n` pages of the shortest run of `n` or more
    /// (the lowest such run); the first of them.
    pub(crate) fn take_fit_in_vec(list: &mut Vec<u32>, n: usize) -> Option<u32> {
        if n == 0 {
            return None;
        }
        // (index of the run's lowest page, length), lowest run first.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for i in (0..list.len()).rev() {
            match runs.last_mut() {
                Some((at, len)) if list[*at - (*len - 1)] + 1 == list[i] => *len += 1,
                _ => runs.push((i, 1)),
            }
        }
        let (at, _) = runs.into_iter().filter(|&(_, len)| len >= n).min_by_key(|&(_, len)| len)?;
        let low = list[at];
        // The run ends at `at` (its lowest page, the list descending): its
        // lowest n pages.
        list.drain(at + 1 - n..=at);
        Some(low)
    }

    /// A merge grows its work space as well as the runs, and keeps it: the
    /// capacity reports the biggest buffer, so a write transaction's end
    /// drops an oversized list whole.
    #[test]
    fn capacity_counts_the_merge_work_space() {
        let scattered = |from: u32, n: u32| (0..n).rev().map(|i| from + 2 * i).collect::<Vec<u32>>();
        let mut l = RunList::from_desc(&scattered(20_001, 20));
        l.extend_desc(&scattered(10, 5_000));
        l.check();
        assert_eq!(l.len(), 5_020);
        assert!(l.spare.len() >= 5_020, "the work space has a slot for every old run and page");
        l.runs = Vec::new();
        l.clear();
        assert!(l.capacity() >= 5_020, "capacity {} after a merge of 5,020 pages", l.capacity());
    }

    #[test]
    fn runs_of_a_list() {
        let mut l = RunList::from_desc(&[13, 12, 9, 8, 7, 6, 3]);
        l.check();
        assert_eq!((l.len(), l.to_vec()), (7, vec![13, 12, 9, 8, 7, 6, 3]));
        assert_eq!(l.longest(), Some((6, 4)));
        // The middle of a run: two runs, neither long.
        assert!(l.take(8));
        assert!(!l.take(8));
        l.check();
        assert_eq!(l.longest(), None);
        assert_eq!(l.to_vec(), vec![13, 12, 9, 7, 6, 3]);
        // A page joining two runs, and one already there.
        assert_eq!(l.extend(vec![8, 12]), 1);
        l.check();
        assert_eq!(l.longest(), Some((6, 4)));
        assert_eq!(l.pop_lowest(), Some(3));
        assert_eq!(l.pop_lowest(), Some(6));
        assert_eq!(l.to_vec(), vec![13, 12, 9, 8, 7]);
        // The run of 3 or more that fits best, then the one of 2.
        assert_eq!(l.take_fit(3), Some(7));
        assert_eq!(l.take_fit(3), None);
        assert_eq!(l.take_fit(2), Some(12));
        assert_eq!(l.to_vec(), Vec::<u32>::new());
        l.check();
    }

    #[test]
    fn chunks_take_the_run_that_fits_best() {
        // Runs 27-30 (4), 19-20 (2), 12-14 (3), 8-10 (3), 2-6 (5).
        let mut l = RunList::from_desc(&[30, 29, 28, 27, 20, 19, 14, 13, 12, 10, 9, 8, 6, 5, 4, 3, 2]);
        // No page for no chunk (the list is unchanged).
        assert_eq!(l.take_fit(0), None);
        assert_eq!(l.len(), 17);
        assert_eq!(l.take_fit(2), Some(19));
        assert_eq!(l.take_fit(3), Some(8));
        assert_eq!(l.take_fit(2), Some(12));
        assert_eq!(l.to_vec(), vec![30, 29, 28, 27, 14, 6, 5, 4, 3, 2]);
        // Among runs of 4 pages or more (indexed) too: the lowest of the
        // shortest, and its lowest pages.
        assert_eq!(l.take_fit(4), Some(27));
        assert_eq!(l.take_fit(4), Some(2));
        assert_eq!(l.to_vec(), vec![14, 6]);
        assert_eq!(l.take_fit(2), None);
        l.check();
    }

    #[test]
    fn ties_go_to_the_lowest_run() {
        let mut l = RunList::from_desc(&[30, 29, 28, 27, 20, 10, 9, 8, 7, 3]);
        assert_eq!(l.longest(), Some((7, 4)));
        let mut l = RunList::from_desc(&[30, 29, 28, 27, 26, 10, 9, 8, 7]);
        assert_eq!(l.longest(), Some((26, 5)));
    }

    #[test]
    fn top_pages_touching_an_end() {
        let mut l = RunList::from_desc(&[49, 48, 47, 40]);
        assert_eq!(l.touching(51, 8), 0);
        assert_eq!(l.touching(50, 2), 2);
        assert_eq!(l.touching(50, 8), 3);
        l.drain_top(2);
        assert_eq!(l.to_vec(), vec![47, 40]);
        assert_eq!(l.split_off_low(1), vec![40]);
        assert_eq!(l.to_vec(), vec![47]);
        l.check();
    }

    #[derive(Clone, Debug)]
    enum Op {
        Extend(Vec<u32>),
        /// Stretches of consecutive pages (start, length), as GC records
        /// often hold: a merge joins them to each other and to the runs.
        ExtendRuns(Vec<(u32, u32)>),
        Take(u32),
        PopLowest,
        TakeFit(usize),
        DrainTouching(u32, usize),
        SplitOffLow(usize),
        DrainInto,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => prop::collection::vec(3u32..400, 0..40).prop_map(Op::Extend),
            1 => prop::collection::vec(3u32..400, 0..4).prop_map(Op::Extend),
            2 => prop::collection::vec((3u32..400, 1u32..12), 1..8).prop_map(Op::ExtendRuns),
            4 => (3u32..400).prop_map(Op::Take),
            2 => Just(Op::PopLowest),
            1 => (1usize..8).prop_map(Op::TakeFit),
            1 => (3u32..401, 1usize..8).prop_map(|(e, n)| Op::DrainTouching(e, n)),
            1 => (0usize..300).prop_map(Op::SplitOffLow),
            1 => Just(Op::DrainInto),
        ]
    }

    proptest! {
        /// Random operations on a run list and on the plain descending list
        /// it replaces: the same pages, the same answers, and the runs and
        /// their index stay exact.
        #[test]
        fn same_as_a_plain_list(ops in prop::collection::vec(op(), 1..200)) {
            let mut l = RunList::default();
            let mut v: Vec<u32> = Vec::new();
            for op in ops {
                match op {
                    Op::Extend(pages) => {
                        let set: BTreeSet<u32> = v.iter().copied().chain(pages.iter().copied()).collect();
                        let fresh = pages.iter().collect::<BTreeSet<_>>().len();
                        let dups = v.len() + fresh - set.len();
                        prop_assert_eq!(l.extend(pages.clone()), dups + pages.len() - fresh);
                        v = set.into_iter().rev().collect();
                    }
                    Op::ExtendRuns(runs) => {
                        let pages: Vec<u32> = runs.iter().flat_map(|&(s, n)| s..(s + n).min(400)).collect();
                        let set: BTreeSet<u32> = v.iter().copied().chain(pages.iter().copied()).collect();
                        prop_assert_eq!(l.extend(pages.clone()), v.len() + pages.len() - set.len());
                        v = set.into_iter().rev().collect();
                    }
                    Op::Take(p) => {
                        let at = v.iter().position(|&x| x == p);
                        if let Some(i) = at {
                            v.remove(i);
                        }
                        prop_assert_eq!(l.take(p), at.is_some());
                    }
                    Op::PopLowest => prop_assert_eq!(l.pop_lowest(), v.pop()),
                    Op::TakeFit(n) => prop_assert_eq!(l.take_fit(n), take_fit_in_vec(&mut v, n)),
                    Op::DrainTouching(end, n) => {
                        let k = (0..n.min(v.len())).take_while(|&i| v[i] == end - 1 - i as u32).count();
                        prop_assert_eq!(l.touching(end, n), k);
                        l.drain_top(k);
                        v.drain(..k);
                    }
                    Op::SplitOffLow(keep) => {
                        let rest = if keep < v.len() { v.split_off(keep) } else { Vec::new() };
                        prop_assert_eq!(l.split_off_low(keep), rest);
                    }
                    Op::DrainInto => {
                        let mut out = vec![1, 2];
                        l.drain_into(&mut out);
                        prop_assert_eq!(&out[..2], &[1, 2]);
                        prop_assert_eq!(&out[2..], &v[..]);
                        v.clear();
                    }
                }
                l.check();
                prop_assert_eq!(l.len(), v.len());
                prop_assert_eq!(l.to_vec(), v.clone());
                prop_assert!(v.iter().all(|&p| l.contains(p)));
                let (at, len) = longest_in_vec(&v);
                let want = (len >= INDEXED as usize).then(|| (v[at], len));
                prop_assert_eq!(l.longest(), want);
            }
        }
    }
}
