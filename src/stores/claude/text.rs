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
    /// Claude Code telling the model a background task finished (`<task-notification>`):
    /// context for the model, with every field it carries.
    Notification,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Cleaned {
    pub text: String,
    pub special: Special,
    /// For [`Special::ShellInput`]: the output, when the same text also holds it.
    pub output: Option<String>,
    /// For [`Special::SlashCommand`]: what the wrapper says besides the command, shown after
    /// it: the status line Claude Code printed while the command ran (`<command-message>`
    /// "init is analyzing your codebase…", when it is more than the command's name) and any
    /// text outside the known tags. `None` when there is nothing more.
    pub note: Option<String>,
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

/// `t` with every `<tag>…</tag>` block of `tags` removed (an unclosed block runs to the
/// end), trimmed: the text a wrapper holds outside the tags sessfs reads.
fn outside(t: &str, tags: &[&str]) -> String {
    let mut s = t.to_string();
    for tag in tags {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        while let Some(a) = s.find(&open) {
            let end = s[a..].find(&close).map_or(s.len(), |e| a + e + close.len());
            s.replace_range(a..end, "\n");
        }
    }
    s.lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The note of a slash command (see [`Cleaned::note`]): its `<command-message>` unless it
/// only repeats the command's name, then whatever text lies outside the three tags.
fn command_note(t: &str, name: &str) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(m) = inner(t, "command-message").map(str::trim) {
        if !m.is_empty() && m != name.trim_start_matches('/') && m != name {
            parts.push(m.to_string());
        }
    }
    let rest = outside(t, &["command-name", "command-message", "command-args"]);
    if !rest.is_empty() {
        parts.push(rest);
    }
    (!parts.is_empty()).then(|| parts.join("\n"))
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
            note: command_note(t, name),
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
        // Text beside the output tags is kept after it.
        let rest = outside(t, &["local-command-stdout", "local-command-stderr"]);
        if !rest.is_empty() {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&crate::terminal::strip_terminal(&rest));
        }
        return Some(Cleaned {
            text: out,
            special: Special::CommandOutput,
            output: None,
            note: None,
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
            note: None,
        });
    }
    if t.starts_with("<task-notification>") {
        return Some(Cleaned {
            text: task_notification(t),
            special: Special::Notification,
            output: None,
            note: None,
        });
    }
    if t.starts_with("<bash-stdout>") || t.starts_with("<bash-stderr>") {
        return Some(Cleaned {
            text: outputs(t, "bash-stdout", "bash-stderr"),
            special: Special::ShellOutput,
            output: None,
            note: None,
        });
    }
    None
}

/// A `<task-notification>` block as plain lines, one `name: value` per field in the order
/// Claude Code wrote them (`task-id`, `output-file`, `status`, `summary`, and any field a
/// later version adds), then whatever text follows the block, verbatim. Nothing is dropped:
/// the model acted on all of it.
fn task_notification(t: &str) -> String {
    const OPEN: &str = "<task-notification>";
    const CLOSE: &str = "</task-notification>";
    let body_start = t.find(OPEN).map_or(0, |i| i + OPEN.len());
    let (body, after) = match t[body_start..].find(CLOSE) {
        Some(e) => (
            &t[body_start..body_start + e],
            &t[body_start + e + CLOSE.len()..],
        ),
        None => (&t[body_start..], ""),
    };
    let mut lines: Vec<String> = Vec::new();
    let mut rest = body;
    loop {
        let Some(open) = rest.find('<') else {
            push_loose(&mut lines, rest);
            break;
        };
        push_loose(&mut lines, &rest[..open]);
        let tail = &rest[open + 1..];
        let Some(gt) = tail.find('>') else {
            push_loose(&mut lines, &rest[open..]);
            break;
        };
        let name = &tail[..gt];
        let close = format!("</{name}>");
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        match tail[gt + 1..].find(&close).filter(|_| valid) {
            Some(end) => {
                let value = tail[gt + 1..gt + 1 + end].trim();
                lines.push(format!("{name}: {value}"));
                rest = &tail[gt + 1 + end + close.len()..];
            }
            None => {
                push_loose(&mut lines, &rest[open..open + 1 + gt + 1]);
                rest = &tail[gt + 1..];
            }
        }
    }
    let mut out = lines.join("\n");
    let after = after.trim();
    if !after.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(after);
    }
    if out.is_empty() {
        out.push_str("Background task finished");
    }
    out
}

