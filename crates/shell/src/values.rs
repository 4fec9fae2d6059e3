//! Words, keys and values: splitting a line into commands and words, reading
//! the key/value notations (text, `0x` hex, `u32:`/`u64:`/`i32:`/`i64:`/`f64:`
//! numbers, quoted strings with escapes), sizes, and showing bytes to people
//! (printable text as text, everything else as hex).

use std::cmp::Ordering;

use rdbx::DbFlags;

/// One word of a command. `quoted` is set when any part of it was quoted:
/// a quoted word is always literal bytes (never hex, a number or an option).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub bytes: Vec<u8>,
    pub quoted: bool,
}

impl Word {
    /// A plain (unquoted) word.
    pub fn plain(s: &str) -> Word {
        Word { bytes: s.as_bytes().to_vec(), quoted: false }
    }

    /// The word as text (invalid UTF-8 shown with replacement characters).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// Whether this is an option (`--name` or `-x`, unquoted).
    pub fn is_option(&self) -> bool {
        !self.quoted
            && self.bytes.len() >= 2
            && self.bytes[0] == b'-'
            && (self.bytes[1] == b'-' || self.bytes[1].is_ascii_alphabetic())
    }

    /// Whether this is the unquoted word `s`.
    pub fn is(&self, s: &str) -> bool {
        !self.quoted && self.bytes == s.as_bytes()
    }
}

/// Splits a line into commands (at `;` outside quotes) made of words
/// (separated by white space). Double quotes take escapes (`\n \t \r \0 \\
/// \" \xNN`), single quotes are literal. `#` at the start of a word
/// comments out the rest of the line. Empty commands are dropped.
pub fn split_commands(line: &str) -> Result<Vec<Vec<Word>>, String> {
    let mut commands: Vec<Vec<Word>> = Vec::new();
    let mut current: Vec<Word> = Vec::new();
    let mut word: Option<Word> = None;
    let mut chars = line.char_indices().peekable();
    while let Some((pos, c)) = chars.next() {
        match c {
            // A comment starts at the start of a word and runs to the end of
            // the line (`put k v # note`); inside a word `#` is literal.
            '#' if word.is_none() => break,
            '"' => {
                let w = word.get_or_insert_with(|| Word { bytes: Vec::new(), quoted: true });
                w.quoted = true;
                loop {
                    let Some((_, c)) = chars.next() else {
                        return Err(format!("unterminated double quote (opened at column {})", pos + 1));
                    };
                    match c {
                        '"' => break,
                        '\\' => {
                            let Some((_, e)) = chars.next() else {
                                return Err(format!("unterminated double quote (opened at column {})", pos + 1));
                            };
                            match e {
                                'n' => w.bytes.push(b'\n'),
                                't' => w.bytes.push(b'\t'),
                                'r' => w.bytes.push(b'\r'),
                                '0' => w.bytes.push(0),
                                'x' => {
                                    let hi = chars.next().map(|(_, c)| c);
                                    let lo = chars.next().map(|(_, c)| c);
                                    match (hi.and_then(|c| c.to_digit(16)), lo.and_then(|c| c.to_digit(16))) {
                                        (Some(h), Some(l)) => w.bytes.push((h * 16 + l) as u8),
                                        _ => return Err("bad escape: \\x needs two hex digits (as in \\x0a)".into()),
                                    }
                                }
                                '\\' | '"' | '\'' => push_char(&mut w.bytes, e),
                                other => {
                                    return Err(format!(
                                        "unknown escape '\\{other}' (use \\n \\t \\r \\0 \\\\ \\\" or \\xNN)"
                                    ))
                                }
                            }
                        }
                        c => push_char(&mut w.bytes, c),
                    }
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(|| Word { bytes: Vec::new(), quoted: true });
                w.quoted = true;
                loop {
                    match chars.next() {
                        None => return Err(format!("unterminated single quote (opened at column {})", pos + 1)),
                        Some((_, '\'')) => break,
                        Some((_, c)) => push_char(&mut w.bytes, c),
                    }
                }
            }
            ';' => {
                if let Some(w) = word.take() {
                    current.push(w);
                }
                if !current.is_empty() {
                    commands.push(std::mem::take(&mut current));
                }
            }
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    current.push(w);
                }
            }
            c => push_char(&mut word.get_or_insert_with(|| Word { bytes: Vec::new(), quoted: false }).bytes, c),
        }
    }
    if let Some(w) = word.take() {
        current.push(w);
    }
    if !current.is_empty() {
        commands.push(current);
    }
    Ok(commands)
}

