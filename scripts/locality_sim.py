#!/usr/bin/env python3
"""Commit locality in a steady random-update workload, simulated.

A file of P pages holds L live pages. Each commit rewrites D random live
pages: their old copies are freed (reusable from the next commit on) and D
free pages are allocated, longest free runs first (the best an allocator can
do without moving clean pages). Prints, for several P/L ratios, the average
number of runs (= write calls) per commit. docs/design.md ("Commit
locality") quotes the output: long runs need free space that is a large
share of the file.

Usage: scripts/locality_sim.py [L] [D]   (defaults 450 and 95, about the
random-UUID benchmark's last commits)
"""
import random
import sys


def runs(pages):
    pages = sorted(pages)
    return sum(1 for i, p in enumerate(pages) if i == 0 or p != pages[i - 1] + 1)


def free_runs(free):
    out, cur = [], []
    for p in sorted(free):
        if cur and p == cur[-1] + 1:
            cur.append(p)
        else:
            if cur:
                out.append(cur)
            cur = [p]
    if cur:
        out.append(cur)
    return sorted(out, key=len, reverse=True)


def simulate(P, L, D, commits=600, seed=1):
    rnd = random.Random(seed)
    pages = list(range(P))
    rnd.shuffle(pages)
    live, free, pending, seen = set(pages[:L]), set(pages[L:]), set(), []
    for c in range(commits):
        victims = rnd.sample(sorted(live), D)
        live.difference_update(victims)
        take = []
        for r in free_runs(free):
            if len(take) >= D:
                break
            take += r[: D - len(take)]
        free.difference_update(take)
        live.update(take)
        free |= pending
        pending = set(victims)
        if c >= commits - 100:
            seen.append(runs(take))
    return sum(seen) / len(seen)


def main():
    L = int(sys.argv[1]) if len(sys.argv) > 1 else 450
    D = int(sys.argv[2]) if len(sys.argv) > 2 else 95
    print(f"live pages {L}, pages per commit {D}")
    print("file/live  write calls per commit")
    for ratio in (1.3, 1.5, 1.7, 1.9, 2.2, 2.6, 3.0):
        print(f"{ratio:9.1f}  {simulate(int(L * ratio), L, D):.1f}")


if __name__ == "__main__":
    main()
