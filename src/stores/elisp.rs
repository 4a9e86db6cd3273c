//! Printed Emacs Lisp read as data, for stores whose agent saves its state with `prin1`
//! (ellama's `.session.el` files).
//!
//! Why this exists: no maintained crate reads what Emacs' printer writes (records
//! `#s(…)`, propertized strings `#("…" 0 3 (face bold))`, unreadable objects `#<buffer x>`,
//! print-circle labels), and a store must never evaluate anything. The printed form is a
//! small grammar, so this is a reader of that grammar only: nothing is evaluated, no
//! symbol is resolved, and a form that stands for code (a byte-code or closure `#[…]`) is
//! kept opaque and never shown.
//!
//! What it reads:
//! - integers (`#x`, `#o`, `#b` and `#NrDIGITS` radixes too), floats (`1.5`, `1e3`,
//!   `1.0e+INF`), symbols (with `\` escapes; `#:sym` uninterned ones), strings with every
//!   escape the Lisp reader knows (octal and `\x` bytes, `\u`, `\U`, `\N{U+…}`, control
//!   characters; a byte above 127 is kept as a byte and the string decoded as UTF-8 at the
//!   end, invalid bytes replaced);
//! - lists (dotted too), vectors, records `#s(type …)` (cl-defstruct objects and hash
//!   tables), `'x`, `` `x ``, `,x`, `#'x`, character literals `?a`;
//! - what `prin1` writes but `read` refuses, kept as [`Sexp::Opaque`] with its printed text:
//!   `#<buffer x>` and other unreadable objects, the `#N` of a structure printed inside
//!   itself, bool-vectors and byte-code. A print-circle label `#1=` is dropped, a reference
//!   `#1#` is opaque;
//! - only the first form of the text; `;` comments are skipped.
//!
//! A text that stops parsing (a file cut mid-write, a damaged byte, nesting deeper than
//! [`MAX_DEPTH`]) keeps every value read before the fault: open lists and vectors are
//! closed where they stand, and the error (`line N: …`) is returned beside the value.

use serde_json::{Map, Number, Value};

/// Deepest nesting read; deeper text is an error (a reader's stack is not unbounded).
pub const MAX_DEPTH: usize = 256;

/// One printed Lisp object.
#[derive(Clone, Debug, PartialEq)]
pub enum Sexp {
    Int(i64),
    Float(f64),
    Str(String),
    /// A symbol by name; `nil` and `t` are symbols too.
    Sym(String),
    /// A list: its elements, and the final `cdr` when it is dotted (`(a . b)`).
    List(Vec<Sexp>, Option<Box<Sexp>>),
    Vector(Vec<Sexp>),
    /// `#s(type slot…)`: the type symbol is the first element.
    Record(Vec<Sexp>),
    /// What `read` cannot give back (`#<buffer x>`, `#N`, byte-code), as printed.
    Opaque(String),
}

/// A read text: its first form (`None` when none was read before a fault or the end) and
/// the fault that stopped the reading, if any.
#[derive(Debug)]
pub struct Doc {
    pub value: Option<Sexp>,
    pub error: Option<String>,
}

/// Read the first form of `text`.
pub fn read(text: &str) -> Doc {
    let mut r = Reader {
        s: text.as_bytes(),
        pos: 0,
        depth: 0,
        error: None,
    };
    r.skip_ws();
    let value = if r.pos >= r.s.len() { None } else { r.form() };
    Doc {
        value,
        error: r.error,
    }
}

