//! Bodies of the rdbx fuzz targets, as plain functions over `&[u8]`.
//!
//! The cargo-fuzz crate in `fuzz/` (outside the workspace) calls them from its
//! `fuzz_target!`s, and `tests/corpus.rs` replays every file of
//! `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` through them as
//! ordinary tests, so the two never diverge.
//!
//! Every target returns normally for any input; a panic (an assertion of a
//! target, or one inside rdbx) is a finding. Errors returned by rdbx are
//! expected on damaged input and are not findings.
//!
//! * [`image::run`]: the input is the data file of a database (after a
//!   one-byte header); every read path, the check, copies, and a write
//!   transaction run over it.
//! * [`ops::run`]: the input is a sequence of operations applied to rdbx and
//!   to a `BTreeMap` model, compared after every commit.
//! * [`dump::run`]: the input is `mdbx_dump` text; it is parsed, re-encoded and
//!   parsed again.
//!
//! [`seeds`] writes the seed corpus.

pub mod dump;
pub mod image;
pub mod ops;
pub mod seeds;

/// A scratch directory for one run, under `$TMPDIR` (point it at a tmpfs,
/// e.g. `/dev/shm`, for speed; `scripts/fuzz.sh` does).
pub(crate) fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("rdbx-fuzz-").tempdir().expect("creating a scratch directory")
}

/// `RDBX_FUZZ_VERBOSE` set: the targets say what they did on stderr.
pub(crate) fn verbose() -> bool {
    std::env::var_os("RDBX_FUZZ_VERBOSE").is_some()
}

/// With `RDBX_FUZZ_LAST_INPUT=FILE` every input is written to FILE before it
/// runs: a crash libFuzzer cannot catch (a stack overflow kills the process
/// without an artifact) leaves its input there.
pub(crate) fn note_input(data: &[u8]) {
    static PATH: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    if let Some(p) = PATH.get_or_init(|| std::env::var_os("RDBX_FUZZ_LAST_INPUT").map(Into::into)) {
        let _ = std::fs::write(p, data);
    }
}

/// Names the targets, as the directories of `fuzz/corpus` and `fuzz/regressions` do.
pub const TARGETS: [&str; 3] = ["image", "ops", "dump"];

/// Runs target `name` over `data`.
pub fn run_target(name: &str, data: &[u8]) {
    match name {
        "image" => image::run(data),
        "ops" => ops::run(data),
        "dump" => dump::run(data),
        _ => panic!("unknown fuzz target {name}"),
    }
}
