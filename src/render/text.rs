//! Small text helpers shared by the renderers: times, numbers, fences and Markdown escaping.
//!
//! They live in one place so that every file spells a time, a token count or a fence the same
//! way; a reader comparing `transcript.md` with `tools/` or a `.diff` sees one format.

use crate::terminal::strip_terminal;
use chrono::{DateTime, Utc};
use std::borrow::Cow;

/// `2026-02-03 22:03:08 UTC`: what a human reads in headings and tables.
pub fn human_time(t: &DateTime<Utc>) -> String {
    let mut out = String::with_capacity(23);
    human_time_into(&mut out, t);
    out
}

/// [`human_time`] appended to `out`: one per message heading, so no string of its own.
pub fn human_time_into(out: &mut String, t: &DateTime<Utc>) {
    use std::fmt::Write as _;
    match plain(t) {
        Some(f) => {
            let mut b = *b"0000-00-00 00:00:00 UTC";
            digits(&mut b, &f);
            out.push_str(std::str::from_utf8(&b).unwrap_or_default());
        }
        None => {
            let _ = write!(out, "{}", t.format("%Y-%m-%d %H:%M:%S UTC"));
        }
    }
}

/// The fields of [`plain`] written into the zeros of a `0000-00-00?00:00:00.000` template
/// (the milliseconds only when it is that long): per message, where `format!` with its
/// widths cost more than the rest of the heading.
fn digits(b: &mut [u8], &(y, mo, d, h, mi, sec, ms): &Fields) {
    let with_ms = b.get(19) == Some(&b'.');
    let mut put = |at: usize, width: usize, mut n: u32| {
        for i in (at..at + width).rev() {
            b[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, y as u32);
    put(5, 2, mo);
    put(8, 2, d);
    put(11, 2, h);
    put(14, 2, mi);
    put(17, 2, sec);
    if with_ms {
        put(20, 3, ms);
    }
}

/// `2026-02-03T22:03:08.123Z`: what programs read in `meta.json` and `messages.jsonl`.
pub fn iso_time(t: &DateTime<Utc>) -> String {
    Iso(t).to_string()
}

/// Year, month, day, hour, minute, second, millisecond.
type Fields = (i32, u32, u32, u32, u32, u32, u32);

/// The fields of `t` when `format!` spells them exactly as chrono's `%Y…%.3f` would (a
/// four-digit year, no leap second), which is one call per message and several times
/// faster than interpreting a format string; `None` sends the odd cases to chrono.
fn plain(t: &DateTime<Utc>) -> Option<Fields> {
    use chrono::{Datelike, Timelike};
    let ns = t.nanosecond();
    ((0..=9999).contains(&t.year()) && ns < 1_000_000_000).then(|| {
        let (d, c) = (t.date_naive(), t.time());
        (
            d.year(),
            d.month(),
            d.day(),
            c.hour(),
            c.minute(),
            c.second(),
            ns / 1_000_000,
        )
    })
}

pub fn iso_opt(t: Option<&DateTime<Utc>>) -> Option<String> {
    t.map(iso_time)
}

/// [`iso_time`] as a JSON string written straight into the line being serialised: one per
/// message in `messages.jsonl`, so no string of its own.
pub struct Iso<'a>(pub &'a DateTime<Utc>);

impl std::fmt::Display for Iso<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match plain(self.0) {
            Some(fields) => {
                let mut b = *b"0000-00-00T00:00:00.000Z";
                digits(&mut b, &fields);
                f.write_str(std::str::from_utf8(&b).unwrap_or_default())
            }
            None => write!(f, "{}", self.0.format("%Y-%m-%dT%H:%M:%S%.3fZ")),
        }
    }
}

impl serde::Serialize for Iso<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// [`thousands_into`] as a string of its own.
#[cfg(test)]
pub fn thousands(n: u64) -> String {
    let mut out = String::with_capacity(26);
    thousands_into(&mut out, n);
    out
}

/// `1234567` -> `1,234,567`, appended to `out`, the digits spelled on the stack.
pub fn thousands_into(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in (0..len).rev() {
        out.push(digits[i] as char);
        if i > 0 && i % 3 == 0 {
            out.push(',');
        }
    }
}

/// [`usd_into`] as a string of its own.
#[cfg(test)]
pub fn usd(v: f64) -> String {
    let mut out = String::new();
    usd_into(&mut out, v);
    out
}

