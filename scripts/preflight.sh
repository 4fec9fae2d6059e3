#!/usr/bin/env bash
# What the rdbx test suite needs from the machine, checked the way the
# consumer checks it, and installed when it is missing.
#
#   scripts/preflight.sh            install what is missing (apt-get, rustup), then verify
#   scripts/preflight.sh --check    only verify: list what is missing and how to install it
#   scripts/preflight.sh --self-test  test the detectors on fake directories
#
# Exit status: 0 everything is there; 1 something is missing and could not be
# installed (the message names it and the command that installs it).
#
# The needs:
#   libclang   bindgen (mdbx-sys, the libmdbx oracle of the tests) loads
#              libclang.so, libclang-N.so or libclang.so.N, never
#              libclang-cpp.so.N (a different library that a fresh Debian
#              machine already ships). Debian package: libclang-dev.
#   cc         a C compiler and libc headers: libmdbx is built from source.
#   rustfmt, clippy  the rustup components test.sh runs.
#   strace     optional: one lock-race test (tests/open_race.rs) runs its
#              closer under strace and is skipped without it; installed when
#              apt-get can, never a failure.
# Nothing else: the tests spawn only binaries of this workspace (no tmux or
# python3); the pty tests open their pseudo-terminal themselves.
set -uo pipefail

# --- detectors -------------------------------------------------------------

# The file names clang-sys accepts (it skips libclang-cpp*).
is_loadable_libclang_name() {
    [[ "$1" =~ ^libclang(-[0-9][0-9.]*)?\.so(\.[0-9][0-9.]*)?$ ]]
}

# Prints the first loadable libclang found in the directories given (or, with
# none given, where clang-sys searches on Linux), returns 1 if there is none.
find_libclang() {
    local dirs=("$@")
    if [ ${#dirs[@]} = 0 ]; then
        [ -n "${LIBCLANG_PATH:-}" ] && dirs+=("$LIBCLANG_PATH")
        if command -v llvm-config >/dev/null 2>&1; then
            dirs+=("$(llvm-config --libdir 2>/dev/null)")
        fi
        dirs+=(/usr/lib /usr/lib64 /usr/local/lib /usr/local/lib64 /usr/lib/x86_64-linux-gnu
            /usr/lib/aarch64-linux-gnu /usr/lib/llvm-*/lib /usr/local/llvm*/lib)
    fi
    local d f
    for d in "${dirs[@]}"; do
        [ -d "$d" ] || continue
        for f in "$d"/libclang*.so*; do
            [ -e "$f" ] || continue
            if is_loadable_libclang_name "$(basename "$f")"; then
                echo "$f"
                return 0
            fi
        done
    done
    return 1
}

have_cc() {
    command -v cc >/dev/null 2>&1 || return 1
    # libc headers too: a compiler without them fails inside the cc crate.
    printf '#include <stdio.h>\nint main(void){return 0;}\n' |
        cc -x c -o /dev/null - >/dev/null 2>&1
}

have_component() { cargo "$1" --version >/dev/null 2>&1; }

# --- self-test of the detectors ----------------------------------------------

self_test() {
    local t fails=0
    t=$(mktemp -d)
    mkdir -p "$t/cpp-only" "$t/dev" "$t/versioned" "$t/soname"
    touch "$t/cpp-only/libclang-cpp.so.14" "$t/cpp-only/libclang-cpp.so"
    touch "$t/dev/libclang.so"
    touch "$t/versioned/libclang-14.so.1"
    touch "$t/soname/libclang.so.1"
    if find_libclang "$t/cpp-only" >/dev/null; then
        echo "self-test FAILED: libclang-cpp.so.14 taken for libclang"; fails=1
    fi
    for d in dev versioned soname; do
        if ! find_libclang "$t/$d" >/dev/null; then
            echo "self-test FAILED: $d not recognised as libclang"; fails=1
        fi
    done
    rm -rf "$t"
    [ "$fails" = 0 ] && echo "preflight self-test: ok"
    return "$fails"
}

# --- install ---------------------------------------------------------------

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else "$@"; fi
}

apt_updated=0
apt_install() {
    command -v apt-get >/dev/null 2>&1 || return 1
    if [ "$apt_updated" = 0 ]; then
        as_root apt-get update -qq || return 1
        apt_updated=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

# --- main ------------------------------------------------------------------

mode=install
case "${1:-}" in
    --check) mode=check ;;
    --self-test) self_test; exit $? ;;
    "") ;;
    *) echo "usage: $0 [--check | --self-test]" >&2; exit 2 ;;
esac

self_test >/dev/null || { self_test; exit 1; }

missing=()
check_all() {
    missing=()
    find_libclang >/dev/null ||
        missing+=("libclang (bindgen loads libclang.so; libclang-cpp does not count)|apt-get install libclang-dev")
    have_cc || missing+=("a C compiler with libc headers|apt-get install gcc libc6-dev")
    have_component fmt || missing+=("rustfmt|rustup component add rustfmt")
    have_component clippy || missing+=("clippy|rustup component add clippy")
}

check_all
if [ "$mode" = install ] && [ ${#missing[@]} != 0 ]; then
    for m in "${missing[@]}"; do
        what=${m%%|*} cmd=${m#*|}
        echo "preflight: missing $what: running '$cmd'"
        case "$cmd" in
            apt-get\ install\ *) apt_install ${cmd#apt-get install } || echo "preflight: '$cmd' failed" ;;
            *) $cmd || echo "preflight: '$cmd' failed" ;;
        esac
    done
    check_all
fi

if [ ${#missing[@]} != 0 ]; then
    echo "preflight: the test suite cannot run; missing:" >&2
    for m in "${missing[@]}"; do
        echo "  - ${m%%|*}: install with '${m#*|}'" >&2
    done
    exit 1
fi
# Optional: strace widens a lock-file race for one test
# (crates/engine/tests/open_race.rs, openers_meet_a_slow_last_closer), which
# is skipped without it.
if [ "$mode" = install ] && ! command -v strace >/dev/null 2>&1; then
    echo "preflight: optional strace missing: running 'apt-get install strace'"
    apt_install strace || echo "preflight: strace not installed; one open_race.rs test will be skipped"
fi
strace_note="strace: $(command -v strace || echo 'none, one test skipped')"
echo "preflight: ok (libclang: $(find_libclang); cc: $(command -v cc); rustfmt, clippy; $strace_note)"
