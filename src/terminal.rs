//! Terminal control out of text.
//!
//! Tool output captured from a terminal carries colours, cursor moves, hyperlinks and the
//! `\r` of progress bars. The renderers clean every human-facing file with
//! [`strip_terminal`], and the Claude parser cleans the output of local commands with it
//! before that output becomes a message, so it sits below both ([`crate::render`] and
//! [`crate::stores`]) and imports neither.

use std::borrow::Cow;

/// `s` without terminal control: CSI sequences (`ESC [ … final`: colours, cursor moves),
/// OSC and other string sequences (`ESC ] … BEL` or `… ESC \\`: window titles,
/// hyperlinks), two-byte ESC sequences (`ESC ( B`, `ESC 7`), and every other control
/// character except newline and tab (`\r` of progress bars, BEL, NUL, C1 controls).
///
/// Tool output captured from a terminal is full of these; in Markdown they are noise that
/// breaks `grep` (`ESC[1mRUN` does not match `RUN` as a word) and some viewers. Only the
/// human-facing files are cleaned: `messages.jsonl` keeps the bytes the agent stored.
pub fn strip_terminal(s: &str) -> Cow<'_, str> {
    let dirty = |c: char| c.is_control() && c != '\n' && c != '\t';
    // A byte scan first (most text has no control at all): C0 controls and DEL are single
    // bytes, and every C1 control (U+0080..U+009F) starts with 0xC2. A 0xC2 that is not a
    // control only sends the text down the exact path below.
    // The scan looks at 64 bytes at a time without stopping early, which the compiler
    // turns into vector compares.
    let suspect = |b: u8| (b < 0x20 && b != b'\n' && b != b'\t') | (b == 0x7f) | (b == 0xc2);
    let any_suspect = s
        .as_bytes()
        .chunks(64)
        .any(|c| c.iter().fold(false, |acc, &b| acc | suspect(b)));
    if !any_suspect || !s.chars().any(dirty) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            if !dirty(c) {
                out.push(c);
            }
            continue;
        }
        match chars.peek().copied() {
            Some('[') => {
                chars.next();
                // Parameters and intermediates, then one final byte in '@'..='~'; anything
                // else ends a malformed sequence (and is kept).
                while let Some(&d) = chars.peek() {
                    if ('\u{20}'..='\u{3f}').contains(&d) {
                        chars.next();
                    } else {
                        if ('@'..='~').contains(&d) {
                            chars.next();
                        }
                        break;
                    }
                }
            }
            Some(']' | 'P' | 'X' | '^' | '_') => {
                chars.next();
                // A string up to BEL or ST (`ESC \\`).
                while let Some(d) = chars.next() {
                    if d == '\u{7}' {
                        break;
                    }
                    if d == '\u{1b}' {
                        if chars.peek() == Some(&'\\') {
                            chars.next();
                        }
                        break;
                    }
                }
            }
            Some(d) if ('\u{20}'..='\u{2f}').contains(&d) => {
                // `ESC ( B` and friends: intermediates, then one final byte.
                while chars
                    .peek()
                    .is_some_and(|d| ('\u{20}'..='\u{2f}').contains(d))
                {
                    chars.next();
                }
                if chars
                    .peek()
                    .is_some_and(|d| ('\u{30}'..='\u{7e}').contains(d))
                {
                    chars.next();
                }
            }
            Some(d) if ('\u{30}'..='\u{7e}').contains(&d) => {
                chars.next();
            }
            _ => {}
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_control_is_removed() {
        assert_eq!(
            strip_terminal("\u{1b}[1m\u{1b}[46m RUN \u{1b}[49m\u{1b}[22m v1\r\n"),
            " RUN  v1\n"
        );
        assert_eq!(
            strip_terminal(
                "\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{7}\u{1b}(B\u{1b}7ok\u{0}\tend\u{1b}"
            ),
            "linkok\tend"
        );
        assert!(matches!(strip_terminal("plain\ttext\n"), Cow::Borrowed(_)));
        // Anywhere in a long text, chunk edges included; a C1 lead byte that is not a
        // control (`¢` is C2 A2) is kept.
        let long = format!("{}\u{7}{}\u{85}¢", "a".repeat(64), "b".repeat(63));
        assert_eq!(
            strip_terminal(&long),
            format!("{}{}¢", "a".repeat(64), "b".repeat(63))
        );
        assert!(matches!(strip_terminal("¢ 5"), Cow::Borrowed(_)));
    }
}
