//! Parser (and writer) for `mdbx_dump` text (docs/format.md, "Dump text format"), and a parser
//! for the table figures of `mdbx_stat` output.

use std::collections::BTreeMap;

/// Data line encoding of a section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpFormat {
    /// `format=bytevalue`: two lowercase hex digits per byte.
    ByteValue,
    /// `format=print`: printable ASCII as-is, other bytes (and `\`) as `\xx`.
    Print,
}

/// Table flags as dump header lines (values are libmdbx's `MDBX_db_flags_t`).
pub const FLAG_LINES: [(&str, u32); 6] = [
    ("reversekey", 0x02),
    ("dupsort", 0x04),
    ("integerkey", 0x08),
    ("dupfix", 0x10),
    ("integerdup", 0x20),
    ("reversedup", 0x40),
];

/// One section of a dump: one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpSection {
    /// `database=` value; `None` for the main table (no line, or an empty value).
    pub name: Option<Vec<u8>>,
    pub format: DumpFormat,
    /// Persistent table flags from the flag lines (`MDBX_REVERSEKEY` ...).
    pub flags: u32,
    /// `duplicates=` line.
    pub duplicates: bool,
    pub page_size: Option<u64>,
    /// `sequence=` (0 when absent).
    pub sequence: u64,
    /// Global header lines (first section only).
    pub geometry: Option<String>,
    pub mapsize: Option<u64>,
    pub canary: Option<String>,
    /// Header lines not recognised above, as (keyword, value).
    pub other_headers: Vec<(String, String)>,
    /// Records in dump order (for DUPSORT tables one record per value).
    pub records: Vec<(Vec<u8>, Vec<u8>)>,
}

impl DumpSection {
    /// An empty section for a table.
    pub fn new(name: Option<&[u8]>, flags: u32) -> Self {
        DumpSection {
            name: name.map(|n| n.to_vec()),
            format: DumpFormat::ByteValue,
            flags,
            duplicates: flags & 0x74 != 0,
            page_size: None,
            sequence: 0,
            geometry: None,
            mapsize: None,
            canary: None,
            other_headers: Vec::new(),
            records: Vec::new(),
        }
    }

    /// The section name as text (`"<main>"` for the main table).
    pub fn display_name(&self) -> String {
        match &self.name {
            None => "<main>".into(),
            Some(n) => String::from_utf8_lossy(n).into_owned(),
        }
    }

    /// Is this a DUPSORT table (several values per key)?
    pub fn is_dupsort(&self) -> bool {
        self.flags & 0x04 != 0 || self.duplicates
    }
}

fn parse_num(s: &str) -> Result<u64, String> {
    let r = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8)
    } else {
        s.parse()
    };
    r.map_err(|e| format!("bad number {s:?}: {e}"))
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decode one data line body (without the leading space).
pub fn decode(format: DumpFormat, s: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len() / 2 + 1);
    match format {
        DumpFormat::ByteValue => {
            if s.len() & 1 == 1 {
                return Err(format!("odd number of hex digits ({})", s.len()));
            }
            for p in s.chunks(2) {
                match (hex_digit(p[0]), hex_digit(p[1])) {
                    (Some(h), Some(l)) => out.push(h << 4 | l),
                    _ => return Err(format!("bad hex pair {:?}", String::from_utf8_lossy(p))),
                }
            }
        }
        DumpFormat::Print => {
            let mut i = 0;
            while i < s.len() {
                if s[i] == b'\\' {
                    if s.get(i + 1) == Some(&b'\\') {
                        out.push(b'\\');
                        i += 2;
                        continue;
                    }
                    match (s.get(i + 1).copied().and_then(hex_digit), s.get(i + 2).copied().and_then(hex_digit)) {
                        (Some(h), Some(l)) => out.push(h << 4 | l),
                        _ => return Err(format!("bad escape at byte {i}")),
                    }
                    i += 3;
                } else {
                    out.push(s[i]);
                    i += 1;
                }
            }
        }
    }
    Ok(out)
}