/// `$0.0123`, appended to `out`. Costs are small per message, so four decimals;
/// non-finite values show as `$?`.
pub fn usd_into(out: &mut String, v: f64) {
    use std::fmt::Write as _;
    if !v.is_finite() {
        out.push_str("$?");
        return;
    }
    // Twice per assistant message in a transcript, and `{:.4}`'s exact rounding is slow.
    // Where the tenths of a hundredth of a cent are clearly not a tie, rounding `v * 1e4`
    // gives the same digits; ties and odd values go to `format!`.
    let scaled = v * 1e4;
    let frac = scaled - scaled.floor();
    if (0.0..1e12).contains(&scaled) && (frac - 0.5).abs() > 1e-3 {
        let n = scaled.round() as u64;
        let _ = write!(out, "${}.{:04}", n / 10_000, n % 10_000);
    } else {
        let _ = write!(out, "${v:.4}");
    }
}

fn longest_backtick_run(s: &str) -> usize {
    // Bytes, not chars: a backtick is one byte and never part of another character. Most
    // text has none or few, so jump between them with `memchr` and count each run.
    let bytes = s.as_bytes();
    let mut best = 0;
    let mut at = 0;
    while let Some(i) = memchr::memchr(b'`', &bytes[at..]) {
        let start = at + i;
        let run = bytes[start..].iter().take_while(|&&b| b == b'`').count();
        best = best.max(run);
        at = start + run;
    }
    best
}

/// [`fence_into`] as a string of its own.
#[cfg(test)]
pub fn fence(body: &str, lang: &str) -> String {
    let mut out = String::new();
    fence_into(&mut out, body, lang);
    out
}

/// A fenced code block whose backtick fence is longer than any backtick run in `body`
/// (at least three), so no content can close it early, appended to `out`. Ends with a
/// newline. Terminal control is removed first ([`strip_terminal`]).
pub fn fence_into(out: &mut String, body: &str, lang: &str) {
    let body = strip_terminal(body);
    let body = body.as_ref();
    let ticks = (longest_backtick_run(body) + 1).max(3);
    out.reserve(body.len() + 2 * ticks + lang.len() + 4);
    out.extend(std::iter::repeat_n('`', ticks));
    out.push_str(lang);
    out.push('\n');
    out.push_str(body);
    if !body.is_empty() && !body.ends_with('\n') {
        out.push('\n');
    }
    out.extend(std::iter::repeat_n('`', ticks));
    out.push('\n');
}

/// An inline code span that survives backticks in `s` and `|` in a table cell.
pub fn code_span(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    code_span_into(&mut out, s);
    out
}

/// [`code_span`] appended to `out`.
pub fn code_span_into(out: &mut String, s: &str) {
    let ticks = longest_backtick_run(s) + 1;
    let line = one_line(s);
    let pad = line.starts_with('`') || line.ends_with('`');
    out.extend(std::iter::repeat_n('`', ticks));
    if pad {
        out.push(' ');
    }
    push_pipes_escaped(out, &line);
    if pad {
        out.push(' ');
    }
    out.extend(std::iter::repeat_n('`', ticks));
}

/// Text for one table cell or heading: one line, HTML escaped, `|` escaped.
pub fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    cell_into(&mut out, s);
    out
}

/// [`cell`] appended to `out`.
pub fn cell_into(out: &mut String, s: &str) {
    let line = one_line(s);
    if !line.contains(['<', '&']) {
        push_pipes_escaped(out, &line);
        return;
    }
    push_pipes_escaped(out, &escape_html(&line));
}

/// `s` with every `|` as `\|`.
fn push_pipes_escaped(out: &mut String, s: &str) {
    let mut rest = s;
    while let Some(i) = rest.find('|') {
        out.push_str(&rest[..i]);
        out.push_str("\\|");
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
}

/// `s` on one line: control removed, line breaks (and the empty lines between them) as
/// one space. Borrowed when `s` is one clean line already, as names and models are.
fn one_line(s: &str) -> Cow<'_, str> {
    let s = strip_terminal(s);
    if !s.contains(['\r', '\n']) {
        return s;
    }
    let mut out = String::with_capacity(s.len());
    for l in s.split(['\r', '\n']).filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(l);
    }
    Cow::Owned(out)
}

