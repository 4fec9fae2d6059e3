#!/usr/bin/env python3
"""Time A/B of two builds of the small-commit probe, for changes callgrind
cannot judge (locked instructions, cache misses, page faults): on the
shared VMs a run's speed moves by up to 2x from minute to minute, so each
run measures rdbx and LMDB in the same process and the ratio of their
times is what compares.

    scripts/ab_time.py build REV OUT
    scripts/ab_time.py compare BIN_A BIN_B [RUNS] [-- PROBE_ARGS...]

`build` builds `tests/benches/small_commits.rs` at git revision REV in a
temporary worktree with its own target directory (a full build: minutes)
and copies the binary to OUT. `compare` runs the two binaries alternately
RUNS times (default 10) with PROBE_ARGS (default `writemap 20000 3`; the
engines are always rdbx and lmdb; the probe's environment knobs such as
`RDBX_PROBE_VALUE` pass through) and prints, per binary, the median and
quartiles of rdbx's time over LMDB's (below 1: rdbx is faster). Quartiles
that overlap mean no difference was measured.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(rev, out):
    with tempfile.TemporaryDirectory(prefix="rdbx-ab-") as tmp:
        wt = os.path.join(tmp, "wt")
        subprocess.run(["git", "worktree", "add", "--detach", wt, rev], cwd=ROOT, check=True)
        try:
            env = {**os.environ, "CARGO_TARGET_DIR": os.path.join(tmp, "target")}
            msgs = subprocess.run(
                ["cargo", "bench", "-p", "rdbx-tests", "--bench", "small_commits", "--no-run",
                 "--message-format=json"],
                cwd=wt, env=env, capture_output=True, text=True, check=True).stdout
            exe = [m.group(1) for m in re.finditer(r'"executable":"([^"]+small_commits[^"]*)"', msgs)]
            if not exe:
                sys.exit("ab_time: no small_commits executable in cargo's output")
            shutil.copy2(exe[-1], out)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", wt], cwd=ROOT, check=False)
    print(f"{rev} -> {out}")


def ratio(binary, args):
    out = subprocess.run([binary, "rdbx,lmdb", *args], capture_output=True, text=True, check=True).stdout
    t = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] in ("rdbx", "lmdb"):
            t[f[1]] = float(f[2])
    if set(t) != {"rdbx", "lmdb"}:
        sys.exit(f"ab_time: unexpected probe output from {binary}:\n{out}")
    return t["rdbx"] / t["lmdb"]


def compare(a, b, runs=10, args=None):
    args = args or ["writemap", "20000", "3"]
    got = {a: [], b: []}
    for _ in range(runs):
        for binary in (a, b):
            got[binary].append(ratio(binary, args))
    for binary, v in got.items():
        q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
        print(f"{binary}: rdbx/LMDB time median {statistics.median(v):.3f}, quartiles {q[0]:.3f}-{q[2]:.3f}, "
              f"min {min(v):.3f} ({len(v)} runs)")


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    if len(argv) == 3 and argv[0] == "build":
        build(argv[1], argv[2])
    elif len(argv) in (3, 4) and argv[0] == "compare":
        compare(argv[1], argv[2], int(argv[3]) if len(argv) == 4 else 10, extra)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
