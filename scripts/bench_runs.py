#!/usr/bin/env python3
"""Runs the side-by-side benchmark several times and prints, for every row,
the median and the range of rdbx's ratio to each peer (above 1: rdbx is
faster). The machines are shared and noisy: quote medians with their ranges,
never one run.

    scripts/bench_runs.py [RUNS] [-- extra cargo args]
    scripts/bench_runs.py --parse OUTPUT...   (summarise kept outputs)

The benchmark's own variables pass through (RDBX_BENCH_N, RDBX_BENCH_MODES,
RDBX_BENCH_PAGE_SIZE, RDBX_BENCH_SYNC_DIR, RDBX_BENCH_ROUNDS, ...). With
RDBX_BENCH_ROUNDS=3 each run keeps every engine's best of 3 rounds per row
(the engine order rotating between rounds), which cuts the spread between
runs several times over on this VM. The order the engines run
in rotates between runs (RDBX_BENCH_ORDER), unless it is set. Each run's
full output is kept in target/bench-runs/run-K.txt.
"""
import os
import statistics
import subprocess
import sys


def parse(text):
    """{(section, row): (ratio to libmdbx, ratio to LMDB)} of one run."""
    rows, section = {}, None
    for line in text.splitlines():
        if line.startswith("== "):
            section = line[3:].split(" (")[0].split(" in ")[0].strip()
            continue
        parts = line.split()
        if section is None or len(parts) < 7:
            continue
        try:
            # "-": no figure (LMDB runs at 4 KiB pages only).
            nums = [None if p == "-" else float(p) for p in parts[-6:]]
        except ValueError:
            continue
        if nums[0] is None:
            continue
        name = " ".join(parts[:-6])
        rows[(section, name)] = (nums[4], nums[5])
    return rows


def main():
    args = sys.argv[1:]
    if args and args[0] == "--parse":
        # Summarise kept outputs instead of running: --parse FILE...
        show([parse(open(f).read()) for f in args[1:]])
        return
    extra = []
    if "--" in args:
        i = args.index("--")
        args, extra = args[:i], args[i + 1 :]
    runs = int(args[0]) if args else 3
    out_dir = os.path.join("target", "bench-runs")
    os.makedirs(out_dir, exist_ok=True)
    results = []
    orders = ["rdbx,libmdbx,lmdb", "libmdbx,lmdb,rdbx", "lmdb,rdbx,libmdbx"]
    for k in range(runs):
        cmd = ["cargo", "bench", "-q", "-p", "rdbx-tests", "--bench", "compare"] + extra
        # Each engine runs first in a third of the runs (the first engine of
        # a process may pay for fresh heap memory the others find ready).
        env = dict(os.environ)
        env.setdefault("RDBX_BENCH_ORDER", orders[k % len(orders)])
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        with open(os.path.join(out_dir, f"run-{k + 1}.txt"), "w") as f:
            f.write(p.stdout + p.stderr)
        if p.returncode != 0:
            sys.exit(f"run {k + 1} failed (exit {p.returncode}); see {out_dir}/run-{k + 1}.txt")
        results.append(parse(p.stdout))
        print(f"run {k + 1}/{runs} done", file=sys.stderr)
    show(results)


def show(results):
    order = []
    for r in results:
        for key in r:
            if key not in order:
                order.append(key)
    section = None
    for key in order:
        if key[0] != section:
            section = key[0]
            print(f"\n== {section}\n{'row':40} {'/libmdbx median (range)':>26} {'/LMDB median (range)':>26}")
        cells = []
        for peer in (0, 1):
            vals = [r[key][peer] for r in results if key in r and r[key][peer] is not None]
            cells.append(f"{statistics.median(vals):.2f} ({min(vals):.2f}-{max(vals):.2f})" if vals else "-")
        print(f"{key[1]:40} {cells[0]:>26} {cells[1]:>26}")


if __name__ == "__main__":
    main()