impl Sexp {
    /// `nil`, written as a symbol or as `()`.
    pub fn is_nil(&self) -> bool {
        match self {
            Sexp::Sym(s) => s == "nil",
            Sexp::List(v, None) => v.is_empty(),
            _ => false,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Sexp::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The symbol's name (`nil` included).
    pub fn sym(&self) -> Option<&str> {
        match self {
            Sexp::Sym(s) => Some(s),
            _ => None,
        }
    }

    /// The elements of a proper list; `nil` is the empty list. `None` for anything else.
    pub fn items(&self) -> Option<&[Sexp]> {
        match self {
            Sexp::List(v, None) => Some(v),
            s if s.is_nil() => Some(&[]),
            _ => None,
        }
    }

    /// A record's type name and slots: `#s(type …)`, or the vector form `[cl-struct-type …]`
    /// older Emacsen printed for a cl-defstruct.
    pub fn record(&self) -> Option<(&str, &[Sexp])> {
        match self {
            Sexp::Record(v) => Some((v.first()?.sym()?, &v[1..])),
            Sexp::Vector(v) => {
                let ty = v.first()?.sym()?.strip_prefix("cl-struct-")?;
                Some((ty, &v[1..]))
            }
            _ => None,
        }
    }

    /// The value after `key` (`:dir`) in a property list.
    pub fn plist_get(&self, key: &str) -> Option<&Sexp> {
        let items = self.items()?;
        items
            .chunks(2)
            .find(|kv| kv[0].sym() == Some(key))
            .and_then(|kv| kv.get(1))
    }

    /// The object as JSON, the way a JSON encoder of Emacs data would give it: `t` is
    /// `true`, `nil` `null`, `:false` and `:json-false` `false`; an association list
    /// (`((path . "x") (n . 3))`) or a property list (`(:path "x")`) is an object; a hash
    /// table's `data` too; other lists and vectors are arrays; other symbols, opaque forms
    /// and other records are strings or `{"record": type, "slots": […]}`.
    pub fn to_json(&self) -> Value {
        match self {
            Sexp::Int(n) => Value::from(*n),
            Sexp::Float(f) => Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or_else(|| Value::String(f.to_string())),
            Sexp::Str(s) => Value::String(s.clone()),
            Sexp::Sym(s) => match s.as_str() {
                "t" => Value::Bool(true),
                "nil" | ":null" | ":json-null" => Value::Null,
                ":false" | ":json-false" => Value::Bool(false),
                _ => Value::String(s.clone()),
            },
            Sexp::List(items, tail) => {
                if items.is_empty() && tail.is_none() {
                    return Value::Null;
                }
                if let Some(tail) = tail {
                    // A lone dotted pair outside an alist: `[car…, cdr]`.
                    let mut v: Vec<Value> = items.iter().map(Sexp::to_json).collect();
                    v.push(tail.to_json());
                    return Value::Array(v);
                }
                if let Some(obj) = alist(items).or_else(|| plist(items)) {
                    return Value::Object(obj);
                }
                Value::Array(items.iter().map(Sexp::to_json).collect())
            }
            Sexp::Vector(items) => Value::Array(items.iter().map(Sexp::to_json).collect()),
            Sexp::Record(items) => {
                let ty = items.first().and_then(Sexp::sym).unwrap_or_default();
                let slots = items.get(1..).unwrap_or_default();
                if ty == "hash-table" {
                    if let Some(data) = slots
                        .chunks(2)
                        .find(|kv| kv[0].sym() == Some("data"))
                        .and_then(|kv| kv.get(1))
                        .and_then(Sexp::items)
                    {
                        let mut m = Map::new();
                        for kv in data.chunks(2) {
                            let v = kv.get(1).map(Sexp::to_json).unwrap_or(Value::Null);
                            m.insert(key_text(&kv[0]), v);
                        }
                        return Value::Object(m);
                    }
                }
                let mut m = Map::new();
                m.insert("record".into(), Value::String(ty.to_string()));
                m.insert(
                    "slots".into(),
                    Value::Array(slots.iter().map(Sexp::to_json).collect()),
                );
                Value::Object(m)
            }
            Sexp::Opaque(s) => Value::String(s.clone()),
        }
    }
}

/// A key of an object: a symbol's name (a keyword's without its colon), a string, a number.
fn key_text(k: &Sexp) -> String {
    match k {
        Sexp::Sym(s) => s.strip_prefix(':').unwrap_or(s).to_string(),
        Sexp::Str(s) => s.clone(),
        Sexp::Int(n) => n.to_string(),
        other => other.to_json().to_string(),
    }
}

/// An association list as an object: every element a pair whose `car` is a symbol or a
/// string, `(k . v)` or `(k v…)` (the printer's form of a pair whose value is a list).
fn alist(items: &[Sexp]) -> Option<Map<String, Value>> {
    let mut m = Map::new();
    for it in items {
        let Sexp::List(parts, tail) = it else {
            return None;
        };
        let key = match parts.first()? {
            Sexp::Sym(s) if s != "nil" => s.clone(),
            Sexp::Str(s) => s.clone(),
            _ => return None,
        };
        let value = match tail {
            Some(t) if parts.len() == 1 => t.to_json(),
            Some(_) => return None,
            None if parts.len() >= 2 => Sexp::List(parts[1..].to_vec(), None).to_json(),
            // `(k)` is `(k . nil)`.
            None => Value::Null,
        };
        m.insert(key.strip_prefix(':').unwrap_or(&key).to_string(), value);
    }
    Some(m)
}

/// A property list (`:key value …`) as an object.
fn plist(items: &[Sexp]) -> Option<Map<String, Value>> {
    if items.len() % 2 != 0 {
        return None;
    }
    let mut m = Map::new();
    for kv in items.chunks(2) {
        let key = kv[0].sym()?.strip_prefix(':')?;
        m.insert(key.to_string(), kv[1].to_json());
    }
    Some(m)
}

struct Reader<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
    /// The first fault; once set, every form returns at once with what it holds.
    error: Option<String>,
}

/// Bytes that end a symbol or number.
fn delimiter(c: u8) -> bool {
    c.is_ascii_whitespace() || b"()[]\";'`,".contains(&c)
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.s.get(self.pos + ahead).copied()
    }

