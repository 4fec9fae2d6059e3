//! The commands the shell knows: names, arguments, options and help texts,
//! and the parsing of a command's words against them. Help, completion,
//! hints and dispatch all read this one table.

use crate::values::Word;

/// What a positional argument (or an option's value) is, for completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Table,
    Key,
    Value,
    Path,
    Format,
    Mode,
    Command,
    Number,
    Size,
    /// on or off.
    Switch,
    /// auto, text or hex.
    ItemMode,
}

/// An option of a command.
#[derive(Debug)]
pub struct Opt {
    /// Long name without the dashes.
    pub name: &'static str,
    /// One-letter form (`-t`).
    pub short: Option<char>,
    /// The value it takes, if any.
    pub value: Option<(&'static str, Kind)>,
    pub help: &'static str,
}

/// A command.
#[derive(Debug)]
pub struct Spec {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// Positional arguments: (name, kind); `min` of them are required.
    pub args: &'static [(&'static str, Kind)],
    pub min: usize,
    pub opts: &'static [Opt],
    pub summary: &'static str,
    /// More help: semantics and examples.
    pub details: &'static str,
    /// Needs an open database.
    pub needs_db: bool,
    /// Modifies the database (refused in read-only mode).
    pub writes: bool,
    /// Works on committed data only: refused inside an explicit transaction.
    pub outside_txn: bool,
}

const TABLE_OPT: Opt = Opt {
    name: "table",
    short: Some('t'),
    value: Some(("TABLE", Kind::Table)),
    help: "work on TABLE instead of the current table",
};

macro_rules! opt {
    ($name:literal, $help:literal) => {
        Opt { name: $name, short: None, value: None, help: $help }
    };
    ($name:literal, $short:literal, $help:literal) => {
        Opt { name: $name, short: Some($short), value: None, help: $help }
    };
    ($name:literal, $vname:literal : $kind:ident, $help:literal) => {
        Opt { name: $name, short: None, value: Some(($vname, Kind::$kind)), help: $help }
    };
}

const fn cmd(name: &'static str, summary: &'static str) -> Spec {
    Spec {
        name,
        aliases: &[],
        args: &[],
        min: 0,
        opts: &[],
        summary,
        details: "",
        needs_db: true,
        writes: false,
        outside_txn: false,
    }
}

