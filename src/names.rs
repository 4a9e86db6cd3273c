//! Directory names for native ids (CONTRACT section 4).
//!
//! A native id becomes one path component: `%`, `/`, `~`, a leading `.` and control bytes
//! are percent-encoded (`%25`, `%2F`, `%7E`, `%2E`, `%00`..`%1F`, `%7F`), so the mapping is
//! reversible with [`unescape`]. A name longer than 255 bytes keeps its first 230 bytes (cut
//! at a character boundary) followed by `~` and 16 hex digits of a stable FNV-1a hash of the
//! whole id; `meta.json` always holds the exact id.
//!
//! `~` is escaped so that it never comes from a native id: every `~` in a name was put there
//! by sessfs (a shortened name's hash, or [`with_suffix`] when two roots hold the same id), so
//! a disambiguated name can never be the name of another session.
//!
//! Ids read from file names that are not UTF-8 keep each invalid byte as the four characters
//! `\xNN` ([`os_id`]), so two such names never fold into one lossy id.

const MAX_NAME: usize = 255;
const KEEP: usize = 230;

pub fn escape(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for (i, ch) in id.char_indices() {
        let needs = ch == '%'
            || ch == '/'
            || ch == '~'
            || (ch as u32) < 0x20
            || ch == '\x7f'
            || (i == 0 && ch == '.');
        if needs {
            out.push_str(&format!("%{:02X}", ch as u32));
        } else {
            out.push(ch);
        }
    }
    if id.is_empty() {
        out.push_str("%00empty");
    }
    if out.len() > MAX_NAME {
        let mut cut = KEEP;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out = format!("{}~{:016x}", &out[..cut], fnv1a(id.as_bytes()));
    }
    out
}

/// `name` with the disambiguating suffix `~n` (n >= 2), still at most 255 bytes. The name
/// part is cut at a character boundary when it has to be; callers check the result against
/// the names already taken, so a cut can never merge two sessions.
pub fn with_suffix(name: &str, n: usize) -> String {
    let suffix = format!("~{n}");
    let mut cut = name.len().min(MAX_NAME - suffix.len());
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &name[..cut])
}

/// `base`, or `base~2`, `base~3`, … when taken: the one rule for names a store or the renderer
/// makes up (branches, subagents). `~` never occurs in an escaped native id, so a suffixed name
/// cannot be another entry's plain name.
pub fn unique_name<S: std::hash::BuildHasher>(
    taken: &mut std::collections::HashSet<String, S>,
    base: &str,
) -> String {
    let mut name = base.to_string();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}~{n}");
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// A native id from a file name: the name itself when it is UTF-8, else the name with each
/// byte that is not valid UTF-8 written as `\xNN` (lowercase hex).
pub fn os_id(name: &std::ffi::OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    if let Some(s) = name.to_str() {
        return s.to_string();
    }
    let mut out = String::new();
    for chunk in name.as_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Inverse of [`escape`] for names that were not shortened.
pub fn unescape(name: &str) -> String {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(v) = u8::from_str_radix(&name[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sanitise a tool name for a file name: keep `[A-Za-z0-9_.-]`, replace the rest with `_`,
/// at most 48 bytes.
pub fn tool_file_part(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert(0, '_');
    }
    s
}

pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a::default();
    std::hash::Hasher::write(&mut h, bytes);
    std::hash::Hasher::finish(&h)
}

/// FNV-1a as a [`std::hash::Hasher`], fed piece by piece: for names, checksums and hash
/// sets that need no defence against chosen input.
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_take_the_next_free_suffix() {
        let mut taken = std::collections::HashSet::new();
        let got: Vec<String> = ["a", "a", "a~2", "a", "b"]
            .iter()
            .map(|b| unique_name(&mut taken, b))
            .collect();
        assert_eq!(got, ["a", "a~2", "a~2~2", "a~3", "b"]);
    }

    #[test]
    fn escapes_and_reverses() {
        for id in ["a/b%c", ".hidden", "x\ny", "plain-uuid-1234", "a.b"] {
            let e = escape(id);
            assert!(!e.contains('/') && !e.starts_with('.'), "{e}");
            assert_eq!(unescape(&e), id);
        }
        assert_eq!(escape(".x/y"), "%2Ex%2Fy");
        assert_eq!(escape("a~2"), "a%7E2");
        assert_eq!(unescape("a%7E2"), "a~2");
    }

    #[test]
    fn a_suffixed_name_is_never_a_native_name() {
        // Every `~` of a native id is escaped, so `<name>~<n>` cannot be any id's name.
        for id in ["a~2", "a", "~", "x~16"] {
            assert!(!escape(id).contains('~'), "{id}");
        }
        assert_eq!(with_suffix("a", 2), "a~2");
        let long = "y".repeat(255);
        let s = with_suffix(&long, 12);
        assert_eq!(s.len(), 255);
        assert!(s.ends_with("y~12"));
    }

    #[test]
    fn non_utf8_file_names_keep_their_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let a = std::ffi::OsStr::from_bytes(b"b\xff");
        let b = std::ffi::OsStr::from_bytes(b"b\xfe");
        assert_eq!(os_id(a), "b\\xff");
        assert_ne!(os_id(a), os_id(b));
        assert_eq!(os_id(std::ffi::OsStr::new("plain")), "plain");
    }

    #[test]
    fn long_names_are_shortened_stably() {
        let id = "x".repeat(400);
        let e = escape(&id);
        assert!(e.len() <= 255);
        assert_eq!(e, escape(&id));
        assert_ne!(e, escape(&"x".repeat(401)));
    }
}
