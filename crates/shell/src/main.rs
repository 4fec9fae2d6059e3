//! `rdbx` — a minimal, read-only interactive shell for MDBX/rdbx databases.
//!
//! ```text
//! rdbx PATH                 read commands from stdin
//! rdbx PATH -c "cmd; cmd"   run the given commands and exit
//! rdbx --create-demo PATH   create (or refresh) a small demo database
//! ```
//!
//! Commands: `tables`, `get TABLE KEY`, `scan TABLE [LIMIT]`, `stat TABLE`,
//! `help`, `quit`. This is the first cut: the full shell (writes, ranges,
//! transactions, ...) is planned.

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rdbx::{Db, DbFlags, Env, PutFlags, RoTxn};

const PROG: &str = "rdbx";
/// Table handles the read-only shell can hold at once.
const MAX_DBS: u32 = 1024;
/// The pseudo table name of the main (unnamed) table, as the mdbx tools spell it.
const MAIN: &str = "@MAIN";

const USAGE: &str = "\
rdbx — a read-only shell for MDBX/rdbx databases (first cut)

USAGE:
    rdbx [-c \"CMD; CMD ...\"] PATH
    rdbx --create-demo PATH
    rdbx -h | --help
    rdbx -V | --version

PATH is a database directory (holding mdbx.dat) or a data file. The database
is opened read-only. Without -c, commands are read from standard input, one
or more per line (separated by ';').

OPTIONS:
    -c CMDS              run the ';'-separated commands CMDS, then exit
    --create-demo PATH   create (or refresh) a small demo database at PATH
                         (tables: fruit, numbers [INTEGER_KEY],
                         domains [REVERSE_KEY], blobs), then exit
    -h, --help           print this help
    -V, --version        print the version

COMMANDS:
    tables               list the named tables
    get TABLE KEY        print the value stored under KEY
    scan TABLE [LIMIT]   print the records of TABLE in key order (all, or
                         the first LIMIT)
    stat TABLE           print the table's statistics (mdbx_stat layout)
    help                 print the list of commands
    quit                 leave the shell (also: exit, end of input)

TABLE is a table name, or @MAIN for the main (unnamed) table.
KEY is UTF-8 text, or 0x followed by hex digits for binary keys; on an
INTEGER_KEY table a decimal number is taken as the integer key. Use double
quotes for text with spaces or ';' (\\\" and \\\\ escape inside quotes).
Values are printed as text when printable, otherwise as 0x-hex.

Not available yet (planned): writing commands (put, del, drop), cursor
navigation, transactions, ranges, output formats.

EXIT STATUS:
    0 all commands succeeded; 1 the database could not be opened or a
    command failed; 2 usage error.
";

const COMMANDS_HELP: &str = "\
commands:
  tables               list the named tables
  get TABLE KEY        print the value stored under KEY
  scan TABLE [LIMIT]   print the records of TABLE in key order
  stat TABLE           print the table's statistics
  help                 this list
  quit                 leave the shell
TABLE: a table name or @MAIN; KEY: text, 0xHEX, or a number on INTEGER_KEY tables";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse_args(&args) {
        Ok(Mode::Help) => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Mode::Version) => {
            println!("{PROG} {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Ok(Mode::CreateDemo(path)) => match create_demo(&path) {
            Ok(summary) => {
                println!("created demo database {}: {summary}", path.display());
                println!("try: {PROG} {} -c \"tables; scan fruit; get numbers 7; stat blobs\"", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{PROG}: {}: cannot create the demo database: {e}", path.display());
                ExitCode::from(1)
            }
        },
        Ok(Mode::Shell { path, commands }) => run_shell(&path, commands.as_deref()),
        Err(msg) => {
            eprintln!("{PROG}: {msg}");
            eprintln!("usage: {PROG} [-c \"CMD; CMD\"] PATH | --create-demo PATH | --help");
            ExitCode::from(2)
        }
    }
}

enum Mode {
    Help,
    Version,
    CreateDemo(PathBuf),
    Shell { path: PathBuf, commands: Option<String> },
}

fn parse_args(args: &[String]) -> Result<Mode, String> {
    let mut path: Option<PathBuf> = None;
    let mut commands: Option<String> = None;
    let mut demo: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => return Ok(Mode::Help),
            "-V" | "--version" => return Ok(Mode::Version),
            "-c" => {
                let c = it.next().ok_or("-c needs an argument (the commands)")?;
                commands = Some(c.clone());
            }
            "--create-demo" => {
                let p = it.next().ok_or("--create-demo needs a PATH")?;
                demo = Some(PathBuf::from(p));
            }
            s if s.starts_with('-') && s.len() > 1 => return Err(format!("unknown option '{s}'")),
            s => {
                if path.is_some() {
                    return Err(format!("unexpected extra argument '{s}'"));
                }
                path = Some(PathBuf::from(s));
            }
        }
    }
    match (demo, path) {
        (Some(d), None) if commands.is_none() => Ok(Mode::CreateDemo(d)),
        (Some(_), _) => Err("--create-demo takes only a PATH".into()),
        (None, Some(path)) => Ok(Mode::Shell { path, commands }),
        (None, None) => Err("missing PATH".into()),
    }
}

