//! `mdbx-oracle`: the real libmdbx as a command-line tool, so tests can run it
//! in a separate process next to rdbx.
//!
//! ```text
//! mdbx-oracle dump  PATH [--print]      every table as mdbx_dump text (main table's plain
//!                                       records too, see oracle::dump_sections)
//! mdbx-oracle stat  PATH                "Status of NAME" blocks for every table
//! mdbx-oracle info  PATH                geometry, txn id and page-operation counters
//!                                       (key=value lines)
//! mdbx-oracle chk   PATH [-v]           mdbx_env_chk; exit 0 clean, 1 problems, 2 error
//! mdbx-oracle snapcheck PATH TABLE COUNT UNTIL [SECS]
//!                                       read transactions in a loop: every snapshot of TABLE
//!                                       must hold COUNT records whose values all start with
//!                                       the same u64 (LE), never decreasing between snapshots;
//!                                       stops once that u64 reaches UNTIL (or fails after SECS,
//!                                       default 120)
//! mdbx-oracle openclose PATH TAG ROUNDS [--safe-nosync]
//!                                       ROUNDS times: open, put "TAG-<round>" = "v" into
//!                                       the main table, commit, close (the lock-file
//!                                       hand-over under processes racing to open and close)
//! mdbx-oracle write PATH SCRIPT [opts]  apply an ops script (see rdbx_tests::ops); SCRIPT "-" = stdin
//!     opts: --page-size N  --no-sub-dir  --max-dbs N  --safe-nosync
//!           --geometry LOWER,NOW,UPPER,GROWTH,SHRINK (bytes, "-" = default)
//! ```
//! Exit codes: 0 success, 1 check problems, 2 error (message on stderr).

use std::io::{Read, Write};
use std::process::ExitCode;

use rdbx_tests::{golden, ops, oracle};

fn usage() -> ExitCode {
    eprintln!(
        "usage: mdbx-oracle dump PATH [--print] | stat PATH | info PATH | park PATH | chk PATH [-v] | snapcheck PATH TABLE COUNT UNTIL [SECS] | openclose PATH TAG ROUNDS [--safe-nosync] | write PATH SCRIPT [--page-size N] [--no-sub-dir] [--max-dbs N] [--safe-nosync] [--sync-bytes N] [--geometry L,N,U,G,S]"
    );
    ExitCode::from(2)
}