/// Whether `text` ends inside a quote: the command goes on on the next
/// line (multi-line quoted values; the line break is part of the value).
pub fn open_quote(text: &str) -> bool {
    matches!(split_commands(text), Err(e) if e.starts_with("unterminated"))
}

/// A path as typed: an unquoted `~` or `~/...` is the home directory.
pub fn path_of(w: &Word) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let raw = std::path::Path::new(std::ffi::OsStr::from_bytes(&w.bytes));
    if !w.quoted {
        if let (Some(home), Ok(rest)) = (dirs::home_dir(), raw.strip_prefix("~")) {
            return home.join(rest);
        }
    }
    raw.to_path_buf()
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

/// The bytes a word stands for, in any table: a quoted word is literal;
/// otherwise `0x` hex, `u32:`/`u64:` (native endian), `i32:`/`i64:`/`f64:`
/// (libmdbx's order-preserving key encodings), or the UTF-8 text.
pub fn parse_bytes(w: &Word) -> Result<Vec<u8>, String> {
    if w.quoted {
        return Ok(w.bytes.clone());
    }
    let Ok(s) = std::str::from_utf8(&w.bytes) else {
        return Ok(w.bytes.clone());
    };
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return parse_hex(hex).map_err(|why| format!("bad hex '{s}': {why}"));
    }
    if let Some((kind, num)) = s.split_once(':') {
        let bad = |what: &str| format!("bad {kind}: value '{num}': {what} (quote the word to use it as text)");
        match kind {
            "u32" => {
                let n: u32 = parse_uint(num).ok_or_else(|| bad("not an unsigned 32-bit number"))?;
                return Ok(n.to_ne_bytes().to_vec());
            }
            "u64" => {
                let n: u64 = parse_uint(num).ok_or_else(|| bad("not an unsigned 64-bit number"))?;
                return Ok(n.to_ne_bytes().to_vec());
            }
            "i32" => {
                let n: i32 = num.parse().map_err(|_| bad("not a signed 32-bit number"))?;
                return Ok(((n as u32) ^ 0x8000_0000).to_ne_bytes().to_vec());
            }
            "i64" => {
                let n: i64 = num.parse().map_err(|_| bad("not a signed 64-bit number"))?;
                return Ok(((n as u64) ^ (1 << 63)).to_ne_bytes().to_vec());
            }
            "f64" => {
                let f: f64 = num.parse().map_err(|_| bad("not a number"))?;
                return Ok(f64_key(f).to_ne_bytes().to_vec());
            }
            _ => {}
        }
    }
    Ok(w.bytes.clone())
}

/// `mdbx_key_from_double`: an unsigned integer in the order of the doubles.
fn f64_key(f: f64) -> u64 {
    let i = f.to_bits() as i64;
    if i < 0 {
        u64::MAX - i as u64
    } else {
        (i as u64).wrapping_add(1 << 63)
    }
}

fn parse_uint<T: TryFrom<u64>>(s: &str) -> Option<T> {
    let n = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => s.replace('_', "").parse::<u64>().ok()?,
    };
    T::try_from(n).ok()
}

fn parse_hex(hex: &str) -> Result<Vec<u8>, String> {
    let hex: String = hex.chars().filter(|&c| c != '_').collect();
    if let Some(bad) = hex.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!("'{bad}' is not a hex digit"));
    }
    if !hex.len().is_multiple_of(2) {
        return Err("odd number of hex digits (write two digits per byte)".into());
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|e| e.to_string())).collect()
}

/// Width of the integers of an INTEGER_KEY / INTEGER_DUP table: taken from a
/// stored item; 8 when the table is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntWidth {
    Four,
    Eight,
}