fn open_read_only(path: &Path) -> Result<Env, String> {
    // Check first so that a read-only open never creates anything.
    if !path.exists() {
        return Err(format!("{}: No such file or directory", path.display()));
    }
    Env::builder()
        .read_only(true)
        .max_dbs(MAX_DBS)
        .open(path)
        .map_err(|e| format!("{}: cannot open: {e}", path.display()))
}

fn run_shell(path: &Path, commands: Option<&str>) -> ExitCode {
    let env = match open_read_only(path) {
        Ok(env) => env,
        Err(msg) => {
            eprintln!("{PROG}: {msg}");
            return ExitCode::from(1);
        }
    };
    let mut shell = Shell { env: &env, path, failed: false };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match commands {
        Some(cmds) => {
            shell.run_line(cmds, &mut out);
        }
        None => {
            let interactive = io::stdin().is_terminal();
            let stdin = io::stdin();
            let mut lines = stdin.lock().lines();
            loop {
                if interactive {
                    let _ = write!(out, "rdbx> ");
                    let _ = out.flush();
                }
                let line = match lines.next() {
                    None => break,
                    Some(Ok(l)) => l,
                    Some(Err(e)) => {
                        eprintln!("{PROG}: reading standard input: {e}");
                        shell.failed = true;
                        break;
                    }
                };
                if shell.run_line(&line, &mut out) == Flow::Quit {
                    break;
                }
            }
        }
    }
    let _ = out.flush();
    if shell.failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

struct Shell<'a> {
    env: &'a Env,
    path: &'a Path,
    failed: bool,
}

impl Shell<'_> {
    fn run_line(&mut self, line: &str, out: &mut impl Write) -> Flow {
        let commands = match tokenize(line) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{PROG}: {e}");
                self.failed = true;
                return Flow::Continue;
            }
        };
        for words in commands {
            if words.is_empty() {
                continue;
            }
            match self.run(&words, out) {
                Ok(Flow::Quit) => return Flow::Quit,
                Ok(Flow::Continue) => {}
                Err(e) => {
                    eprintln!("{PROG}: {}: {}: {e}", self.path.display(), words[0]);
                    self.failed = true;
                }
            }
        }
        Flow::Continue
    }

    fn run(&mut self, words: &[String], out: &mut impl Write) -> Result<Flow, String> {
        let w = |e: io::Error| e.to_string();
        let args = &words[1..];
        match (words[0].as_str(), args.len()) {
            ("quit" | "exit" | "q", 0) => return Ok(Flow::Quit),
            ("help" | "?", 0) => writeln!(out, "{COMMANDS_HELP}").map_err(w)?,
            ("tables", 0) => {
                let txn = self.env.begin_ro_txn().map_err(|e| e.to_string())?;
                for name in txn.table_names().map_err(|e| e.to_string())? {
                    writeln!(out, "{}", render(&name)).map_err(w)?;
                }
            }
            ("get", 2) => {
                let txn = self.env.begin_ro_txn().map_err(|e| e.to_string())?;
                let (db, flags) = open_table(&txn, &args[0])?;
                let key = parse_key(&txn, db, flags, &args[1])?;
                match txn.get(db, &key).map_err(|e| e.to_string())? {
                    Some(v) => writeln!(out, "{}", render(v)).map_err(w)?,
                    None => return Err(format!("key {} not found in table {}", args[1], args[0])),
                }
            }
            ("scan", 1 | 2) => {
                let limit = match args.get(1) {
                    None => u64::MAX,
                    Some(l) => l.parse::<u64>().map_err(|_| format!("bad LIMIT '{l}'"))?,
                };
                let txn = self.env.begin_ro_txn().map_err(|e| e.to_string())?;
                let (db, flags) = open_table(&txn, &args[0])?;
                let mut cursor = txn.cursor(db).map_err(|e| e.to_string())?;
                let mut n = 0u64;
                while n < limit {
                    match cursor.next().map_err(|e| e.to_string())? {
                        Some((k, v)) => writeln!(out, "{}: {}", render_key(k, flags), render(v)).map_err(w)?,
                        None => break,
                    }
                    n += 1;
                }
            }
            ("stat", 1) => {
                let txn = self.env.begin_ro_txn().map_err(|e| e.to_string())?;
                let (db, _) = open_table(&txn, &args[0])?;
                let st = txn.db_stat(db).map_err(|e| e.to_string())?;
                let title = if args[0] == MAIN { "Main DB" } else { args[0].as_str() };
                writeln!(out, "Status of {title}").map_err(w)?;
                writeln!(out, "  Pagesize: {}", st.page_size).map_err(w)?;
                writeln!(out, "  Tree depth: {}", st.depth).map_err(w)?;
                writeln!(out, "  Branch pages: {}", st.branch_pages).map_err(w)?;
                writeln!(out, "  Leaf pages: {}", st.leaf_pages).map_err(w)?;
                writeln!(out, "  Large/Overflow pages: {}", st.overflow_pages).map_err(w)?;
                writeln!(out, "  Entries: {}", st.entries).map_err(w)?;
            }
            (cmd @ ("quit" | "exit" | "q" | "help" | "?" | "tables" | "get" | "scan" | "stat"), _) => {
                return Err(format!("wrong number of arguments (try 'help'): {cmd}"));
            }
            (cmd, _) => return Err(format!("unknown command '{cmd}' (try 'help')")),
        }
        Ok(Flow::Continue)
    }
}