fn push_loose(lines: &mut Vec<String>, s: &str) {
    let s = s.trim();
    if !s.is_empty() {
        lines.push(s.to_string());
    }
}

/// Claude Code's built-in commands that act locally (settings, screens, housekeeping) and
/// send the model nothing the user wrote: shown as events, not prompts. Every other slash
/// command (`/init`, `/review`, a custom or plugin command) expands into a prompt and is
/// one.
const LOCAL_COMMANDS: &[&str] = &[
    "add-dir",
    "agents",
    "bashes",
    "branch",
    "bug",
    "chrome",
    "clear",
    "color",
    "compact",
    "config",
    "context",
    "copy",
    "cost",
    "doctor",
    "effort",
    "exit",
    "export",
    "extra-usage",
    "fast",
    "feedback",
    "fork",
    "help",
    "hooks",
    "ide",
    "install-github-app",
    "keybindings",
    "login",
    "logout",
    "mcp",
    "memory",
    "migrate-installer",
    "mobile",
    "model",
    "output-style",
    "permissions",
    "plugin",
    "plugins",
    "privacy-settings",
    "quit",
    "release-notes",
    "remote-env",
    "rename",
    "resume",
    "rewind",
    "sandbox",
    "skills",
    "stats",
    "status",
    "statusline",
    "tag",
    "tasks",
    "terminal-setup",
    "theme",
    "todos",
    "upgrade",
    "usage",
    "vim",
];

/// Is the cleaned slash command text (`/model opus`) one of [`LOCAL_COMMANDS`]?
pub(super) fn is_local_command(command: &str) -> bool {
    let name = command
        .trim_start_matches('/')
        .split_whitespace()
        .next()
        .unwrap_or("");
    LOCAL_COMMANDS.contains(&name)
}

/// What an injected (`isMeta`) text is, as the one-line label of its context block.
/// `after_command`: it follows a slash command, whose expansion it then is.
pub(super) fn context_label(text: &str, after_command: bool) -> &'static str {
    let t = text.trim_start();
    let first = t.lines().next().unwrap_or("");
    if t.starts_with("<task-notification>") {
        "task notification"
    } else if first.contains("hook feedback:") || first.contains("hook additional context") {
        "hook feedback"
    } else if t.starts_with("<system-reminder>") {
        "reminder"
    } else if t.starts_with("Base directory for this skill:") {
        "skill"
    } else if is_command_caveat(t) {
        "command caveat"
    } else if after_command {
        "command expansion"
    } else if let Some((tag, _, _)) = INJECTED_TAGS.iter().find(|t1| t.starts_with(t1.1)) {
        injected_label(tag)
    } else {
        "injected context"
    }
}

fn injected_label(tag: &str) -> &'static str {
    match tag {
        "system-reminder" => "reminder",
        "user-prompt-submit-hook" => "hook feedback",
        _ => "IDE context",
    }
}

