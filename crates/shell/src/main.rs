//! `rdbx` — an interactive, scriptable shell for MDBX/rdbx databases.
//!
//! ```text
//! rdbx PATH                    interactive shell (a script when stdin is not a terminal)
//! rdbx PATH -c "cmd; cmd"      run the commands and exit
//! rdbx --create-demo PATH      create a small demo database (new or empty directory)
//! ```
//!
//! Modules, one concern each: `values` (words, key/value notations,
//! rendering), `output` (formats), `spec` (the commands and their help),
//! `access` (reading through either transaction kind), `db` (opening),
//! `input` / `repl` / `complete` (where commands come from), `session` (the
//! command loop and transactions), `commands` (what each command does),
//! `demo` (the demo database).

mod access;
mod commands;
mod complete;
mod db;
mod demo;
mod input;
mod output;
mod pager;
mod repl;
mod session;
mod spec;
mod values;

use std::ffi::{OsStr, OsString};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use db::Found;
use input::Source;
use output::{Format, Out};
use session::Session;

const PROG: &str = "rdbx";

const USAGE: &str = "\
rdbx — an interactive shell for MDBX/rdbx databases

USAGE:
    rdbx [OPTIONS] [PATH]
    rdbx [OPTIONS] PATH -c \"CMD; CMD ...\"
    rdbx --create-demo PATH

PATH is a database directory (holding mdbx.dat) or a data file. It is opened
read-only unless --write is given. In a terminal, rdbx starts an interactive
shell (history, tab completion, Ctrl-C cancels, Ctrl-D quits); with -c it
runs the commands and exits; otherwise it reads commands from standard input,
one or more per line (separated by ';').

