//! Content checksums of tables: the quick answer to "is my copy (or my
//! migration) identical?" (as `reth db checksum` and sqlite3's `.sha3sum`).
//!
//! Definition (stable, documented in `crates/tools/README.md`):
//!
//! * **table digest** = SHA-256 over, for every record of the table in the
//!   table's order (key order; the values of a multimap key in value order),
//!   `u64le(len(key)) ‖ key ‖ u64le(len(value)) ‖ value`. Only the records
//!   count: the page layout (page numbers, fill, tree depth, large-value
//!   chunks, sub-pages vs nested trees), the GC and the txnids are not
//!   covered, so a compacted copy has the same digests. The table's flags and
//!   sequence are reported next to the digest but not hashed. In the main
//!   table the records that describe named tables are left out (they hold
//!   page numbers); its plain records are covered.
//! * **database digest** = SHA-256 over, for every table in the order
//!   reported (the main table first, then the named tables in main-table order: by name),
//!   `u64le(len(name)) ‖ name ‖ u64le(records) ‖ table digest`, where the
//!   main table's name is empty.
//!
//! A key range (`from` included, `to` excluded) restricts the records of
//! each table digested.
//!
//! SHA-256 is implemented here (FIPS 180-4; no dependency): a digest can be
//! recomputed with any SHA-256 tool from the definition above.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::flags::DbFlags;
use crate::iter::ReadTxn;
use crate::txn::Db;

/// SHA-256 (FIPS 180-4), incremental.
#[derive(Clone)]
pub struct Sha256 {
    h: [u32; 8],
    buf: [u8; 64],
    fill: usize,
    len: u64,
}

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
];

impl Default for Sha256 {
    fn default() -> Self {
        Self::new()
    }
}

impl Sha256 {
    /// A fresh hash state.
    pub fn new() -> Sha256 {
        Sha256 {
            h: [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19],
            buf: [0; 64],
            fill: 0,
            len: 0,
        }
    }

    fn block(h: &mut [u32; 8], b: &[u8]) {
        let mut w = [0u32; 64];
        for (i, c) in b.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let [mut a, mut b_, mut c, mut d, mut e, mut f, mut g, mut hh] = *h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh.wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b_) ^ (a & c) ^ (b_ & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b_;
            b_ = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b_, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }

    /// Adds bytes.
    pub fn update(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.fill > 0 {
            let n = (64 - self.fill).min(data.len());
            self.buf[self.fill..self.fill + n].copy_from_slice(&data[..n]);
            self.fill += n;
            data = &data[n..];
            if self.fill < 64 {
                return;
            }
            let buf = self.buf;
            Self::block(&mut self.h, &buf);
            self.fill = 0;
        }
        let mut blocks = data.chunks_exact(64);
        for b in &mut blocks {
            Self::block(&mut self.h, b);
        }
        let rest = blocks.remainder();
        self.buf[..rest.len()].copy_from_slice(rest);
        self.fill = rest.len();
    }

    /// The 32-byte digest.
    pub fn finish(mut self) -> [u8; 32] {
        let bits = self.len.wrapping_mul(8);
        self.update(&[0x80]);
        while self.fill != 56 {
            self.update(&[0]);
        }
        self.update(&bits.to_be_bytes());
        let mut out = [0u8; 32];
        for (o, v) in out.chunks_exact_mut(4).zip(self.h) {
            o.copy_from_slice(&v.to_be_bytes());
        }
        out
    }
}

/// Lower-case hex of bytes.
pub fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The checksum of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableChecksum {
    /// `None`: the main table.
    pub name: Option<Vec<u8>>,
    /// The table's flags (reported, not hashed).
    pub flags: DbFlags,
    /// Records digested.
    pub records: u64,
    /// Key and value bytes digested (without the length prefixes).
    pub bytes: u64,
    /// SHA-256 of the records (see the module docs).
    pub digest: [u8; 32],
}

impl TableChecksum {
    /// The digest in hex.
    pub fn hex(&self) -> String {
        to_hex(&self.digest)
    }
}

/// The checksums of several tables and the database digest over them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checksums {
    /// Snapshot the checksums were taken from.
    pub txnid: u64,
    /// Per table, main table first, then the named tables in main-table order.
    pub tables: Vec<TableChecksum>,
    /// SHA-256 over the table digests (see the module docs).
    pub digest: [u8; 32],
}

impl Checksums {
    /// The database digest in hex.
    pub fn hex(&self) -> String {
        to_hex(&self.digest)
    }
}

