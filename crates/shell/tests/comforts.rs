//! sqlite3-class comforts (issue 14 item 5): timer, headers, csv, value
//! sizes, key and value display modes, multi-line quoted values, values from
//! files and standard input, exists, trailing comments, `~` in paths, command
//! names in any case, single-file databases.

mod common;

use std::process::{Command, Stdio};

use common::*;

fn db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path());
    dir
}

#[test]
fn timer_reports_each_command_on_stderr() {
    let d = db();
    let r = cmd(d.path(), "timer on; get -t colors red; timer; timer off; get -t colors red");
    assert!(r.ok(), "{r:?}");
    // Standard output holds only data; one time line per command while on.
    assert_eq!(r.stdout, "ff0000\non\nff0000\n");
    assert_eq!(r.stderr.lines().filter(|l| l.starts_with("time: ")).count(), 3, "{r:?}");
    let r = cmd(d.path(), "timer maybe");
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("use on or off"), "{r:?}");
}

#[test]
fn csv_headers_and_value_sizes() {
    let d = db();
    let r = cmd(d.path(), "format csv; scan -t colors b c --sizes");
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "key,value,value_size\r\n0x62696e01,0x000102ff,4\r\nblack,000000,6\r\nblue,0000ff,6\r\n");
    let r = cmd(d.path(), "format csv; headers off; scan -t colors bl c");
    assert_eq!(r.stdout, "black,000000\r\nblue,0000ff\r\n", "{r:?}");
    let r = cmd(d.path(), "format csv; scan -t colors --prefix with");
    assert_eq!(r.stdout, "key,value\r\nwith space,two words\r\n", "{r:?}");
    // Tables without the header row.
    let r = cmd(d.path(), "headers off; scan -t colors bl c");
    assert!(r.ok() && !r.stdout.contains("key") && r.stdout.contains("black"), "{r:?}");
    let r = run(&[d.path().to_str().unwrap(), "-f", "csv", "-c", "count -t colors"], None);
    assert_eq!(r.stdout, "6\r\n", "{r:?}");
}

#[test]
fn keys_and_values_have_display_modes_of_their_own() {
    let d = db();
    let r = cmd(d.path(), "format csv --keys hex; scan -t colors bl c");
    assert_eq!(r.stdout, "key,value\r\n0x626c61636b,000000\r\n0x626c7565,0000ff\r\n", "{r:?}");
    let r = cmd(d.path(), "format csv --values text; scan -t colors bin c --limit 1");
    assert_eq!(r.stdout, "key,value\r\n0x62696e01,\\x00\\x01\\x02\\xff\r\n", "{r:?}");
    let r = cmd(d.path(), "format --keys hex --values text; format");
    assert_eq!(r.stdout, "table (keys hex, values text)\n", "{r:?}");
    let r = cmd(d.path(), "format json --keys hex; format; get -t colors red");
    assert_eq!(
        r.stdout,
        "{\"keys\":\"hex\",\"values\":\"auto\",\"format\":\"json\"}\n\
         {\"key\":\"red\",\"key_hex\":\"726564\",\"value\":\"ff0000\",\"value_hex\":\"666630303030\"}\n"
    );
    let r = cmd(d.path(), "format --keys octal");
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("use auto, text, hex"), "{r:?}");
}

#[test]
fn quoted_values_span_lines() {
    let d = db();
    let script =
        "put -t colors poem \"roses\nare red\"\nget -t colors poem\nput -t colors two 'a\n\nb'; get -t colors two\n";
    let r = run(&[d.path().to_str().unwrap(), "--write", "-f", "json"], Some(script));
    assert!(r.ok(), "{r:?}");
    let v = json(&r);
    assert_eq!(v[0]["value"], "roses\nare red");
    assert_eq!(v[1]["value"], "a\n\nb");
    let r = cmd_rw(d.path(), "put -t colors c 'x\ny'\nformat raw; get -t colors c");
    assert_eq!(r.stdout, "x\ny\n", "{r:?}");
    // A quote never closed is still an error naming where it opened.
    let r = run(&[d.path().to_str().unwrap()], Some("get \"x\nscan\n"));
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("line 1: unterminated double quote (opened at column 5)"), "{r:?}");
}