fn ro(path: &str) -> Result<oracle::Env, String> {
    oracle::Env::open(path, &oracle::EnvOptions { read_only: true, ..Default::default() })
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    let cmd = args.first().map(String::as_str).unwrap_or("");
    let Some(path) = args.get(1) else {
        return Ok(usage());
    };
    let rest = &args[2..];
    match cmd {
        "dump" => {
            let env = ro(path)?;
            let txn = env.begin_ro()?;
            let mut secs = oracle::dump_sections(&txn)?;
            let print = rest.iter().any(|a| a == "--print" || a == "-p");
            for s in &mut secs {
                if print {
                    s.format = golden::DumpFormat::Print;
                }
            }
            drop(txn);
            print!("{}", golden::format_dump(&secs));
            Ok(ExitCode::SUCCESS)
        }
        "stat" => {
            let env = ro(path)?;
            let txn = env.begin_ro()?;
            print!("{}", oracle::format_stats(&oracle::all_stats(&txn)?));
            Ok(ExitCode::SUCCESS)
        }
        "info" => {
            let env = ro(path)?;
            let i = env.info()?;
            println!("page_size={}", i.page_size);
            println!("geo_lower={}", i.geo_lower);
            println!("geo_current={}", i.geo_current);
            println!("geo_upper={}", i.geo_upper);
            println!("geo_grow={}", i.geo_grow);
            println!("geo_shrink={}", i.geo_shrink);
            println!("file_size={}", i.file_size);
            println!("last_pgno={}", i.last_pgno);
            println!("recent_txnid={}", i.recent_txnid);
            println!("unsync_volume={}", i.unsync_volume);
            println!("autosync_threshold={}", i.autosync_threshold);
            let names = [
                "newly", "cow", "clone", "split", "merge", "spill", "unspill", "wops", "prefault", "mincore", "msync",
                "fsync",
            ];
            for (n, v) in names.iter().zip(i.pgop) {
                println!("pgop_{n}={v}");
            }
            Ok(ExitCode::SUCCESS)
        }
        "park" => {
            // A parked read transaction: "reader TXNID", then a line on
            // stdin, then "unpark RC" (the code of mdbx_txn_unpark).
            let env = ro(path)?;
            let mut txn = env.begin_ro()?;
            txn.park(false)?;
            println!("reader {}", txn.id());
            std::io::stdout().flush().map_err(|e| e.to_string())?;
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map_err(|e| e.to_string())?;
            println!("unpark {}", txn.unpark(false));
            Ok(ExitCode::SUCCESS)
        }
        "chk" => {
            let s = oracle::chk(path)?;
            if rest.iter().any(|a| a == "-v") || !s.is_clean() {
                print!("{}", s.report());
            }
            println!(
                "chk: rc={} problems={} (total {}, meta {}, tree {}, gc-tree {}, kv-tree {}, gc {}, kv {}), {} pages processed",
                s.rc,
                s.problems(),
                s.total_problems,
                s.problems_meta,
                s.tree_problems,
                s.gc_tree_problems,
                s.kv_tree_problems,
                s.problems_gc,
                s.problems_kv,
                s.processed_pages
            );
            Ok(if s.is_clean() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        "snapcheck" => snapcheck(path, rest),
        "openclose" => openclose(path, rest),
        "write" => {
            let Some(script) = rest.first() else {
                return Ok(usage());
            };
            let text = if script == "-" {
                let mut s = String::new();
                std::io::stdin().read_to_string(&mut s).map_err(|e| format!("stdin: {e}"))?;
                s
            } else {
                std::fs::read_to_string(script).map_err(|e| format!("{script}: {e}"))?
            };
            let mut opts = oracle::EnvOptions::default();
            let mut sync_bytes: Option<u64> = None;
            let mut i = 1;
            while i < rest.len() {
                let a = rest[i].as_str();
                let mut next = || {
                    i += 1;
                    rest.get(i).cloned().ok_or(format!("{a} needs a value"))
                };
                match a {
                    "--page-size" => opts.page_size = Some(next()?.parse().map_err(|e| format!("{a}: {e}"))?),
                    "--max-dbs" => opts.max_dbs = next()?.parse().map_err(|e| format!("{a}: {e}"))?,
                    "--no-sub-dir" => opts.no_sub_dir = Some(true),
                    "--safe-nosync" => opts.durability = oracle::Durability::SafeNoSync,
                    "--write-map" => opts.write_map = true,
                    "--sync-bytes" => sync_bytes = Some(next()?.parse().map_err(|e| format!("{a}: {e}"))?),
                    "--geometry" => {
                        let v = next()?;
                        let f: Vec<Option<usize>> = v
                            .split(',')
                            .map(|x| if x == "-" { Ok(None) } else { x.parse().map(Some) })
                            .collect::<Result<_, _>>()
                            .map_err(|e| format!("--geometry {v}: {e}"))?;
                        if f.len() != 5 {
                            return Err(format!("--geometry needs 5 fields, got {v}"));
                        }
                        opts.geometry =
                            oracle::Geometry { lower: f[0], now: f[1], upper: f[2], growth: f[3], shrink: f[4] };
                    }
                    _ => return Err(format!("unknown option {a}")),
                }
                i += 1;
            }
            let ops = ops::parse_ops(&text)?;
            let env = oracle::Env::open(path, &opts)?;
            if let Some(b) = sync_bytes {
                env.set_sync_bytes(b)?;
            }
            let commits = ops::apply_oracle(&env, &ops)?;
            let txnid = env.info()?.recent_txnid;
            env.close()?;
            println!("ok commits={commits} txnid={txnid}");
            Ok(ExitCode::SUCCESS)
        }
        _ => Ok(usage()),
    }
}

fn openclose(path: &str, rest: &[String]) -> Result<ExitCode, String> {
    let (Some(tag), Some(rounds)) = (rest.first(), rest.get(1)) else {
        return Ok(usage());
    };
    let rounds: u32 = rounds.parse().map_err(|e| format!("{rounds}: {e}"))?;
    let mut opts = oracle::EnvOptions::default();
    if rest.iter().skip(2).any(|a| a == "--safe-nosync") {
        opts.durability = oracle::Durability::SafeNoSync;
    }
    for i in 0..rounds {
        let env = oracle::Env::open(path, &opts).map_err(|e| format!("{tag}: open #{i}: {e}"))?;
        let mut txn = env.begin_rw().map_err(|e| format!("{tag}: begin #{i}: {e}"))?;
        let main = txn.open_table(None).map_err(|e| format!("{tag}: table #{i}: {e}"))?;
        txn.put(main, format!("{tag}-{i:05}").as_bytes(), b"v", 0).map_err(|e| format!("{tag}: put #{i}: {e}"))?;
        txn.commit().map_err(|e| format!("{tag}: commit #{i}: {e}"))?;
        env.close().map_err(|e| format!("{tag}: close #{i}: {e}"))?;
    }
    println!("ok rounds={rounds}");
    Ok(ExitCode::SUCCESS)
}

fn snapcheck(path: &str, rest: &[String]) -> Result<ExitCode, String> {
    if rest.len() < 3 {
        return Ok(usage());
    }
    let table = rest[0].as_bytes();
    let num = |s: &String| s.parse::<u64>().map_err(|e| format!("{s}: {e}"));
    let count = num(&rest[1])?;
    let until = num(&rest[2])?;
    let secs = rest.get(3).map(num).transpose()?.unwrap_or(120);
    let env = oracle::Env::open(path, &oracle::EnvOptions::default())?;
    let start = std::time::Instant::now();
    let (mut last, mut snapshots, mut distinct) = (0u64, 0u64, 0u64);
    loop {
        if start.elapsed().as_secs() > secs {
            return Err(format!(
                "snapcheck: gave up after {secs} s at value {last} (waiting for {until}), {snapshots} snapshots"
            ));
        }
        let txn = env.begin_ro()?;
        let dbi = match txn.open_table(Some(table)) {
            Ok(d) => d,
            Err(e) if oracle::error_code(&e) == Some(oracle::MDBX_NOTFOUND) => {
                drop(txn);
                std::thread::sleep(std::time::Duration::from_millis(2));
                continue;
            }
            Err(e) => return Err(e),
        };
        let mut n = 0u64;
        let mut first: Option<u64> = None;
        let mut torn = None;
        txn.for_each(dbi, |k, v| {
            n += 1;
            let mut w = [0u8; 8];
            let l = v.len().min(8);
            w[..l].copy_from_slice(&v[..l]);
            let x = u64::from_le_bytes(w);
            match first {
                None => first = Some(x),
                Some(f) if f != x && torn.is_none() => {
                    torn = Some(format!("key {k:02x?} has value {x}, the first key {f}"))
                }
                _ => {}
            }
            Ok(())
        })?;
        let txnid = txn.id();
        drop(txn);
        snapshots += 1;
        if let Some(t) = torn {
            println!("TORN snapshot at txn {txnid}: {t}");
            return Ok(ExitCode::from(1));
        }
        if snapshots == 1 {
            use std::io::Write;
            println!("started");
            let _ = std::io::stdout().flush();
        }
        if n != count {
            println!("BAD snapshot at txn {txnid}: {n} records, expected {count}");
            return Ok(ExitCode::from(1));
        }
        let v = first.unwrap_or(0);
        if v < last {
            println!("BACKWARDS snapshot at txn {txnid}: value {v} after {last}");
            return Ok(ExitCode::from(1));
        }
        if v != last {
            distinct += 1;
        }
        last = v;
        if v >= until {
            println!("ok snapshots={snapshots} distinct={distinct} last={last}");
            return Ok(ExitCode::SUCCESS);
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mdbx-oracle: {e}");
            ExitCode::from(2)
        }
    }
}
