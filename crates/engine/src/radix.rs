//! Radix sorts for the page-number lists of a commit (the pages it writes,
//! the pages it retires): a few hundred to thousands of distinct numbers,
//! sorted once per commit. Comparison sorts spent 130,000 instructions a
//! commit on them in the benchmark's random puts (callgrind); a byte-wise
//! radix sort over only the bytes that differ takes two passes for a file
//! under 65,536 pages.

/// Lists shorter than this are sorted by comparison (the counting arrays
/// would cost more than they save).
const MIN_RADIX: usize = 64;

/// Sorts `v` by `key`, ascending and stable: an LSD radix sort over the
/// bytes of the keys that are not the same in every element. `scratch` is
/// the second buffer the passes alternate with (its contents are lost; the
/// caller keeps it between sorts, so a commit's sorts allocate nothing
/// once it has grown: a new one each sort was the steady state's only
/// allocation in transactions that write a few hundred pages).
pub(crate) fn sort_by_key<T: Copy + Default>(v: &mut Vec<T>, scratch: &mut Vec<T>, key: impl Fn(T) -> u32) {
    if v.len() < MIN_RADIX {
        v.sort_by_key(|&x| key(x));
        return;
    }
    let k0 = key(v[0]);
    let varies = v.iter().fold(0u32, |acc, &x| acc | (key(x) ^ k0));
    scratch.clear();
    scratch.resize(v.len(), T::default());
    let (mut from, mut to) = (&mut *v, &mut *scratch);
    let mut passes = 0;
    for shift in [0, 8, 16, 24] {
        if (varies >> shift) & 0xFF == 0 {
            continue;
        }
        let digit = |x: T| (key(x) >> shift) as usize & 0xFF;
        let mut start = [0usize; 256];
        for &x in from.iter() {
            start[digit(x)] += 1;
        }
        let mut sum = 0;
        for s in start.iter_mut() {
            (*s, sum) = (sum, sum + *s);
        }
        for &x in from.iter() {
            let d = digit(x);
            to[start[d]] = x;
            start[d] += 1;
        }
        std::mem::swap(&mut from, &mut to);
        passes += 1;
    }
    if passes % 2 == 1 {
        // The sorted elements are in `scratch`: the buffers trade places.
        std::mem::swap(v, scratch);
    }
}

/// Sorts page numbers in descending order (the order of the GC's lists),
/// with `scratch` as in [`sort_by_key`]. (The test for a list with nothing
/// to sort is inline: the GC update sorts its loose pages, usually none,
/// each commit.)
#[inline]
pub(crate) fn sort_desc(pages: &mut Vec<u32>, scratch: &mut Vec<u32>) {
    if pages.len() > 1 {
        sort_by_key(pages, scratch, |p| !p);
    }
}

/// Merges `add`, in descending order, into `pages`, in descending order:
/// `pages` then holds both, descending. Linear, in place from the back (the
/// commit folds a few reclaimed pages into its retired ones; sorting both
/// again cost 25 instructions a page).
#[inline]
pub(crate) fn merge_desc(pages: &mut Vec<u32>, add: &[u32]) {
    if !add.is_empty() {
        merge_desc_some(pages, add);
    }
}

#[inline(never)]
fn merge_desc_some(pages: &mut Vec<u32>, add: &[u32]) {
    debug_assert!(pages.is_sorted_by(|a, b| a >= b) && add.is_sorted_by(|a, b| a >= b));
    let mut i = pages.len();
    pages.extend_from_slice(add);
    let mut j = add.len();
    let mut k = pages.len();
    // Fill from the back with the smaller of the two tails; once `add` is
    // used up, what is left of `pages` is already in place.
    while j > 0 {
        k -= 1;
        if i > 0 && pages[i - 1] < add[j - 1] {
            i -= 1;
            pages[k] = pages[i];
        } else {
            j -= 1;
            pages[k] = add[j];
        }
    }
}

#[cfg(test)]
mod tests {
    /// xorshift64 numbers.
    fn numbers(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn sorts_like_a_comparison_sort() {
        let mut next = numbers(0x9E37_79B9_7F4A_7C15);
        // Scratch buffers kept from sort to sort, holding other elements:
        // one pass (below 256), two and four passes.
        let (mut scratch, mut scratch32) = (vec![(7, 7); 5000], vec![9; 17]);
        for (n, below) in [(0, 1), (5, 100), (63, 1000), (64, 200), (820, 14_200), (3000, u64::from(u32::MAX) + 1)] {
            // Pairs (page, position): stability shows in the positions.
            let mut v: Vec<(u32, u32)> = (0..n).map(|i| ((next() % below) as u32, i)).collect();
            let mut want = v.clone();
            want.sort_by_key(|x| x.0);
            super::sort_by_key(&mut v, &mut scratch, |x| x.0);
            assert_eq!(v, want, "{n} keys below {below}");
            let mut pages: Vec<u32> = v.iter().map(|x| x.0).collect();
            pages.reverse();
            super::sort_desc(&mut pages, &mut scratch32);
            assert!(pages.is_sorted_by(|a, b| a >= b), "{n} pages below {below}: not descending");
            assert_eq!(pages.len(), n as usize);
        }
    }

    #[test]
    fn merges_like_a_sort() {
        let mut next = numbers(0x2545_F491_4F6C_DD1D);
        for (a, b, below) in [(0, 0, 10), (0, 5, 10), (5, 0, 10), (3, 17, 40), (20, 4, 1000), (64, 64, 50)] {
            let mut x: Vec<u32> = (0..a).map(|_| (next() % below) as u32).collect();
            let mut y: Vec<u32> = (0..b).map(|_| (next() % below) as u32).collect();
            x.sort_by(|p, q| q.cmp(p));
            y.sort_by(|p, q| q.cmp(p));
            let mut want = [x.clone(), y.clone()].concat();
            want.sort_by(|p, q| q.cmp(p));
            super::merge_desc(&mut x, &y);
            assert_eq!(x, want, "{a} and {b} below {below}");
        }
    }
}
