//! Every Code (just-every/code), the community fork of OpenAI's Codex CLI: its rollouts in
//! `$CODE_HOME/sessions/YYYY/MM/DD/rollout-<local ts>-<session id>.jsonl`, read by the Codex
//! store's parser ([`super::codex`], with [`DIALECT`]); this module holds what the fork does
//! differently.
//!
//! Read from the fork's own source, just-every/code
//! `6ad6d5c99f79f62c9233889a9249abf0b4d9a5a8` (2026-08-12), `code-rs/`:
//!
//! - `core/src/config/sources.rs` `find_code_home`: the home is `$CODE_HOME`, else
//!   `$CODEX_HOME`, else `~/.code` (`dirs::home_dir`, on macOS too); a variable that is set
//!   must name an existing directory. `resolve_code_path_for_read` reads some files from a
//!   legacy `~/.codex` when neither variable is set and `~/.code` lacks them, the sessions
//!   directory among them (`rollout/list.rs` `get_conversations`): Every Code may list Codex's
//!   own sessions, but it never writes there.
//! - `core/src/rollout/recorder.rs` `create_log_file`: one file per session, appended to
//!   line by line (`{timestamp, type, payload}`), named and dated as Codex names them; the
//!   first line is `session_meta` with `originator` `code_cli_rs` (`default_client.rs`).
//!   Beside it the TUI keeps `rollout-….snapshot.json`, its own drawing of the history
//!   (`SetSnapshot`), which repeats the rollout and is not read.
//! - `protocol/src/protocol.rs` `RolloutItem`: besides Codex's kinds, an `event` line whose
//!   payload is a `RecordedEvent` `{id, event_seq, order?, msg}`, `msg` an `EventMsg` as in
//!   Codex's `event_msg` lines. `core/src/codex/events.rs` `persist_event` writes one for
//!   every event the session sends (`rollout/policy.rs`: all but the streaming deltas), so
//!   the user's prompt, each reply and its reasoning, the token counts, each shell command's
//!   start, output and end, approvals and notices all come as `event` lines. No
//!   `turn_context` line is written (nothing builds a `TurnContextItem`): the model is
//!   named only by the `token_count` events (`TokenUsageInfo.requested_model`,
//!   `latest_response_model`, `core/src/codex/streaming.rs`), and their cumulative total
//!   starts again at each compaction (`compact.rs`: `token_usage_info = None`) and at each
//!   resume.
//! - `core/src/codex.rs` `build_turn_status_items`: before a turn the fork adds user-role
//!   items the user never typed, kept in the history once the turn is answered: a `== System
//!   Status ==` text (cwd, branch, the browser's page), a time-budget nudge (id
//!   `run-budget-<session>`), and the browser's screenshot or idle notice (id
//!   `browser-context-<session>`); the environment and browser snapshots are tagged
//!   (`<environment_context>`, `<browser_snapshot>`) as Codex tags its own.
//! - `core/src/rollout/catalog.rs`, `session_catalog.rs`: `sessions/index/catalog.jsonl`, one
//!   line per session (`session_id`, paths, times, counts, `nickname` — the name the user
//!   gives a session in the resume picker —, `archived`, `deleted`), rewritten whole after
//!   every write to any rollout; archiving moves a rollout, with its date directories, under
//!   `archived_sessions/`.
//!
//! Design decisions, and why:
//!
//! - **One parser.** The lines are Codex's with a few additions, so the Codex store reads
//!   them, with this module's knowledge, for both agents: a directory may hold rollouts of
//!   both (a `CODEX_HOME` they share), and each line reads the same whichever wrote it.
//! - **A directory is read once, and a Codex directory is Codex's.** With `CODE_HOME` unset
//!   and `CODEX_HOME` set, Every Code writes into Codex's home; the Codex store reads that
//!   directory already, so its sessions, Every Code's among them, show under `codex/` and not
//!   twice. The same holds for any Every Code home that is one of Codex's (`CODEX_HOME=~/.code`,
//!   `CODE_HOME=~/.codex`). `~/.code` is still read when `CODE_HOME` is unset: it keeps what
//!   Every Code wrote before. The legacy `~/.codex` is Codex's.
//! - **Events.** An `event` line's `msg` is read as Codex's `event_msg` where Codex has one
//!   (prompts and replies as a fallback only, reasoning, token counts); errors, warnings,
//!   background notices and aborted turns are events of the session; the kinds in
//!   [`COPIES`] repeat what the response items hold (a shell command's begin, output and end
//!   beside its `function_call_output`) or are the UI's bookkeeping, and are passed over;
//!   any other kind is counted in one warning, never dropped unnamed.
//! - **Tokens** are the sum of the counter's runs ([`super::codex::spent`]), not its last
//!   value, since the fork restarts it. **The model** of a reply is the one its count names.
//! - **Titles**: the catalog's `nickname`, else the first prompt. The catalog is a source
//!   only of the sessions it names (it changes at every write of the agent).
//! - **Never read**: `auth.json`, `auth_accounts.json` (tokens and API keys), `config.toml`,
//!   `history.jsonl` (prompt history across sessions), the snapshots, `debug_logs/`,
//!   `working/` (agent worktrees) and `.code/agents/` in projects (the outputs of the agents
//!   a session ran, also returned to it as tool output). The listing opens only `.jsonl`
//!   files under `sessions/` and `archived_sessions/`, and the catalog.

