//! A map from page numbers to values, indexed by the page number itself:
//! a write transaction's dirty pages (`pool::Dirty`).
//!
//! The entries live in one vector; an index of blocks of [`BLOCK`] page
//! numbers gives each page's slot in it (0: absent). A look-up is two
//! array reads (the block, the slot) and no hashing or probing, an insert
//! a push; a removal moves the last entry into the hole (its slot is fixed
//! up), so iteration is in insertion order until something is removed.
//!
//! Memory: the table of blocks has a pointer per 256 pages of the file (4
//! MiB for a file of 512 GiB at 4 KiB pages; it reaches the highest page
//! a transaction dirtied and is kept); a block (1 KiB) exists for each range of 256
//! pages the transaction dirtied, at most 1 KiB per dirty page (a quarter
//! of a 4 KiB page; with the smallest pages, 256 bytes, dirty pages each
//! in a range of their own would take four times their size). An emptied map keeps its blocks where they are, so
//! steady small transactions, which dirty the same ranges, allocate nothing;
//! when more than [`KEEP_BLOCKS`] are in place ([`PageMap::shed_blocks`],
//! at the end of each transaction) they go to a pool of that many, which
//! later blocks come from, so transactions dirtying scattered pages of a
//! big file do not allocate one each time either.
//!
//! Why not a hash map: a one-put commit looks up, inserts and drains a
//! dozen dirty pages, and a CRUD transaction several dozen. Replacing the
//! standard hash map (with a one-multiply hasher; its insert alone was 81
//! instructions), with a few inlining changes around it, cut 4% of a
//! one-put commit's instructions and 5 to 6% of a CRUD transaction's
//! (docs/status.md).

use std::ops::Index;

/// log2 of the page numbers a block of the index covers.
const BLOCK_BITS: u32 = 8;
/// Page numbers a block of the index covers (1 KiB of slots).
const BLOCK: usize = 1 << BLOCK_BITS;

/// Blocks an emptied map keeps in place, and the most it pools.
pub(crate) const KEEP_BLOCKS: usize = 2048;

/// A map from page numbers to `V` (see the module documentation).
#[derive(Debug)]
pub(crate) struct PageMap<V> {
    /// The entries, in insertion order but for removals.
    entries: Vec<(u32, V)>,
    /// Per block of page numbers, each page's entry index + 1 (0: none).
    blocks: Vec<Option<Box<[u32; BLOCK]>>>,
    /// Where `blocks` has one.
    used: Vec<u32>,
    /// Emptied blocks, for reuse (boxed: they move to and from `blocks`
    /// as pointers, not as 1 KiB copies).
    #[allow(clippy::vec_box)]
    pool: Vec<Box<[u32; BLOCK]>>,
}

impl<V> Default for PageMap<V> {
    fn default() -> Self {
        PageMap { entries: Vec::new(), blocks: Vec::new(), used: Vec::new(), pool: Vec::new() }
    }
}

impl<V> PageMap<V> {
    /// The slot of `p` (entry index + 1; 0: absent).
    #[inline(always)]
    fn slot(&self, p: u32) -> usize {
        match self.blocks.get((p >> BLOCK_BITS) as usize) {
            Some(Some(b)) => b[p as usize & (BLOCK - 1)] as usize,
            _ => 0,
        }
    }

    /// Sets the slot of `p`, whose block exists (the page was inserted).
    #[inline]
    fn set_slot(&mut self, p: u32, slot: usize) {
        if let Some(Some(b)) = self.blocks.get_mut((p >> BLOCK_BITS) as usize) {
            b[p as usize & (BLOCK - 1)] = slot as u32;
        }
    }

    /// [`Self::insert`] of a page whose block is not in place yet.
    #[cold]
    #[inline(never)]
    fn insert_in_new_block(&mut self, p: u32, v: V) -> Option<V> {
        let bi = (p >> BLOCK_BITS) as usize;
        if self.blocks.len() <= bi {
            self.blocks.resize_with(bi + 1, || None);
        }
        // Pooled blocks are all zeros (emptied before they were pooled).
        self.blocks[bi] = Some(self.pool.pop().unwrap_or_else(|| Box::new([0; BLOCK])));
        self.used.push(bi as u32);
        self.insert(p, v)
    }

    /// The value of page `p`.
    #[inline(always)]
    pub(crate) fn get(&self, p: &u32) -> Option<&V> {
        // Slot 0 wraps to an index past the end: one bounds check for both.
        self.entries.get(self.slot(*p).wrapping_sub(1)).map(|e| &e.1)
    }