OPTIONS:
    -c, --command CMDS   run the ';'-separated commands CMDS, then exit
                         (may be given more than once)
    -w, --write          open the database read-write
        --create         create the database if PATH does not exist
                         (it is then opened read-write)
        --single-file    with --create: PATH is the data file itself, the
                         lock file PATH-lck (no directory; as libmdbx's
                         MDBX_NOSUBDIR). Existing databases of either
                         layout are recognised without it
    -f, --format FMT     output format: table (default), json, csv, raw, hex
    -k, --keep-going     in scripts, go on after a failed command
    -q, --quiet          leave out status lines (\"loaded N records\", ...)
        --lock-format 6|7
                         lock-file layout to create when no other process
                         has the database open: 6 where its applications
                         run libmdbx 0.13 (e.g. reth), 7 for libmdbx 0.14.2+;
                         without it a lock file left behind keeps its
                         version, else 7. A database in use is joined with
                         the layout its users have
        --create-demo PATH
                         create a small demo database at PATH, a new or
                         empty directory (tables fruit, numbers [integerkey],
                         domains [reversekey], blobs, by-color [dupsort]),
                         then exit; a PATH that already holds a database is
                         refused (exit 1) and left as it is
    -h, --help           print this help
    -V, --version        print the version

COMMANDS (type 'help' in the shell, or 'help COMMAND'):
    open close tables use create drop put get exists del scan count
    estimate-range readers geometry stat info begin commit abort check copy
    dump load checksum diff meta page space history format timer headers
    pager help quit (names in any case; # starts a comment; ~ in a path is
    the home directory)

KEYS AND VALUES:
    text as is; 0xHEX for bytes; u32:N / u64:N native-endian integers (as
    integerkey tables store them); i32:N i64:N f64:X (libmdbx's order-
    preserving encodings); \"double quotes\" with \\n \\t \\xNN escapes, or
    'single quotes' (a quote left open goes on on the next line). On
    integerkey tables a plain number is the key. put KEY @FILE stores the
    bytes of FILE, put KEY - standard input (with -c). Output shows printable
    text as text and everything else as 0x hex ('format --keys hex --values
    text' changes that for keys and values apart).

ENVIRONMENT:
    RDBX_HISTORY         the history file (default: rdbx/history under the
                         user's data directory; empty: no history file)

EXIT STATUS:
    0 success; 1 the database could not be opened (or --create-demo was
    given a PATH holding a database), or a command of a
    script failed (scripts stop at the first failure unless --keep-going,
    and the message names the line); 2 usage error.
";

/// What the command line asks for.
#[derive(Debug, Default)]
struct Cli {
    path: Option<PathBuf>,
    commands: Vec<String>,
    write: bool,
    create: bool,
    single_file: bool,
    format: Format,
    keep_going: bool,
    quiet: bool,
    demo: Option<PathBuf>,
    lock_format: Option<rdbx::LockFormat>,
    help: bool,
    version: bool,
}

fn parse_args(args: &[OsString]) -> Result<Cli, String> {
    let mut cli = Cli::default();
    let mut it = args.iter();
    let mut only_path = false;
    while let Some(os) = it.next() {
        // Paths may be any bytes; everything else must be UTF-8.
        let Some(a) = os.to_str().filter(|_| !only_path) else {
            set_path(&mut cli, os)?;
            continue;
        };
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(OsString::from(v))),
            _ => (a, None),
        };
        let mut value = |what: &str| -> Result<OsString, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it.next().cloned().ok_or_else(|| format!("{name} needs {what}")),
            }
        };
        let text = |v: OsString, what: &str| -> Result<String, String> {
            v.into_string().map_err(|_| format!("the {what} is not valid UTF-8 (write binary data as 0x hex)"))
        };
        match name {
            "--" => only_path = true,
            "-h" | "--help" => cli.help = true,
            "-V" | "--version" => cli.version = true,
            "-c" | "--command" => cli.commands.push(text(value("the commands to run")?, "-c text")?),
            "-w" | "--write" => cli.write = true,
            "--create" => cli.create = true,
            "--single-file" | "--no-subdir" => cli.single_file = true,
            "-k" | "--keep-going" => cli.keep_going = true,
            "-q" | "--quiet" => cli.quiet = true,
            "-f" | "--format" => {
                let v = text(value("a format")?, "format")?;
                cli.format = Format::parse(&v)
                    .ok_or_else(|| format!("unknown format '{v}' (use {})", Format::NAMES.join(", ")))?;
            }
            "--create-demo" => cli.demo = Some(PathBuf::from(value("a PATH")?)),
            "--lock-format" => {
                let v = text(value("6 or 7")?, "lock format")?;
                cli.lock_format = Some(v.parse()?);
            }
            s if s.starts_with('-') && s.len() > 1 => return Err(format!("unknown option '{s}'")),
            _ => set_path(&mut cli, os)?,
        }
    }
    if cli.single_file && !cli.create {
        return Err("--single-file goes with --create".into());
    }
    if cli.demo.is_some() && (cli.path.is_some() || !cli.commands.is_empty()) {
        return Err("--create-demo takes only a PATH".into());
    }
    Ok(cli)
}

fn set_path(cli: &mut Cli, a: &OsStr) -> Result<(), String> {
    if cli.path.is_some() {
        return Err(format!("unexpected extra argument '{}' (one PATH; quote commands after -c)", a.to_string_lossy()));
    }
    cli.path = Some(PathBuf::from(a));
    Ok(())
}