use super::codex::Dialect;
use super::{codex, jsonl, kit, Env, Root};
use crate::model::Agent;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Every Code's sessions, read by the Codex store.
pub const DIALECT: Dialect = Dialect {
    agent: Agent::Everycode,
    format: "everycode-jsonl",
    format_zst: "everycode-jsonl-zst",
    counter_restarts: true,
};

/// The `originator` of Every Code's `session_meta` (`core/src/default_client.rs`).
pub const ORIGINATOR: &str = "code_cli_rs";

/// The session catalog's file name, under `<home>/sessions/index/`.
pub const CATALOG_NAME: &str = "catalog.jsonl";
const CATALOG: &str = "sessions/index/catalog.jsonl";

/// Every Code's home: `$CODE_HOME`, else `~/.code`, unless the Codex store reads that
/// directory. Every Code's next choice, `$CODEX_HOME`, is always Codex's: with `CODE_HOME`
/// unset, what Every Code writes there shows under `codex/`, and `~/.code` is still read
/// for what it wrote before.
pub fn candidates(env: &Env) -> Vec<Root> {
    let home = match env.path_var("CODE_HOME") {
        Some(p) => Root::new(Agent::Everycode, p, "CODE_HOME"),
        None => Root::new(Agent::Everycode, env.home.join(".code"), "default"),
    };
    let codex = codex::candidates(env);
    let shared = codex.iter().any(|c| super::same_path(&c.path, &home.path));
    if shared {
        Vec::new()
    } else {
        vec![home]
    }
}

/// The catalog of a home, or of a sessions directory given as a root, if there is one.
pub fn catalog_in(root: &Path) -> Option<PathBuf> {
    [root.join(CATALOG), root.join("index").join(CATALOG_NAME)]
        .into_iter()
        .find(|p| p.is_file())
}

/// The catalog of the home a rollout lives in (`sessions/…` or `archived_sessions/…`).
pub fn catalog_for(rollout: &Path) -> Option<PathBuf> {
    rollout
        .ancestors()
        .skip(1)
        .take(6)
        .map(|d| d.join(CATALOG))
        .find(|p| p.is_file())
}

#[derive(Deserialize)]
struct CatalogLine<'a> {
    #[serde(borrow, default)]
    session_id: Cow<'a, str>,
    #[serde(borrow, default)]
    nickname: Option<Cow<'a, str>>,
}