/// Every command, in the order `help` lists them.
pub static COMMANDS: &[Spec] = &[
    Spec {
        aliases: &["?", ".help"],
        args: &[("COMMAND", Kind::Command)],
        needs_db: false,
        details: "Without COMMAND: the list of commands. With one: its arguments, options and examples.",
        ..cmd("help", "show the commands, or the help of one")
    },
    Spec {
        args: &[("PATH", Kind::Path), ("MODE", Kind::Mode)],
        min: 1,
        opts: &[
            opt!("create", "create the database if PATH does not exist (opened read-write)"),
            opt!("single-file", "with --create: PATH is the data file (lock file PATH-lck), not a directory"),
        ],
        needs_db: false,
        outside_txn: true,
        details: "Opens the database at PATH (a directory holding mdbx.dat, or a data file) in MODE ro \
                  (read-only, the default) or rw (read-write), closing the current one.\n\
                  'open rw' / 'open ro' alone reopens the current database in that mode.\n\
                  examples: open /var/lib/app/db    open ./data rw    open ./new --create",
        ..cmd("open", "open a database (ro by default, or rw)")
    },
    Spec { needs_db: false, outside_txn: true, ..cmd("close", "close the database") },
    Spec {
        aliases: &[".tables"],
        details: "Lists the named tables with their flags, records and tree depth.",
        ..cmd("tables", "list the tables: names, flags, records")
    },
    Spec {
        args: &[("TABLE", Kind::Table)],
        details: "Makes TABLE the current table of get/put/del/scan/count/... Without TABLE (or with @MAIN): the \
                  main table.\nexamples: use fruit    use @MAIN    use \"two words\"",
        ..cmd("use", "choose the current table")
    },
    Spec {
        args: &[("TABLE", Kind::Table)],
        min: 1,
        opts: &[
            opt!("dupsort", "several sorted values per key"),
            opt!("dupfixed", "with --dupsort: values of one fixed size"),
            opt!("integerkey", "keys are native-endian u32/u64 numbers"),
            opt!("integerdup", "with --dupsort --dupfixed: values are u32/u64 numbers"),
            opt!("reversekey", "keys compared from their last byte"),
            opt!("reversedup", "with --dupsort: values compared from their last byte"),
        ],
        writes: true,
        details: "Creates a named table with the given flags (they cannot change later).\n\
                  examples: create users    create tags --dupsort    create counters --integerkey",
        ..cmd("create", "create a table")
    },
    Spec {
        args: &[("TABLE", Kind::Table)],
        min: 1,
        opts: &[
            opt!("empty", "delete the records but keep the table"),
            opt!("yes", 'y', "do not ask for confirmation"),
        ],
        writes: true,
        details: "Deletes TABLE and all its records (with --empty: only the records). The interactive shell \
                  asks first.",
        ..cmd("drop", "delete a table (or, with --empty, its records)")
    },
    Spec {
        args: &[("KEY", Kind::Key), ("VALUE", Kind::Value)],
        min: 2,
        opts: &[
            opt!("no-overwrite", "fail if the key exists"),
            opt!("no-dup", "dupsort tables: fail if this key/value pair exists"),
            opt!("append", "append: the key must sort after every key in the table (fast bulk load)"),
            TABLE_OPT,
        ],
        writes: true,
        details: "Stores VALUE under KEY (replacing the value; on a dupsort table adding one). VALUE @FILE is \
                  the bytes of FILE; - is all of standard input (with -c only). Quote a value that starts with @.\n\
                  examples: put apple red    put 0x00ff \"two words\"    put 42 answer (on an integerkey table)    \
                  put logo @~/logo.png    put config -",
        ..cmd("put", "store a record")
    },
    Spec {
        args: &[("KEY", Kind::Key)],
        min: 1,
        opts: &[TABLE_OPT],
        details: "Prints the value of KEY (every value, on a dupsort table). A missing key is an error.",
        ..cmd("get", "print the value of a key")
    },
    Spec {
        args: &[("KEY", Kind::Key)],
        min: 1,
        opts: &[TABLE_OPT],
        details: "Prints true when KEY is in the table, false when it is not (not an error: scripts can test it \
                  with --format json).\nexamples: exists apple    exists -t numbers 42",
        ..cmd("exists", "whether a key is in the table")
    },
    Spec {
        aliases: &["delete"],
        args: &[("KEY", Kind::Key), ("VALUE", Kind::Value)],
        min: 1,
        opts: &[TABLE_OPT],
        writes: true,
        details: "Deletes KEY (all its values on a dupsort table), or with VALUE only that key/value pair.",
        ..cmd("del", "delete a key (or one key/value pair)")
    },
    Spec {
        args: &[("FROM", Kind::Key), ("TO", Kind::Key)],
        opts: &[
            opt!("prefix", "P": Key, "only keys that start with P"),
            opt!("limit", "N": Number, "stop after N records"),
            opt!("reverse", 'r', "from the last key to the first"),
            opt!("keys-only", 'k', "keys only (each key once)"),
            opt!("sizes", 's', "add a value_size column: the bytes of each value"),
            TABLE_OPT,
        ],
        details: "Lists the records with FROM <= key < TO in key order (* for an open end). Output streams; \
                  the interactive shell shows a page at a time (see 'pager'); Ctrl-C stops.\n\
                  examples: scan    scan b d    scan * k5 --reverse    scan --prefix user: --limit 10",
        ..cmd("scan", "list records (a range, a prefix, a limit)")
    },
    Spec {
        args: &[("FROM", Kind::Key), ("TO", Kind::Key)],
        opts: &[opt!("prefix", "P": Key, "only keys that start with P"), TABLE_OPT],
        details: "Without arguments: the records of the table (from its statistics, instantly). With a range or \
                  a prefix: counted exactly by walking it (Ctrl-C stops).",
        ..cmd("count", "count records (all, a range or a prefix)")
    },
    Spec {
        aliases: &["estimate"],
        args: &[("FROM", Kind::Key), ("TO", Kind::Key)],
        min: 2,
        opts: &[opt!("exact", "also count exactly (walks the range)"), TABLE_OPT],
        details: "The engine's estimate of the records with FROM <= key < TO (* for an open end), computed from \
                  the tree's pages without walking the range. On dupsort tables it counts keys, not values.\n\
                  examples: estimate-range a m    estimate-range * k500 --exact",
        ..cmd("estimate-range", "estimate the records in a key range")
    },
    Spec {
        details: "The reader table: one row per used slot (pid, thread, snapshot txnid, how many commits it lags \
                  behind, the pages of its snapshot, and the retired pages it keeps from reuse).",
        ..cmd("readers", "show the reader table")
    },
    Spec {
        aliases: &["geo"],
        opts: &[
            opt!("lower", "SIZE": Size, "the file never shrinks below SIZE"),
            opt!("now", "SIZE": Size, "set the current size"),
            opt!("upper", "SIZE": Size, "the file never grows beyond SIZE"),
            opt!("growth", "SIZE": Size, "grow in steps of SIZE"),
            opt!("shrink", "SIZE": Size, "shrink when SIZE is free at the end"),
        ],
        details: "Without options: the page size and the size bounds. With options: changes them (needs rw; in a \
                  transaction, as part of it). SIZE is bytes or a number with K, M, G or T.\n\
                  example: geometry --upper 10G --growth 64M",
        ..cmd("geometry", "show or set the file size bounds and steps")
    },
    Spec {
        args: &[("TABLE", Kind::Table)],
        details: "Statistics of TABLE (default: the current table): depth, pages, records, last change.",
        ..cmd("stat", "statistics of a table")
    },
    Spec { details: "Page size, geometry, last transaction, metas, readers.", ..cmd("info", "about the database") },
    Spec {
        details: "Starts an explicit write transaction: the following commands see its changes; 'commit' keeps \
                  them, 'abort' drops them. Inside one, 'begin' starts a nested transaction. Without begin, each \
                  write command is a transaction of its own.",
        ..cmd("begin", "start a write transaction (nested inside one)")
    },
    cmd("commit", "commit the current transaction"),
    Spec { aliases: &["rollback"], ..cmd("abort", "discard the current transaction") },
    Spec {
        outside_txn: true,
        details: "Runs the engine's full integrity check (what mdbx_chk does): metas, every tree, the GC and the \
                  page accounting. Problems are listed; a failed check is an error. Ctrl-C stops.",
        ..cmd("check", "check the database's integrity")
    },
    Spec {
        args: &[("DEST", Kind::Path)],
        min: 1,
        opts: &[opt!("compact", "leave out free pages (renumbers pages)"), opt!("force", "replace DEST if it exists")],
        outside_txn: true,
        details: "Writes a consistent copy of the newest snapshot to the data file DEST (into DEST/mdbx.dat when \
                  DEST is a directory). Writers may go on meanwhile.",
        ..cmd("copy", "back up the database to a file")
    },
    Spec {
        args: &[("FILE", Kind::Path)],
        opts: &[
            opt!("all", 'a', "every table"),
            opt!("print", "printable characters as text (format=print)"),
            opt!("force", "replace FILE if it exists"),
            TABLE_OPT,
        ],
        outside_txn: true,
        details: "Writes the current table (or TABLE, or --all) in the mdbx_dump text format to FILE, or to the \
                  screen without FILE. 'load' and mdbx_load read it back.",
        ..cmd("dump", "export a table in mdbx_dump format")
    },
    Spec {
        args: &[("FILE", Kind::Path)],
        min: 1,
        opts: &[
            opt!("into", "TABLE": Table, "load the (first) section into TABLE instead of the table named in the dump"),
            opt!("no-overwrite", "keep existing keys"),
            opt!("purge", "empty each table before loading it"),
            opt!("append", "records are sorted: append them (fast)"),
        ],
        writes: true,
        outside_txn: true,
        details: "Loads a dump (mdbx_dump / 'dump' format) into the database: each section into the table its \
                  header names (created if missing), in batches of transactions.",
        ..cmd("load", "import an mdbx_dump file")
    },
    Spec {
        opts: &[
            opt!("table", "TABLE": Table, "only TABLE (default: every table)"),
            opt!("from", "KEY": Key, "first key included"),
            opt!("to", "KEY": Key, "first key excluded"),
        ],
        details:
            "A SHA-256 digest of the records of every table (or TABLE) and of the database: equal for a \
                  copy, a compacted copy or a dump/load round trip, different after any change of a record. A \
                  record counts as u64le(key length) key u64le(value length) value, in the table's order; the \
                  page layout, flags and sequences do not count (the same digests as 'rdbx-tools checksum'). \
                  Ctrl-C stops.\nexamples: checksum    checksum --table users    checksum --table users --from a --to m",
        ..cmd("checksum", "content digest of each table and of the database")
    },
    Spec {
        args: &[("PATH", Kind::Path)],
        opts: &[
            TABLE_OPT,
            opt!("table-b", "TABLE": Table, "the table of the other side (default: the same name)"),
            opt!("keys-only", 'k', "compare keys only"),
        ],
        details: "Compares the current table (or TABLE) with the same table of the database at PATH, or with \
                  table --table-b of this database: first the counts (added = only in the other, removed = only \
                  here, changed = other value), then the differing records in key order (+ added, - removed, \
                  ~ changed). Multimap tables compare value by value. 'rdbx-tools diff' compares whole databases. \
                  Ctrl-C stops.\nexamples: diff /backup/db    diff /backup/db --table users    diff --table a --table-b b",
        ..cmd("diff", "records that differ from another database or table")
    },
    Spec {
        details: "The three meta pages of the data file: role (head = current snapshot, tail = slot of the next \
                  commit), txnid, signature (steady or weak), validity, geometry and tree roots. A damaged meta \
                  that may have held a newer commit is pointed out, with the rescue: 'rdbx-tools meta --use N PATH' \
                  (exclusive, checks the snapshot first) makes an older intact meta the current one.",
        ..cmd("meta", "show the three meta pages")
    },
    Spec {
        args: &[("N", Kind::Number)],
        min: 1,
        details: "Page N decoded: type, txnid, entries, free bytes, which table and tree level it belongs to (or \
                  large value, GC, free, unallocated), and its nodes with keys and values in the current format.\n\
                  example: page 3",
        ..cmd("page", "show one page decoded")
    },
    Spec {
        aliases: &["gc"],
        details: "Why the file is as big as it is: allocated pages, pages per table (largest first), the GC tree \
                  and the free pages its records list (reclaimable now, or retained, and by which reader), the \
                  free tail and the upper bound. 'readers' lists every reader; 'rdbx-tools space' also lists the \
                  GC records.",
        ..cmd("space", "where the pages of the file go")
    },
    Spec {
        args: &[("N", Kind::Number)],
        needs_db: false,
        details: "The last N (default 20) commands entered. The interactive shell keeps them in a file under the \
                  user's data directory ($RDBX_HISTORY overrides it); a line typed with a leading space is not kept.",
        ..cmd("history", "show the command history")
    },
    Spec {
        aliases: &[".mode", "mode"],
        args: &[("FORMAT", Kind::Format)],
        opts: &[
            opt!("keys", "MODE": ItemMode, "show keys as auto (text or hex), text (\\xNN escapes) or hex"),
            opt!("values", "MODE": ItemMode, "show values as auto, text or hex"),
        ],
        needs_db: false,
        details: "table: boxes for people; json: one object per line, the same fields on every line of a \
                  command (a key or value is X: text, a number on integer tables or null, and X_hex); csv: comma-separated values with a header line (RFC 4180 quoting; see 'headers'); \
                  raw: the bytes as stored, tab-separated; hex: keys and values as 0x hex.\n\
                  --keys / --values choose how the table and csv formats show keys and values: auto (text when \
                  printable, else 0x hex; numbers on integer tables), text (always text, other bytes as \\xNN) \
                  or hex (always 0x hex). json keeps its fields whatever they are.\n\
                  examples: format csv    format --keys hex    format table --values text",
        ..cmd("format", "show or set the output format: table, json, csv, raw, hex")
    },
    Spec {
        args: &[("SWITCH", Kind::Switch)],
        needs_db: false,
        details: "'timer on' prints the time each command took, on standard error (standard output keeps only \
                  data). Without SWITCH: whether it is on.",
        ..cmd("timer", "show the time each command takes (on|off)")
    },
    Spec {
        aliases: &[".headers"],
        args: &[("SWITCH", Kind::Switch)],
        needs_db: false,
        details: "Whether listings in the table and csv formats start with the column names (default on). \
                  Without SWITCH: whether they do.",
        ..cmd("headers", "column names above listings (on|off)")
    },
    Spec {
        args: &[("ROWS", Kind::Number)],
        needs_db: false,
        details: "The interactive shell shows long output a screenful at a time, counted in screen lines (a \
                  wrapped line counts as the lines it takes): ROWS lines, 'auto' (the terminal's height) or 'off'. \
                  At the pause one key does it, without Enter: space the next screenful, Enter one more line, q \
                  (or Ctrl-C) stops. Every command's output is paged (scan, tables, history...); a scan reads a \
                  page from a fresh snapshot, so no snapshot is held while the shell waits. Scripts do not pause.",
        ..cmd("pager", "page long output by screen lines (ROWS, auto or off)")
    },
    Spec { aliases: &["exit", "q", ".quit", ".exit"], needs_db: false, ..cmd("quit", "leave the shell") },
];

