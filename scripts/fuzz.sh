#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ (cargo-fuzz / libFuzzer) for a while each.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 60); TARGETs default to all (image ops dump).
# Installs cargo-fuzz if it is missing (`cargo install cargo-fuzz --locked`,
# a few minutes on a fresh machine). cargo-fuzz needs nightly compiler flags:
# the stable toolchain is used with RUSTC_BOOTSTRAP=1. No sanitizer (rdbx is
# safe Rust; the fuzzers look for panics, aborts, hangs and memory blow-ups).
#
# New inputs go to fuzz/work/<target>/ (not committed); the committed seeds
# are fuzz/corpus/<target>/ and fuzz/regressions/<target>/ (reproducers of
# fixed findings). A finding leaves its input in fuzz/artifacts/<target>/ and
# makes the script exit non-zero after all targets ran.
# Minimise one with `RUSTC_BOOTSTRAP=1 cargo fuzz tmin -s none TARGET FILE`
# (in fuzz/), then put it into fuzz/regressions/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

secs=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(image ops dump)

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
# Scratch databases on a tmpfs when there is one.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
    export TMPDIR=/dev/shm
fi

max_len() {
    case $1 in
        image) echo 262145 ;; # 1 header byte + 64 pages of 4 KiB
        ops) echo 4096 ;;
        dump) echo 16384 ;;
        *) echo 4096 ;;
    esac
}

TMPDIR_LAST=$(mktemp -d)
trap 'rm -rf "$TMPDIR_LAST"' EXIT

echo "== cargo fuzz build"
cargo fuzz build -s none

status=0
for t in "${targets[@]}"; do
    mkdir -p "work/$t" "corpus/$t" "regressions/$t"
    echo "== fuzzing $t for ${secs}s"
    # Each input is written here first (see rdbx_fuzzing::note_input).
    last="$TMPDIR_LAST/$t.last-input"
    mkdir -p "artifacts/$t"
    before=$(find "artifacts/$t" -type f | wc -l)
    # RDBX_FUZZ_SEED / RDBX_FUZZ_RUNS make a run repeatable (scripts/test.sh
    # uses them: CI must not fail on whatever a random seed stumbles on that
    # day; findings come from the long runs).
    extra=()
    [ -n "${RDBX_FUZZ_SEED:-}" ] && extra+=("-seed=$RDBX_FUZZ_SEED")
    [ -n "${RDBX_FUZZ_RUNS:-}" ] && extra+=("-runs=$RDBX_FUZZ_RUNS")
    if ! RDBX_FUZZ_LAST_INPUT="$last" cargo fuzz run -s none "$t" "work/$t" "corpus/$t" "regressions/$t" -- \
        -max_total_time="$secs" -max_len="$(max_len "$t")" -timeout=30 -rss_limit_mb=2048 \
        -print_final_stats=1 ${extra[@]+"${extra[@]}"}; then
        if [ "$(find "artifacts/$t" -type f | wc -l)" = "$before" ] && [ -f "$last" ]; then
            # Killed without an artifact (stack overflow): keep the last input.
            cp "$last" "artifacts/$t/killed-$(date +%Y%m%d-%H%M%S)"
        fi
        echo "fuzz.sh: FINDING in $t (input in fuzz/artifacts/$t/)"
        status=1
    fi
done
exit $status
