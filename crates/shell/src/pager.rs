//! Paging the output of the interactive shell by screen lines: after a
//! screenful the pager waits for one key (no Enter needed): space shows the
//! next screenful, Enter one more line, q (or Ctrl-C, Esc) drops the rest.
//! Long lines count as the screen lines they wrap into.

use std::io::{self, Read, Write};

/// What a key at the pause asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Page,
    Line,
    Quit,
}

impl Key {
    /// The key for a byte read in raw mode (anything else: ignored).
    pub fn of(b: u8) -> Option<Key> {
        match b {
            b' ' | b'f' => Some(Key::Page),
            b'\r' | b'\n' | b'j' => Some(Key::Line),
            b'q' | b'Q' | 3 | 0x1b => Some(Key::Quit),
            _ => None,
        }
    }
}

const PROMPT: &str = "-- more: space next page, Enter next line, q stop --";

/// Waits for one key on the terminal, in raw mode (restored before it
/// returns). Anything unreadable stops the listing.
fn read_key() -> Key {
    let Ok(mut tty) = std::fs::File::open("/dev/tty") else { return Key::Quit };
    if crossterm::terminal::enable_raw_mode().is_err() {
        return Key::Quit;
    }
    let mut b = [0u8; 1];
    let key = loop {
        match tty.read(&mut b) {
            Ok(1) => {
                if let Some(k) = Key::of(b[0]) {
                    break k;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            _ => break Key::Quit,
        }
    };
    let _ = crossterm::terminal::disable_raw_mode();
    key
}

/// Screen lines of a terminal: `rows` high, `cols` wide.
pub struct ScreenPager {
    rows: usize,
    cols: usize,
    /// Lines shown since the last pause.
    used: usize,
    /// The column the cursor is at (of the line being written).
    col: usize,
    /// q was pressed: the rest of this command's output is dropped.
    pub quit: bool,
    /// Reads the key at a pause (tests put their own).
    keys: fn() -> Key,
}

impl ScreenPager {
    pub fn new(rows: usize, cols: usize) -> ScreenPager {
        ScreenPager { rows: rows.max(2), cols: cols.max(1), used: 0, col: 0, quit: false, keys: read_key }
    }

    /// Writes `buf` to `out`, pausing after each screenful.
    pub fn write(&mut self, out: &mut dyn Write, buf: &[u8]) -> io::Result<()> {
        if self.quit {
            return Ok(());
        }
        let mut start = 0;
        for (i, &b) in buf.iter().enumerate() {
            // UTF-8 continuation bytes take no column.
            if b & 0xc0 != 0x80 && b != b'\n' && b != b'\r' {
                self.col += 1;
                if self.col > self.cols {
                    self.col = 1;
                    self.used += 1;
                }
            }
            if b == b'\n' {
                self.col = 0;
                self.used += 1;
            }
            if self.used + 1 >= self.rows && (b == b'\n' || self.col == 1) {
                out.write_all(&buf[start..=i])?;
                start = i + 1;
                if !self.pause(out)? {
                    return Ok(());
                }
            }
        }
        out.write_all(&buf[start..])
    }

    /// Shows the prompt and waits; false when q was pressed.
    fn pause(&mut self, out: &mut dyn Write) -> io::Result<bool> {
        write!(out, "{PROMPT}")?;
        out.flush()?;
        let key = (self.keys)();
        write!(out, "\r\x1b[K")?;
        match key {
            Key::Page => self.used = 0,
            Key::Line => self.used = self.rows - 2,
            Key::Quit => {
                self.quit = true;
                writeln!(out, "(stopped at the pager)")?;
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rows: usize, cols: usize, keys: fn() -> Key, text: &str) -> (String, bool) {
        let mut p = ScreenPager::new(rows, cols);
        p.keys = keys;
        let mut out = Vec::new();
        p.write(&mut out, text.as_bytes()).unwrap();
        (String::from_utf8(out).unwrap(), p.quit)
    }

    #[test]
    fn pauses_by_screen_lines() {
        let text = "1\n2\n3\n4\n5\n6\n";
        let (out, quit) = run(4, 80, || Key::Page, text);
        assert_eq!(out.matches(PROMPT).count(), 2, "{out}");
        assert!(!quit && out.starts_with("1\n2\n3\n-- more"), "{out}");
        let (out, quit) = run(4, 80, || Key::Quit, text);
        assert!(quit && out.starts_with("1\n2\n3\n-- more") && !out.contains('4'), "{out}");
        // A long line wraps: it takes three lines of a 10-column screen.
        let (out, _) = run(4, 10, || Key::Quit, "abcdefghijklmnopqrstuvwxy\nz\n");
        assert!(!out.contains('z'), "{out}");
        assert_eq!(Key::of(b' '), Some(Key::Page));
        assert_eq!(Key::of(b'\r'), Some(Key::Line));
        assert_eq!(Key::of(3), Some(Key::Quit));
        assert_eq!(Key::of(b'x'), None);
    }
}