/// Looks a command up by name or alias, in any case (`.name` works for
/// every command).
pub fn find(name: &str) -> Option<&'static Spec> {
    let lower = name.to_ascii_lowercase();
    let name = lower.as_str();
    let exact = COMMANDS.iter().find(|c| c.name == name || c.aliases.contains(&name));
    exact.or_else(|| name.strip_prefix('.').and_then(|n| COMMANDS.iter().find(|c| c.name == n)))
}

impl Spec {
    /// `scan [FROM [TO]] [--prefix P] ...`
    pub fn usage(&self) -> String {
        let mut s = self.name.to_string();
        s.push_str(&self.args_usage());
        s
    }

    /// The usage after the command name (with a leading space, or empty).
    pub fn args_usage(&self) -> String {
        let mut s = String::new();
        let mut optional = 0;
        for (i, (name, _)) in self.args.iter().enumerate() {
            if i >= self.min {
                s.push_str(" [");
                optional += 1;
                s.push_str(name);
            } else {
                s.push(' ');
                s.push_str(name);
            }
        }
        s.push_str(&"]".repeat(optional));
        for o in self.opts {
            match o.value {
                Some((v, _)) => s.push_str(&format!(" [--{} {v}]", o.name)),
                None => s.push_str(&format!(" [--{}]", o.name)),
            }
        }
        s
    }