/// A key (or a value of an INTEGER_DUP table): on integer tables an unquoted
/// decimal number becomes a native-endian integer of the table's width.
pub fn parse_item(w: &Word, integer: Option<IntWidth>) -> Result<Vec<u8>, String> {
    if let (Some(width), false) = (integer, w.quoted) {
        if let Ok(s) = std::str::from_utf8(&w.bytes) {
            if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
                let n: u64 = parse_uint(s).ok_or_else(|| format!("number '{s}' does not fit in 64 bits"))?;
                return match width {
                    IntWidth::Eight => Ok(n.to_ne_bytes().to_vec()),
                    IntWidth::Four => u32::try_from(n)
                        .map(|n| n.to_ne_bytes().to_vec())
                        .map_err(|_| format!("{n} does not fit the table's 4-byte integers")),
                };
            }
        }
    }
    parse_bytes(w)
}

/// A size in bytes: a number with an optional K/M/G/T suffix (powers of
/// 1024; `KiB`, `MB`... are read the same).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit() && c != '_').unwrap_or(t.len());
    let (num, unit) = t.split_at(digits_end);
    let n: u64 = num.replace('_', "").parse().map_err(|_| format!("bad size '{s}' (write e.g. 4096, 64K, 10M, 2G)"))?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("bad size unit in '{s}' (use K, M, G or T)")),
    };
    n.checked_mul(mult).and_then(|b| usize::try_from(b).ok()).ok_or_else(|| format!("size '{s}' is too large"))
}

/// A byte count for people: `4096 (4 KiB)`.
pub fn human_size(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{b} ({v:.0} {})", UNITS[u])
    } else {
        format!("{b} ({v:.1} {})", UNITS[u])
    }
}

/// Lowercase hex without prefix.
pub fn hex(b: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &c in b {
        s.push(DIGITS[(c >> 4) as usize] as char);
        s.push(DIGITS[(c & 15) as usize] as char);
    }
    s
}

/// How a stored item is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ItemKind {
    /// Text when printable, hex otherwise.
    #[default]
    Bytes,
    /// A native-endian u32/u64 (INTEGER_KEY keys, INTEGER_DUP values).
    Integer,
}

impl ItemKind {
    pub fn of_keys(flags: DbFlags) -> ItemKind {
        if flags.contains(DbFlags::INTEGER_KEY) {
            ItemKind::Integer
        } else {
            ItemKind::Bytes
        }
    }
    pub fn of_values(flags: DbFlags) -> ItemKind {
        if flags.contains(DbFlags::INTEGER_DUP) {
            ItemKind::Integer
        } else {
            ItemKind::Bytes
        }
    }
}

/// The number a 4- or 8-byte native-endian integer item holds.
pub fn as_integer(b: &[u8]) -> Option<u64> {
    match b.len() {
        4 => Some(u32::from_ne_bytes(b.try_into().ok()?) as u64),
        8 => Some(u64::from_ne_bytes(b.try_into().ok()?)),
        _ => None,
    }
}

/// Whether `b` is shown as text: valid UTF-8, no control characters, and not
/// readable as another notation (`0x..`, `u32:..`).
pub fn is_plain_text(b: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(b) else { return false };
    !s.is_empty()
        && !s.chars().any(|c| c.is_control())
        && !s.starts_with("0x")
        && !s.starts_with("0X")
        && !["u32:", "u64:", "i32:", "i64:", "f64:"].iter().any(|p| s.starts_with(p))
}

/// Bytes for people: printable text as is, anything else as `0x` hex, empty
/// as `""`.
pub fn render(b: &[u8]) -> String {
    if b.is_empty() {
        "\"\"".to_string()
    } else if is_plain_text(b) {
        String::from_utf8_lossy(b).into_owned()
    } else {
        format!("0x{}", hex(b))
    }
}

/// An item for people, integers in decimal.
pub fn render_item(b: &[u8], kind: ItemKind) -> String {
    match (kind, as_integer(b)) {
        (ItemKind::Integer, Some(n)) => n.to_string(),
        _ => render(b),
    }
}

/// An item in a message: text in quotes, numbers and hex as they are.
pub fn quoted_item(b: &[u8], kind: ItemKind) -> String {
    match (kind, as_integer(b)) {
        (ItemKind::Integer, Some(n)) => n.to_string(),
        _ if is_plain_text(b) => format!("'{}'", String::from_utf8_lossy(b)),
        _ => render(b),
    }
}

/// [`render`], shortened to about `max` characters (with the full length noted).
pub fn render_short(b: &[u8], kind: ItemKind, max: usize) -> String {
    let s = render_item(b, kind);
    if s.chars().count() <= max {
        return s;
    }
    let cut: String = s.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}… ({} bytes)", b.len())
}