/// Writes to standard output; a closed output is not an error worth a panic.
fn say(text: &str) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("{PROG}: {msg}");
    eprintln!("usage: {PROG} [OPTIONS] [PATH] [-c \"CMD; CMD\"] | --create-demo PATH | --help");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let cli = match parse_args(&args) {
        Ok(c) => c,
        Err(msg) => return usage_error(&msg),
    };
    if cli.help {
        say(USAGE);
        return ExitCode::SUCCESS;
    }
    if cli.version {
        say(&format!("{PROG} {}\n", env!("CARGO_PKG_VERSION")));
        return ExitCode::SUCCESS;
    }
    if let Some(f) = cli.lock_format {
        db::set_lock_format(f);
    }
    if let Some(path) = &cli.demo {
        return match demo::create(path) {
            Ok(summary) => {
                say(&format!("created demo database {}: {summary}\n", path.display()));
                say(&format!("try: {PROG} {}   (then: tables; use fruit; scan; help)\n", path.display()));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{PROG}: {}: cannot create the demo database: {e}", path.display());
                ExitCode::from(1)
            }
        };
    }
    let interactive = cli.commands.is_empty() && io::stdin().is_terminal();
    if cli.path.is_none() && !interactive && cli.commands.is_empty() {
        return usage_error("missing PATH");
    }

    let interrupt = Arc::new(AtomicBool::new(false));
    let mut src: Box<dyn Source> = if !cli.commands.is_empty() {
        Box::new(input::Args::new(cli.commands.clone()))
    } else if interactive {
        match repl::Interactive::new(repl::history_file()) {
            Ok(i) => {
                repl::catch_interrupts(&interrupt);
                Box::new(i)
            }
            Err(e) => {
                eprintln!("{PROG}: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        Box::new(input::Script::new(io::stdin().lock()))
    };

    let mut out = Out::new(Box::new(BufWriter::new(io::stdout())), cli.format);
    out.quiet = cli.quiet;
    let mut session = Session::new(out, interactive, interrupt);
    session.keep_going = cli.keep_going;

    if interactive {
        say(&format!("{PROG} {} — 'help' lists the commands, Ctrl-D quits\n", env!("CARGO_PKG_VERSION")));
    }
    let db = match &cli.path {
        None => {
            if interactive {
                say("no database is open: 'open PATH' opens one\n");
            }
            None
        }
        Some(path) => {
            let found = db::probe(path);
            let create = found != Found::Database
                && (cli.create
                    || (interactive
                        && src.confirm(&format!("{} does not exist. Create a new database there?", path.display()))));
            let r = if create { db::create(path, cli.single_file) } else { db::open(path, !cli.write) };
            match r {
                Ok(o) => {
                    if interactive {
                        let how = match (create, o.read_only) {
                            (true, _) => "created a new database, open read-write",
                            (false, true) => "open read-only ('open rw' to write)",
                            (false, false) => "open read-write",
                        };
                        say(&format!("{}: {how}\n", path.display()));
                    }
                    Some(o)
                }
                Err(msg) => {
                    eprintln!("{PROG}: {msg}");
                    return ExitCode::from(1);
                }
            }
        }
    };
    session.run(db, src.as_mut());
    if session.failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Cli, String> {
        parse_args(&a.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn command_line() {
        let c = parse(&["db", "-c", "tables", "--command=get a", "-w", "--format", "json", "-k"]).unwrap();
        assert_eq!(c.path, Some(PathBuf::from("db")));
        assert_eq!(c.commands, vec!["tables", "get a"]);
        assert!(c.write && c.keep_going && c.format == Format::Json);
        assert!(parse(&["--bogus"]).unwrap_err().contains("unknown option"));
        assert!(parse(&["a", "b"]).unwrap_err().contains("extra argument"));
        assert!(parse(&["-c"]).unwrap_err().contains("needs"));
        assert!(parse(&["--format", "xml"]).unwrap_err().contains("unknown format"));
        assert_eq!(parse(&["--", "-odd"]).unwrap().path, Some(PathBuf::from("-odd")));
        assert!(parse(&["--create-demo", "x", "y"]).is_err());
        assert_eq!(parse(&["--lock-format", "6", "db"]).unwrap().lock_format, Some(rdbx::LockFormat::V6));
        assert_eq!(parse(&["--lock-format=v7"]).unwrap().lock_format, Some(rdbx::LockFormat::V7));
        assert!(parse(&["--lock-format", "5"]).unwrap_err().contains("unknown lock format"));
        use std::os::unix::ffi::OsStringExt;
        let odd = OsString::from_vec(b"db\xff".to_vec());
        assert_eq!(parse_args(std::slice::from_ref(&odd)).unwrap().path, Some(PathBuf::from(odd.clone())));
        assert!(parse_args(&["-c".into(), odd]).unwrap_err().contains("not valid UTF-8"));
    }
}