/// The names the user gave sessions (`nickname`), by session id. A line that cannot be read
/// costs its name only: the catalog is an index the agent rebuilds from the rollouts.
pub fn catalog_titles(path: &Path) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let Ok(f) = kit::open_file(path) else {
        return out;
    };
    let _ = jsonl::read_lines_from(f, CATALOG_NAME, &mut |_, text| {
        let l: CatalogLine = serde_json::from_slice(text).map_err(|e| e.to_string())?;
        if let Some(name) = l
            .nickname
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            out.insert(l.session_id.into_owned(), name.to_owned());
        }
        Ok(())
    });
    out
}

/// An `event` line's payload, as far as sessfs reads it.
#[derive(Deserialize)]
pub(super) struct Recorded<'a> {
    #[serde(borrow)]
    pub(super) msg: &'a RawValue,
}

/// What becomes of an `event` line, by the `type` of its `msg`.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum EventUse {
    /// Read as Codex reads an `event_msg` of that type.
    Codex,
    /// Shown as an event of the session, `<label>: <message>`.
    Notice(&'static str),
    /// Repeats the response items, or is the UI's bookkeeping: passed over.
    Copy,
    /// Counted for a warning.
    Unknown,
}

/// Event kinds whose content the session already shows, or that hold none.
pub(super) const COPIES: &[&str] = &[
    // A turn's bounds; its last reply is a response item.
    "task_started",
    "task_complete",
    // The reasoning item's content, and where the UI breaks it.
    "agent_reasoning_raw_content",
    "agent_reasoning_section_break",
    // A tool call and its output, both response items.
    "exec_command_begin",
    "exec_command_output_delta",
    "exec_command_end",
    "terminal_interaction",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "web_search_begin",
    "web_search_end",
    "patch_apply_begin",
    "patch_apply_end",
    "view_image_tool_call",
    "image_generation_end",
    "plan_update",
    "turn_diff",
    // A question about a call in the items; the answer is the call's output.
    "exec_approval_request",
    "apply_patch_approval_request",
    "request_user_input",
    "dynamic_tool_call_request",
    "elicitation_request",
    // A review, whose result comes back as a `<user_action>` item.
    "entered_review_mode",
    "exited_review_mode",
    // A compaction, which has its `compacted` line.
    "context_compacted",
    // Answers to the UI and its state.
    "auto_context_check",
    "session_configured",
    "shutdown_complete",
    "get_history_entry_response",
    "mcp_list_tools_response",
    "list_custom_prompts_response",
    "list_skills_response",
    "mcp_startup_update",
    "mcp_startup_complete",
];

pub(super) fn event_use(kind: &str) -> EventUse {
    match kind {
        "user_message" | "agent_message" | "agent_reasoning" | "token_count" => EventUse::Codex,
        "error" => EventUse::Notice("error"),
        "warning" => EventUse::Notice("warning"),
        "stream_error" => EventUse::Notice("stream error"),
        "background_event" => EventUse::Notice("notice"),
        "turn_aborted" => EventUse::Notice("turn aborted"),
        k if COPIES.contains(&k) => EventUse::Copy,
        _ => EventUse::Unknown,
    }
}

/// A notice's text: `message`, or an aborted turn's `reason`.
#[derive(Deserialize)]
pub(super) struct Notice<'a> {
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
    #[serde(default)]
    reason: Option<serde_json::Value>,
}

impl Notice<'_> {
    pub(super) fn text(&self) -> String {
        match (&self.message, &self.reason) {
            (Some(m), _) => m.trim().to_string(),
            (None, Some(serde_json::Value::String(r))) => r.clone(),
            (None, Some(r)) => r.to_string(),
            (None, None) => String::new(),
        }
    }
}

/// The warning naming the `event` kinds a rollout held that sessfs does not show.
pub(super) fn unshown_warning(kinds: &[(String, usize)]) -> String {
    let n: usize = kinds.iter().map(|(_, n)| n).sum();
    let list: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
    format!(
        "{n} Every Code event records of kinds sessfs does not show: {}",
        list.join(", ")
    )
}