/// A prompt with the injected blocks ([`INJECTED_TAGS`]) Claude Code put inside it split
/// out: `(label, block)` for each block in order, then what the user typed, trimmed (empty
/// when the text was only injected blocks). A block that never closes runs to the end.
pub(super) fn split_injected(text: &str) -> (Vec<(&'static str, String)>, String) {
    let mut blocks = Vec::new();
    // Most prompts hold no tag at all: one scan for `<` settles it.
    if !text.contains('<') {
        return (blocks, text.to_string());
    }
    let mut rest = String::new();
    let mut s = text;
    loop {
        let found = INJECTED_TAGS
            .iter()
            .filter_map(|t| s.find(t.1).map(|i| (i, *t)))
            .min();
        let Some((at, (tag, _, close))) = found else {
            rest.push_str(s);
            break;
        };
        rest.push_str(&s[..at]);
        let end = s[at..]
            .find(close)
            .map_or(s.len(), |e| at + e + close.len());
        blocks.push((injected_label(tag), s[at..end].trim().to_string()));
        s = &s[end..];
    }
    if blocks.is_empty() {
        return (blocks, text.to_string());
    }
    (blocks, rest.trim().to_string())
}

fn outputs(t: &str, out_tag: &str, err_tag: &str) -> String {
    let mut parts = Vec::new();
    for tag in [out_tag, err_tag] {
        if let Some(x) = inner(t, tag) {
            // Local commands' output is terminal output: colours and titles go.
            let x = crate::terminal::strip_terminal(x);
            let x = x.trim();
            if !x.is_empty() {
                parts.push(x.to_string());
            }
        }
    }
    parts.join("\n")
}

/// Tags whose whole block is context Claude Code injected, not words the user typed, with
/// their opening and closing tags spelled out: `(tag, open, close)`.
const INJECTED_TAGS: [(&str, &str, &str); 5] = [
    ("system-reminder", "<system-reminder>", "</system-reminder>"),
    ("ide_opened_file", "<ide_opened_file>", "</ide_opened_file>"),
    ("ide_selection", "<ide_selection>", "</ide_selection>"),
    (
        "user-prompt-submit-hook",
        "<user-prompt-submit-hook>",
        "</user-prompt-submit-hook>",
    ),
    ("ide_diagnostics", "<ide_diagnostics>", "</ide_diagnostics>"),
];

/// A title from a user prompt: first non-empty line, injected blocks removed, 100 chars.
/// `None` for texts that are not prompts (commands, interruptions, empty).
pub(super) fn title_from_prompt(text: &str) -> Option<String> {
    if clean_command_text(text).is_some() || is_interruption(text) || is_command_caveat(text) {
        return None;
    }
    let mut s = text.to_string();
    for (_, open, close) in INJECTED_TAGS {
        while let Some(a) = s.find(open) {
            let end = match s[a..].find(close) {
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

    /// A background task's completion notice showed as a user prompt full of escaped tags,
    /// then as its summary alone (status, task id and the line after it were lost).
    #[test]
    fn task_notification_keeps_every_field() {
        let c = clean_command_text(
            "<task-notification>\n<task-id>b0</task-id>\n<output-file>/tmp/b0.output</output-file>\n<status>completed</status>\n<summary>Background command \"x\" completed (exit code 0)</summary>\n</task-notification>\nRead the output file to retrieve the result: /tmp/b0.output",
        )
        .expect("a notification");
        assert_eq!(c.special, Special::Notification);
        assert_eq!(
            c.text,
            "task-id: b0\noutput-file: /tmp/b0.output\nstatus: completed\nsummary: Background command \"x\" completed (exit code 0)\n\nRead the output file to retrieve the result: /tmp/b0.output"
        );
    }

    #[test]
    fn injected_blocks_split_out_of_a_prompt() {
        let (blocks, rest) = split_injected(
            "<system-reminder>\nA\n</system-reminder>\nfix it\n<ide_selection>x</ide_selection>",
        );
        assert_eq!(
            blocks,
            [
                (
                    "reminder",
                    "<system-reminder>\nA\n</system-reminder>".to_string()
                ),
                (
                    "IDE context",
                    "<ide_selection>x</ide_selection>".to_string()
                )
            ]
        );
        assert_eq!(rest, "fix it");
        assert_eq!(split_injected("plain").1, "plain");
        for (tag, open, close) in INJECTED_TAGS {
            assert_eq!((open, close), (&*format!("<{tag}>"), &*format!("</{tag}>")));
        }
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