/// Orders keys as a table with `flags` does (the engine's comparators).
pub fn compare_keys(flags: DbFlags, a: &[u8], b: &[u8]) -> Ordering {
    if flags.contains(DbFlags::INTEGER_KEY) {
        match (as_integer(a), as_integer(b)) {
            (Some(x), Some(y)) if a.len() == b.len() => x.cmp(&y),
            _ => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
        }
    } else if flags.contains(DbFlags::REVERSE_KEY) {
        a.iter().rev().cmp(b.iter().rev())
    } else {
        a.cmp(b)
    }
}

/// Table flags as words (`dupsort integerkey`), in mdbx_dump's order.
pub const FLAG_NAMES: [(&str, DbFlags); 6] = [
    ("reversekey", DbFlags::REVERSE_KEY),
    ("dupsort", DbFlags::DUP_SORT),
    ("integerkey", DbFlags::INTEGER_KEY),
    ("dupfixed", DbFlags::DUP_FIXED),
    ("integerdup", DbFlags::INTEGER_DUP),
    ("reversedup", DbFlags::REVERSE_DUP),
];

/// `dupsort,integerkey`, or `-` for none.
pub fn flag_words(flags: DbFlags) -> String {
    let words: Vec<&str> = FLAG_NAMES.iter().filter(|(_, f)| flags.contains(*f)).map(|(n, _)| *n).collect();
    if words.is_empty() {
        "-".into()
    } else {
        words.join(",")
    }
}

/// A flag from its name (`dupsort`, `dup-sort`, `DUP_SORT`, `dupfix`...).
pub fn flag_by_name(name: &str) -> Option<DbFlags> {
    let n: String = name.chars().filter(|c| *c != '-' && *c != '_').collect::<String>().to_ascii_lowercase();
    let n = if n == "dupfix" { "dupfixed".to_string() } else { n };
    FLAG_NAMES.iter().find(|(f, _)| *f == n).map(|(_, f)| *f)
}

