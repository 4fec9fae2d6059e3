#!/usr/bin/env bash
# The one test command of the rdbx workspace (CI runs it through .ci/run).
#   1. installs what the build needs if it is missing: libclang (bindgen, for
#      the libmdbx oracle in mdbx-sys), a C compiler, rustfmt and clippy;
#   2. cargo fmt --all --check;
#   3. cargo clippy --workspace --all-targets -- -D warnings;
#   4. cargo test --workspace --release --no-fail-fast (release: the interop
#      tests are heavy; every test binary runs even after a failure);
# and prints a final "summary: N passed, N failed, N skipped" line.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else "$@"; fi
}

apt_updated=0
apt_install() {
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "test.sh: need $* but apt-get is not available" >&2
        return 1
    fi
    if [ "$apt_updated" = 0 ]; then
        as_root apt-get update
        apt_updated=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}

if ! compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' >/dev/null; then
    echo "test.sh: installing libclang-dev (bindgen needs libclang)"
    apt_install libclang-dev
fi
if ! command -v cc >/dev/null 2>&1; then
    echo "test.sh: installing a C compiler (libmdbx is built from source)"
    apt_install gcc libc6-dev
fi
for comp in rustfmt clippy; do
    tool=$([ "$comp" = rustfmt ] && echo fmt || echo clippy)
    if ! cargo "$tool" --version >/dev/null 2>&1; then
        echo "test.sh: installing the $comp component"
        rustup component add "$comp"
    fi
done

echo "== cargo fmt --all --check"
cargo fmt --all --check

echo "== cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

echo "== cargo test --workspace --release --no-fail-fast"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --release --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

passed=0 failed=0 ignored=0
while read -r p f i; do
    passed=$((passed + p)) failed=$((failed + f)) ignored=$((ignored + i))
done < <(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' "$log")

if [ "$status" != 0 ] && [ "$failed" = 0 ]; then
    echo "test.sh: cargo test exited with status $status (build failure or crashed test binary)"
    failed=1
fi
echo "summary: $passed passed, $failed failed, $ignored skipped"
exit "$status"