/// Encode bytes as a data line body (without the leading space).
pub fn encode(format: DumpFormat, b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        match format {
            DumpFormat::ByteValue => s.push_str(&format!("{x:02x}")),
            DumpFormat::Print => {
                if (0x20..=0x7e).contains(&x) && x != b'\\' {
                    s.push(x as char)
                } else {
                    s.push_str(&format!("\\{x:02x}"))
                }
            }
        }
    }
    s
}

/// Parse a whole `mdbx_dump` output (any number of sections), written without
/// `-c`. In print format a key may itself start with a space, so a line
/// starting with two spaces is an ordinary key line here.
pub fn parse_dump(text: &[u8]) -> Result<Vec<DumpSection>, String> {
    parse_dump_with(text, false)
}

/// Parse `mdbx_dump -c` output: in DUPSORT sections a line starting with two
/// spaces is a further value of the previous key (ambiguous with print-format
/// keys that start with a space, as in `mdbx_load`).
pub fn parse_dump_concise(text: &[u8]) -> Result<Vec<DumpSection>, String> {
    parse_dump_with(text, true)
}

fn parse_dump_with(text: &[u8], concise: bool) -> Result<Vec<DumpSection>, String> {
    let mut lines = text.split(|&c| c == b'\n').enumerate().peekable();
    let mut sections = Vec::new();
    loop {
        // Skip trailing empty lines at the end of input.
        while let Some((_, l)) = lines.peek() {
            if l.is_empty() {
                lines.next();
            } else {
                break;
            }
        }
        let Some((n, first)) = lines.next() else {
            break;
        };
        if first != b"VERSION=3" {
            return Err(format!("line {}: expected VERSION=3, got {:?}", n + 1, String::from_utf8_lossy(first)));
        }
        let mut sec = DumpSection::new(None, 0);
        let mut format = None;
        // Header.
        loop {
            let Some((n, l)) = lines.next() else {
                return Err("unexpected end of input in header".into());
            };
            let l = std::str::from_utf8(l).map_err(|e| format!("line {}: {e}", n + 1))?;
            if l == "HEADER=END" {
                break;
            }
            let (k, v) = l.split_once('=').ok_or_else(|| format!("line {}: bad header line {l:?}", n + 1))?;
            let bad = |e: String| format!("line {}: {e}", n + 1);
            match k {
                "format" => {
                    format = Some(match v {
                        "bytevalue" => DumpFormat::ByteValue,
                        "print" => DumpFormat::Print,
                        _ => return Err(bad(format!("unknown format {v:?}"))),
                    })
                }
                "database" => sec.name = if v.is_empty() { None } else { Some(v.as_bytes().to_vec()) },
                "type" => {
                    if v != "btree" {
                        return Err(bad(format!("unknown type {v:?}")));
                    }
                }
                "db_pagesize" => sec.page_size = Some(parse_num(v).map_err(bad)?),
                "duplicates" => sec.duplicates = parse_num(v).map_err(bad)? != 0,
                "sequence" => sec.sequence = parse_num(v).map_err(bad)?,
                "geometry" => sec.geometry = Some(v.to_string()),
                "mapsize" => sec.mapsize = Some(parse_num(v).map_err(bad)?),
                "canary" => sec.canary = Some(v.to_string()),
                _ => {
                    if let Some((_, bit)) = FLAG_LINES.iter().find(|(name, _)| *name == k) {
                        if parse_num(v).map_err(bad)? != 0 {
                            sec.flags |= bit;
                        }
                    } else {
                        sec.other_headers.push((k.to_string(), v.to_string()));
                    }
                }
            }
        }
        // `duplicates=1` alone means DUPSORT (mdbx_load does the same).
        if sec.duplicates && sec.flags & 0x04 == 0 {
            sec.flags |= 0x04;
        }
        let format = format.ok_or("section without format= line")?;
        sec.format = format;
        // Data.
        let mut last_key: Option<Vec<u8>> = None;
        loop {
            let Some((n, l)) = lines.next() else {
                return Err("unexpected end of input in data (no DATA=END)".into());
            };
            if l == b"DATA=END" {
                break;
            }
            if l.first() != Some(&b' ') {
                return Err(format!(
                    "line {}: data line without leading space: {:?}",
                    n + 1,
                    String::from_utf8_lossy(&l[..l.len().min(40)])
                ));
            }
            if concise && sec.is_dupsort() && l.get(1) == Some(&b' ') {
                // Concise form: another value of the previous key.
                let k = last_key.clone().ok_or_else(|| format!("line {}: concise value without key", n + 1))?;
                let v = decode(format, &l[2..]).map_err(|e| format!("line {}: {e}", n + 1))?;
                sec.records.push((k, v));
                continue;
            }
            let k = decode(format, &l[1..]).map_err(|e| format!("line {}: {e}", n + 1))?;
            let Some((n2, lv)) = lines.next() else {
                return Err(format!("line {}: key without value at end of input", n + 1));
            };
            if lv.first() != Some(&b' ') {
                return Err(format!("line {}: key without value", n2 + 1));
            }
            let v = decode(format, &lv[1..]).map_err(|e| format!("line {}: {e}", n2 + 1))?;
            last_key = Some(k.clone());
            sec.records.push((k, v));
        }
        sections.push(sec);
    }
    Ok(sections)
}