/// The label of a user-role item Every Code added itself and did not tag: its status
/// stream ids, and the legacy `== System Status ==` text.
pub(super) fn injected(id: Option<&str>, text: &str) -> Option<&'static str> {
    let id = id.unwrap_or_default();
    if id.starts_with("browser-context-") {
        Some("browser context")
    } else if id.starts_with("run-budget-") {
        Some("time budget")
    } else if id.starts_with("env-context-") {
        Some("environment context")
    } else if text.trim_start().starts_with("== System Status ==") {
        Some("system status")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env {
            home: PathBuf::from("/h"),
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn roots(e: &Env) -> Vec<(String, String)> {
        candidates(e)
            .into_iter()
            .map(|r| (r.path.display().to_string(), r.how))
            .collect()
    }

    fn pair(p: &str, how: &str) -> (String, String) {
        (p.to_string(), how.to_string())
    }

    #[test]
    fn code_home_wins_then_codex_home_and_a_codex_directory_stays_codex() {
        // Neither set: ~/.code.
        assert_eq!(roots(&env(&[])), [pair("/h/.code", "default")]);
        // CODE_HOME replaces every other place, CODEX_HOME included.
        assert_eq!(
            roots(&env(&[("CODE_HOME", "/c"), ("CODEX_HOME", "/x")])),
            [pair("/c", "CODE_HOME")]
        );
        // CODEX_HOME alone: Every Code writes into Codex's home, which the Codex store
        // reads; ~/.code keeps what was written before.
        assert_eq!(
            roots(&env(&[("CODEX_HOME", "/x")])),
            [pair("/h/.code", "default")]
        );
        // A Codex directory named as Every Code's home is Codex's.
        assert_eq!(roots(&env(&[("CODE_HOME", "~/.codex")])), []);
        assert_eq!(roots(&env(&[("CODEX_HOME", "~/.code")])), []);
    }

    #[test]
    fn events_are_read_shown_passed_over_or_counted() {
        assert_eq!(event_use("user_message"), EventUse::Codex);
        assert_eq!(event_use("token_count"), EventUse::Codex);
        assert_eq!(event_use("error"), EventUse::Notice("error"));
        assert_eq!(event_use("background_event"), EventUse::Notice("notice"));
        assert_eq!(event_use("exec_command_end"), EventUse::Copy);
        assert_eq!(event_use("agent_status_update"), EventUse::Unknown);
        let w = unshown_warning(&[("a".into(), 2), ("b".into(), 1)]);
        assert_eq!(
            w,
            "3 Every Code event records of kinds sessfs does not show: a ×2, b ×1"
        );
    }

    #[test]
    fn status_items_are_context_and_prompts_are_not() {
        assert_eq!(
            injected(Some("browser-context-1"), "[image]"),
            Some("browser context")
        );
        assert_eq!(
            injected(Some("run-budget-1"), "== System Status ==\n elapsed"),
            Some("time budget")
        );
        assert_eq!(
            injected(None, "== System Status ==\n cwd: /w"),
            Some("system status")
        );
        assert_eq!(injected(None, "fix == System Status == parsing"), None);
        assert_eq!(injected(Some("user-1"), "hello"), None);
    }

    #[test]
    fn catalog_nicknames_are_titles() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join(CATALOG);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(
            &p,
            "{\"session_id\":\"a\",\"nickname\":\"Launch checklist\"}\n\
             {\"session_id\":\"b\"}\nnot json\n{\"session_id\":\"c\",\"nickname\":\"  \"}\n",
        )
        .expect("write");
        let t = catalog_titles(&p);
        assert_eq!(t.len(), 1);
        assert_eq!(t["a"], "Launch checklist");
        assert_eq!(catalog_in(dir.path()), Some(p.clone()));
        let rollout = dir
            .path()
            .join("archived_sessions/2026/03/01/rollout-x.jsonl");
        assert_eq!(catalog_for(&rollout), Some(p));
    }
}