    fn fail(&mut self, msg: &str) {
        if self.error.is_none() {
            let line = 1 + self.s[..self.pos.min(self.s.len())]
                .iter()
                .filter(|&&c| c == b'\n')
                .count();
            self.error = Some(format!("line {line}: {msg}"));
        }
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_ascii_whitespace() {
                self.pos += 1;
            } else if c == b';' {
                while self.peek().is_some_and(|c| c != b'\n') {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    /// One form at the cursor (whitespace already skipped). `None` when the text ended or
    /// a fault stopped the reading before anything was read.
    fn form(&mut self) -> Option<Sexp> {
        if self.error.is_some() {
            return None;
        }
        let Some(c) = self.peek() else {
            self.fail("the text ends where a value should be (cut?)");
            return None;
        };
        match c {
            b'(' => {
                self.pos += 1;
                self.nested(|r| r.list())
            }
            b'[' => {
                self.pos += 1;
                self.nested(|r| r.seq(b']')).map(Sexp::Vector)
            }
            b')' | b']' => {
                self.fail(&format!("unexpected `{}`", c as char));
                None
            }
            b'"' => {
                self.pos += 1;
                self.string().map(Sexp::Str)
            }
            b'\'' => self.prefixed(1, "quote"),
            b'`' => self.prefixed(1, "`"),
            b',' if self.peek_at(1) == Some(b'@') => self.prefixed(2, ",@"),
            b',' => self.prefixed(1, ","),
            b'?' => {
                self.pos += 1;
                self.char_literal().map(|c| Sexp::Int(c as i64))
            }
            b'#' => self.dispatch(),
            _ => Some(self.atom()),
        }
    }

    /// A container's reading, one level deeper.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        if self.depth >= MAX_DEPTH {
            self.fail(&format!("nested deeper than {MAX_DEPTH} levels"));
            return None;
        }
        self.depth += 1;
        let v = f(self);
        self.depth -= 1;
        v
    }

    /// `'x` as `(quote x)`, and the backquote forms alike.
    fn prefixed(&mut self, len: usize, name: &str) -> Option<Sexp> {
        self.pos += len;
        self.skip_ws();
        let inner = self.form()?;
        Some(Sexp::List(vec![Sexp::Sym(name.into()), inner], None))
    }

    /// The elements up to `close`; at a fault or the end of the text, those read so far.
    fn seq_items(&mut self, close: u8, items: &mut Vec<Sexp>) {
        loop {
            self.skip_ws();
            if self.error.is_some() {
                return;
            }
            match self.peek() {
                None => {
                    self.fail("the text ends inside a list (cut?)");
                    return;
                }
                Some(c) if c == close => {
                    self.pos += 1;
                    return;
                }
                _ => match self.form() {
                    Some(v) => items.push(v),
                    None => return,
                },
            }
        }
    }

    fn seq(&mut self, close: u8) -> Option<Vec<Sexp>> {
        let mut items = Vec::new();
        self.seq_items(close, &mut items);
        Some(items)
    }

    /// A list after its `(`, dotted or not.
    fn list(&mut self) -> Option<Sexp> {
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            if self.error.is_some() {
                return Some(Sexp::List(items, None));
            }
            match self.peek() {
                None => {
                    self.fail("the text ends inside a list (cut?)");
                    return Some(Sexp::List(items, None));
                }
                Some(b')') => {
                    self.pos += 1;
                    return Some(Sexp::List(items, None));
                }
                Some(b'.') if !items.is_empty() && self.peek_at(1).is_none_or(delimiter) => {
                    self.pos += 1;
                    self.skip_ws();
                    let Some(tail) = self.form() else {
                        return Some(Sexp::List(items, None));
                    };
                    self.skip_ws();
                    match self.peek() {
                        Some(b')') => self.pos += 1,
                        None => self.fail("the text ends inside a list (cut?)"),
                        Some(_) => self.fail("more than one value after a dot"),
                    }
                    return Some(Sexp::List(items, Some(Box::new(tail))));
                }
                _ => match self.form() {
                    Some(v) => items.push(v),
                    None => return Some(Sexp::List(items, None)),
                },
            }
        }
    }