    /// The value of page `p`, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, p: &u32) -> Option<&mut V> {
        let i = self.slot(*p).wrapping_sub(1);
        self.entries.get_mut(i).map(|e| &mut e.1)
    }

    /// Whether page `p` has a value.
    #[inline(always)]
    pub(crate) fn contains_key(&self, p: &u32) -> bool {
        self.slot(*p) != 0
    }

    /// Sets the value of page `p`; returns the one it replaces.
    #[inline(always)]
    pub(crate) fn insert(&mut self, p: u32, v: V) -> Option<V> {
        let Some(Some(b)) = self.blocks.get_mut((p >> BLOCK_BITS) as usize) else {
            return self.insert_in_new_block(p, v);
        };
        let slot = &mut b[p as usize & (BLOCK - 1)];
        if *slot == 0 {
            *slot = u32::try_from(self.entries.len() + 1).expect("fewer than 2^32 entries");
            self.entries.push((p, v));
            return None;
        }
        let i = *slot as usize - 1;
        Some(std::mem::replace(&mut self.entries[i].1, v))
    }

    /// Removes page `p`; returns its value.
    #[inline]
    pub(crate) fn remove(&mut self, p: &u32) -> Option<V> {
        let slot = self.slot(*p);
        if slot == 0 {
            return None;
        }
        self.set_slot(*p, 0);
        let (_, v) = self.entries.swap_remove(slot - 1);
        if let Some(&(moved, _)) = self.entries.get(slot - 1) {
            self.set_slot(moved, slot);
        }
        Some(v)
    }

    /// Entries.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries (insertion order but for removals).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&u32, &V)> {
        self.entries.iter().map(|(p, v)| (p, v))
    }

    /// The page numbers.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> impl Iterator<Item = &u32> {
        self.entries.iter().map(|e| &e.0)
    }

    /// The values.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|e| &e.1)
    }

    /// Takes every entry out; the map keeps its memory.
    pub(crate) fn drain(&mut self) -> std::vec::Drain<'_, (u32, V)> {
        self.clear_slots();
        self.entries.drain(..)
    }

    /// Empties the map; it keeps its memory.
    #[cfg(test)]
    pub(crate) fn clear(&mut self) {
        self.clear_slots();
        self.entries.clear();
    }

    fn clear_slots(&mut self) {
        for i in 0..self.entries.len() {
            let p = self.entries[i].0;
            self.set_slot(p, 0);
        }
    }

    /// Entries it holds without growing its vector.
    pub(crate) fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Room for `n` more entries.
    #[cfg(test)]
    pub(crate) fn reserve(&mut self, n: usize) {
        self.entries.reserve(n);
    }

    /// Shrinks the vector of entries to about `n` (at least its length).
    pub(crate) fn shrink_to(&mut self, n: usize) {
        self.entries.shrink_to(n);
    }

    /// Moves the blocks in place to the pool (up to [`KEEP_BLOCKS`]; the
    /// others are freed) if there are more than [`KEEP_BLOCKS`]. For an
    /// empty map, at the end of a transaction.
    pub(crate) fn shed_blocks(&mut self) {
        debug_assert!(self.entries.is_empty());
        if self.used.len() <= KEEP_BLOCKS {
            return;
        }
        for bi in self.used.drain(..) {
            if let Some(b) = self.blocks[bi as usize].take() {
                if self.pool.len() < KEEP_BLOCKS {
                    self.pool.push(b);
                }
            }
        }
    }

    /// Blocks in place and pooled.
    #[cfg(test)]
    pub(crate) fn blocks(&self) -> (usize, usize) {
        (self.used.len(), self.pool.len())
    }
}

impl<'a, V> IntoIterator for &'a PageMap<V> {
    type Item = (&'a u32, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (u32, V)>, fn(&'a (u32, V)) -> (&'a u32, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(p, v)| (p, v))
    }
}

impl<V> Index<&u32> for PageMap<V> {
    type Output = V;

