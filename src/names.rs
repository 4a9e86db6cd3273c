//! Directory names for native ids (CONTRACT section 4).
//!
//! A native id becomes one path component: `%`, `/`, a leading `.` and control bytes are
//! percent-encoded (`%25`, `%2F`, `%2E`, `%00`..`%1F`, `%7F`), so the mapping is reversible
//! with [`unescape`]. A name longer than 255 bytes keeps its first 230 bytes (cut at a
//! character boundary) followed by `~` and 16 hex digits of a stable FNV-1a hash of the
//! whole id; `meta.json` always holds the exact id.

const MAX_NAME: usize = 255;
const KEEP: usize = 230;

pub fn escape(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for (i, ch) in id.char_indices() {
        let needs =
            ch == '%' || ch == '/' || (ch as u32) < 0x20 || ch == '\x7f' || (i == 0 && ch == '.');
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
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_reverses() {
        for id in ["a/b%c", ".hidden", "x\ny", "plain-uuid-1234", "a.b"] {
            let e = escape(id);
            assert!(!e.contains('/') && !e.starts_with('.'), "{e}");
            assert_eq!(unescape(&e), id);
        }
        assert_eq!(escape(".x/y"), "%2Ex%2Fy");
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
