#!/usr/bin/env python3
"""Runs the side-by-side benchmark several times and prints, for every row,
the median and the range of rdbx's ratio to each peer (above 1: rdbx is
faster). The machines are shared and noisy: quote medians with their ranges,
never one run.

    scripts/bench_runs.py [RUNS] [-- extra cargo args]
    scripts/bench_runs.py --isolated [RUNS] [-- extra cargo args]
    scripts/bench_runs.py --parse OUTPUT...   (summarise kept outputs)

The benchmark's own variables pass through (RDBX_BENCH_N, RDBX_BENCH_MODES,
RDBX_BENCH_PAGE_SIZE, RDBX_BENCH_SYNC_DIR, RDBX_BENCH_ROUNDS, ...). With
RDBX_BENCH_ROUNDS=3 each run keeps every engine's best of 3 rounds per row
(the engine order rotating between rounds), which cuts the spread between
runs several times over on this VM. The order the engines run
in rotates between runs (RDBX_BENCH_ORDER), unless it is set. Each run's
full output is kept in target/bench-runs/run-K.txt.

--isolated runs each engine in a process of its own (RDBX_BENCH_ENGINES),
one after another, in an order that rotates between runs, and takes the
ratios from their rates. In one process the engines meet each other's
leftovers (heap and page-cache state, memory the kernel has yet to
reclaim): at 10M records the rate of one engine moved by half with the
order while another's stayed within 2%. (Separate processes do not end
that at 10M on a VM whose host backs memory on first touch: the rates
still moved from run to run there.) Isolated runs skip the checks that
need the engines side by side (that they walked and deleted the same
records) and the durable rows (a normal run measures those); each
process's output is kept as run-K-ENGINE.txt.
"""
import os
import statistics
import subprocess
import sys


def sectioned(text):
    """(section, words) of each line of a benchmark output under a "== "
    header (the mode, or a durable workload), the header's name cut at
    its details."""
    section = None
    for line in text.splitlines():
        if line.startswith("== "):
            section = line[3:].split(" (")[0].split(" in ")[0].strip()
        elif section is not None:
            yield section, line.split()


def parse(text):
    """{(section, row): (ratio to libmdbx, ratio to LMDB)} of one run."""
    rows = {}
    for section, parts in sectioned(text):
        if len(parts) < 7:
            continue
        try:
            # "-": no figure (LMDB runs at 4 KiB pages only).
            nums = [None if p == "-" else float(p) for p in parts[-6:]]
        except ValueError:
            continue
        if nums[0] is None:
            continue
        rows[(section, " ".join(parts[:-6]))] = (nums[4], nums[5])
    return rows


def parse_alone(text):
    """{(section, row): {engine: ops/s}} of a run of one engine, whose rows
    read "ENGINE  ROW  RATE ops/s"."""
    rows = {}
    for section, parts in sectioned(text):
        if len(parts) >= 4 and parts[-1] == "ops/s" and parts[0] in ENGINES:
            rows.setdefault((section, " ".join(parts[1:-2])), {})[parts[0]] = float(parts[-2])
    return rows


# Engine names as the benchmark prints them in one engine's rows, and as
# RDBX_BENCH_ENGINES takes them.
ENGINES = {"rdbx": "rdbx", "libmdbx": "libmdbx", "LMDB": "lmdb"}


def isolated(runs, extra, out_dir):
    """Ratios of each run, every engine measured in a process of its own."""
    results = []
    names = list(ENGINES)
    for k in range(runs):
        rates = {}
        # Each engine goes first in a third of the runs (they share the
        # machine's state from one process to the next).
        for name in names[k % len(names):] + names[:k % len(names)]:
            env = dict(os.environ, RDBX_BENCH_ENGINES=ENGINES[name], RDBX_BENCH_SYNC_TXNS="1")
            cmd = ["cargo", "bench", "-q", "-p", "rdbx-tests", "--bench", "compare"] + extra
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            path = os.path.join(out_dir, f"run-{k + 1}-{name}.txt")
            with open(path, "w") as f:
                f.write(p.stdout + p.stderr)
            if p.returncode != 0:
                sys.exit(f"run {k + 1} ({name}) failed (exit {p.returncode}); see {path}")
            for key, by in parse_alone(p.stdout).items():
                rates.setdefault(key, {}).update(by)
        ratio = lambda by, peer: by["rdbx"] / by[peer] if "rdbx" in by and by.get(peer) else None
        results.append({key: (ratio(by, "libmdbx"), ratio(by, "LMDB")) for key, by in rates.items()})
        print(f"run {k + 1}/{runs} done", file=sys.stderr)
    return results


def main():
    args = sys.argv[1:]
    if args and args[0] == "--parse":
        # Summarise kept outputs instead of running: --parse FILE...
        show([parse(open(f).read()) for f in args[1:]])
        return
    alone = bool(args) and args[0] == "--isolated"
    if alone:
        args = args[1:]
    extra = []
    if "--" in args:
        i = args.index("--")
        args, extra = args[:i], args[i + 1 :]
    runs = int(args[0]) if args else 3
    out_dir = os.path.join("target", "bench-runs")
    os.makedirs(out_dir, exist_ok=True)
    if alone:
        show(isolated(runs, extra, out_dir))
        return
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
