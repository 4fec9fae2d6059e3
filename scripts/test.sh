#!/usr/bin/env bash
# The one test command of the rdbx workspace (CI runs it through .ci/run).
#   1. scripts/preflight.sh: installs what the build needs if it is missing
#      (libclang for bindgen, a C compiler, rustfmt and clippy) and stops
#      early, naming the missing piece, if it cannot;
#   2. cargo fmt --all --check;
#   3. cargo clippy --workspace --all-targets -- -D warnings, and the
#      libmdbx 0.13 oracle (tests/oracle013, outside the workspace) built;
#   4. cargo test --workspace --release --no-fail-fast (release: the interop
#      tests are heavy; every test binary runs even after a failure), then
#      the damaged-file suites again with overflow checks (profile `damage`),
#      and the engine's unit tests in a debug build (debug-only cross-checks);
#   5. scripts/fuzz.sh: every fuzz target, repeatably (fixed seed, 2000 runs);
# and prints a final "summary: N passed, N failed, N skipped" line.
set -euo pipefail
cd "$(dirname "$0")/.."

# Installs libclang-dev (what bindgen loads: libclang.so, not libclang-cpp),
# gcc/libc6-dev, rustfmt and clippy when missing; stops early otherwise.
scripts/preflight.sh

echo "== cargo fmt --all --check"
cargo fmt --all --check

echo "== cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

echo "== tests/oracle013 (libmdbx 0.13 oracle for tests/interop013.rs; a crate of its own)"
cargo fmt --manifest-path tests/oracle013/Cargo.toml --check
cargo clippy --release --locked --manifest-path tests/oracle013/Cargo.toml --target-dir tests/oracle013/target -- -D warnings
cargo build --release --locked --manifest-path tests/oracle013/Cargo.toml --target-dir tests/oracle013/target

echo "== cargo test --workspace --release --no-fail-fast"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --release --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# The damaged-file suites again with overflow checks (profile `damage`:
# release plus overflow checks), so a counter that would wrap fails loudly.
echo "== cargo test --profile damage (damaged-file suites with overflow checks)"
cargo test --profile damage -p rdbx --no-fail-fast \
    --test corruption --test corruption_multimap --test check_agrees 2>&1 | tee -a "$log"
damage_status=${PIPESTATUS[0]}
[ "$status" = 0 ] && status=$damage_status
# The engine's unit tests once more in a debug build: some shortcuts of the
# commit path are cross-checked against the general computation only there
# (`debug_assert`s, e.g. the GC update's settled rounds against a replan).
echo "== cargo test -p rdbx --lib (debug build: debug-only cross-checks)"
cargo test -p rdbx --lib --no-fail-fast 2>&1 | tee -a "$log"
debug_status=${PIPESTATUS[0]}
[ "$status" = 0 ] && status=$debug_status
set -e

# A short, time-boxed run of every fuzz target (installs cargo-fuzz when it is
# missing); the committed corpus and reproducers also replay as ordinary tests
# (crates/fuzzing/tests/corpus.rs). Longer runs: scripts/fuzz.sh SECONDS.
echo "== scripts/fuzz.sh 20 (each fuzz target: seed 1, 2000 runs, at most 20 s)"
fuzz_status=0
RDBX_FUZZ_SEED=1 RDBX_FUZZ_RUNS=2000 scripts/fuzz.sh 20 || fuzz_status=$?

passed=0 failed=0 ignored=0
while read -r p f i; do
    passed=$((passed + p)) failed=$((failed + f)) ignored=$((ignored + i))
done < <(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' "$log")

if [ "$status" != 0 ] && [ "$failed" = 0 ]; then
    echo "test.sh: cargo test exited with status $status (build failure or crashed test binary)"
    failed=1
fi
if [ "$fuzz_status" != 0 ]; then
    echo "test.sh: a fuzz target found a problem (inputs in fuzz/artifacts/)"
    failed=$((failed + 1))
    status=1
fi
echo "summary: $passed passed, $failed failed, $ignored skipped"
exit "$status"