/// Opens `name` (`@MAIN` = the main table) and returns the handle and its flags.
fn open_table(txn: &RoTxn<'_>, name: &str) -> Result<(Db, DbFlags), String> {
    let db = if name == MAIN { txn.open_db(None) } else { txn.open_db_bytes(Some(&parse_bytes(name)?)) };
    let db = db.map_err(|e| match e {
        rdbx::Error::NotFound => format!("no table named '{name}'"),
        e => format!("table '{name}': {e}"),
    })?;
    let flags = txn.db_flags(db).map_err(|e| e.to_string())?;
    Ok((db, flags))
}

/// `0x...` is hex, anything else is the UTF-8 bytes of the text.
fn parse_bytes(s: &str) -> Result<Vec<u8>, String> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => parse_hex(hex).ok_or_else(|| format!("bad hex '{s}'")),
        None => Ok(s.as_bytes().to_vec()),
    }
}

fn parse_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() & 1 != 0 {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}

/// On an INTEGER_KEY table a decimal number becomes a native-endian integer of
/// the width the table uses (looked up from its first key; 8 bytes if empty).
fn parse_key(txn: &RoTxn<'_>, db: Db, flags: DbFlags, s: &str) -> Result<Vec<u8>, String> {
    if flags.contains(DbFlags::INTEGER_KEY) {
        if let Ok(n) = s.parse::<u64>() {
            let mut c = txn.cursor(db).map_err(|e| e.to_string())?;
            let width = match c.first().map_err(|e| e.to_string())? {
                Some((k, _)) => k.len(),
                None => 8,
            };
            return if width == 4 {
                u32::try_from(n)
                    .map(|n| n.to_ne_bytes().to_vec())
                    .map_err(|_| format!("{n} does not fit the table's 4-byte keys"))
            } else {
                Ok(n.to_ne_bytes().to_vec())
            };
        }
    }
    parse_bytes(s)
}

fn render_key(k: &[u8], flags: DbFlags) -> String {
    if flags.contains(DbFlags::INTEGER_KEY) {
        if let Ok(b) = <[u8; 8]>::try_from(k) {
            return u64::from_ne_bytes(b).to_string();
        }
        if let Ok(b) = <[u8; 4]>::try_from(k) {
            return u32::from_ne_bytes(b).to_string();
        }
    }
    render(k)
}

/// Printable UTF-8 as text, anything else as `0x` hex; empty as `""`.
fn render(b: &[u8]) -> String {
    if b.is_empty() {
        return "\"\"".to_string();
    }
    match std::str::from_utf8(b) {
        Ok(s) if !s.starts_with("0x") && s.chars().all(|c| !c.is_control()) => s.to_string(),
        _ => {
            let mut out = String::with_capacity(2 + 2 * b.len());
            out.push_str("0x");
            for byte in b {
                out.push_str(&format!("{byte:02x}"));
            }
            out
        }
    }
}