    /// The `#` syntaxes.
    fn dispatch(&mut self) -> Option<Sexp> {
        let start = self.pos;
        self.pos += 1;
        match self.peek() {
            Some(b's') if self.peek_at(1) == Some(b'(') => {
                self.pos += 2;
                self.nested(|r| r.seq(b')')).map(Sexp::Record)
            }
            Some(b'(') => {
                // A string with text properties: the string alone.
                self.pos += 1;
                let items = self.nested(|r| r.seq(b')'))?;
                Some(match items.into_iter().next() {
                    Some(Sexp::Str(s)) => Sexp::Str(s),
                    _ => Sexp::Opaque(self.text(start)),
                })
            }
            Some(b'[') => {
                // Byte-code or a closure: code, never data.
                self.pos += 1;
                self.nested(|r| r.seq(b']'))?;
                Some(Sexp::Opaque(self.text(start)))
            }
            Some(b'<') => {
                let mut depth = 0usize;
                while let Some(c) = self.peek() {
                    self.pos += 1;
                    match c {
                        b'<' => depth += 1,
                        b'>' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(Sexp::Opaque(self.text(start)));
                            }
                        }
                        _ => {}
                    }
                }
                self.fail("the text ends inside `#<…>` (cut?)");
                None
            }
            Some(b'\'') => self.prefixed(1, "function"),
            Some(b':') => {
                self.pos += 1;
                Some(self.atom())
            }
            Some(b'#') => {
                self.pos += 1;
                Some(Sexp::Sym(String::new()))
            }
            Some(b'&') => {
                // A bool-vector: `#&N"bits"`.
                self.pos += 1;
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                if self.peek() == Some(b'"') {
                    self.pos += 1;
                    self.string()?;
                }
                Some(Sexp::Opaque(self.text(start)))
            }
            Some(c @ (b'x' | b'X' | b'o' | b'O' | b'b' | b'B')) => {
                self.pos += 1;
                let radix = match c.to_ascii_lowercase() {
                    b'x' => 16,
                    b'o' => 8,
                    _ => 2,
                };
                self.radix_int(radix, start)
            }
            Some(c) if c.is_ascii_digit() => {
                let n0 = self.pos;
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                let n: u32 = std::str::from_utf8(&self.s[n0..self.pos])
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(0);
                match self.peek() {
                    // `#1=x`: a print-circle label; the object it labels.
                    Some(b'=') => {
                        self.pos += 1;
                        self.form()
                    }
                    Some(b'#') => {
                        self.pos += 1;
                        Some(Sexp::Opaque(self.text(start)))
                    }
                    Some(b'r') if (2..=36).contains(&n) => {
                        self.pos += 1;
                        self.radix_int(n, start)
                    }
                    // `#3`: an object printed inside itself (Emacs reads it as `nil`).
                    _ => Some(Sexp::Opaque(self.text(start))),
                }
            }
            _ => {
                self.fail("unknown `#` syntax");
                None
            }
        }
    }

    fn text(&self, start: usize) -> String {
        String::from_utf8_lossy(&self.s[start..self.pos]).into_owned()
    }

    fn radix_int(&mut self, radix: u32, start: usize) -> Option<Sexp> {
        let t0 = self.pos;
        while self.peek().is_some_and(|c| !delimiter(c)) {
            self.pos += 1;
        }
        let digits = std::str::from_utf8(&self.s[t0..self.pos]).unwrap_or("");
        Some(match i64::from_str_radix(digits, radix) {
            Ok(n) => Sexp::Int(n),
            Err(_) => Sexp::Opaque(self.text(start)),
        })
    }

    /// A symbol or a number.
    fn atom(&mut self) -> Sexp {
        let mut bytes = Vec::new();
        let mut escaped = false;
        while let Some(c) = self.peek() {
            if c == b'\\' {
                escaped = true;
                self.pos += 1;
                if let Some(n) = self.peek() {
                    bytes.push(n);
                    self.pos += 1;
                }
                continue;
            }
            if delimiter(c) {
                break;
            }
            bytes.push(c);
            self.pos += 1;
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if !escaped {
            if let Some(n) = number(&text) {
                return n;
            }
        }
        Sexp::Sym(text)
    }

    /// A character literal after its `?`.
    fn char_literal(&mut self) -> Option<u32> {
        match self.peek() {
            None => {
                self.fail("the text ends inside a character (cut?)");
                None
            }
            Some(b'\\') => {
                self.pos += 1;
                let mut buf = Vec::new();
                self.escape(&mut buf, true)?;
                Some(match String::from_utf8(buf) {
                    Ok(s) => s.chars().next().map_or(0, u32::from),
                    Err(e) => e.as_bytes().first().copied().map_or(0, u32::from),
                })
            }
            Some(lead) => {
                let end = (self.pos + utf8_len(lead)).min(self.s.len());
                let ch = std::str::from_utf8(&self.s[self.pos..end])
                    .ok()
                    .and_then(|t| t.chars().next())
                    .unwrap_or('\u{fffd}');
                self.pos = end;
                Some(u32::from(ch))
            }
        }
    }

    /// A string after its opening quote.
    fn string(&mut self) -> Option<String> {
        let mut buf = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                self.fail("the text ends inside a string (cut?)");
                // What was read is kept, so a cut prompt still shows its start.
                return Some(String::from_utf8_lossy(&buf).into_owned());
            };
            self.pos += 1;
            match c {
                b'"' => return Some(String::from_utf8_lossy(&buf).into_owned()),
                b'\\' => {
                    if self.escape(&mut buf, false).is_none() {
                        return Some(String::from_utf8_lossy(&buf).into_owned());
                    }
                }
                _ => buf.push(c),
            }
        }
    }

    /// One escape after its backslash, its bytes appended to `buf`. `in_char`: in a
    /// character literal, where `\s` is a space and `\<newline>` is no escape to skip.
    fn escape(&mut self, buf: &mut Vec<u8>, in_char: bool) -> Option<()> {
        let Some(c) = self.peek() else {
            self.fail("the text ends inside an escape (cut?)");
            return None;
        };
        self.pos += 1;
        let code: u32 = match c {
            b'\n' | b' ' if !in_char => return Some(()),
            b'a' => 7,
            b'b' => 8,
            b't' => 9,
            b'n' => 10,
            b'v' => 11,
            b'f' => 12,
            b'r' => 13,
            b'e' => 27,
            b's' if self.peek() != Some(b'-') => 32,
            b'd' => 127,
            b'x' => {
                let v = self.hex_digits(usize::MAX);
                if self.peek() == Some(b'\\') && self.peek_at(1) == Some(b' ') {
                    self.pos += 2;
                }
                return push_code(buf, v, true);
            }
            b'u' => return push_code(buf, self.hex_digits(4), false),
            b'U' => return push_code(buf, self.hex_digits(8), false),
            b'N' if self.peek() == Some(b'{') => {
                let open = self.pos;
                let Some(close) = self.s[open..].iter().position(|&c| c == b'}') else {
                    self.fail("the text ends inside `\\N{…}` (cut?)");
                    return None;
                };
                let close = open + close;
                self.pos = close + 1;
                let inner = String::from_utf8_lossy(&self.s[open + 1..close]).into_owned();
                match inner
                    .strip_prefix("U+")
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                {
                    Some(v) => return push_code(buf, v, false),
                    None => {
                        // A character name: kept as written, sessfs knows no name table.
                        buf.extend_from_slice(&self.s[open - 2..self.pos]);
                        return Some(());
                    }
                }
            }
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                return push_code(buf, v, true);
            }
            b'^' => {
                let n = self.peek().unwrap_or(b'?');
                self.pos += 1;
                u32::from(n & 0x1f)
            }
            b'C' if self.peek() == Some(b'-') => {
                self.pos += 1;
                let n = self.peek().unwrap_or(b'?');
                self.pos += 1;
                u32::from(n & 0x1f)
            }
            b'M' | b'S' | b'H' | b'A' | b's' if self.peek() == Some(b'-') => {
                // A modifier on a key, which has no place in text: the key alone.
                self.pos += 1;
                return self.escape_or_char(buf, in_char);
            }
            _ => {
                // Any other character stands for itself (`\"`, `\\`, `\(`), UTF-8 whole.
                let start = self.pos - 1;
                let len = utf8_len(c);
                let end = (start + len).min(self.s.len());
                buf.extend_from_slice(&self.s[start..end]);
                self.pos = end;
                return Some(());
            }
        };
        push_code(buf, code, false)
    }

    fn escape_or_char(&mut self, buf: &mut Vec<u8>, in_char: bool) -> Option<()> {
        match self.peek() {
            Some(b'\\') => {
                self.pos += 1;
                self.escape(buf, in_char)
            }
            Some(c) => {
                let len = utf8_len(c);
                let end = (self.pos + len).min(self.s.len());
                buf.extend_from_slice(&self.s[self.pos..end]);
                self.pos = end;
                Some(())
            }
            None => {
                self.fail("the text ends inside an escape (cut?)");
                None
            }
        }
    }

    fn hex_digits(&mut self, max: usize) -> u32 {
        let mut v: u32 = 0;
        let mut n = 0;
        while n < max {
            match self.peek().and_then(|c| (c as char).to_digit(16)) {
                Some(d) => {
                    v = v.saturating_mul(16).saturating_add(d);
                    self.pos += 1;
                    n += 1;
                }
                None => break,
            }
        }
        v
    }
}

