//! The XML wrappers Claude Code puts around text that is not a prompt.
//!
//! Slash commands, their output and `!` shell commands are stored as ordinary user records
//! whose text is wrapped in `<command-name>`, `<local-command-stdout>`, `<bash-input>`...
//! Shown raw they would be escaped HTML noise in `transcript.md`, and taken as the first
//! prompt they would become every session's title, so they are recognised here once.

/// What a wrapped text was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Special {
    /// `/model`, `/clear`, ...: the user ran a slash command.
    SlashCommand,
    /// The local output of a slash command (empty when it printed nothing).
    CommandOutput,
    /// `! ls`: a shell command the user ran directly.
    ShellInput,
    /// The output of such a shell command.
    ShellOutput,
    /// Claude Code telling the model a background task finished (`<task-notification>`).
    Notification,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Cleaned {
    pub text: String,
    pub special: Special,
    /// For [`Special::ShellInput`]: the output, when the same text also holds it.
    pub output: Option<String>,
}

/// The inner text of the first `<tag>...</tag>` in `s`.
fn inner<'a>(s: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = s.find(&open)? + open.len();
    let rest = s.get(start..)?;
    let end = rest.find(&close).unwrap_or(rest.len());
    rest.get(..end)
}

/// Recognise a wrapped command text and say what it means in plain words.
pub(super) fn clean_command_text(s: &str) -> Option<Cleaned> {
    let t = s.trim_start();
    if !t.starts_with('<') {
        return None;
    }
    if t.starts_with("<command-") && t.contains("<command-name>") {
        let name = inner(t, "command-name").unwrap_or("").trim();
        let args = inner(t, "command-args").unwrap_or("").trim();
        let mut text = String::new();
        if !name.starts_with('/') {
            text.push('/');
        }
        text.push_str(name);
        if !args.is_empty() {
            text.push(' ');
            text.push_str(args);
        }
        return Some(Cleaned {
            text,
            special: Special::SlashCommand,
            output: None,
        });
    }
    if t.starts_with("<local-command-stdout>") || t.starts_with("<local-command-stderr>") {
        let mut out = outputs(t, "local-command-stdout", "local-command-stderr");
        // Claude Code's own words for an empty output; callers drop empty outputs.
        if out == "(no content)" {
            out.clear();
        }
        return Some(Cleaned {
            text: out,
            special: Special::CommandOutput,
            output: None,
        });
    }
    if t.starts_with("<bash-input>") {
        let cmd = inner(t, "bash-input").unwrap_or("").trim();
        let output = (t.contains("<bash-stdout>") || t.contains("<bash-stderr>"))
            .then(|| outputs(t, "bash-stdout", "bash-stderr"));
        return Some(Cleaned {
            text: cmd.to_string(),
            special: Special::ShellInput,
            output,
        });
    }
    if t.starts_with("<task-notification>") {
        let summary = inner(t, "summary")
            .or_else(|| inner(t, "status"))
            .unwrap_or("")
            .trim();
        let mut text = if summary.is_empty() {
            "Background task finished".to_string()
        } else {
            summary.to_string()
        };
        if let Some(f) = inner(t, "output-file")
            .map(str::trim)
            .filter(|f| !f.is_empty())
        {
            text.push_str("\nOutput: ");
            text.push_str(f);
        }
        return Some(Cleaned {
            text,
            special: Special::Notification,
            output: None,
        });
    }
    if t.starts_with("<bash-stdout>") || t.starts_with("<bash-stderr>") {
        return Some(Cleaned {
            text: outputs(t, "bash-stdout", "bash-stderr"),
            special: Special::ShellOutput,
            output: None,
        });
    }
    None
}

fn outputs(t: &str, out_tag: &str, err_tag: &str) -> String {
    let mut parts = Vec::new();
    for tag in [out_tag, err_tag] {
        if let Some(x) = inner(t, tag) {
            let x = strip_ansi(x);
            let x = x.trim();
            if !x.is_empty() {
                parts.push(x.to_string());
            }
        }
    }
    parts.join("\n")
}

/// Remove terminal escape sequences (colours, OSC titles) from command output.
pub(super) fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // CSI: parameters then one final byte in '@'..='~'.
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            Some(']') => {
                chars.next();
                // OSC: until BEL or ESC \.
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
            _ => {}
        }
    }
    out
}

/// Tags whose whole block is context Claude Code injected, not words the user typed.
const INJECTED: [&str; 5] = [
    "system-reminder",
    "ide_opened_file",
    "ide_selection",
    "user-prompt-submit-hook",
    "ide_diagnostics",
];

/// A title from a user prompt: first non-empty line, injected blocks removed, 100 chars.
/// `None` for texts that are not prompts (commands, interruptions, empty).
pub(super) fn title_from_prompt(text: &str) -> Option<String> {
    if clean_command_text(text).is_some() || is_interruption(text) || is_command_caveat(text) {
        return None;
    }
    let mut s = text.to_string();
    for tag in INJECTED {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        while let Some(a) = s.find(&open) {
            let end = match s[a..].find(&close) {
                Some(e) => a + e + close.len(),
                None => s.len(),
            };
            s.replace_range(a..end, "");
        }
    }
    let line = s.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(100).collect())
}

/// The note Claude Code puts before local-command records for the model ("Caveat: The
/// messages below were generated by the user while running local commands..."), bare or in
/// `<local-command-caveat>`. Real builds mark it `isMeta`, but not every writer does.
pub(super) fn is_command_caveat(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<local-command-caveat>")
        || t.starts_with(
            "Caveat: The messages below were generated by the user while running local commands",
        )
}

/// `[Request interrupted by user]` and its variants, written as user text.
pub(super) fn is_interruption(text: &str) -> bool {
    text.trim_start()
        .starts_with("[Request interrupted by user")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_command_becomes_its_name_and_args() {
        let c = clean_command_text(
            "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args>opus</command-args>",
        )
        .expect("a command");
        assert_eq!(c.text, "/model opus");
        assert_eq!(c.special, Special::SlashCommand);
    }

    /// A background task's completion notice showed as a user prompt full of escaped tags.
    #[test]
    fn task_notification_becomes_its_summary() {
        let c = clean_command_text(
            "<task-notification>\n<task-id>b0</task-id>\n<output-file>/tmp/b0.output</output-file>\n<status>completed</status>\n<summary>Background command \"x\" completed (exit code 0)</summary>\n</task-notification>\nRead the output file to retrieve the result: /tmp/b0.output",
        )
        .expect("a notification");
        assert_eq!(c.special, Special::Notification);
        assert_eq!(
            c.text,
            "Background command \"x\" completed (exit code 0)\nOutput: /tmp/b0.output"
        );
    }

    #[test]
    fn command_output_loses_ansi() {
        let c = clean_command_text(
            "<local-command-stdout>\u{1b}[2mCompacted\u{1b}[22m</local-command-stdout>",
        )
        .expect("output");
        assert_eq!(c.text, "Compacted");
        assert_eq!(c.special, Special::CommandOutput);
    }

    #[test]
    fn title_skips_injected_context() {
        assert_eq!(
            title_from_prompt("<system-reminder>x\ny</system-reminder>\n\n  fix the bug\nmore")
                .as_deref(),
            Some("fix the bug")
        );
        assert_eq!(
            title_from_prompt("<command-name>/clear</command-name>"),
            None
        );
        assert_eq!(title_from_prompt("[Request interrupted by user]"), None);
        assert_eq!(
            title_from_prompt(&"é".repeat(300)).map(|t| t.chars().count()),
            Some(100)
        );
    }
}
