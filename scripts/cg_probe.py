#!/usr/bin/env python3
"""Instruction counts of small commits under callgrind, for A/B work on the
commit path (counts are exact and repeatable where times on a shared VM
are not), and which functions moved between two recordings.

    scripts/cg_probe.py run TAG [ENGINE] [MAP] [COMMITS]
    scripts/cg_probe.py diff TAG_A TAG_B [ROWS]
    scripts/cg_probe.py footprint [ENGINE] [MAP] [COMMITS] [ROWS]
    scripts/cg_probe.py branches [ENGINE] [MAP] [COMMITS] [ROWS]
    scripts/cg_probe.py pgo [MAP] [COMMITS]

`run` builds the probe `tests/benches/small_commits.rs` and records it
twice under `valgrind --tool=callgrind --toggle-collect=*commits_phase*`
(only the timed loop counts): plain (one-put commits into a table of
10,000 records) and after a batch (`RDBX_PROBE_OTHER=1000000
RDBX_PROBE_RECORDS=0`: another table of 1M records updated by 100
transactions of 1,000 puts first). ENGINE is rdbx (default), lmdb or
libmdbx; MAP writemap (default) or pwrite; COMMITS 6000 by default. It
prints the instructions per commit of each and keeps the recordings as
$TMPDIR/cg.TAG.plain and $TMPDIR/cg.TAG.batch (callgrind_annotate reads
them).

`diff` lists the functions whose instructions changed most between the
plain recordings of two tags (self costs of each function, its inlined
code included: a change of inlining moves costs between rows; read the
totals first).

`footprint` records plain one-put commits with `--dump-instr=yes` and
prints the code they run: the 64-byte lines of machine code that execute
at least once every other commit on average (an instruction cache of 32
KiB holds 512), in all and by function, then the locked instructions of
the probe binary's own code it executed a commit. Instruction counts
miss both: what a loop whose code does not fit the cache pays to fetch
it again, and the few dozen cycles of each locked instruction.

`branches` records plain one-put commits (the probe's environment knobs
pass through: `RDBX_PROBE_VALUE=20000 RDBX_PROBE_KEYS=1000` makes them
blob commits) with callgrind's branch simulation and prints the
mispredicted branches a commit, in all and by function. Its predictor is
simple (a two-bit counter per branch, no history), so a branch that
follows a pattern a real predictor learns (the page kind alternating down
a tree) counts too; a branch on the data itself (which of two sorted lists
is next, the length of a free run) mispredicts on both. This VM has no
hardware counters; those mispredictions, at 15 to 20 cycles each, are
what an instruction count hides (the run list's branch-free merge, 41st
session: 6% more instructions, 15% less time on the blob probe).

`pgo` builds the probe twice more, in $TMPDIR/rdbx-pgo: instrumented
(`-Cprofile-generate`) and run on one-put commits with WRITEMAP and with
pwrite, then with that profile (`-Cprofile-use`; `llvm-profdata` comes
with `rustup component add llvm-tools`), and records one-put commits
(MAP, writemap by default) of the usual build and of the profile-guided
one: what a profile's block layout and branch weights are worth, which
inlining by hand does not give (45th session: 8,300 -> 7,352
instructions a commit, 1.15x -> 1.00x LMDB's time; docs/design.md,
"Inlining on the commit path"). The binaries stay there for
`scripts/ab_time.py compare`. Not how rdbx is built.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TMP = os.environ.get("TMPDIR", tempfile.gettempdir())


def probe_binary(env=None):
    out = subprocess.run(
        ["cargo", "bench", "-p", "rdbx-tests", "--bench", "small_commits", "--no-run",
         "--message-format=json"],
        cwd=ROOT, capture_output=True, text=True, check=True, env={**os.environ, **(env or {})}).stdout
    for line in out.splitlines():
        m = re.search(r'"executable":"([^"]+small_commits[^"]*)"', line)
        if m:
            return m.group(1)
    sys.exit("cg_probe: no small_commits executable in cargo's output")


def callgrind(binary, out, engine, mode, commits, options=(), env=None):
    """Records the probe's timed loop under callgrind (with `options`) into
    `out`; returns valgrind's report (its stderr)."""
    cmd = ["valgrind", "--tool=callgrind", *options, f"--callgrind-out-file={out}",
           "--toggle-collect=*commits_phase*", binary, engine, mode, str(commits), "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if r.returncode != 0:
        sys.exit(f"cg_probe: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    return r.stderr


def record(binary, out, engine, mode, commits, env):
    report = callgrind(binary, out, engine, mode, commits, env=env)
    m = re.search(r"Collected : (\d+)", report)
    if not m:
        sys.exit(f"cg_probe: no instruction count in valgrind's report:\n{report[-2000:]}")
    return int(m.group(1))


def run(tag, engine="rdbx", mode="writemap", commits="6000"):
    binary = probe_binary()
    commits = int(commits)
    for kind, env in [("plain", {}), ("batch", {"RDBX_PROBE_OTHER": "1000000", "RDBX_PROBE_RECORDS": "0"})]:
        total = record(binary, os.path.join(TMP, f"cg.{tag}.{kind}"), engine, mode, commits, env)
        print(f"{tag} {engine} {mode} {kind}: {total:,} instructions, {total / commits:,.0f} a commit")


def costs(path, event=None):
    """Self cost of each function (of its first event, or of `event`)."""
    show = ["--show=" + event, "--sort=" + event] if event else []
    out = subprocess.run(["callgrind_annotate", "--auto=no", *show, path],
                         capture_output=True, text=True, check=True).stdout
    d = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(.*?)(\s+\[.*)?$", line)
        if m and "PROGRAM TOTALS" not in m.group(2):
            # "file:function": code inlined into a function counts under
            # the file it came from; sum a function's lines over files.
            f = re.match(r"^(?:.*?\.(?:rs|c|h|S)|\?\?\?):(.*)$", m.group(2))
            name = f.group(1) if f else m.group(2)
            d[name] = d.get(name, 0) + int(m.group(1).replace(",", ""))
    return d


def diff(a, b, rows="30"):
    ca, cb = (costs(os.path.join(TMP, f"cg.{t}.plain")) for t in (a, b))
    keys = sorted(set(ca) | set(cb), key=lambda k: -abs(cb.get(k, 0) - ca.get(k, 0)))
    print(f"{'change':>11} {a:>11} {b:>11}  function")
    for k in keys[:int(rows)]:
        print(f"{cb.get(k, 0) - ca.get(k, 0):>11,} {ca.get(k, 0):>11,} {cb.get(k, 0):>11,}  {k[:110]}")


def instr_costs(path):
    """(object, function, address, cost) of each instruction's own cost
    in a `--dump-instr=yes` recording. Its cost lines read "ADDR LINE
    COST", the address absolute (0x...) or relative to the previous one
    (+N, -N, *), the line in the same forms; the line after "calls=" is a
    call's cost (skipped). Objects and functions are named once, then
    referred to by number."""
    named = {"ob": {}, "fn": {}}
    current = {"ob": None, "fn": None}
    addr, in_call = 0, False
    for line in open(path):
        # "ob=(N) name" or "fn=(N) name" names N (later lines give N
        # alone) and makes it current; "cob="/"cfn=" name a call's target.
        m = re.match(r"(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            callee, kind, n, name = m.groups()
            if name:
                named[kind][n] = name.strip()
            if not callee:
                current[kind] = named[kind][n]
            continue
        if line.startswith("calls="):
            in_call = True
            continue
        m = re.match(r"^(0x[0-9a-f]+|[+-]\d+|\*)\s+\S+\s+(\d+)$", line)
        if m:
            a = m.group(1)
            addr = int(a, 16) if a.startswith("0x") else addr if a == "*" else addr + int(a)
            if in_call:
                in_call = False
            elif current["ob"] and current["fn"]:
                yield current["ob"], current["fn"], addr, int(m.group(2))


def footprint(engine="rdbx", mode="writemap", commits="2000", rows="25"):
    commits = int(commits)
    out = os.path.join(TMP, f"cg.footprint.{engine}")
    binary = probe_binary()
    callgrind(binary, out, engine, mode, commits, ["--dump-instr=yes"])
    lines = {}
    for obj, fn, addr, cost in instr_costs(out):
        per_fn = lines.setdefault((os.path.basename(obj), fn), {})
        per_fn[addr >> 6] = per_fn.get(addr >> 6, 0) + cost
    # A line runs at least once every other commit: at least one
    # instruction of it per two commits, the least a run of it costs.
    hot = {f: {l for l, c in ls.items() if 2 * c >= commits} for f, ls in lines.items()}
    total = len({(f[0], l) for f, ls in hot.items() for l in ls})
    print(f"{engine} {mode}: {total} lines of code ({total * 64:,} bytes) run every other commit or more")
    for f, ls in sorted(hot.items(), key=lambda kv: -len(kv[1]))[:int(rows)]:
        if ls:
            print(f"{len(ls):6} {f[0][:24]:24} {f[1][:100]}")
    locked(out, commits, binary)


def locked(path, commits, binary):
    """The locked instructions (lock-prefixed, `xchg` with memory,
    `mfence`) of the probe binary's own code that the recording at `path`
    executed, a commit: a few dozen cycles each, which an instruction
    count does not show. (The C library's, the writer lock's mutex among
    them, are not counted.)"""
    name = os.path.basename(binary)
    counts, owner = {}, {}
    for obj, fn, addr, cost in instr_costs(path):
        if os.path.basename(obj) == name:
            counts[addr] = counts.get(addr, 0) + cost
            owner[addr] = fn
    if not counts:
        return
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary, f"--start-address={min(counts):#x}",
                          f"--stop-address={max(counts) + 16:#x}"], capture_output=True, text=True).stdout
    total = 0.0
    for line in dis.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
        if not m or int(m.group(1), 16) not in counts:
            continue
        ins = m.group(2)
        if ins.startswith("lock") or re.match(r"xchg\s+.*\(", ins) or ins.startswith("mfence"):
            per = counts[int(m.group(1), 16)] / commits
            if per >= 0.5:
                total += per
                print(f"  locked {per:5.2f} a commit: {ins[:40]:40} {owner[int(m.group(1), 16)][:70]}")
    print(f"locked instructions of the probe's own code: {total:.1f} a commit")


def branches(engine="rdbx", mode="writemap", commits="6000", rows="20"):
    commits = int(commits)
    out = os.path.join(TMP, f"cg.branches.{engine}")
    report = callgrind(probe_binary(), out, engine, mode, commits, ["--branch-sim=yes"])
    m = re.search(r"Mispredicts:\s+([\d,]+)", report)
    if not m:
        sys.exit(f"cg_probe: no branch counts in valgrind's report:\n{report[-2000:]}")
    total = int(m.group(1).replace(",", ""))
    print(f"{engine} {mode}: {total / commits:,.1f} mispredicted branches a commit (simulated; "
          "by function below, the conditional ones)")
    per_fn = costs(out, "Bcm")
    for fn, n in sorted(per_fn.items(), key=lambda kv: -kv[1])[:int(rows)]:
        print(f"{n / commits:8.1f}  {fn[:110]}")


def llvm_profdata():
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True,
                             check=True).stdout.strip()
    host = re.search(r"host: (\S+)", subprocess.run(["rustc", "-vV"], capture_output=True, text=True,
                                                    check=True).stdout).group(1)
    tool = os.path.join(sysroot, "lib", "rustlib", host, "bin", "llvm-profdata")
    if not os.path.exists(tool):
        sys.exit(f"cg_probe: no {tool}: run `rustup component add llvm-tools`")
    return tool


def pgo(mode="writemap", commits="3000"):
    commits = int(commits)
    # Before minutes of building: the merge needs it.
    profdata = llvm_profdata()
    work = os.path.join(TMP, "rdbx-pgo")
    data, profile = os.path.join(work, "data"), os.path.join(work, "merged.profdata")
    shutil.rmtree(data, ignore_errors=True)
    gen = probe_binary({"RUSTFLAGS": f"-Cprofile-generate={data}",
                        "CARGO_TARGET_DIR": os.path.join(work, "target-gen")})
    for m in ("writemap", "pwrite"):
        subprocess.run([gen, "rdbx", m, "20000", "1"], check=True, capture_output=True)
    subprocess.run([profdata, "merge", "-o", profile, data], check=True)
    use = probe_binary({"RUSTFLAGS": f"-Cprofile-use={profile}",
                        "CARGO_TARGET_DIR": os.path.join(work, "target-use")})
    usual = probe_binary()
    for name, binary in (("usual", usual), ("profile-guided", use)):
        keep = os.path.join(work, f"probe-{name}")
        shutil.copy(binary, keep)
        total = record(keep, os.path.join(TMP, f"cg.pgo-{name}"), "rdbx", mode, commits, {})
        print(f"{name:>15} build, {mode}: {total / commits:,.0f} instructions a one-put commit ({keep})")


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("run", "diff", "footprint", "branches", "pgo"):
        sys.exit(__doc__)
    if sys.argv[1] == "pgo":
        pgo(*sys.argv[2:4])
        return
    if sys.argv[1] == "footprint":
        footprint(*sys.argv[2:6])
        return
    if sys.argv[1] == "branches":
        branches(*sys.argv[2:6])
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    if sys.argv[1] == "run":
        run(*sys.argv[2:6])
    else:
        if len(sys.argv) < 4:
            sys.exit(__doc__)
        diff(*sys.argv[2:5])


if __name__ == "__main__":
    main()