/// What to checksum.
#[derive(Debug, Clone, Default)]
pub struct ChecksumOptions {
    /// Only these tables (`None` inside: the main table); empty: every table.
    pub tables: Vec<Option<Vec<u8>>>,
    /// First key included.
    pub from: Option<Vec<u8>>,
    /// First key excluded.
    pub to: Option<Vec<u8>>,
    /// Polled every few thousand records: set, the work stops with an
    /// `Interrupted` I/O error.
    pub interrupt: Option<std::sync::Arc<AtomicBool>>,
}

pub(crate) fn interrupted() -> Error {
    Error::Io(std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted"))
}

pub(crate) fn poll(flag: Option<&AtomicBool>, n: u64) -> Result<()> {
    if n.is_multiple_of(4096) && flag.is_some_and(|f| f.load(Ordering::Relaxed)) {
        return Err(interrupted());
    }
    Ok(())
}

/// A callback receiving one record.
pub(crate) type RecordFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// The records of a table in order, optionally within `[from, to)`, each
/// passed to `f`; the main table's table records are skipped.
pub(crate) fn for_each_record(
    txn: &dyn ReadTxn,
    db: Db,
    from: Option<&[u8]>,
    to: Option<&[u8]>,
    f: &mut RecordFn<'_>,
) -> Result<()> {
    let skip: std::collections::HashSet<Vec<u8>> =
        if db == Db::MAIN { txn.table_names()?.into_iter().collect() } else { Default::default() };
    let mut c = txn.cursor(db)?;
    let mut rec = match from {
        Some(k) => c.set_range(k)?,
        None => c.first()?,
    };
    while let Some((k, v)) = rec {
        if let Some(t) = to {
            if c.key_order(k, t) != std::cmp::Ordering::Less {
                break;
            }
        }
        if skip.is_empty() || !skip.contains(k) {
            f(k, v)?;
        }
        rec = c.next()?;
    }
    Ok(())
}

/// The names of the tables of a snapshot: the main table, then the named
/// tables in name (main-table) order.
pub(crate) fn all_tables(txn: &dyn ReadTxn) -> Result<Vec<Option<Vec<u8>>>> {
    let mut v = vec![None];
    v.extend(txn.table_names()?.into_iter().map(Some));
    Ok(v)
}

/// The checksum of the table `name` in `txn`.
pub fn table_checksum(txn: &dyn ReadTxn, name: Option<&[u8]>, opts: &ChecksumOptions) -> Result<TableChecksum> {
    let db = txn.open_db_bytes(name)?;
    let flags = txn.db_flags(db)?;
    let mut h = Sha256::new();
    let (mut records, mut bytes) = (0u64, 0u64);
    let flag = opts.interrupt.as_deref();
    for_each_record(txn, db, opts.from.as_deref(), opts.to.as_deref(), &mut |k, v| {
        h.update(&(k.len() as u64).to_le_bytes());
        h.update(k);
        h.update(&(v.len() as u64).to_le_bytes());
        h.update(v);
        records += 1;
        bytes += (k.len() + v.len()) as u64;
        poll(flag, records)
    })?;
    Ok(TableChecksum { name: name.map(<[u8]>::to_vec), flags, records, bytes, digest: h.finish() })
}

/// The checksums of the tables `opts` names (every table when it names
/// none) and the database digest over them.
pub fn checksums(txn: &dyn ReadTxn, opts: &ChecksumOptions) -> Result<Checksums> {
    let names = if opts.tables.is_empty() { all_tables(txn)? } else { opts.tables.clone() };
    let mut tables = Vec::with_capacity(names.len());
    let mut h = Sha256::new();
    for n in &names {
        let t = table_checksum(txn, n.as_deref(), opts)?;
        let name = n.as_deref().unwrap_or(b"");
        h.update(&(name.len() as u64).to_le_bytes());
        h.update(name);
        h.update(&t.records.to_le_bytes());
        h.update(&t.digest);
        tables.push(t);
    }
    Ok(Checksums { txnid: txn.id(), tables, digest: h.finish() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(b: &[u8]) -> String {
        let mut h = Sha256::new();
        h.update(b);
        to_hex(&h.finish())
    }

    #[test]
    fn sha256_test_vectors() {
        assert_eq!(sha(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(sha(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            sha(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        // A million 'a', fed in uneven pieces (the buffering across updates).
        let mut h = Sha256::new();
        let chunk = vec![b'a'; 997];
        let mut left = 1_000_000usize;
        while left > 0 {
            let n = left.min(chunk.len());
            h.update(&chunk[..n]);
            left -= n;
        }
        assert_eq!(to_hex(&h.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    }
}