/// `<` and `&` as entities: enough to stop raw HTML, autolinks and entities, since no tag
/// opens without a `<`. `>` stays, so `> quote` is still a block quote and `a -> b` still
/// greps as written.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_html_into(&mut out, s);
    out
}

/// [`escape_html`], appended to `out`.
fn escape_html_into(out: &mut String, s: &str) {
    use super::scan::{equal, first};
    let bytes = s.as_bytes();
    // Copy the runs between the two characters whole, finding them eight bytes at a time.
    let mut run = 0;
    while let Some(i) = first(
        bytes,
        run,
        |x| equal(x, b'<') | equal(x, b'&'),
        |b| b == b'<' || b == b'&',
    ) {
        out.push_str(&s[run..i]);
        out.push_str(if bytes[i] == b'<' { "&lt;" } else { "&amp;" });
        run = i + 1;
    }
    out.push_str(&s[run..]);
}

/// Message text as Markdown that cannot break the document around it.
///
/// The text is kept line for line, so `grep -F` finds every line that holds no `<` or `&`.
/// Raw HTML is neutralised by escaping those two characters, except where Markdown
/// already shows them literally: inside the message's own fenced code blocks and inside
/// inline code spans that open and close on one line (escaping there would print `&lt;`).
/// A fence the message opens but never closes is closed after it, so it cannot swallow the
/// rest of the transcript, and its headings nest under the message heading (see
/// `nested_heading`). Terminal control is removed ([`strip_terminal`]). What is appended to
/// `out` (the file being rendered, so no string of its own) ends with a newline unless
/// `text` is empty.
pub fn markdown_text_into(out: &mut String, text: &str) {
    let text = strip_terminal(text);
    let text = text.as_ref();
    out.reserve(text.len() + 16);
    let mut open: Option<(char, usize)> = None;
    let mut para: Vec<&str> = Vec::new();
    for line in super::scan::lines(text) {
        match open {
            Some((ch, len)) => {
                out.push_str(line);
                out.push('\n');
                if closes_fence(line, ch, len) {
                    open = None;
                }
            }
            None => {
                if let Some(f) = opens_fence(line) {
                    flush_paragraph(&mut para, out, text);
                    out.push_str(line);
                    out.push('\n');
                    open = Some(f);
                } else if let Some(h) = nested_heading(line) {
                    flush_paragraph(&mut para, out, text);
                    flush_paragraph(&mut vec![h.as_str()], out, text);
                } else if line.trim().is_empty() || starts_block(line) {
                    flush_paragraph(&mut para, out, text);
                    para.push(line);
                } else {
                    para.push(line);
                }
            }
        }
    }
    flush_paragraph(&mut para, out, text);
    if let Some((ch, len)) = open {
        out.extend(std::iter::repeat_n(ch, len));
        out.push('\n');
    }
}

/// Message headings are level 3 (`### User`), so a heading inside a message moves three
/// levels down (at most to level 6): the message's `# Plan` would otherwise outrank the
/// transcript's own title and break the outline on GitHub and in Obsidian. The heading text
/// is kept, so grepping for it still finds it.
fn nested_heading(line: &str) -> Option<String> {
    // Block quote markers (`> > `) before the heading stay as they are.
    let mut quote = 0;
    loop {
        let rest = &line[quote..];
        let body = rest.trim_start_matches(' ');
        if rest.len() - body.len() > 3 || !body.starts_with('>') {
            break;
        }
        quote += rest.len() - body.len() + 1;
        if line[quote..].starts_with(' ') {
            quote += 1;
        }
    }
    let rest = &line[quote..];
    let body = rest.trim_start_matches(' ');
    if rest.len() - body.len() > 3 {
        return None;
    }
    let level = body.bytes().take_while(|b| *b == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    match body.as_bytes().get(level) {
        None | Some(b' ') | Some(b'\t') => {}
        _ => return None,
    }
    Some(format!(
        "{}{}{}",
        &line[..quote],
        "#".repeat((level + 3).min(6)),
        &body[level..]
    ))
}

/// `(fence char, length)` when `line` opens a fenced code block.
fn opens_fence(line: &str) -> Option<(char, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = rest.chars().take_while(|c| *c == ch).count();
    if len < 3 || (ch == '`' && rest[len..].contains('`')) {
        return None;
    }
    Some((ch, len))
}

fn closes_fence(line: &str, ch: char, len: usize) -> bool {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return false;
    }
    let n = t.chars().take_while(|c| *c == ch).count();
    n >= len && t[n..].trim().is_empty()
}

