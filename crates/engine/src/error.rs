//! The one error type of rdbx. Each variant corresponds to a libmdbx error code
//! (see [`Error::code`]) so tools can print the same numbers as the mdbx_* tools.

use std::fmt;

/// Result alias used throughout rdbx.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure rdbx reports. A missing key is not an error (`Ok(None)`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `MDBX_KEYEXIST`: the key (or key/value pair) already exists.
    #[error("key/data pair already exists")]
    KeyExist,
    /// `MDBX_NOTFOUND`: no matching key/data pair or table.
    #[error("no matching key/data pair found")]
    NotFound,
    /// `MDBX_PAGE_NOTFOUND`: a page number beyond the allocated space.
    #[error("requested page {page} not found (beyond the allocated space)")]
    PageNotFound { page: u32 },
    /// `MDBX_CORRUPTED`: structural damage found on page `page`.
    #[error("database is corrupted: page {page}: {what}")]
    Corrupted { page: u32, what: Reason },
    /// `MDBX_PANIC`: an earlier fatal error; the environment must be reopened.
    #[error("environment had a fatal error and must be reopened")]
    Panic,
    /// `MDBX_VERSION_MISMATCH`: the magic is MDBX's but the format version is not supported.
    #[error("unsupported MDBX format version: {0}")]
    VersionMismatch(String),
    /// `MDBX_INVALID`: not an MDBX file (no valid meta page).
    #[error("not an MDBX file: {0}")]
    Invalid(String),
    /// `MDBX_MAP_FULL`: the upper bound of the geometry was reached.
    #[error("database is full: the upper size bound of the geometry was reached")]
    MapFull,
    /// `MDBX_DBS_FULL`: more named tables opened than `max_dbs` allows.
    #[error("too many tables open (raise max_dbs)")]
    DbsFull,
    /// `MDBX_READERS_FULL`: the reader table is full.
    #[error("too many readers: the reader table is full")]
    ReadersFull,
    /// `MDBX_TXN_FULL`: the transaction has too many dirty pages.
    #[error("transaction is too big (too many dirty pages)")]
    TxnFull,
    /// `MDBX_INCOMPATIBLE`: flags or operation do not fit the table/environment.
    #[error("incompatible: {0}")]
    Incompatible(String),
    /// `MDBX_BAD_TXN`: the transaction cannot be used for this operation.
    #[error("transaction is not valid for this operation: {0}")]
    BadTxn(&'static str),
    /// `MDBX_BAD_VALSIZE`: a key or value has a size the table does not accept.
    #[error("bad key or value size: {0}")]
    BadValSize(String),
    /// `MDBX_BAD_DBI`: the table handle is invalid in this transaction.
    #[error("invalid table handle")]
    BadDbi,
    /// `MDBX_PROBLEM`: an unexpected internal error.
    #[error("unexpected internal problem: {0}")]
    Problem(String),
    /// `MDBX_BUSY`: another writer is running, or the database is in exclusive use.
    #[error("busy: {0}")]
    Busy(String),
    /// `MDBX_EMULTIVAL`: the key has several values and the operation is ambiguous.
    #[error("the key has more than one value")]
    MultiVal,
    /// `MDBX_WANNA_RECOVERY`: recovery is needed but the environment is read-only.
    #[error("database needs recovery, which a read-only open cannot do")]
    WannaRecovery,
    /// `MDBX_EKEYMISMATCH`: the key does not fit the cursor position or append order.
    #[error("key mismatch: {0}")]
    KeyMismatch(&'static str),
    /// `MDBX_TOO_LARGE`: the database is too large for this system.
    #[error("database is too large for this system")]
    TooLarge,
    /// `MDBX_TXN_OVERLAPPING`: a read and a write transaction overlap on one thread.
    #[error("overlapping read and write transactions on one thread")]
    TxnOverlapping,
    /// `MDBX_DUPLICATED_CLK`: an alternative lock file exists beside the database.
    #[error("an alternative lock file exists: {0} (keep one, remove the unused other)")]
    DuplicatedLck(String),
    /// `MDBX_OUSTED`: a parked read transaction was ousted by a writer that
    /// needed the pages of its snapshot (see [`crate::RoTxn::unpark`]).
    #[error("the parked read transaction was ousted to recycle old MVCC snapshots")]
    Ousted,
    /// `ENODATA`: the cursor is not positioned on a record.
    #[error("no data: the cursor is not positioned")]
    NoData,
    /// `EINVAL`: an invalid argument.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// `EACCES`: a write in a read-only transaction or environment.
    #[error("permission denied: {0}")]
    Access(&'static str),
    /// A system call failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// Why a page was judged corrupted (kept small and `Copy` so errors stay cheap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason(pub &'static str);

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl Error {
    /// A corruption error on `page`. Out of line and cold: the hot parsers
    /// call it only on damaged pages.
    #[cold]
    #[inline(never)]
    pub fn corrupted(page: u32, what: &'static str) -> Self {
        if std::env::var_os("RDBX_TRACE_CORRUPTED").is_some() {
            eprintln!("corrupted page {page}: {what}\n{}", std::backtrace::Backtrace::force_capture());
        }
        Error::Corrupted { page, what: Reason(what) }
    }

    /// The libmdbx numeric error code (negative: libmdbx's own; positive: errno).
    pub fn code(&self) -> i32 {
        match self {
            Error::KeyExist => -30799,
            Error::NotFound => -30798,
            Error::PageNotFound { .. } => -30797,
            Error::Corrupted { .. } => -30796,
            Error::Panic => -30795,
            Error::VersionMismatch(_) => -30794,
            Error::Invalid(_) => -30793,
            Error::MapFull => -30792,
            Error::DbsFull => -30791,
            Error::ReadersFull => -30790,
            Error::TxnFull => -30788,
            Error::Incompatible(_) => -30784,
            Error::BadTxn(_) => -30782,
            Error::BadValSize(_) => -30781,
            Error::BadDbi => -30780,
            Error::Problem(_) => -30779,
            Error::Busy(_) => -30778,
            Error::MultiVal => -30421,
            Error::WannaRecovery => -30419,
            Error::KeyMismatch(_) => -30418,
            Error::TooLarge => -30417,
            Error::TxnOverlapping => -30415,
            Error::DuplicatedLck(_) => -30413,
            Error::Ousted => -30411,
            Error::NoData => libc::ENODATA,
            Error::InvalidArgument(_) => libc::EINVAL,
            Error::Access(_) => libc::EACCES,
            Error::Io(e) => e.raw_os_error().unwrap_or(libc::EIO),
        }
    }
}
