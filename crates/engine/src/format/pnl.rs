//! Page-number lists: the value of a GC record (the key is the 8-byte txnid
//! that freed the pages).
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | `n`: number of page numbers |
//! | 4 | 4 × n | page numbers, descending (libmdbx keeps them sorted so) |
//! | 4 + 4n | rest | padding (a record may be longer than its list; zeros when written by rdbx) |
//!
//! One codec for every reader of GC records: allocation (strict), the
//! checker (reports each defect), statistics and page inspection (lenient:
//! a count longer than the value is cut to what the value holds).

use super::u32_at;

/// A GC record's value, checked only for its shape (at least the count, a
/// whole number of 4-byte words).
#[derive(Clone, Copy, Debug)]
pub struct Pnl<'a> {
    bytes: &'a [u8],
}

impl<'a> Pnl<'a> {
    /// `None` if `v` is shorter than the count or not a whole number of words.
    pub fn new(v: &'a [u8]) -> Option<Pnl<'a>> {
        (v.len() >= 4 && v.len().is_multiple_of(4)).then_some(Pnl { bytes: v })
    }

    /// The count as stored (may exceed [`Pnl::capacity`] on a damaged record).
    pub fn declared_len(&self) -> usize {
        u32_at(self.bytes, 0) as usize
    }

    /// How many page numbers the value has room for.
    pub fn capacity(&self) -> usize {
        self.bytes.len() / 4 - 1
    }

    /// The page numbers present: the declared count, cut to the capacity.
    pub fn len(&self) -> usize {
        self.declared_len().min(self.capacity())
    }

    /// Whether the list holds no page number.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`th page number (`i < len()`).
    pub fn get(&self, i: usize) -> u32 {
        u32_at(self.bytes, 4 + 4 * i)
    }

    /// The page numbers present, in stored order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + 'a {
        let p = *self;
        (0..p.len()).map(move |i| p.get(i))
    }

    /// The list, checked as allocation needs it: the count within the
    /// value, every page number past the metas and below `limit`, strictly
    /// descending. The error names the defect.
    pub fn strict(&self, limit: u32) -> Result<Vec<u32>, &'static str> {
        let mut out = Vec::with_capacity(self.len());
        self.strict_into(limit, &mut out)?;
        Ok(out)
    }

    /// [`Pnl::strict`], appending the list to `out` (on an error, `out` is
    /// as it was).
    pub fn strict_into(&self, limit: u32, out: &mut Vec<u32>) -> Result<(), &'static str> {
        if self.declared_len() > self.capacity() {
            return Err("GC record is shorter than its count");
        }
        // Copied in one pass, then checked in one: strictly descending, so
        // the first page below `limit` and the last past the metas put every
        // page in range. (A check and a push per page took 21 instructions a
        // page; a reclaimed record may list a thousand.)
        let start = out.len();
        let words = &self.bytes[4..4 + 4 * self.len()];
        out.extend(words.chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes"))));
        let list = &out[start..];
        let in_range = match (list.first(), list.last()) {
            (Some(&first), Some(&last)) => first < limit && last >= super::NUM_METAS,
            _ => true,
        };
        // Long lists without an early exit, so the comparison is
        // vectorised (a damaged record is rare, a record of hundreds of
        // pages common); short ones, as most are, without its set-up.
        let descending = if list.len() < 64 {
            list.windows(2).all(|w| w[0] > w[1])
        } else {
            list.iter().zip(list.iter().skip(1)).fold(true, |ok, (&a, &b)| ok & (a > b))
        };
        if !in_range || !descending {
            out.truncate(start);
            return Err("GC record lists a bad page number");
        }
        Ok(())
    }
}

/// The value of a GC record listing `pages` (already descending), padded
/// with zeros to `len` bytes.
pub fn encode(pages: &[u32], len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len.max(4 + 4 * pages.len())];
    encode_into(pages, &mut v);
    v
}

/// Writes the value of a GC record listing `pages` (already descending)
/// into `out`, zero-padded to its length. `out` holds at least the count
/// and the pages (`4 + 4·pages.len()` bytes; the caller sized it so).
pub fn encode_into(pages: &[u32], out: &mut [u8]) {
    let (count, slots) = out.split_at_mut(4);
    count.copy_from_slice(&(pages.len() as u32).to_le_bytes());
    let (used, pad) = slots.split_at_mut(4 * pages.len());
    for (slot, p) in used.chunks_exact_mut(4).zip(pages) {
        slot.copy_from_slice(&p.to_le_bytes());
    }
    pad.fill(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let v = encode(&[9, 7, 4], 24);
        assert_eq!(v.len(), 24);
        let p = Pnl::new(&v).unwrap();
        assert_eq!((p.declared_len(), p.capacity(), p.len()), (3, 5, 3));
        assert_eq!(p.iter().collect::<Vec<_>>(), vec![9, 7, 4]);
        assert_eq!(p.strict(10), Ok(vec![9, 7, 4]));
        assert_eq!(p.strict(9), Err("GC record lists a bad page number"), "page 9 past the limit");
        let ascending = encode(&[4, 7], 12);
        assert!(Pnl::new(&ascending).unwrap().strict(10).is_err());
        let metas = encode(&[5, 2], 12);
        assert!(Pnl::new(&metas).unwrap().strict(10).is_err());
        let mut long = encode(&[9, 7], 12);
        long[0] = 5;
        let p = Pnl::new(&long).unwrap();
        assert_eq!((p.declared_len(), p.len()), (5, 2));
        assert_eq!(p.strict(10), Err("GC record is shorter than its count"));
        assert!(Pnl::new(&[1, 0, 0]).is_none());
        assert!(Pnl::new(&[]).is_none());
    }
}
