//! Public flag sets: table flags and put flags, with libmdbx's numeric values.

bitflags::bitflags! {
    /// Table flags (`MDBX_db_flags_t`). The persistent ones are stored in the table's
    /// tree descriptor; `CREATE` only affects [`crate::RwTxn::create_db`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct DbFlags: u32 {
        /// Keys compared from the last byte to the first.
        const REVERSE_KEY = 0x02;
        /// Several sorted values per key (multimap).
        const DUP_SORT = 0x04;
        /// Keys are native-endian u32 or u64, compared numerically.
        const INTEGER_KEY = 0x08;
        /// With DUP_SORT: all values have one fixed size.
        const DUP_FIXED = 0x10;
        /// With DUP_SORT|DUP_FIXED: values are native-endian integers.
        const INTEGER_DUP = 0x20;
        /// With DUP_SORT: values compared from the last byte.
        const REVERSE_DUP = 0x40;
        /// Create the table if it does not exist.
        const CREATE = 0x40000;
    }
}

impl DbFlags {
    /// The flags that are stored in the file.
    pub const PERSISTENT: DbFlags = DbFlags::from_bits_truncate(0x7E);

    /// Whether this is a valid persistent combination (libmdbx rejects others
    /// with `MDBX_INCOMPATIBLE`).
    pub fn is_valid_persistent(self) -> bool {
        let bits = self.bits();
        if bits & !0x7E != 0 {
            return false;
        }
        let key = bits & 0x0A;
        if key == 0x0A {
            return false;
        }
        let val = bits & 0x74;
        matches!(val, 0 | 0x04 | 0x44 | 0x14 | 0x54 | 0x34 | 0x74)
    }
}

bitflags::bitflags! {
    /// Put flags (`MDBX_put_flags_t`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct PutFlags: u32 {
        /// Fail with `KeyExist` if the key exists.
        const NO_OVERWRITE = 0x10;
        /// Multimaps: fail with `KeyExist` if this exact pair exists.
        const NO_DUP_DATA = 0x20;
        /// Update an existing record only (`NotFound` otherwise).
        const CURRENT = 0x40;
        /// Multimaps: replace all values of the key.
        const ALL_DUPS = 0x80;
        /// Reserve space for the value and return it to be filled.
        const RESERVE = 0x10000;
        /// Append at the end: the key must not be less than the last key.
        const APPEND = 0x20000;
        /// Multimaps: append a value greater than the key's last value.
        const APPEND_DUP = 0x40000;
        /// DUP_FIXED: store several fixed-size values at once.
        const MULTIPLE = 0x80000;
    }
}
