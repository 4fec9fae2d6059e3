//! The boot id stored in meta pages (docs/format.md, "Boot id") and random data-file ids.
//!
//! libmdbx reads `/proc/sys/kernel/random/boot_id` (only when it really is on
//! procfs), a UUID text such as `c9eaa69d-6bd5-4a2e-83f0-ce0c5c44791c`, and
//! feeds every hex digit in order into a 128-bit accumulator shifted left by 4
//! bits per digit. With `x` = low 64 bits and `y` = high 64 bits, the 16 stored
//! bytes are:
//!
//! | off | size | value |
//! |---|---|---|
//! | 0 | 8 | `x` (u64 LE) — the last 16 hex digits |
//! | 8 | 8 | `y` (u64 LE) — the first 16 hex digits |
//!
//! Example: the id above gives `1c79445c0ccef083 2e4ad56b9da6eac9`. All zeros
//! means "unknown" and never matches. The data-file id (`dxbid`) is produced the
//! same way from `/proc/sys/kernel/random/uuid`.

use std::fs::File;
use std::io::Read;
use std::sync::OnceLock;

/// A 16-byte boot id / dxbid in on-disk form (`x` LE then `y` LE).
pub(crate) type Id128 = [u8; 16];

/// Folds every hex digit of `text` (other characters are skipped) into a
/// 128-bit accumulator and returns its on-disk form. `None` if `text` has no
/// hex digit or the result is zero.
pub(crate) fn parse_uuid_text(text: &str) -> Option<Id128> {
    let mut acc: u128 = 0;
    let mut digits = 0usize;
    for c in text.chars() {
        if let Some(d) = c.to_digit(16) {
            acc = (acc << 4) | u128::from(d);
            digits += 1;
        }
    }
    if digits == 0 || acc == 0 {
        return None;
    }
    // to_le_bytes of a u128 is exactly the low u64 LE followed by the high u64 LE.
    Some(acc.to_le_bytes())
}

fn read_procfs_uuid(path: &str) -> Option<Id128> {
    let mut f = File::open(path).ok()?;
    if !crate::os::is_procfs(&f) {
        return None;
    }
    let mut s = String::new();
    f.by_ref().take(256).read_to_string(&mut s).ok()?;
    parse_uuid_text(&s)
}

/// This boot's id (cached); all zeros when it cannot be determined.
pub(crate) fn boot_id() -> Id128 {
    static BOOT: OnceLock<Id128> = OnceLock::new();
    *BOOT.get_or_init(|| read_procfs_uuid("/proc/sys/kernel/random/boot_id").unwrap_or([0; 16]))
}

/// Whether `id` equals this boot's id and is not the "unknown" zero id
/// (libmdbx `meta_bootid_match`).
pub(crate) fn bootid_matches(id: &Id128) -> bool {
    let cur = boot_id();
    cur != [0; 16] && *id == cur
}

/// A fresh random non-zero 128-bit data-file id: from
/// `/proc/sys/kernel/random/uuid` like libmdbx, else from `getrandom`-backed
/// std hashing seeds mixed with time and pid.
pub(crate) fn random_dxbid() -> Id128 {
    if let Some(id) = read_procfs_uuid("/proc/sys/kernel/random/uuid") {
        return id;
    }
    fallback_random()
}

fn fallback_random() -> Id128 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut out = [0u8; 16];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(crate::os::monotime_ns());
        h.write_u32(crate::os::getpid());
        h.write_usize(i);
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    if out == [0; 16] {
        out[0] = 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example() {
        let id = parse_uuid_text("c9eaa69d-6bd5-4a2e-83f0-ce0c5c44791c\n").unwrap();
        assert_eq!(
            id,
            [0x1c, 0x79, 0x44, 0x5c, 0x0c, 0xce, 0xf0, 0x83, 0x2e, 0x4a, 0xd5, 0x6b, 0x9d, 0xa6, 0xea, 0xc9]
        );
        assert_eq!(u64::from_le_bytes(id[..8].try_into().unwrap()), 0x83f0ce0c5c44791c);
        assert_eq!(u64::from_le_bytes(id[8..].try_into().unwrap()), 0xc9eaa69d6bd54a2e);
    }

    #[test]
    fn garbage_and_zero() {
        assert_eq!(parse_uuid_text(""), None);
        assert_eq!(parse_uuid_text("xyz-"), None);
        assert_eq!(parse_uuid_text("0000-0000"), None);
        assert_eq!(parse_uuid_text("1").unwrap()[0], 1);
        // More than 32 digits: high digits shift out.
        let long = parse_uuid_text("f00000000000000000000000000000000001").unwrap();
        assert_eq!(long, 1u128.to_le_bytes());
    }

    #[test]
    fn system_ids() {
        let b = boot_id();
        assert_eq!(b, boot_id());
        if b != [0; 16] {
            assert!(bootid_matches(&b));
        }
        assert!(!bootid_matches(&[0; 16]));
        let a = random_dxbid();
        let c = random_dxbid();
        assert_ne!(a, [0; 16]);
        assert_ne!(a, c);
        assert_ne!(fallback_random(), [0; 16]);
    }
}
