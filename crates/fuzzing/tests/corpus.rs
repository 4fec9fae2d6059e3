//! Replays the fuzz corpus and the crash reproducers as ordinary tests: every
//! file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` runs
//! through the target's function (the same code the fuzzer runs).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files(target: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["corpus", "regressions"] {
        let dir = fuzz_dir().join(sub).join(target);
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd {
            let p = e.expect("reading the corpus directory").path();
            if p.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn replay(target: &str) {
    let files = files(target);
    assert!(!files.is_empty(), "no corpus for {target} under {}", fuzz_dir().display());
    let mut failed = Vec::new();
    for f in &files {
        let data = std::fs::read(f).expect("reading a corpus file");
        if catch_unwind(AssertUnwindSafe(|| rdbx_fuzzing::run_target(target, &data))).is_err() {
            failed.push(f.display().to_string());
        }
    }
    assert!(failed.is_empty(), "{target}: {} of {} inputs fail: {failed:#?}", failed.len(), files.len());
}

#[test]
fn image_corpus() {
    replay("image");
}

#[test]
fn ops_corpus() {
    replay("ops");
}

#[test]
fn dump_corpus() {
    replay("dump");
}

/// Rewrites the seed corpus (`fuzz/corpus/`).
#[test]
#[ignore = "writes fuzz/corpus; run on purpose"]
fn generate_corpus() {
    rdbx_fuzzing::seeds::write_corpus(&fuzz_dir().join("corpus")).expect("writing the corpus");
}
