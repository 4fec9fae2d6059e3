#!/usr/bin/env python3
"""Where one timed phase of the benchmark spends its time, from a perf
recording with DWARF call graphs: the samples whose stack holds the phase's
function, by leaf symbol (self) and by every symbol on the stack (inclusive).

    RDBX_BENCH_ENGINES=rdbx RDBX_BENCH_MODES=writemap \
      perf record -e cpu-clock -F 15000 --call-graph dwarf,8192 -o rdbx.data \
      target/release/deps/compare-<hash>
    scripts/phase_profile.py rdbx.data random_put_phase [N]

Phases: random_put_phase, multi_put_phase, multi_del_phase (tests/benches/
compare/main.rs). Record one engine per file (RDBX_BENCH_ENGINES) and compare the
engines' profiles of the same phase; N rows per table (default 25).
"""
import collections
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    data, phase = sys.argv[1], sys.argv[2]
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym", "--no-inline"],
                         capture_output=True, text=True, check=True).stdout
    leaf, incl, n = collections.Counter(), collections.Counter(), 0
    for sample in out.split("\n\n"):
        frames = [l.strip().split(None, 1) for l in sample.strip().split("\n") if l.strip()]
        syms = [f[1] if len(f) > 1 else "?" for f in frames]
        if not any(phase in s for s in syms):
            continue
        n += 1
        leaf[syms[0]] += 1
        incl.update(set(syms))
    print(f"{n} samples in {phase}")
    for title, counter in (("self", leaf), ("inclusive", incl)):
        print(f"-- {title}")
        for sym, c in counter.most_common(rows):
            print(f"{c:7d} {100 * c / max(n, 1):5.1f}%  {sym[:110]}")


if __name__ == "__main__":
    main()