    /// The option named `--name` or `-c`.
    pub fn opt(&self, word: &str) -> Option<&'static Opt> {
        let opts: &'static [Opt] = self.opts;
        if let Some(long) = word.strip_prefix("--") {
            let long = long.split_once('=').map_or(long, |(n, _)| n);
            return opts.iter().find(|o| o.name == long);
        }
        let mut chars = word.strip_prefix('-')?.chars();
        let c = chars.next()?;
        if chars.next().is_some() {
            return None;
        }
        opts.iter().find(|o| o.short == Some(c))
    }

    /// The full help text.
    pub fn help(&self) -> String {
        let mut s = format!("{} — {}\nusage: {}\n", self.name, self.summary, self.usage());
        if !self.aliases.is_empty() {
            s.push_str(&format!("also: {}\n", self.aliases.join(", ")));
        }
        if !self.details.is_empty() {
            s.push_str(self.details);
            s.push('\n');
        }
        if !self.opts.is_empty() {
            s.push_str("options:\n");
            for o in self.opts {
                let mut left = format!("--{}", o.name);
                if let Some(c) = o.short {
                    left = format!("-{c}, {left}");
                }
                if let Some((v, _)) = o.value {
                    left.push(' ');
                    left.push_str(v);
                }
                s.push_str(&format!("  {left:<22} {}\n", o.help));
            }
        }
        if self.writes {
            s.push_str("(writes: needs the database open read-write)\n");
        }
        s
    }
}