#[test]
fn values_from_a_file_or_standard_input() {
    let d = db();
    let f = d.path().join("value.bin");
    std::fs::write(&f, b"\x00from a file\xff").unwrap();
    let r = cmd_rw(d.path(), &format!("put -t colors f @{}; put -t colors at '@{}'", f.display(), f.display()));
    assert!(r.ok(), "{r:?}");
    let t = dump_table(d.path(), "colors");
    let get = |k: &[u8]| t.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    assert_eq!(get(b"f").unwrap(), b"\x00from a file\xff");
    assert_eq!(get(b"at").unwrap(), format!("@{}", f.display()).into_bytes());
    // `-`: standard input, when the commands come from -c.
    let r = run_bytes(&[d.path().to_str().unwrap(), "-w", "-c", "put -t colors s -"], Some(b"piped\nbytes\x01"));
    assert!(r.ok(), "{r:?}");
    assert_eq!(dump_table(d.path(), "colors").iter().find(|(k, _)| k == b"s").unwrap().1, b"piped\nbytes\x01");
    // In a script on standard input, `-` is refused.
    let r = run(&[d.path().to_str().unwrap(), "-w"], Some("put -t colors s2 -\n"));
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("standard input is where the commands come from"), "{r:?}");
    let r = cmd_rw(d.path(), "put -t colors m @/no/such/file");
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("/no/such/file"), "{r:?}");
}

#[test]
fn exists_says_true_or_false() {
    let d = db();
    let r = cmd(d.path(), "exists -t colors red; exists -t colors mauve; exists -t ints 3");
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "true\nfalse\ntrue\n");
    let r = run(&[d.path().to_str().unwrap(), "-f", "json", "-c", "exists -t colors mauve"], None);
    assert_eq!(json(&r)[0], serde_json::json!({"key": "mauve", "key_hex": "6d61757665", "exists": false}));
}

#[test]
fn trailing_comments_and_command_names_in_any_case() {
    let d = db();
    let r = cmd(d.path(), "GET -t colors red # the red one\nUse colors; Get blue   # and blue");
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.stdout, "ff0000\n0000ff\n");
    let r = run(&[d.path().to_str().unwrap()], Some("get -t colors 'a # b' # not found\n"));
    assert!(r.stderr.contains("key 'a # b' not found"), "{r:?}");
}

#[test]
fn tilde_is_the_home_directory() {
    let d = db();
    let home = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args([d.path().to_str().unwrap(), "-c", "copy ~/copy.dat; dump -t colors ~/colors.dump"])
        .env("HOME", home.path())
        .env("RDBX_HISTORY", "")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(home.path().join("copy.dat").is_file() && home.path().join("colors.dump").is_file());
    let o = Command::new(BIN)
        .args(["-c", "open ~/copy.dat; get -t colors red"])
        .env("HOME", home.path())
        .env("RDBX_HISTORY", "")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ff0000\n", "{o:?}");
}

#[test]
fn create_makes_a_single_file_database() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("one.mdbx");
    let p = f.to_str().unwrap();
    let r = run(&[p, "--create", "--single-file", "-c", "create t; put -t t k v"], None);
    assert!(r.ok(), "{r:?}");
    assert!(f.is_file(), "the data file is PATH itself");
    assert!(dir.path().join("one.mdbx-lck").is_file());
    assert_eq!(cmd(&f, "get -t t k").stdout, "v\n");
    // In the shell too.
    let g = dir.path().join("two.mdbx");
    let r = run(&[p, "-c", &format!("open {} --create --single-file; tables", g.display())], None);
    assert!(r.ok() && g.is_file(), "{r:?}");
    let r = run(&[p, "--single-file", "-c", "tables"], None);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("--single-file goes with --create"), "{r:?}");
}
