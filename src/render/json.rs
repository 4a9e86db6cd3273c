//! Compact JSON objects written by hand, for the lines of `messages.jsonl`.
//!
//! The text of a session (message content, tool output) is most of `messages.jsonl`, and
//! serde_json escapes a string one byte at a time: in a cold walk that loop was the largest
//! single cost of writing the file. [`string`] looks for the bytes to escape with
//! `memchr3` where the newline is the only control, else eight at a time
//! ([`super::scan`]), and escapes them exactly as serde_json does, so a line is byte for
//! byte what `serde_json::to_writer` would give. Numbers and nested values still go
//! through serde ([`Object::serde`]), which formats floats its own way.

use serde::Serialize;
use std::io::Write as _;

/// `s` as a JSON string, quotes included, appended to `out`.
pub fn string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Text whose only control is the newline (most prose and much output) has three bytes
    // to escape, which `memchr3` finds 32 bytes at a time; other text is looked through
    // eight bytes at a time for every control. The check is one vectorised pass.
    if only_newlines(bytes) {
        escaped(out, bytes, memchr::memchr3_iter(b'"', b'\\', b'\n', bytes));
    } else {
        let mut i = 0;
        let each = std::iter::from_fn(move || {
            let at = next_escape(bytes, i)?;
            i = at + 1;
            Some(at)
        });
        escaped(out, bytes, each);
    }
    out.push(b'"');
}

/// `bytes` appended to `out` with the byte at each of `escapes` (in order) escaped.
fn escaped(out: &mut Vec<u8>, bytes: &[u8], escapes: impl Iterator<Item = usize>) {
    let mut run = 0;
    for at in escapes {
        out.extend_from_slice(&bytes[run..at]);
        escape(out, bytes[at]);
        run = at + 1;
    }
    out.extend_from_slice(&bytes[run..]);
}

/// Whether no byte of `bytes` is a control other than `\n`: 64 bytes at a time, without
/// stopping early, which the compiler turns into vector compares.
fn only_newlines(bytes: &[u8]) -> bool {
    !bytes.chunks(64).any(|c| {
        c.iter()
            .fold(false, |acc, &b| acc | ((b < 0x20) & (b != b'\n')))
    })
}

/// The first byte at or after `from` that JSON escapes: a control, `"` or `\`.
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    use super::scan::{below, equal, first};
    first(
        bytes,
        from,
        |x| below(x, 0x20) | equal(x, b'"') | equal(x, b'\\'),
        |b| b < 0x20 || b == b'"' || b == b'\\',
    )
}

/// One byte as serde_json escapes it.
fn escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match b {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x09 => b't',
        0x0a => b'n',
        0x0c => b'f',
        0x0d => b'r',
        _ => {
            let u = [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ];
            out.extend_from_slice(&u);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', short]);
}

/// A JSON object being written into a buffer: fields in the order they are added, closed
/// by [`Object::end`]. Keys are sessfs's own names and are written as they are.
pub struct Object<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> Object<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Object<'a> {
        out.push(b'{');
        Object { out, empty: true }
    }

    fn key(&mut self, k: &str) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        self.out.push(b'"');
        self.out.extend_from_slice(k.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    pub fn str(&mut self, k: &str, v: &str) {
        self.key(k);
        string(self.out, v);
    }

    /// A string field that is left out when `v` is `None`.
    pub fn opt_str(&mut self, k: &str, v: Option<&str>) {
        if let Some(v) = v {
            self.str(k, v);
        }
    }

    pub fn bool(&mut self, k: &str, v: bool) {
        self.key(k);
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
    }

    /// A field whose value serde writes. Writing sessfs's values cannot fail (no map has
    /// keys that are not strings); should it ever, the value is `null`, not a broken line.
    pub fn serde<T: Serialize + ?Sized>(&mut self, k: &str, v: &T) {
        self.key(k);
        let start = self.out.len();
        if serde_json::to_writer(&mut *self.out, v).is_err() {
            self.out.truncate(start);
            self.out.extend_from_slice(b"null");
        }
    }

    /// A field whose value `f` writes itself (an array of objects, say).
    pub fn with(&mut self, k: &str, f: impl FnOnce(&mut Vec<u8>)) {
        self.key(k);
        f(self.out);
    }

    /// A field holding `v`'s `Display` text as a string. `v` must print nothing that JSON
    /// escapes (a timestamp, a number).
    pub fn display(&mut self, k: &str, v: impl std::fmt::Display) {
        self.key(k);
        // Writing to a Vec cannot fail.
        let _ = write!(self.out, "\"{v}\"");
    }

    pub fn end(self) {
        self.out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(s: &str) -> String {
        let mut out = Vec::new();
        string(&mut out, s);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let every_control: String = (0u8..0x20).map(char::from).collect();
        let long = "plain text that needs nothing, ".repeat(5);
        let cases = [
            String::new(),
            "a".into(),
            every_control.clone(),
            format!("{long}\"quoted\" and \\back\\slashed\\{long}"),
            format!("{long}\n{long}\t{long}\u{7f}\u{80}é€😀"),
            format!("{}\"", "x".repeat(15)),
            format!("{}\n", "x".repeat(16)),
            format!("{}\\", "x".repeat(17)),
            format!("{every_control}{long}{every_control}"),
        ];
        for c in &cases {
            let want = serde_json::to_string(c).expect("serde_json");
            assert_eq!(ours(c), want, "{c:?}");
        }
        // By hand, for the escapes a reader sees most.
        assert_eq!(ours("a\"b\\c\nd\te\u{1}f"), r#""a\"b\\c\nd\te\u0001f""#);
    }

    /// Every escaped byte at every place in and across the eight-byte words, beside
    /// bytes that are one step from matching and beside multi-byte characters.
    #[test]
    fn an_escape_is_found_wherever_it_falls() {
        for special in ['\0', '\u{1f}', '"', '\\', '\n'] {
            for neighbour in ["a", " ", "!", "#", "[", "]", "é", "\u{7f}"] {
                for at in 0..20 {
                    let mut s: String = neighbour.repeat(20);
                    let cut = s.char_indices().nth(at).map_or(s.len(), |(i, _)| i);
                    s.insert(cut, special);
                    let want = serde_json::to_string(&s).expect("serde_json");
                    assert_eq!(ours(&s), want, "{s:?}");
                }
            }
        }
    }

    #[test]
    fn an_object_is_compact_json_in_field_order() {
        let mut out = Vec::new();
        let mut o = Object::new(&mut out);
        o.str("role", "user");
        o.opt_str("label", None);
        o.opt_str("model", Some("m\"1"));
        o.bool("isError", false);
        o.serde("cost", &0.000_001f64);
        o.display("timestamp", 42);
        o.with("list", |out| out.extend_from_slice(b"[]"));
        o.end();
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            r#"{"role":"user","model":"m\"1","isError":false,"cost":1e-6,"timestamp":"42","list":[]}"#
        );
    }
}