/// A command's words checked against its spec.
#[derive(Debug)]
pub struct Invocation {
    pub spec: &'static Spec,
    pub args: Vec<Word>,
    opts: Vec<(&'static str, Option<Word>)>,
}

impl Invocation {
    /// Whether the flag `name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.opts.iter().any(|(n, _)| *n == name)
    }

    /// The value of option `name` (the last one given).
    pub fn value(&self, name: &str) -> Option<&Word> {
        self.opts.iter().rev().find(|(n, _)| *n == name).and_then(|(_, v)| v.as_ref())
    }

    /// Positional argument `i`.
    pub fn arg(&self, i: usize) -> Option<&Word> {
        self.args.get(i)
    }
}

/// Parses the words of one command (the first is its name).
pub fn parse(words: &[Word]) -> Result<Invocation, String> {
    let name = words.first().map(|w| w.text()).unwrap_or_default();
    let spec = find(&name).ok_or_else(|| unknown(&name))?;
    let mut args = Vec::new();
    let mut opts = Vec::new();
    let mut only_args = false;
    let mut it = words[1..].iter();
    while let Some(w) = it.next() {
        if !only_args && w.is("--") {
            only_args = true;
            continue;
        }
        if only_args || !w.is_option() {
            args.push(w.clone());
            continue;
        }
        let text = w.text();
        let Some(o) = spec.opt(&text) else {
            return Err(format!("unknown option '{text}' (see 'help {}')", spec.name));
        };
        match o.value {
            None => {
                if text.contains('=') {
                    return Err(format!("option --{} takes no value", o.name));
                }
                opts.push((o.name, None));
            }
            Some((vname, _)) => {
                let v = match text.split_once('=') {
                    Some((_, v)) if text.starts_with("--") => Word::plain(v),
                    _ => it.next().cloned().ok_or_else(|| format!("option --{} needs a value ({vname})", o.name))?,
                };
                opts.push((o.name, Some(v)));
            }
        }
    }
    if args.len() < spec.min || args.len() > spec.args.len() {
        let n = args.len();
        let want = match (spec.min, spec.args.len()) {
            (0, 0) => "no arguments".to_string(),
            (a, b) if a == b => format!("{a} argument(s)"),
            (0, b) => format!("at most {b} argument(s)"),
            (a, b) => format!("{a} to {b} arguments"),
        };
        return Err(format!("expected {want}, got {n}; usage: {}", spec.usage()));
    }
    Ok(Invocation { spec, args, opts })
}