/// Lines that may start a new Markdown block, so a code span never pairs across them.
fn starts_block(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with(['#', '>', '-', '*', '+', '|', '='])
        || t.chars().next().is_some_and(|c| c.is_ascii_digit())
        || line.len() - t.len() >= 4
}

/// Escape one paragraph, leaving single-line code spans alone (CommonMark pairing: an
/// opening backtick run closes at the next run of the same length, else it is literal).
fn flush_paragraph(para: &mut Vec<&str>, out: &mut String, whole: &str) {
    let text = match para.as_slice() {
        [] => return,
        [line] => Cow::Borrowed(*line),
        lines => joined(whole, lines),
    };
    para.clear();
    // Most paragraphs hold no code span: one `memchr` decides.
    if memchr::memchr(b'`', text.as_bytes()).is_none() {
        escape_html_into(out, &text);
        out.push('\n');
        return;
    }
    let b = text.as_bytes();
    let mut i = 0;
    let mut plain_from = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'`') {
            i += 2;
            continue;
        }
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let run = b[i..].iter().take_while(|c| **c == b'`').count();
        let body_start = i + run;
        let mut j = body_start;
        let mut close = None;
        while j < b.len() {
            if b[j] == b'`' {
                let r = b[j..].iter().take_while(|c| **c == b'`').count();
                if r == run {
                    close = Some(j);
                    break;
                }
                j += r;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) if !text[i..j].contains('\n') => {
                escape_html_into(out, &text[plain_from..i]);
                out.push_str(&text[i..j + run]);
                i = j + run;
                plain_from = i;
            }
            // A span across lines is still code, but escape it: a block boundary sessfs
            // does not model could make it plain text.
            Some(j) => i = j + run,
            None => i = body_start,
        }
    }
    escape_html_into(out, &text[plain_from..]);
    out.push('\n');
}

/// `lines`, consecutive lines that `str::lines` cut from `whole`, joined by `\n`: the span
/// of `whole` they cover when `\n` alone separates them (nearly always), else a copy.
fn joined<'a>(whole: &'a str, lines: &[&str]) -> Cow<'a, str> {
    let span = || {
        let base = whole.as_ptr() as usize;
        let last = lines.last()?;
        let start = (lines.first()?.as_ptr() as usize).checked_sub(base)?;
        let end = (last.as_ptr() as usize).checked_sub(base)? + last.len();
        let span = whole.get(start..end)?;
        // Between consecutive lines lies `\n` or `\r\n`: one byte each means all `\n`.
        let joined_len = lines.iter().map(|l| l.len() + 1).sum::<usize>() - 1;
        (span.len() == joined_len).then_some(span)
    };
    match span() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(lines.join("\n")),
    }
}

#[cfg(test)]
mod tests {
    /// [`super::markdown_text_into`] into a new string.
    fn markdown_text(text: &str) -> String {
        let mut out = String::new();
        super::markdown_text_into(&mut out, text);
        out
    }