/// Quotes `s` for the command line when it would not read back as itself.
pub fn quote_for_input(s: &str) -> String {
    let plain = !s.is_empty()
        && !s.starts_with('-')
        && !s.starts_with('#')
        && s.chars().all(|c| !c.is_whitespace() && !c.is_control() && !matches!(c, '"' | '\'' | ';' | '\\'))
        && is_plain_text(s.as_bytes());
    if plain {
        return s.to_string();
    }
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            '\r' => q.push_str("\\r"),
            c if c.is_control() => q.push_str(&format!("\\x{:02x}", c as u32 & 0xff)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Vec<String>> {
        split_commands(line).unwrap().into_iter().map(|c| c.into_iter().map(|w| w.text()).collect()).collect()
    }

    #[test]
    fn splitting() {
        assert_eq!(words(r#"get "a b;c" ; scan x 3;;"#), vec![vec!["get", "a b;c"], vec!["scan", "x", "3"]]);
        assert_eq!(words(r#"get "q\"\\""#), vec![vec!["get", "q\"\\"]]);
        assert_eq!(words(r"put 'it''s' 'a\n'"), vec![vec!["put", "its", "a\\n"]]);
        assert_eq!(words("  # a comment; get x"), Vec::<Vec<String>>::new());
        assert_eq!(words("get x; # comment"), vec![vec!["get", "x"]]);
        assert_eq!(words("get a#b"), vec![vec!["get", "a#b"]]);
        assert_eq!(words("put k v # a note; get x"), vec![vec!["put", "k", "v"]]);
        assert_eq!(words("put k \"#v\" 'x #y'"), vec![vec!["put", "k", "#v", "x #y"]]);
        assert!(split_commands("get \"x").unwrap_err().contains("unterminated"));
        assert!(split_commands("get 'x").unwrap_err().contains("unterminated"));
        assert!(split_commands(r#"get "\q""#).unwrap_err().contains("unknown escape"));
        let c = split_commands(r#"put "\x00\xff" "0x12" 0x12 --x"#).unwrap();
        assert_eq!(c[0][1].bytes, vec![0, 0xff]);
        assert!(c[0][2].quoted && !c[0][3].quoted);
        assert!(c[0][4].is_option() && !c[0][2].is_option());
        assert!(!Word::plain("-5").is_option());
    }

    #[test]
    fn home_in_paths() {
        let home = dirs::home_dir().unwrap();
        let p = |s: &str| path_of(&split_commands(s).unwrap()[0][0]);
        assert_eq!(p("~/db"), home.join("db"));
        assert_eq!(p("~"), home);
        assert_eq!(p("'~/db'"), std::path::PathBuf::from("~/db"));
        assert_eq!(p("a/~/b"), std::path::PathBuf::from("a/~/b"));
        assert_eq!(p("~other/db"), std::path::PathBuf::from("~other/db"));
    }

    #[test]
    fn notations() {
        let p = |s: &str| parse_bytes(&split_commands(s).unwrap()[0][0]);
        assert_eq!(p("0x00ff").unwrap(), vec![0, 255]);
        assert_eq!(p("0x").unwrap(), Vec::<u8>::new());
        assert_eq!(p("abc").unwrap(), b"abc".to_vec());
        assert_eq!(p("\"0x12\"").unwrap(), b"0x12".to_vec());
        assert!(p("0xabc").unwrap_err().contains("odd number"));
        assert!(p("0xzz").unwrap_err().contains("not a hex digit"));
        assert_eq!(p("u32:7").unwrap(), 7u32.to_ne_bytes().to_vec());
        assert_eq!(p("u64:0x10").unwrap(), 16u64.to_ne_bytes().to_vec());
        assert!(p("u32:4294967296").is_err());
        assert!(p("u64:-1").is_err());
        assert_eq!(p("i64:-1").unwrap(), ((1u64 << 63) - 1).to_ne_bytes().to_vec());
        assert_eq!(p("i32:0").unwrap(), 0x8000_0000u32.to_ne_bytes().to_vec());
        let f = |x: f64| u64::from_ne_bytes(p(&format!("f64:{x}")).unwrap().try_into().unwrap());
        assert!(f(-2.5) < f(-1.0) && f(-1.0) < f(0.0) && f(0.0) < f(0.5) && f(0.5) < f(1e10));
        assert_eq!(p("other:thing").unwrap(), b"other:thing".to_vec());
        let w = Word::plain("42");
        assert_eq!(parse_item(&w, Some(IntWidth::Four)).unwrap(), 42u32.to_ne_bytes().to_vec());
        assert_eq!(parse_item(&w, None).unwrap(), b"42".to_vec());
        assert!(parse_item(&Word::plain("4294967296"), Some(IntWidth::Four)).is_err());
    }

    #[test]
    fn rendering() {
        assert_eq!(render(b"hello world"), "hello world");
        assert_eq!(render(&[0, 1]), "0x0001");
        assert_eq!(render(b"0x12"), "0x30783132");
        assert_eq!(render(b""), "\"\"");
        assert_eq!(render(b"a\nb"), "0x610a62");
        assert_eq!(render_item(&5u64.to_ne_bytes(), ItemKind::Integer), "5");
        assert_eq!(render_short(b"abcdefghij", ItemKind::Bytes, 5), "abcd… (10 bytes)");
        assert_eq!(quote_for_input("fruit"), "fruit");
        assert_eq!(quote_for_input("two words"), "\"two words\"");
        assert_eq!(flag_words(DbFlags::DUP_SORT | DbFlags::INTEGER_KEY), "dupsort,integerkey");
        assert_eq!(flag_by_name("dup-sort"), Some(DbFlags::DUP_SORT));
        assert_eq!(flag_by_name("dupfix"), Some(DbFlags::DUP_FIXED));
    }

    #[test]
    fn sizes_and_order() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64K").unwrap(), 65536);
        assert_eq!(parse_size("10MiB").unwrap(), 10 << 20);
        assert!(parse_size("10X").is_err());
        assert!(parse_size("").is_err());
        assert_eq!(human_size(1 << 20), "1048576 (1 MiB)");
        let f = DbFlags::REVERSE_KEY;
        assert_eq!(compare_keys(f, b"ba", b"ab"), Ordering::Less);
        let i = DbFlags::INTEGER_KEY;
        assert_eq!(compare_keys(i, &256u64.to_ne_bytes(), &2u64.to_ne_bytes()), Ordering::Greater);
    }
}