/// Write sections in `mdbx_dump` layout. Global headers are written for the
/// sections that carry them (normally only the first).
pub fn format_dump(sections: &[DumpSection]) -> String {
    let mut s = String::new();
    for sec in sections {
        s.push_str("VERSION=3\n");
        if let Some(g) = &sec.geometry {
            s.push_str(&format!("geometry={g}\n"));
        }
        if let Some(m) = sec.mapsize {
            s.push_str(&format!("mapsize={m}\n"));
        }
        if let Some(c) = &sec.canary {
            s.push_str(&format!("canary={c}\n"));
        }
        s.push_str(match sec.format {
            DumpFormat::ByteValue => "format=bytevalue\n",
            DumpFormat::Print => "format=print\n",
        });
        if let Some(n) = &sec.name {
            s.push_str(&format!("database={}\n", String::from_utf8_lossy(n)));
        }
        s.push_str("type=btree\n");
        if let Some(p) = sec.page_size {
            s.push_str(&format!("db_pagesize={p}\n"));
        }
        s.push_str(&format!("duplicates={}\n", u8::from(sec.is_dupsort())));
        for (name, bit) in FLAG_LINES {
            if sec.flags & bit != 0 {
                s.push_str(&format!("{name}=1\n"));
            }
        }
        if sec.sequence != 0 {
            s.push_str(&format!("sequence={}\n", sec.sequence));
        }
        s.push_str("HEADER=END\n");
        for (k, v) in &sec.records {
            s.push(' ');
            s.push_str(&encode(sec.format, k));
            s.push_str("\n ");
            s.push_str(&encode(sec.format, v));
            s.push('\n');
        }
        s.push_str("DATA=END\n");
    }
    s
}

/// Table figures from `mdbx_stat` output ("Status of NAME" blocks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatFigures {
    pub page_size: u64,
    pub depth: u64,
    pub branch_pages: u64,
    pub leaf_pages: u64,
    pub overflow_pages: u64,
    pub entries: u64,
}

/// Parse the "Status of ..." blocks of `mdbx_stat` output. The main table is
/// keyed `None` ("Status of Main DB"), the GC (if present) `Some(b"@GC")`.
pub fn parse_stat(text: &str) -> Result<BTreeMap<Option<Vec<u8>>, StatFigures>, String> {
    let mut out = BTreeMap::new();
    let mut current: Option<(Option<Vec<u8>>, StatFigures)> = None;
    for line in text.lines() {
        if !line.starts_with(' ') {
            if let Some((k, f)) = current.take() {
                out.insert(k, f);
            }
            if let Some(name) = line.strip_prefix("Status of ") {
                let key = match name {
                    "Main DB" => None,
                    "Garbage Collection" | "GC" | "@GC" => Some(b"@GC".to_vec()),
                    n => Some(n.as_bytes().to_vec()),
                };
                current = Some((key, StatFigures::default()));
            }
            continue;
        }
        let Some((_, f)) = current.as_mut() else {
            continue;
        };
        let Some((k, v)) = line.trim().split_once(':') else {
            continue;
        };
        let num = || -> Result<u64, String> {
            v.split_whitespace().next().unwrap_or("").parse().map_err(|e| format!("stat line {line:?}: {e}"))
        };
        match k {
            "Pagesize" => f.page_size = num()?,
            "Tree depth" => f.depth = num()?,
            "Branch pages" => f.branch_pages = num()?,
            "Leaf pages" => f.leaf_pages = num()?,
            "Large/Overflow pages" | "Overflow pages" => f.overflow_pages = num()?,
            "Entries" => f.entries = num()?,
            _ => {}
        }
    }
    if let Some((k, f)) = current.take() {
        out.insert(k, f);
    }
    Ok(out)
}