    #[test]
    fn times_are_spelled_as_chrono_spells_them() {
        use chrono::TimeZone;
        let cases = [
            super::Utc.with_ymd_and_hms(2026, 2, 3, 22, 3, 8).unwrap()
                + chrono::Duration::milliseconds(123),
            super::Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).unwrap(),
            super::Utc
                .with_ymd_and_hms(9999, 12, 31, 23, 59, 59)
                .unwrap()
                + chrono::Duration::nanoseconds(999_999_999),
            super::Utc.with_ymd_and_hms(12026, 7, 4, 1, 2, 3).unwrap(),
            super::Utc.with_ymd_and_hms(-44, 3, 15, 12, 0, 0).unwrap(),
        ];
        let hand = [
            ("2026-02-03 22:03:08 UTC", "2026-02-03T22:03:08.123Z"),
            ("0001-01-01 00:00:00 UTC", "0001-01-01T00:00:00.000Z"),
            ("9999-12-31 23:59:59 UTC", "9999-12-31T23:59:59.999Z"),
            ("+12026-07-04 01:02:03 UTC", "+12026-07-04T01:02:03.000Z"),
            ("-0044-03-15 12:00:00 UTC", "-0044-03-15T12:00:00.000Z"),
        ];
        for (t, (human, iso)) in cases.iter().zip(hand) {
            assert_eq!(super::human_time(t), human);
            assert_eq!(super::iso_time(t), iso);
        }
    }

    use super::*;

    #[test]
    fn a_paragraph_is_borrowed_only_when_that_reads_the_same() {
        let whole = "one\ntwo\nthree\r\nfour";
        let lines: Vec<&str> = whole.lines().collect();
        let j = joined(whole, &lines[..3]);
        assert!(matches!(j, Cow::Borrowed(_)));
        assert_eq!(j, "one\ntwo\nthree");
        // Across a CRLF the text differs from its span: the `\r` must not come along.
        let j = joined(whole, &lines[2..]);
        assert_eq!(j, "three\nfour");
        assert!(matches!(j, Cow::Owned(_)));
        // Lines from elsewhere are joined, never read through `whole`.
        let other = String::from("x\ny");
        let theirs: Vec<&str> = other.lines().collect();
        assert_eq!(joined(whole, &theirs), "x\ny");
    }

    #[test]
    fn dollars_are_rounded_as_format_rounds_them() {
        // Ties in decimal that are not ties in binary: `{:.4}` rounds 0.00035 down.
        let mut values = vec![
            0.0, 0.00035, 0.00045, 0.00065, 0.12345, 0.99995, 1.0, 12.3456789, 1e9,
        ];
        // A spread of magnitudes and fractions, deterministic.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mantissa = (x >> 11) as f64 / (1u64 << 53) as f64;
            values.push(mantissa * 10f64.powi((x % 12) as i32 - 6));
        }
        for v in values {
            let mut ours = String::new();
            usd_into(&mut ours, v);
            assert_eq!(ours, format!("${v:.4}"), "{v:e}");
        }
        let mut odd = String::new();
        usd_into(&mut odd, f64::NAN);
        assert_eq!(odd, "$?");
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn backtick_runs_are_measured_anywhere_in_the_text() {
        for (text, run) in [
            ("", 0),
            ("plain", 0),
            ("`", 1),
            ("a``b```c`", 3),
            ("````x``", 4),
            ("x`````", 5),
            ("é`ü``", 2),
        ] {
            assert_eq!(longest_backtick_run(text), run, "{text:?}");
        }
    }

    #[test]
    fn fence_outgrows_backticks_inside() {
        assert_eq!(fence("a", "json"), "```json\na\n```\n");
        assert_eq!(fence("x ```` y\n", ""), "`````\nx ```` y\n`````\n");
    }

    #[test]
    fn html_is_escaped_outside_code() {
        assert_eq!(
            markdown_text("a <b> & `Vec<u8>` c"),
            "a &lt;b> &amp; `Vec<u8>` c\n"
        );
        assert_eq!(markdown_text("x ` <y>"), "x ` &lt;y>\n");
        assert_eq!(markdown_text("\\`<a>`"), "\\`&lt;a>`\n");
    }

    /// `>` used to be escaped too, so a quote in a message showed as `&gt; quote` and an
    /// arrow `a -> b` no longer matched `grep -F 'a -> b'`.
    #[test]
    fn block_quotes_and_arrows_survive() {
        assert_eq!(markdown_text("> quoted\na -> b"), "> quoted\na -> b\n");
    }

    #[test]
    fn own_fences_stay_verbatim_and_are_closed() {
        let t = "see\n```rust\nlet v: Vec<u8> = x & y;\n```\n<div>\n";
        assert_eq!(
            markdown_text(t),
            "see\n```rust\nlet v: Vec<u8> = x & y;\n```\n&lt;div>\n"
        );
        assert_eq!(markdown_text("```\n<open"), "```\n<open\n```\n");
    }

    /// A message's `# Title` rendered as a top-level heading, outranking the transcript title
    /// and the `### User` message headings around it.
    #[test]
    fn headings_in_messages_nest_below_the_message_heading() {
        assert_eq!(
            markdown_text("# Plan\ntext\n## Step <1>\n#### deep\n#hashtag\n> ## Quoted\n```\n# code\n```"),
            "#### Plan\ntext\n##### Step &lt;1>\n###### deep\n#hashtag\n> ##### Quoted\n```\n# code\n```\n"
        );
    }

    #[test]
    fn code_span_across_lines_is_escaped() {
        assert_eq!(markdown_text("a `b\nc <d>` e"), "a `b\nc &lt;d>` e\n");
    }
}