/// Splits a line into commands (at `;` outside quotes) made of words
/// (whitespace-separated; double quotes group, with `\"` and `\\` escapes).
fn tokenize(line: &str) -> Result<Vec<Vec<String>>, String> {
    let mut commands = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        None => return Err("unterminated quote".into()),
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\')) => w.push(e),
                            Some(e) => {
                                w.push('\\');
                                w.push(e);
                            }
                            None => return Err("unterminated quote".into()),
                        },
                        Some(o) => w.push(o),
                    }
                }
            }
            ';' => {
                if let Some(w) = word.take() {
                    commands.last_mut().expect("never empty").push(w);
                }
                commands.push(Vec::new());
            }
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    commands.last_mut().expect("never empty").push(w);
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(w) = word.take() {
        commands.last_mut().expect("never empty").push(w);
    }
    Ok(commands)
}

/// Creates (or refreshes: records are upserted) the demo database.
fn create_demo(path: &Path) -> Result<String, String> {
    if !path.exists() {
        std::fs::create_dir_all(path).map_err(|e| e.to_string())?;
    }
    let env = Env::builder().max_dbs(16).open(path).map_err(|e| e.to_string())?;
    let mut txn = env.begin_rw_txn().map_err(|e| e.to_string())?;
    let e = |e: rdbx::Error| e.to_string();
    let none = PutFlags::empty();

    let fruit = txn.create_db(Some("fruit"), DbFlags::empty()).map_err(e)?;
    let fruits: &[(&str, &str)] = &[
        ("apple", "red"),
        ("banana", "yellow"),
        ("cherry", "dark red"),
        ("grape", "purple"),
        ("kiwi", "green"),
        ("lemon", "yellow"),
        ("orange", "orange"),
        ("plum", "violet"),
    ];
    for (k, v) in fruits {
        txn.put(fruit, k.as_bytes(), v.as_bytes(), none).map_err(e)?;
    }

    let numbers = txn.create_db(Some("numbers"), DbFlags::INTEGER_KEY).map_err(e)?;
    for n in 1u64..=50 {
        let v = format!("{n} squared is {}", n * n);
        txn.put(numbers, &n.to_ne_bytes(), v.as_bytes(), none).map_err(e)?;
    }

    let domains = txn.create_db(Some("domains"), DbFlags::REVERSE_KEY).map_err(e)?;
    let hosts: &[(&str, &str)] = &[
        ("www.example.com", "93.184.215.14"),
        ("mail.example.com", "93.184.215.25"),
        ("example.org", "93.184.215.34"),
        ("docs.rs", "18.244.28.43"),
        ("crates.io", "18.244.28.10"),
        ("www.rust-lang.org", "18.244.28.2"),
    ];
    for (k, v) in hosts {
        txn.put(domains, k.as_bytes(), v.as_bytes(), none).map_err(e)?;
    }

    let blobs = txn.create_db(Some("blobs"), DbFlags::empty()).map_err(e)?;
    for i in 0u8..8 {
        let v: Vec<u8> = (0..16).map(|j| i.wrapping_mul(31).wrapping_add(j * 7)).collect();
        txn.put(blobs, format!("bytes-{i}").as_bytes(), &v, none).map_err(e)?;
    }
    let big: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    txn.put(blobs, b"big", &big, none).map_err(e)?;
    txn.put(blobs, &[0x00, 0xff, 0x10], b"a binary key", none).map_err(e)?;

    txn.commit().map_err(e)?;
    Ok(format!(
        "tables fruit ({} records), numbers ({} records, INTEGER_KEY), domains ({} records, \
         REVERSE_KEY), blobs (10 records, one of 20000 bytes)",
        fruits.len(),
        50,
        hosts.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer() {
        let c = tokenize(r#"get fruit "a b;c" ; scan x 3;;"#).unwrap();
        assert_eq!(c[0], vec!["get", "fruit", "a b;c"]);
        assert_eq!(c[1], vec!["scan", "x", "3"]);
        assert!(c[2].is_empty() && c[3].is_empty());
        assert_eq!(tokenize(r#"get t "q\"\\""#).unwrap()[0][2], "q\"\\");
        assert!(tokenize("get \"x").is_err());
    }

    #[test]
    fn bytes_and_rendering() {
        assert_eq!(parse_bytes("0x00ff").unwrap(), vec![0, 255]);
        assert_eq!(parse_bytes("abc").unwrap(), b"abc".to_vec());
        assert!(parse_bytes("0xabc").is_err());
        assert_eq!(render(b"hello world"), "hello world");
        assert_eq!(render(&[0, 1]), "0x0001");
        assert_eq!(render(b"0x12"), "0x30783132");
        assert_eq!(render(b""), "\"\"");
    }
}
