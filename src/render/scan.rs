//! Finding a few ASCII bytes in long text, eight bytes at a time, and lines with `memchr`.
//!
//! Rendering escapes every message and tool output: `"`, `\` and controls for
//! `messages.jsonl`, `<` and `&` for `transcript.md`. Those bytes are rare, so most of the
//! work is skipping text that holds none of them. Here one `u64` of text is tested at once
//! ("SWAR"): a test sets the high bit of each byte that matches. Borrows can also set it in
//! a byte above a match, never below the first one, so the lowest set bit is exact.

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);

/// High bits where a byte of `x` is `b`.
pub fn equal(x: u64, b: u8) -> u64 {
    let y = x ^ (ONES * u64::from(b));
    y.wrapping_sub(ONES) & !y & HIGH
}

/// High bits where a byte of `x` is below `n` (`n` at most 0x80).
pub fn below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH
}

/// The first index at or after `from` whose byte matches: `word` tests eight bytes as
/// above, `byte` tests one (the same test, for the tail).
pub fn first(
    bytes: &[u8],
    from: usize,
    word: impl Fn(u64) -> u64,
    byte: impl Fn(u8) -> bool,
) -> Option<usize> {
    let mut i = from;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let hits = word(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
        if hits != 0 {
            return Some(i + hits.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    bytes.get(i..)?.iter().position(|&b| byte(b)).map(|k| i + k)
}

/// `text`'s lines exactly as [`str::lines`] gives them (`\n` or `\r\n` ends a line, a last
/// line without an ending counts), found with the `memchr` crate: it looks at 32 bytes at a
/// time where the standard library's search for a `char` looks at 16, and rendering splits
/// every message and tool output into lines.
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (line, next) = match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(i) => {
                let line = &rest[..i];
                (line.strip_suffix('\r').unwrap_or(line), &rest[i + 1..])
            }
            None => (rest, ""),
        };
        rest = next;
        Some(line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every place in and across the words, beside near misses and multi-byte characters,
    /// against a plain search.
    #[test]
    fn finds_what_a_plain_search_finds() {
        let word = |x: u64| equal(x, b'<') | equal(x, b'&') | below(x, 0x20);
        let byte = |b: u8| b == b'<' || b == b'&' || b < 0x20;
        for special in ["<", "&", "\n", "\0", "\u{1f}"] {
            for neighbour in ["a", " ", ";", "=", "'", "%", "é", "\u{7f}", "€"] {
                for at in 0..20 {
                    let mut s = neighbour.repeat(20);
                    let cut = s.char_indices().nth(at).map_or(s.len(), |(i, _)| i);
                    s.insert_str(cut, special);
                    s.push_str(special);
                    let b = s.as_bytes();
                    for from in [0, 1, cut, cut + 1] {
                        let want = b[from..].iter().position(|&c| byte(c)).map(|k| from + k);
                        assert_eq!(first(b, from, word, byte), want, "{s:?} from {from}");
                    }
                }
            }
        }
        assert_eq!(first(b"", 0, word, byte), None);
        assert_eq!(first(b"abc", 3, word, byte), None);
    }

    #[test]
    fn lines_are_the_standard_librarys() {
        for text in [
            "",
            "\n",
            "\n\n",
            "a",
            "a\n",
            "a\nb",
            "a\r\nb\r\n",
            "a\r",
            "a\rb\n\r",
            "\r\n\r\n",
            "é\nü\r\n€",
            "  x\n\n  y  \n",
        ] {
            let ours: Vec<&str> = super::lines(text).collect();
            let std: Vec<&str> = text.lines().collect();
            assert_eq!(ours, std, "{text:?}");
        }
    }
}