/// Directory holding the golden files: `$RDBX_GOLDEN_DIR`, else the first of
/// `<workspace>/../shared/golden` and `/work/shared/golden` that exists.
pub fn golden_dir() -> std::path::PathBuf {
    if let Some(d) = std::env::var_os("RDBX_GOLDEN_DIR") {
        return d.into();
    }
    let ws = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let candidates =
        [ws.join("../shared/golden"), ws.join("shared/golden"), std::path::PathBuf::from("/work/shared/golden")];
    for c in &candidates {
        if c.join("README.md").exists() {
            return c.clone();
        }
    }
    candidates[0].clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_encoding_example_from_the_format_doc() {
        let key = [0x61, 0x5c, 0x62, 0x01, 0x20, 0x7e, 0x7f, 0xff];
        assert_eq!(encode(DumpFormat::Print, &key), "a\\5cb\\01 ~\\7f\\ff");
        assert_eq!(decode(DumpFormat::Print, b"a\\5cb\\01 ~\\7f\\ff").unwrap(), key);
        assert_eq!(decode(DumpFormat::Print, b"\\\\").unwrap(), b"\\");
        assert_eq!(encode(DumpFormat::Print, &[0]), "\\00");
        assert!(decode(DumpFormat::ByteValue, b"abc").is_err());
    }

    #[test]
    fn concise_lines_repeat_the_key() {
        let t = b"VERSION=3\nformat=print\ndatabase=d\ntype=btree\nduplicates=1\ndupsort=1\nHEADER=END\n k\n a\n  b\n  c\n j\n \nDATA=END\n";
        let s = parse_dump_concise(t).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].name.as_deref(), Some(&b"d"[..]));
        assert!(s[0].is_dupsort());
        let r: Vec<_> = s[0].records.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
        assert_eq!(r, vec![(&b"k"[..], &b"a"[..]), (b"k", b"b"), (b"k", b"c"), (b"j", b"")]);
    }

    #[test]
    fn golden_dumps_round_trip() {
        let dir = golden_dir();
        for name in ["g1", "g2", "g3", "gmain"] {
            let p = dir.join(format!("{name}.dump"));
            let Ok(text) = std::fs::read(&p) else {
                panic!("missing golden file {p:?}");
            };
            let secs = parse_dump(&text).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            assert!(!secs.is_empty());
            assert_eq!(format_dump(&secs).as_bytes(), &text[..], "{p:?}");
        }
        for name in ["g3", "gmain"] {
            let a = parse_dump(&std::fs::read(dir.join(format!("{name}.dump"))).unwrap()).unwrap();
            let p = dir.join(format!("{name}.print.dump"));
            let text = std::fs::read(&p).unwrap();
            let b = parse_dump(&text).unwrap();
            assert_eq!(format_dump(&b).as_bytes(), &text[..], "{p:?}");
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(x.name, y.name);
                assert_eq!(x.flags, y.flags);
                assert_eq!(x.records, y.records, "{name} {}", x.display_name());
            }
        }
    }

    #[test]
    fn golden_stats_parse() {
        let dir = golden_dir();
        let t = std::fs::read_to_string(dir.join("g1.stat")).unwrap();
        let s = parse_stat(&t).unwrap();
        let many = s[&Some(b"many".to_vec())];
        assert_eq!((many.depth, many.branch_pages, many.leaf_pages, many.entries), (3, 4, 402, 19423));
        let main = s[&None];
        assert_eq!(main.entries, 10);
        let gm = parse_stat(&std::fs::read_to_string(dir.join("gmain.stat")).unwrap()).unwrap();
        assert_eq!(gm[&None].overflow_pages, 173);
        assert_eq!(gm[&None].entries, 4595);
    }
}