/// The error for an unknown command, with a suggestion when one is close.
pub fn unknown(name: &str) -> String {
    let close = COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
        .filter(|n| n.len() > 1)
        .min_by_key(|n| distance(n, name))
        .filter(|n| distance(n, name) <= 2 || n.starts_with(name));
    match close {
        Some(c) if !name.is_empty() => format!("unknown command '{name}' (did you mean '{c}'? 'help' lists commands)"),
        _ => format!("unknown command '{name}' ('help' lists commands)"),
    }
}

fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push((prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The list `help` prints.
pub fn overview() -> String {
    let mut s = String::from("commands (help COMMAND for details):\n");
    for c in COMMANDS {
        s.push_str(&format!("  {:<44} {}\n", c.usage_short(), c.summary));
    }
    s.push_str(
        "\nkeys and values: text, 0xHEX, u32:N / u64:N (native endian), i32:/i64:/f64: (order-preserving),\n\
         \"quoted\" with \\n \\t \\xNN escapes or 'single-quoted'; on integerkey tables a number is the key.\n\
         several commands on a line: separate them with ';'. # starts a comment (at the start of a word, to the\n\
         end of the line). Command names may be typed in any case; ~ in a path is the home directory.\n",
    );
    s
}

impl Spec {
    /// Usage with the positional arguments only, and `[options]`.
    fn usage_short(&self) -> String {
        let mut s = self.name.to_string();
        let mut optional = 0;
        for (i, (name, _)) in self.args.iter().enumerate() {
            if i >= self.min {
                s.push_str(" [");
                optional += 1;
            } else {
                s.push(' ');
            }
            s.push_str(name);
        }
        s.push_str(&"]".repeat(optional));
        if !self.opts.is_empty() {
            s.push_str(" [options]");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::split_commands;

    fn inv(line: &str) -> Result<Invocation, String> {
        parse(&split_commands(line).unwrap()[0])
    }

    #[test]
    fn parsing() {
        let i = inv("scan a b --limit 5 -r --prefix=x").unwrap();
        assert_eq!(i.args.len(), 2);
        assert_eq!(i.value("limit").unwrap().text(), "5");
        assert_eq!(i.value("prefix").unwrap().text(), "x");
        assert!(i.flag("reverse") && !i.flag("keys-only"));
        let i = inv("get -- --weird").unwrap();
        assert_eq!(i.args[0].text(), "--weird");
        let i = inv("get \"--quoted\"").unwrap();
        assert_eq!(i.args[0].text(), "--quoted");
        assert!(inv("get").unwrap_err().contains("expected 1 argument"));
        assert!(inv("get a b").unwrap_err().contains("usage: get KEY"));
        assert!(inv("scan --bogus").unwrap_err().contains("unknown option '--bogus'"));
        assert!(inv("scan --limit").unwrap_err().contains("needs a value"));
        assert!(inv("frobnicate").unwrap_err().contains("unknown command"));
        assert!(inv("sacn").unwrap_err().contains("did you mean 'scan'"));
        assert_eq!(inv(".tables").unwrap().spec.name, "tables");
        assert_eq!(inv(".mode json").unwrap().spec.name, "format");
        assert_eq!(inv(".put a b").unwrap().spec.name, "put");
        assert_eq!(inv("SCAN").unwrap().spec.name, "scan");
        assert_eq!(inv("Get a").unwrap().spec.name, "get");
        assert_eq!(inv(".TABLES").unwrap().spec.name, "tables");
    }

    #[test]
    fn every_command_has_help() {
        for c in COMMANDS {
            let h = c.help();
            assert!(h.contains(c.summary) && h.contains("usage: "), "{h}");
            assert!(c.min <= c.args.len());
        }
        assert!(overview().contains("estimate-range FROM TO [options]"));
        assert_eq!(find("scan").unwrap().usage().split_whitespace().nth(1), Some("[FROM"));
    }
}
