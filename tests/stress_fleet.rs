//! Smoke run of `rdbx-tools stress` with a mixed fleet: rdbx actors of every
//! role and a libmdbx actor (`mdbx-stress-actor`) writing one database at
//! the same time, with random kills; then libmdbx's own check of the final
//! databases.
//!
//! The `rdbx-tools` binary is taken from the target directory of this test
//! (target/<profile>/rdbx-tools): `cargo test --workspace` (scripts/test.sh)
//! builds it first. This test does not build it.

use std::path::PathBuf;
use std::process::Command;

use rdbx_tests::oracle;

fn rdbx_tools() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    // target/<profile>/deps/stress_fleet-HASH -> target/<profile>/rdbx-tools
    let bin = exe.parent().and_then(|d| d.parent()).expect("target dir").join("rdbx-tools");
    assert!(
        bin.is_file(),
        "{} is missing: build the workspace first (cargo build --release -p rdbx-tools, or scripts/test.sh)",
        bin.display()
    );
    bin
}

#[test]
fn mixed_fleet_smoke_run_with_kills() {
    let dir = tempfile::Builder::new().prefix("rdbx-stress-fleet").tempdir_in(ram_dir()).expect("temp dir");
    let out = Command::new(rdbx_tools())
        .arg("stress")
        .arg(dir.path())
        .args(["--seed", "20261124", "--loops", "4", "--probe-time", "11s", "--processes", "5"])
        .args(["--kill-rate", "30", "--db-upto-mb", "32", "--keep", "--json"])
        .arg("--foreign-actor")
        .arg(env!("CARGO_BIN_EXE_mdbx-stress-actor"))
        .output()
        .expect("run rdbx-tools stress");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let j: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("no JSON summary ({e}):\n{stdout}\n--- stderr\n{stderr}"));
    assert_eq!(out.status.code(), Some(0), "stress found failures:\n{stdout}\n--- stderr\n{stderr}");
    let t = &j["totals"];
    assert!(t["commits"].as_u64().unwrap() > 0, "{j}");
    assert!(t["tables_verified"].as_u64().unwrap() > 0, "{j}");
    assert!(t["checks_passed"].as_u64().unwrap() >= 8, "{j}");
    let probes = j["probes"].as_array().expect("probes");
    let foreign = probes
        .iter()
        .flat_map(|p| p["actors"].as_array().unwrap())
        .filter(|a| a.as_str().unwrap().ends_with("/foreign"))
        .count();
    assert!(foreign >= 4, "every probe runs a libmdbx actor: {j}");
    // libmdbx's own check of every final database.
    for p in probes {
        let kept = p["kept"].as_str().expect("kept database");
        let s = oracle::chk(kept).unwrap_or_else(|e| panic!("mdbx chk {kept}: {e}"));
        assert!(s.is_clean(), "libmdbx finds problems in {kept}:\n{}", s.report());
    }
}

fn ram_dir() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}
