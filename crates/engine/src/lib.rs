//! # rdbx
//!
//! A pure-Rust embedded transactional key-value store with the design and the
//! **file format of libmdbx** (data format v3; lock formats v6 of libmdbx 0.13
//! and v7 of libmdbx 0.14.2+): a memory-mapped copy-on-write B+tree with MVCC,
//! wait-free readers, one writer at a time across processes, and many named
//! tables in one file. rdbx opens databases written by
//! libmdbx and libmdbx opens what rdbx writes.
//!
//! ```no_run
//! # fn main() -> rdbx::Result<()> {
//! let env = rdbx::Env::builder().max_dbs(16).open("/tmp/demo-db")?;
//! let mut txn = env.begin_rw_txn()?;
//! let db = txn.create_db(Some("fruit"), rdbx::DbFlags::empty())?;
//! txn.put(db, b"apple", b"red", rdbx::PutFlags::empty())?;
//! txn.commit()?;
//!
//! let rtxn = env.begin_ro_txn()?;
//! let db = rtxn.open_db(Some("fruit"))?;
//! assert_eq!(rtxn.get(db, b"apple")?, Some(&b"red"[..]));
//! let mut c = rtxn.cursor(db)?;
//! while let Some((k, v)) = c.next()? {
//!     println!("{:?} = {:?}", k, v);
//! }
//! # Ok(()) }
//! ```
//!
//! Layout of the crate (one concern per module): `format` parses and builds the
//! on-disk structures of both files from byte slices (no I/O, no `unsafe`;
//! docs/format.md, docs/lock-format.md); `os` holds the only `unsafe` (memory
//! map, file I/O, OFD locks, robust mutexes); `lck` runs the shared lock file;
//! `io` is the seam for page writes and syncs; `env` opens files and chooses
//! metas; `txn` holds read/write transactions (`txn/`: page life cycle,
//! spilling, nested transactions, commit, the write cursor); `gc` allocates
//! pages from the GC and writes its records; `btree` searches and edits
//! trees, reading pages only through `btree::pages::Pages` and writing them
//! only through the `btree::writer::TreeWriter` trait, which the write
//! transaction implements (`txn/tree_writer.rs`).
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

pub(crate) mod bootid;
mod btree;
mod check;
mod checksum;
mod copy;
mod diff;
mod env;
mod error;
mod flags;
// Raw parsers and editors of the on-disk structures, public for the
// workspace's tools, tests and fuzzers only: not part of the API, no
// stability promise.
#[doc(hidden)]
pub mod format;
mod gc;
pub mod inspect;
pub(crate) mod io;
mod iter;
pub(crate) mod lck;
pub(crate) mod os;
mod page_map;
mod pool;
mod radix;
mod readers;
mod run_list;
mod space;
mod txn;

pub use btree::cursor::Cursor;
pub use check::{Area, CheckOptions, CheckProgress, CheckReport, MetaReport, Problem, Severity, Stage, TableReport};
pub use checksum::{checksums, table_checksum, to_hex, ChecksumOptions, Checksums, Sha256, TableChecksum};
pub use copy::{CopyOptions, CopyProgress, CopyStats};
pub use diff::{diff_tables, DiffCounts, DiffKind, DiffOptions, DiffRecord, ORDER_FLAGS};
pub use env::{Durability, Env, EnvBuilder, EnvInfo, Geometry};
pub use error::{Error, Reason, Result};
pub use flags::{DbFlags, PutFlags};
pub use format::lock::LockFormat;
pub use io::IoFaults;
pub use iter::{Iter, KeyRange, ReadTxn};
pub use lck::PageOps;
pub use readers::{GcInfo, ReaderInfo, Retainer, SlowReader, SlowReaderAction, SlowReaderFn};
pub use space::{GcRecord, SpaceReport, TableSpace};
pub use txn::{Db, NestedTxn, RoTxn, RwCursor, RwTxn, Stat, TxnInfo};
