//! The on-disk structures of the MDBX files, parsed and built from byte
//! slices: the data file (format v3; docs/format.md) and, in [`lock`], the
//! layout of the lock file (formats v6 and v7; docs/lock-format.md). Pure
//! code: no I/O and no `unsafe`. All integers are little-endian and read
//! unaligned. The byte tables are on each type.

pub mod limits;
pub mod lock;
pub mod meta;
pub mod node;
pub mod page;
pub mod pnl;
pub mod tree;

/// Number of meta pages (pages 0, 1, 2).
pub const NUM_METAS: u32 = 3;
/// First page number that is not a meta page.
pub const MIN_PAGENO: u32 = 3;
/// Largest valid page number.
pub const MAX_PAGENO: u32 = 0x7FFF_FFFF;
/// "No page": the root of an empty tree.
pub const P_INVALID: u32 = 0xFFFF_FFFF;
/// Largest usable transaction id.
pub const MAX_TXNID: u64 = 0xFFFF_FFFE_FFFF_FFFF;
/// Smallest and largest page size.
pub const MIN_PAGESIZE: usize = 256;
/// Largest page size.
pub const MAX_PAGESIZE: usize = 65536;
/// Size of the page header.
pub const PAGEHDRSZ: usize = 20;
/// Size of a node header.
pub const NODESIZE: usize = 8;
/// The 56-bit MDBX magic.
pub const MAGIC: u64 = 0x59659D_BDEF4C11;
/// Data file format version.
pub const DATA_VERSION: u8 = 3;
/// `(MAGIC << 8) + 3`: stored in every meta page.
pub const DATA_MAGIC: u64 = (MAGIC << 8) + DATA_VERSION as u64;
/// Legacy magics accepted on read.
pub const DATA_MAGIC_LEGACY_COMPAT: u64 = (MAGIC << 8) + 2;
/// Legacy development magic accepted on read.
pub const DATA_MAGIC_LEGACY_DEVEL: u64 = (MAGIC << 8) + 255;

#[inline]
pub(crate) fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes(b[off..off + 2].try_into().unwrap())
}
#[inline]
pub(crate) fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
#[inline]
pub(crate) fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}
#[inline]
pub(crate) fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Rounds up to an even number.
#[inline]
pub const fn even_ceil(x: usize) -> usize {
    (x + 1) & !1
}