    fn index(&self, p: &u32) -> &V {
        self.get(p).expect("page in the map")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::{PageMap, BLOCK, KEEP_BLOCKS};

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u32, u64),
        Remove(u32),
        Clear,
        Drain,
    }

    /// Page numbers from a few blocks (so that pages collide, repeat and
    /// share blocks) and, now and then, far away.
    fn pgno() -> impl Strategy<Value = u32> {
        prop_oneof![
            8 => 0..(3 * BLOCK as u32),
            1 => any::<u32>().prop_map(|p| p >> 8),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            10 => (pgno(), any::<u64>()).prop_map(|(p, v)| Op::Insert(p, v)),
            6 => pgno().prop_map(Op::Remove),
            1 => Just(Op::Clear),
            1 => Just(Op::Drain),
        ]
    }

    proptest! {
        /// Every operation agrees with a hash map, and every page's look-up
        /// with the map's contents.
        #[test]
        fn agrees_with_a_hash_map(ops in proptest::collection::vec(op(), 1..400)) {
            let mut m = PageMap::default();
            let mut model: HashMap<u32, u64> = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(p, v) => prop_assert_eq!(m.insert(p, v), model.insert(p, v)),
                    Op::Remove(p) => prop_assert_eq!(m.remove(&p), model.remove(&p)),
                    Op::Clear => {
                        m.clear();
                        model.clear();
                    }
                    Op::Drain => {
                        let mut got: Vec<(u32, u64)> = m.drain().collect();
                        let mut want: Vec<(u32, u64)> = model.drain().collect();
                        got.sort_unstable();
                        want.sort_unstable();
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(m.len(), model.len());
                let mut got: Vec<(u32, u64)> = m.iter().map(|(&p, &v)| (p, v)).collect();
                let mut want: Vec<(u32, u64)> = model.iter().map(|(&p, &v)| (p, v)).collect();
                got.sort_unstable();
                want.sort_unstable();
                prop_assert_eq!(got, want);
                for (&p, &v) in &model {
                    prop_assert_eq!(m.get(&p), Some(&v));
                    prop_assert!(m.contains_key(&p));
                }
            }
            for p in 0..(3 * BLOCK as u32) {
                prop_assert_eq!(m.get(&p), model.get(&p));
            }
        }
    }

    #[test]
    fn insertion_order_and_removal_fix_up() {
        let mut m = PageMap::default();
        for p in [5u32, 700, 6, 100_000] {
            assert_eq!(m.insert(p, p * 10), None);
        }
        assert_eq!(m.insert(6, 61), Some(60), "a value replaced");
        assert_eq!(m.iter().map(|(&p, _)| p).collect::<Vec<_>>(), [5, 700, 6, 100_000]);
        // The last entry moves into the hole and is still found.
        assert_eq!(m.remove(&700), Some(7000));
        assert_eq!(m.iter().map(|(&p, _)| p).collect::<Vec<_>>(), [5, 100_000, 6]);
        assert_eq!(m[&100_000], 1_000_000);
        assert_eq!(m.get(&700), None);
        assert_eq!(m.remove(&700), None);
        *m.get_mut(&5).unwrap() = 1;
        assert_eq!(m[&5], 1);
        // Emptied, it keeps its blocks and finds nothing.
        let kept = m.blocks();
        m.clear();
        assert!(m.is_empty() && m.get(&5).is_none() && m.get(&6).is_none());
        assert_eq!(m.blocks(), kept);
        assert_eq!(m.insert(5, 2), None);
        assert_eq!(m[&5], 2);
    }

    #[test]
    fn sheds_blocks_past_the_limit_into_a_bounded_pool() {
        let mut m = PageMap::default();
        // One page in each of more blocks than are kept in place.
        let n = (KEEP_BLOCKS + 10) as u32;
        for i in 0..n {
            m.insert(i * BLOCK as u32 + 7, i);
        }
        m.clear();
        m.shed_blocks();
        assert_eq!(m.blocks(), (0, KEEP_BLOCKS), "all out of place, the pool bounded");
        // The next transaction takes pooled blocks (zeroed), and finds
        // exactly what it inserted.
        for i in 0..n {
            assert_eq!(m.get(&(i * BLOCK as u32 + 7)), None);
        }
        for i in 0..10u32 {
            m.insert(i * 3 * BLOCK as u32 + 1, i);
        }
        assert_eq!(m.blocks(), (10, KEEP_BLOCKS - 10));
        for i in 0..10u32 {
            assert_eq!(m[&(i * 3 * BLOCK as u32 + 1)], i);
            assert_eq!(m.get(&(i * 3 * BLOCK as u32 + 7)), None);
        }
        m.clear();
        m.shed_blocks();
        assert_eq!(m.blocks(), (10, KEEP_BLOCKS - 10), "few in place: they stay");
    }
}
