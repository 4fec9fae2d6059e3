//! Explanations the shell and the tools add to an engine error, from what
//! the data file itself says (read without a lock, nothing written).

use std::path::Path;

/// For a data file shorter than the pages its newest meta uses (truncated
/// by a failed copy, a full disk, a partial download...): the expected and
/// the actual size, as "the file has A bytes, its newest meta (txn T) uses
/// N pages of P bytes = B bytes". `None` when the file is long enough or its
/// metas cannot be read.
pub fn truncation(data: &Path) -> Option<String> {
    let l = rdbx::inspect::read_metas(data).ok()?;
    let ps = l.page_size as u64;
    // The newest meta with the MDBX magic, valid or not: a meta that
    // describes pages past the end of the file does not pass the checks.
    let newest = l.slots.iter().filter(|s| s.meta.magic != 0).max_by_key(|s| s.meta.txnid())?;
    let pages = u64::from(newest.meta.geo.first_unallocated);
    let need = pages * ps;
    (need > l.file_size).then(|| {
        format!(
            "the file has {} bytes, but its newest meta (txn {}) uses {pages} pages of {ps} bytes = {need} bytes: \
             it was truncated",
            l.file_size,
            newest.meta.txnid()
        )
    })
}

/// The bytes a file takes on disk (its blocks; less than its size when it
/// is sparse, as a copy whose geometry reserves room to grow).
pub fn allocated(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.blocks() * 512)
}