/// Append the character `v`; with `raw`, a value from 128 to 255 is a raw byte (an octal or
/// `\x` escape in a unibyte string), as Emacs prints bytes that are no text.
fn push_code(buf: &mut Vec<u8>, v: u32, raw: bool) -> Option<()> {
    if raw && (0x80..=0xff).contains(&v) {
        buf.push(v as u8);
        return Some(());
    }
    let ch = char::from_u32(v).unwrap_or('\u{fffd}');
    let mut tmp = [0u8; 4];
    buf.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
    Some(())
}

/// Length of the UTF-8 sequence a lead byte starts (1 for a stray continuation byte).
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xf0..=0xf7 => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

/// A number the Lisp reader would read from `t`: an integer (`-12`, `+3`, `1.`) or a float
/// (`1.5`, `.5`, `1e3`, `1.0e+INF`, `0.0e+NaN`); anything else is a symbol.
fn number(t: &str) -> Option<Sexp> {
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let neg = t.starts_with('-');
    let int_part = body.strip_suffix('.').unwrap_or(body);
    if !int_part.is_empty() && int_part.bytes().all(|c| c.is_ascii_digit()) {
        return Some(match int_part.parse::<i64>() {
            Ok(n) => Sexp::Int(if neg { -n } else { n }),
            // A bignum: as a float, which is all JSON can carry anyway.
            Err(_) => Sexp::Float(t.trim_end_matches('.').parse::<f64>().ok()?),
        });
    }
    if let Some(mantissa) = body
        .strip_suffix("e+INF")
        .or_else(|| body.strip_suffix("e+NaN"))
    {
        mantissa.parse::<f64>().ok()?;
        let v = if body.ends_with("INF") {
            f64::INFINITY
        } else {
            f64::NAN
        };
        return Some(Sexp::Float(if neg { -v } else { v }));
    }
    let numeric = body
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'));
    if numeric && body.bytes().any(|c| c.is_ascii_digit()) {
        return t.parse::<f64>().ok().map(Sexp::Float);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(text: &str) -> Sexp {
        let d = read(text);
        assert_eq!(d.error, None, "{text}");
        d.value.expect("a value")
    }

    fn s(x: &str) -> Sexp {
        Sexp::Str(x.into())
    }

    fn sym(x: &str) -> Sexp {
        Sexp::Sym(x.into())
    }

    #[test]
    fn atoms_read_as_the_lisp_reader_reads_them() {
        assert_eq!(one("42"), Sexp::Int(42));
        assert_eq!(one("-7"), Sexp::Int(-7));
        assert_eq!(one("1."), Sexp::Int(1));
        assert_eq!(one("1.5"), Sexp::Float(1.5));
        assert_eq!(one(".5"), Sexp::Float(0.5));
        assert_eq!(one("1e3"), Sexp::Float(1000.0));
        assert_eq!(one("1.0e+INF"), Sexp::Float(f64::INFINITY));
        assert_eq!(one("#x1F"), Sexp::Int(31));
        assert_eq!(one("#24r1k"), Sexp::Int(44));
        assert_eq!(one("1+"), sym("1+"));
        assert_eq!(one("inf"), sym("inf"));
        assert_eq!(one("foo\\ bar"), sym("foo bar"));
        assert_eq!(one("\\12"), sym("12"));
        assert_eq!(one(":dir"), sym(":dir"));
        assert_eq!(one("#:llm-key"), sym("llm-key"));
        assert_eq!(one("?a"), Sexp::Int(97));
        assert_eq!(one("?\\n"), Sexp::Int(10));
    }

    #[test]
    fn strings_keep_every_escape_and_their_utf8() {
        assert_eq!(one(r#""a\"b\\c""#), s("a\"b\\c"));
        assert_eq!(one("\"line one\nline two\""), s("line one\nline two"));
        assert_eq!(one(r#""tab\there\n""#), s("tab\there\n"));
        assert_eq!(one(r#""caf\u00e9 \x41\ B \101""#), s("café AB A"));
        assert_eq!(one("\"joined\\\nline\""), s("joinedline"));
        assert_eq!(one("\"naïve ✓\""), s("naïve ✓"));
        // Octal bytes of UTF-8 text, as a unibyte string prints.
        assert_eq!(one(r#""\303\251t\303\251""#), s("été"));
        // A byte that is no UTF-8 is replaced, never a failure.
        assert_eq!(one(r#""x\377y""#), s("x\u{fffd}y"));
        assert_eq!(one(r#""\N{U+1F600}""#), s("😀"));
        assert_eq!(one(r#""\^I""#), s("\t"));
        // Text properties are dropped: the string alone.
        assert_eq!(one(r#"#("bold" 0 4 (face bold))"#), s("bold"));
    }

    #[test]
    fn lists_vectors_records_and_quotes() {
        assert_eq!(
            one("(a . b)"),
            Sexp::List(vec![sym("a")], Some(Box::new(sym("b"))))
        );
        assert_eq!(one("(a .b)"), Sexp::List(vec![sym("a"), sym(".b")], None));
        assert_eq!(one("()"), Sexp::List(vec![], None));
        assert!(one("nil").is_nil() && one("()").is_nil());
        assert_eq!(one("[1 \"x\"]"), Sexp::Vector(vec![Sexp::Int(1), s("x")]));
        let r = one("#s(ellama-session \"id\" nil)");
        let (ty, slots) = r.record().expect("record");
        assert_eq!((ty, slots.len()), ("ellama-session", 2));
        let v = one("[cl-struct-ellama-session \"id\"]");
        assert_eq!(v.record().map(|(t, _)| t), Some("ellama-session"));
        assert_eq!(one("'x"), Sexp::List(vec![sym("quote"), sym("x")], None));
        assert_eq!(
            one("#'car"),
            Sexp::List(vec![sym("function"), sym("car")], None)
        );
        assert_eq!(one("; a comment\n  7 ; more"), Sexp::Int(7));
    }

    #[test]
    fn what_read_refuses_is_kept_opaque() {
        let v = one("(:buffers (#<buffer foo<2>>) :request #<process ollama> :n #2)");
        assert_eq!(
            v.plist_get(":buffers").and_then(Sexp::items),
            Some(&[Sexp::Opaque("#<buffer foo<2>>".into())][..])
        );
        assert_eq!(
            v.plist_get(":request"),
            Some(&Sexp::Opaque("#<process ollama>".into()))
        );
        assert_eq!(v.plist_get(":n"), Some(&Sexp::Opaque("#2".into())));
        assert_eq!(one("#[(x) (x) nil]"), Sexp::Opaque("#[(x) (x) nil]".into()));
        assert_eq!(one("#1=(a #1#)").items().map(<[Sexp]>::len), Some(2));
        assert_eq!(one("#&5\"\\37\""), Sexp::Opaque("#&5\"\\37\"".into()));
    }

    #[test]
    fn a_cut_text_keeps_what_came_before_the_cut() {
        let d = read("#s(ellama-session \"my chat\" #s(llm-ollama nil nil nil \"http\" \"local");
        let e = d.error.expect("an error");
        assert!(e.contains("ends inside"), "{e}");
        let v = d.value.expect("a value");
        let (ty, slots) = v.record().expect("record");
        assert_eq!(ty, "ellama-session");
        assert_eq!(slots[0], s("my chat"));
        let (pty, pslots) = slots[1].record().expect("provider");
        assert_eq!(pty, "llm-ollama");
        assert_eq!(pslots[4], s("local"));
    }

    #[test]
    fn faults_and_depth_are_errors_not_panics() {
        for text in [
            ")",
            "#?",
            "(a . b c)",
            "\"\\",
            "?",
            "#<never closed",
            "(#1=",
            "[1 2",
        ] {
            let d = read(text);
            assert!(d.error.is_some(), "{text}: {:?}", d.value);
        }
        let deep = "(".repeat(MAX_DEPTH + 10);
        let d = read(&deep);
        assert!(d.error.expect("error").contains("nested deeper"));
        assert_eq!(read("   ").value, None);
        assert_eq!(read("").error, None);
    }

    #[test]
    fn data_becomes_json_as_emacs_encodes_it() {
        let args =
            one(r#"((path . "src/main.rs") (lines . [1 2]) (deep (k . t)) (off . :false) (none))"#);
        assert_eq!(
            args.to_json(),
            json!({"path": "src/main.rs", "lines": [1, 2], "deep": {"k": true},
                   "off": false, "none": null})
        );
        assert_eq!(
            one("(:dir \"~/p/\" :n 3)").to_json(),
            json!({"dir": "~/p/", "n": 3})
        );
        assert_eq!(
            one("#s(hash-table size 1 test equal data (\"q\" \"x\" k 2))").to_json(),
            json!({"q": "x", "k": 2})
        );
        assert_eq!(one("(1 2 \"x\")").to_json(), json!([1, 2, "x"]));
        assert_eq!(one("nil").to_json(), Value::Null);
        assert_eq!(
            one("#s(point 1 2)").to_json(),
            json!({"record": "point", "slots": [1, 2]})
        );
    }
}
