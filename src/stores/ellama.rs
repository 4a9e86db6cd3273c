//! ellama (s-kostyaev/ellama, the Emacs package for LLM chat and coding commands): the chat
//! sessions it saves in `ellama-sessions-directory`, `~/.emacs.d/ellama-sessions/`, each a
//! chat file (Org or Markdown) beside a `.session.el` file holding the session as printed
//! Lisp.
//!
//! Read from ellama's own source, github.com/s-kostyaev/ellama at commit
//! `09857e5d2ec8a7bfc68b510a2a6afce2b165566b` (2026-06-26, version 1.29.0): `ellama.el`
//! (`ellama-sessions-directory`, `ellama-new-session`, `ellama-get-nick-prefix-for-mode`,
//! `ellama-get-session-file-extension`, `ellama--get-session-file-name`,
//! `ellama--get-translation-file-name`, `ellama--save-session`, `ellama--session-for-save`,
//! `ellama--read-session-from-file`, `ellama-chat`, `ellama-chat-done`,
//! `ellama-chat-send-last-message`, `ellama--handle-partial`, `ellama--format-tool-results`,
//! `ellama--translate-markdown-to-org-builtin`, `ellama--session-insert-compaction-message`,
//! `ellama--session-compact-apply`, `ellama-session-rename`) and `ellama-context.el`
//! (`ellama-context-format`), with the older layouts from the same repository's history
//! (`38c6d5e`, January 2024: the first saved sessions, `(setq ellama--current-session …)`
//! and a `##` prefix; `faa4619`, February 2024: the prefix by major mode); and from the
//! structures it prints, github.com/ahyatt/llm at `a8d893b48ad6f647cd070699ecc696443c80722e`
//! (`llm.el` `llm-chat-prompt`, `llm-chat-prompt-interaction`, `llm-chat-prompt-tool-result`,
//! `llm-multipart`, `llm-media`; `llm-provider-utils.el` `llm-provider-utils-tool-use`,
//! `llm-provider-utils-append-to-prompt`, the providers' structs in `llm-*.el`; `0b9eebc`,
//! May 2024, added the three `default-chat-*` slots every provider has since).
//!
//! **Where.** `ellama-sessions-directory` is `user-emacs-directory` joined with
//! `ellama-sessions`. Emacs (27.1 and later, `lisp/startup.el`) takes `~/.emacs.d` when it
//! exists, else `$XDG_CONFIG_HOME/emacs` (`~/.config/emacs`); macOS the same. Each of the
//! three that exists is read. A directory set in the user's configuration is given with
//! `--store ellama=DIR` (or one chat file): the Emacs init files, which can hold API keys,
//! are never read.
//!
//! **Files.** A session `<id>` (the name `ellama-naming-scheme` made, by default the
//! command, the prompt's first words and the model: `ellama What is a monad (llama3.2)`;
//! `/\?%*:|"<>.;=` replaced by `_`, so an id never holds a dot) is the chat buffer's file
//! `<id>.org` (`ellama-major-mode` is `org-mode` by default) or `<id>.md` (any other mode),
//! saved whole by Emacs after every reply, and `.<id>.<ext>.session.el`, rewritten by
//! `ellama--save-session` at every save with `prin1` of the `ellama-session` record:
//! `#s(ellama-session ID PROVIDER FILE PROMPT CONTEXT EXTRA)` (before January 2025 without
//! EXTRA; in January 2024 wrapped in `(setq ellama--current-session …)`). With chat
//! translation on, `<id>.translation.<ext>` holds the same chat in the user's language.
//!
//! **The chat file.** Each turn starts at a heading line `** User:` / `** Ellama:` (Org) or
//! `## User:` / `## Ellama:` (Markdown): `ellama-nick-prefix-depth` (2) times `*` or `#`, then
//! `ellama-user-nick` (`User`) or `ellama-assistant-nick` (`Ellama`) and a colon. A prompt is
//! preceded (or, sent from the buffer, followed) by a `Context:` paragraph listing the
//! context elements; a reply holds its reasoning and its tool results in `<think>…</think>`
//! blocks (Markdown), which the Org filter writes as `#+BEGIN_QUOTE … #+END_QUOTE`. Tool
//! results are written one per tool, its name on a line and its result below it, indented
//! by two spaces. Auto-compaction writes a `[Ellama compacted conversation context: …]`
//! paragraph. `ellama-chat-done` leaves an empty `User:` heading for the next prompt.
//!
//! **The session file.** PROVIDER is an `llm` provider struct (`#s(llm-ollama …)`), read
//! only for its type and its `chat-model` slot, found by the struct's layout: the key slot
//! older `llm` releases printed in clear is never read. PROMPT is the `llm-chat-prompt` the
//! model is sent: its `context` (the system prompt) and its interactions (prompts, replies,
//! tool calls with their arguments and ids, tool results). EXTRA is a property list:
//! `:dir` (the session's working directory), `:tool-names`, `:auto-compact-summary`, and
//! run-time state. Nothing is evaluated: [`super::elisp`] reads the printed form as data.
//!
//! Design decisions and why:
//! - **The chat file is the transcript.** It is what the user saw and kept, all of it;
//!   the prompt is what the model was last sent, cut at each compaction. Prompts are user
//!   messages (the `Context:` paragraph a context message), replies assistant messages,
//!   each split after a tool-results block so a round of tool calls ends a message;
//!   `<think>`/quote blocks are reasoning; compaction notices are events.
//! - **Tool calls** are the tool-results blocks (a block whose every entry is a name line
//!   and indented lines, the names being tools the session file lists, or any identifier
//!   when there is no session file), each a call with its output; its id and arguments come
//!   from the prompt's call with the same name and result, else from the prompt's calls of
//!   that name counted from the end (compaction drops the oldest). A call the prompt no
//!   longer holds has no arguments.
//! - **From the session file**: the system prompt (context, first), the model the session
//!   was set to (each reply's: `ellama-chat` starts a new session for another provider),
//!   the provider type as a `provider:` tag, the working directory, a sub-agent's
//!   parent, the compaction summary as `summary.md`. A session file whose id is not the
//!   chat's name (a chat renamed) costs a warning; the file name stays the id.
//! - **Never dropped.** A chat without ellama's default headings (other nicks or depth) or
//!   without its session file is shown, with a warning: its text as context when no turn can
//!   be told. A session file without its chat is shown from its prompt's interactions, with a
//!   warning. A session file cut mid-write keeps what was read before the cut.
//! - **Times, usage.** ellama keeps no per-message time and no usage (`:token-count` is the
//!   context's size); the newest modification time of the files is the update time, and
//!   there is no creation time.
//! - **Not read**: the Emacs init files (`init.el`, `.emacs`, `custom.el`: API keys), the
//!   auth-source files a `:provider-key-ref` points at, backup (`~`) and auto-save (`#…#`)
//!   files; of the session file, the provider's other slots (its key), the prompt's
//!   examples, tools and parameters, and EXTRA's other keys (the plan-and-act loop state).

use super::elisp::{self, Sexp};
use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{self, Agent, Message, MessageKind, Role, Session, ToolCall};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const AGENT: Agent = Agent::Ellama;
/// `ellama-sessions-directory` under the Emacs user directory.
const SESSIONS_DIR: &str = "ellama-sessions";
const SESSION_SUFFIX: &str = ".session.el";
const TRANSLATION: &str = ".translation";
/// `ellama-user-nick` and `ellama-assistant-nick`'s defaults.
const USER_NICK: &str = "User";
const ASSISTANT_NICK: &str = "Ellama";
/// The nick prefixes ellama has written: `**` (Org) and `##` (Markdown), depth 2.
const PREFIXES: [&str; 2] = ["**", "##"];
/// How a compaction notice starts.
const COMPACTION_NOTICE: &str = "[Ellama compacted ";
/// The synthetic reply compaction puts first in the prompt.
const SUMMARY_PREFIX: &str = "Previous conversation summary:\n\n";
/// The session file the compaction summary becomes.
pub const SUMMARY_FILE: &str = "summary.md";
/// Larger chat or session files are not read.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// Where each `llm` provider struct keeps its chat model: its own slots after the three
/// `default-chat-*` slots every chat provider has had since llm `0b9eebc` (May 2024;
/// before, none). Only the `chat-model` slot is ever read.
const PROVIDERS: &[(&str, &[&str])] = &[
    (
        "llm-ollama",
        &["scheme", "host", "port", "chat-model", "embedding-model"],
    ),
    (
        "llm-ollama-authed",
        &[
            "scheme",
            "host",
            "port",
            "chat-model",
            "embedding-model",
            "key",
        ],
    ),
    ("llm-openai", &["key", "chat-model", "embedding-model"]),
    ("llm-openai-compatible", OPENAI_COMPATIBLE),
    ("llm-openrouter", OPENAI_COMPATIBLE),
    ("llm-azure", OPENAI_COMPATIBLE),
    ("llm-github", OPENAI_COMPATIBLE),
    ("llm-deepseek", OPENAI_COMPATIBLE),
    (
        "llm-gpt4all",
        &[
            "key",
            "chat-model",
            "embedding-model",
            "url",
            "host",
            "port",
        ],
    ),
    (
        "llm-llamacpp",
        &[
            "key",
            "chat-model",
            "embedding-model",
            "url",
            "scheme",
            "host",
            "port",
        ],
    ),
    ("llm-claude", &["key", "chat-model"]),
    ("llm-gemini", &["key", "embedding-model", "chat-model"]),
    (
        "llm-vertex",
        &[
            "key",
            "project",
            "embedding-model",
            "chat-model",
            "key-gentime",
        ],
    ),
];
const OPENAI_COMPATIBLE: &[&str] = &["key", "chat-model", "embedding-model", "url"];
/// The slots `llm-standard-chat-provider` adds before a provider's own.
const DEFAULT_SLOTS: usize = 3;

/// The sessions directories of the Emacs user directories, existing or not.
pub fn candidates(env: &Env) -> Vec<Root> {
    let mut out: Vec<Root> = Vec::new();
    let mut push = |p: PathBuf, how: &str| {
        if !out.iter().any(|r| r.path == p) {
            out.push(Root::new(AGENT, p, how));
        }
    };
    push(env.home.join(".emacs.d").join(SESSIONS_DIR), "default");
    if let Some(x) = env.path_var("XDG_CONFIG_HOME") {
        push(x.join("emacs").join(SESSIONS_DIR), "XDG_CONFIG_HOME");
    }
    push(env.home.join(".config/emacs").join(SESSIONS_DIR), "default");
    out
}

pub struct EllamaStore {
    base: Base,
}

impl EllamaStore {
    pub fn new(roots: Vec<Root>) -> EllamaStore {
        EllamaStore {
            base: Base::new(AGENT, roots),
        }
    }
}

/// `parts` joined (file names that need not be UTF-8).
fn os_concat(parts: &[&OsStr]) -> OsString {
    let mut s = OsString::new();
    for p in parts {
        s.push(p);
    }
    s
}

/// The chat's extension, when `name` is a chat file ellama writes: `org` or `md`.
fn chat_ext(name: &[u8]) -> Option<&'static str> {
    if name.ends_with(b".org") && name.len() > 4 {
        Some("org")
    } else if name.ends_with(b".md") && name.len() > 3 {
        Some("md")
    } else {
        None
    }
}

/// `<id>.translation.<ext>`: the translated chat, shown with its session.
fn is_translation(name: &[u8]) -> bool {
    match chat_ext(name) {
        Some(ext) => name[..name.len() - ext.len() - 1].ends_with(TRANSLATION.as_bytes()),
        None => false,
    }
}

/// A chat file: not hidden, `.org` or `.md`, no translation.
fn is_chat(name: &[u8]) -> bool {
    !name.starts_with(b".") && chat_ext(name).is_some() && !is_translation(name)
}

/// The chat file name a session file `.<chat>.session.el` belongs to.
fn chat_of_session_file(name: &[u8]) -> Option<&[u8]> {
    let inner = name
        .strip_prefix(b".")?
        .strip_suffix(SESSION_SUFFIX.as_bytes())?;
    is_chat(inner).then_some(inner)
}

/// `.<chat>.session.el` beside `chat`.
pub fn session_file(chat: &Path) -> PathBuf {
    let name = chat.file_name().unwrap_or_default();
    chat.with_file_name(os_concat(&[".".as_ref(), name, SESSION_SUFFIX.as_ref()]))
}

/// `<id>.translation.<ext>` beside `chat`.
pub fn translation_file(chat: &Path) -> PathBuf {
    let stem = chat.file_stem().unwrap_or_default();
    let ext = chat.extension().unwrap_or_default();
    chat.with_file_name(os_concat(&[stem, TRANSLATION.as_ref(), ".".as_ref(), ext]))
}

fn stem_id(p: &Path) -> String {
    p.file_stem().map(crate::names::os_id).unwrap_or_default()
}

fn name_bytes(p: &Path) -> &[u8] {
    p.file_name().map(OsStr::as_bytes).unwrap_or(b"")
}

/// The listing of a chat file: every file of the session is a source, present or not, so
/// a session file written later changes its version.
fn listed_chat(path: PathBuf, root: usize) -> Listed {
    let mut l = Listed::file(stem_id(&path), path.clone(), root);
    l.sources.push(session_file(&path));
    l.sources.push(translation_file(&path));
    l
}

/// The listing of a session file whose chat is missing.
fn listed_orphan(path: PathBuf, chat: &[u8], root: usize) -> Listed {
    let chat_path = path.with_file_name(OsStr::from_bytes(chat));
    let mut l = Listed::file(stem_id(&chat_path), path, root);
    l.sources.push(chat_path);
    l
}

/// The sessions of one directory: its chat files, and the session files whose chat is gone.
fn sessions_in(dir: &Path, root: usize, out: &mut Vec<Listed>) {
    let files: Vec<PathBuf> = kit::typed_entries(dir)
        .into_iter()
        .filter(|(_, t)| *t == EntryType::File)
        .map(|(p, _)| p)
        .collect();
    let chats: BTreeSet<&[u8]> = files
        .iter()
        .map(|p| name_bytes(p))
        .filter(|n| is_chat(n))
        .collect();
    for p in &files {
        let name = name_bytes(p);
        if is_chat(name) {
            out.push(listed_chat(p.clone(), root));
        } else if let Some(chat) = chat_of_session_file(name) {
            if !chats.contains(chat) {
                out.push(listed_orphan(p.clone(), chat, root));
            }
        }
    }
}

impl Store for EllamaStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            if root.path.is_file() {
                let name = name_bytes(&root.path);
                if is_chat(name) {
                    out.push(listed_chat(root.path.clone(), i));
                } else if let Some(chat) = chat_of_session_file(name) {
                    out.push(listed_orphan(root.path.clone(), chat, i));
                }
                continue;
            }
            sessions_in(&root.path, i, &mut out);
        }
        out
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads file names only.
        true
    }

    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        kit::root_dirs_glance(&self.base.roots)
    }

    fn load(&self, listed: &Listed) -> Session {
        load(&listed.path, &listed.id)
    }
}

/// Load the session `id` whose listing starts at `path`: a chat file, or a session file
/// whose chat is gone.
pub fn load(path: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(AGENT, id);
    b.s.source.format = "ellama-chat".into();
    if !id.trim().is_empty() {
        b.s.title = Some(id.to_string());
    }
    let orphan = chat_of_session_file(name_bytes(path)).is_some();
    let (chat, saved_path) = if orphan {
        let chat = chat_of_session_file(name_bytes(path)).unwrap_or_default();
        (
            path.with_file_name(OsStr::from_bytes(chat)),
            path.to_path_buf(),
        )
    } else {
        (path.to_path_buf(), session_file(path))
    };
    let org = chat_ext(name_bytes(&chat)) == Some("org");
    let translation = translation_file(&chat);
    let mut newest: Option<DateTime<Utc>> = None;
    for p in [&chat, &saved_path, &translation] {
        if let Ok(m) = std::fs::metadata(p) {
            b.s.source.paths.push(p.to_path_buf());
            let t = m.modified().ok().map(DateTime::<Utc>::from);
            newest = newest.max(t);
        }
    }
    b.s.updated_at = newest;

    let chat_name = kit::file_name(&chat).to_string();
    let saved_name = kit::file_name(&saved_path).to_string();
    let doc = if saved_path.exists() {
        read_saved(&mut b, &saved_path, &saved_name)
    } else {
        b.warn(format!(
            "{chat_name}: no `{saved_name}` beside it (a chat renamed or saved without a session): the chat is shown from its text alone"
        ));
        None
    };
    let saved = doc
        .as_ref()
        .map(|d| Saved::of(&mut b, d, id, &saved_name))
        .unwrap_or_default();
    if let Some(sys) = &saved.system {
        b.context("system prompt", sys.clone(), None);
    }
    let mut calls = prompt_calls(&saved.interactions);
    if orphan {
        b.warn(format!(
            "{saved_name}: its chat `{chat_name}` is missing; the conversation is shown as the model was last sent it"
        ));
        interactions(
            &mut b,
            &saved.interactions,
            saved.summary.as_deref(),
            &saved_name,
        );
    } else if let Some(text) = read_text(&mut b, &chat, &chat_name) {
        let mut known = saved.tool_names.clone();
        known.extend(calls.iter().map(|c| c.name.clone()));
        parse_chat(&mut b, &text, org, &known, &chat_name);
        match_calls(&mut b.s.messages, &mut calls);
    }
    // ellama binds a session to its provider (another provider starts a new session), so
    // every reply is the session model's.
    for m in
        b.s.messages
            .iter_mut()
            .filter(|m| m.role == Role::Assistant)
    {
        m.model.clone_from(&saved.model);
    }
    if let Some(summary) = saved.summary.filter(|s| !s.trim().is_empty()) {
        b.s.extra_files.push((SUMMARY_FILE.into(), summary));
    }
    if translation.exists() {
        let name = kit::file_name(&translation).to_string();
        if let Some(text) = read_text(&mut b, &translation, &name) {
            let ext = if org { "org" } else { "md" };
            b.s.extra_files.push((format!("translation.{ext}"), text));
        }
    }
    b.s.set_model = saved.model;
    b.finish()
}

/// A whole text file of at most [`MAX_FILE_BYTES`], invalid UTF-8 replaced (with a warning).
fn read_text(b: &mut SessionBuilder, path: &Path, name: &str) -> Option<String> {
    let bytes = kit::read_capped(b, path, name, MAX_FILE_BYTES)?;
    Some(match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            b.warn(format!(
                "{name}: not valid UTF-8 (byte {}); invalid bytes are shown as U+FFFD",
                e.utf8_error().valid_up_to()
            ));
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    })
}

/// The `ellama-session` record of a session file, read as data. A fault keeps what was
/// read before it, with a warning.
fn read_saved(b: &mut SessionBuilder, path: &Path, name: &str) -> Option<Sexp> {
    let text = read_text(b, path, name)?;
    let doc = elisp::read(&text);
    if let Some(e) = &doc.error {
        b.warn(format!(
            "{name}: cannot be read whole ({e}); what came before is used"
        ));
    }
    let mut value = doc.value?;
    // January 2024: `(setq ellama--current-session #s(…))`.
    if let Some([head, _, v]) = value.items() {
        if head.sym() == Some("setq") {
            value = v.clone();
        }
    }
    if value.record().map(|(t, _)| t) != Some("ellama-session") {
        b.warn(format!(
            "{name}: holds no ellama-session record; it is not used"
        ));
        return None;
    }
    Some(value)
}

/// What a session file gives.
#[derive(Default)]
struct Saved {
    model: Option<String>,
    system: Option<String>,
    tool_names: BTreeSet<String>,
    summary: Option<String>,
    /// The prompt's interactions, as the model was last sent them.
    interactions: Vec<Sexp>,
}

impl Saved {
    fn of(b: &mut SessionBuilder, rec: &Sexp, id: &str, name: &str) -> Saved {
        let mut out = Saved::default();
        let Some((_, slots)) = rec.record() else {
            return out;
        };
        let slot = |i: usize| slots.get(i).filter(|v| !v.is_nil());
        if let Some(saved_id) = slot(0).and_then(Sexp::as_str) {
            if saved_id != id {
                b.warn(format!(
                    "{name}: names the session `{saved_id}` (the chat was renamed); the file name is its id"
                ));
            }
        }
        if let Some(p) = slot(1) {
            provider(b, p, name, &mut out);
        }
        if let Some(prompt) = slot(3) {
            match prompt.record() {
                Some(("llm-chat-prompt", ps)) => {
                    out.system = ps
                        .first()
                        .and_then(Sexp::as_str)
                        .filter(|s| !s.trim().is_empty())
                        .map(str::to_string);
                    if let Some(items) = ps.get(2).and_then(Sexp::items) {
                        out.interactions = items.to_vec();
                    }
                }
                _ => b.warn(format!(
                    "{name}: the prompt is no llm-chat-prompt record; it is not shown"
                )),
            }
        }
        if let Some(extra) = slot(5) {
            if let Some(dir) = extra.plist_get(":dir").and_then(Sexp::as_str) {
                let d = dir.trim_end_matches('/');
                b.s.cwd = Some(if d.is_empty() { dir } else { d }.to_string());
            }
            if let Some(names) = extra.plist_get(":tool-names").and_then(Sexp::items) {
                out.tool_names
                    .extend(names.iter().filter_map(Sexp::as_str).map(str::to_string));
            }
            out.summary = extra
                .plist_get(":auto-compact-summary")
                .and_then(Sexp::as_str)
                .map(str::to_string);
            if let Some(parent) = extra.plist_get(":parent-session").and_then(Sexp::as_str) {
                b.s.parent = Some(model::unified_id(AGENT, parent));
            }
        }
        out
    }
}

/// The provider's type as a `provider:` tag and its chat model, found by the struct's
/// layout ([`PROVIDERS`]); no other slot is read.
fn provider(b: &mut SessionBuilder, p: &Sexp, name: &str, out: &mut Saved) {
    let Some((ty, slots)) = p.record() else {
        b.warn(format!(
            "{name}: the provider is no record; no model is known"
        ));
        return;
    };
    let short = ty.strip_prefix("llm-").unwrap_or(ty);
    b.s.tags.push(format!("provider:{short}"));
    let Some((_, own)) = PROVIDERS.iter().find(|(t, _)| *t == ty) else {
        b.warn(format!(
            "{name}: provider {ty} is one sessfs does not know; its model is not shown"
        ));
        return;
    };
    let Some(at) = own.iter().position(|s| *s == "chat-model") else {
        return;
    };
    let base = match slots.len().checked_sub(own.len()) {
        Some(n @ (0 | DEFAULT_SLOTS)) => n,
        _ => {
            b.warn(format!(
                "{name}: provider {ty} has {} slots, a layout sessfs does not know; its model is not shown",
                slots.len()
            ));
            return;
        }
    };
    out.model = slots
        .get(base + at)
        .and_then(Sexp::as_str)
        .filter(|m| !m.trim().is_empty() && *m != "unset")
        .map(str::to_string);
}

/// A tool call the prompt holds, with its result when the prompt holds that too (compared
/// [`loose`]ly, so kept in that form).
struct Call {
    id: String,
    name: String,
    input: Value,
    result: Option<String>,
    used: bool,
}

/// The tool uses of an interaction's content: a list of `…tool-use` records.
fn tool_uses(content: &Sexp) -> Option<Vec<(String, String, Value)>> {
    let items = content.items().filter(|v| !v.is_empty())?;
    items
        .iter()
        .map(|u| {
            let (ty, s) = u.record()?;
            ty.ends_with("tool-use").then(|| {
                let text = |i: usize| {
                    s.get(i)
                        .and_then(Sexp::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                let input = s.get(2).map(Sexp::to_json).unwrap_or(Value::Null);
                (text(0), text(1), input)
            })
        })
        .collect()
}

/// The tool results of a `tool-results` interaction: `(call id, tool name, result)`.
fn tool_results(slots: &[Sexp]) -> Vec<(String, String, String)> {
    let Some(items) = slots.get(2).and_then(Sexp::items) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|r| match r.record() {
            Some(("llm-chat-prompt-tool-result", s)) => {
                let text = |i: usize| s.get(i).and_then(Sexp::as_str).unwrap_or_default();
                let result = s.get(2).map(result_text).unwrap_or_default();
                Some((text(0).to_string(), text(1).to_string(), result))
            }
            _ => None,
        })
        .collect()
}

/// A tool's result as ellama writes it in the chat: a string (a JSON-encoded string
/// decoded), `nil` empty, anything else as data.
fn result_text(r: &Sexp) -> String {
    match r {
        Sexp::Str(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::String(inner)) => inner,
            _ => s.clone(),
        },
        v if v.is_nil() => String::new(),
        v => v.to_json().to_string(),
    }
}

/// The calls of the prompt's interactions, each paired with its result by call id (by
/// name, in order, where the provider gave no ids).
fn prompt_calls(items: &[Sexp]) -> Vec<Call> {
    let mut calls: Vec<Call> = Vec::new();
    for it in items {
        let Some(("llm-chat-prompt-interaction", s)) = it.record() else {
            continue;
        };
        match s.first().and_then(Sexp::sym) {
            Some("assistant") => {
                if let Some(uses) = s.get(1).and_then(tool_uses) {
                    calls.extend(uses.into_iter().map(|(id, name, input)| Call {
                        id,
                        name,
                        input,
                        result: None,
                        used: false,
                    }));
                }
            }
            Some("tool-results") => {
                for (id, name, result) in tool_results(s) {
                    let open = |c: &&mut Call| c.result.is_none();
                    let found = if id.is_empty() {
                        calls.iter_mut().filter(open).find(|c| c.name == name)
                    } else {
                        calls.iter_mut().filter(open).find(|c| c.id == id)
                    };
                    if let Some(c) = found {
                        c.result = Some(loose(&result));
                    }
                }
            }
            _ => {}
        }
    }
    calls
}

/// Text compared loosely: trailing blanks of each line and of the whole ignored.
fn loose(s: &str) -> String {
    s.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// Give the chat's tool calls the id and arguments of the prompt's calls: first those with
/// the same name and result, then by name counted from the end (the prompt keeps the latest
/// calls; compaction dropped the oldest).
fn match_calls(messages: &mut [Message], calls: &mut [Call]) {
    if calls.is_empty() {
        return;
    }
    let refs: Vec<(usize, usize)> = messages
        .iter()
        .enumerate()
        .flat_map(|(mi, m)| (0..m.tool_calls.len()).map(move |ci| (mi, ci)))
        .collect();
    let mut done = vec![false; refs.len()];
    let assign = |m: &mut ToolCall, c: &mut Call| {
        m.tool_call_id = c.id.clone();
        m.input = c.input.clone();
        c.used = true;
    };
    for (k, &(mi, ci)) in refs.iter().enumerate() {
        let tc = &mut messages[mi].tool_calls[ci];
        let out = loose(tc.output.as_deref().unwrap_or_default());
        if let Some(c) = calls.iter_mut().find(|c| {
            !c.used && c.name == tc.tool_name && c.result.as_deref() == Some(out.as_str())
        }) {
            assign(tc, c);
            done[k] = true;
        }
    }
    let mut cursor = calls.len();
    for (k, &(mi, ci)) in refs.iter().enumerate().rev() {
        if done[k] {
            continue;
        }
        let tc = &mut messages[mi].tool_calls[ci];
        if let Some(j) = (0..cursor)
            .rev()
            .find(|&j| !calls[j].used && calls[j].name == tc.tool_name)
        {
            assign(tc, &mut calls[j]);
            cursor = j;
        }
    }
}

/// A multipart content's parts, media as placeholders; other content as data.
fn content_text(c: &Sexp) -> String {
    match c {
        Sexp::Str(s) => s.clone(),
        v if v.is_nil() => String::new(),
        v => match v.record() {
            Some(("llm-multipart", s)) => s
                .first()
                .and_then(Sexp::items)
                .unwrap_or_default()
                .iter()
                .map(|part| match (part, part.record()) {
                    (Sexp::Str(t), _) => t.clone(),
                    (_, Some(("llm-media", m))) => {
                        let mime = m.first().and_then(Sexp::as_str);
                        let bytes = m.get(1).and_then(Sexp::as_str).map(str::len);
                        let kind = match mime {
                            Some(t) if t.starts_with("image/") => "image",
                            Some(t) if t.starts_with("audio/") => "audio",
                            _ => "attachment",
                        };
                        model::placeholder(kind, mime, bytes)
                    }
                    (p, _) => p.to_json().to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            _ => v.to_json().to_string(),
        },
    }
}

/// A session file's interactions as the transcript, for a session whose chat is gone.
fn interactions(b: &mut SessionBuilder, items: &[Sexp], summary: Option<&str>, name: &str) {
    for (i, it) in items.iter().enumerate() {
        let Some(("llm-chat-prompt-interaction", s)) = it.record() else {
            b.unparsed(
                "interactions",
                "not an llm-chat-prompt-interaction record",
                || format!("{name}: interaction {i}"),
                "interaction",
                &it.to_json().to_string(),
                None,
            );
            continue;
        };
        let nil = Sexp::Sym("nil".into());
        let content = s.get(1).unwrap_or(&nil);
        match s.first().and_then(Sexp::sym) {
            Some("user") => {
                let text = content_text(content);
                if !text.trim().is_empty() {
                    b.push(Message {
                        role: Role::User,
                        content: text,
                        ..Message::default()
                    });
                }
            }
            Some("assistant") => {
                if let Some(uses) = tool_uses(content) {
                    let tool_calls = uses
                        .into_iter()
                        .map(|(id, name, input)| ToolCall {
                            tool_call_id: id,
                            tool_name: name,
                            input,
                            ..ToolCall::default()
                        })
                        .collect();
                    b.push(Message {
                        role: Role::Assistant,
                        tool_calls,
                        ..Message::default()
                    });
                    continue;
                }
                let text = content_text(content);
                let is_summary =
                    summary.is_some_and(|sum| text.strip_prefix(SUMMARY_PREFIX) == Some(sum));
                b.push(Message {
                    role: Role::Assistant,
                    kind: if is_summary {
                        MessageKind::CompactionSummary
                    } else {
                        MessageKind::Normal
                    },
                    content: text,
                    ..Message::default()
                });
            }
            Some("tool-results") => {
                for (id, tool, result) in tool_results(s) {
                    b.tool_result(&id, Some(&tool), result, false, None);
                }
            }
            Some("system") => b.context("system message", content_text(content), None),
            role => {
                let role = role.unwrap_or("(none)").to_string();
                b.unparsed(
                    "interactions",
                    &format!("unknown role {role}"),
                    || format!("{name}: interaction {i}"),
                    "interaction",
                    &content_text(content),
                    None,
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The chat file

#[derive(Clone, Copy, PartialEq)]
enum Who {
    User,
    Assistant,
}

/// The nick of a heading line `<prefix> <nick>:` (trailing blanks allowed, as
/// `ellama--chat-last-role` matches it).
fn heading_nick<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(prefix)?.strip_prefix(' ')?;
    let nick = rest.trim_end().strip_suffix(':')?;
    (!nick.is_empty() && !nick.starts_with(' ')).then_some(nick)
}

fn heading(line: &str, prefix: &str) -> Option<Who> {
    match heading_nick(line, prefix)? {
        USER_NICK => Some(Who::User),
        ASSISTANT_NICK => Some(Who::Assistant),
        _ => None,
    }
}

/// Parse a chat's text into `b`, turn by turn.
fn parse_chat(b: &mut SessionBuilder, text: &str, org: bool, known: &BTreeSet<String>, file: &str) {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let Some(prefix) = lines
        .iter()
        .find_map(|l| PREFIXES.into_iter().find(|p| heading(l, p).is_some()))
    else {
        let p = if org { "**" } else { "##" };
        b.warn(format!(
            "{file}: no `{p} {USER_NICK}:` or `{p} {ASSISTANT_NICK}:` heading (ellama's default nicks): the chat is shown as text"
        ));
        if !text.trim().is_empty() {
            b.context("chat text", text.trim_end().to_string(), None);
        }
        return;
    };
    let mut odd: BTreeSet<&str> = BTreeSet::new();
    let mut turn: Option<Who> = None;
    let mut start = 0;
    for (i, line) in lines.iter().enumerate() {
        match heading(line, prefix) {
            Some(w) => {
                flush_turn(b, turn, &lines[start..i], org, known);
                turn = Some(w);
                start = i + 1;
            }
            None => {
                if let Some(nick) = heading_nick(line, prefix) {
                    if nick.split_whitespace().count() == 1 {
                        odd.insert(nick);
                    }
                }
            }
        }
    }
    flush_turn(b, turn, &lines[start..], org, known);
    if !odd.is_empty() {
        let list: Vec<String> = odd.iter().map(|n| format!("`{prefix} {n}:`")).collect();
        b.warn(format!(
            "{file}: headings with nicks other than ellama's defaults ({}): their text is shown in the turn before them",
            list.join(", ")
        ));
    }
}

fn flush_turn(
    b: &mut SessionBuilder,
    turn: Option<Who>,
    lines: &[&str],
    org: bool,
    known: &BTreeSet<String>,
) {
    match turn {
        None => {
            let text = lines.join("\n");
            if !text.trim().is_empty() {
                b.context(
                    "text before the first heading",
                    text.trim().to_string(),
                    None,
                );
            }
        }
        Some(Who::User) => user_turn(b, lines),
        Some(Who::Assistant) => assistant_turn(b, lines, org, known),
    }
}

/// A compaction notice starting at `lines[i]` (filled over several lines or not): its text
/// with whitespace collapsed, and how many lines it takes.
fn notice(lines: &[&str], i: usize) -> Option<(String, usize)> {
    if !lines[i].trim_start().starts_with(COMPACTION_NOTICE) {
        return None;
    }
    let n = lines[i..]
        .iter()
        .take(12)
        .position(|l| l.trim_end().ends_with(']'))
        .map_or(1, |p| p + 1);
    let text = lines[i..i + n]
        .iter()
        .flat_map(|l| l.split_whitespace())
        .collect::<Vec<_>>()
        .join(" ");
    Some((text, n))
}

/// A user turn: the prompt, its `Context:` paragraph as context, compaction notices as
/// events.
fn user_turn(b: &mut SessionBuilder, lines: &[&str]) {
    let mut chunk: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some((text, n)) = notice(lines, i) {
            prompt(b, &chunk.join("\n"));
            chunk.clear();
            b.event(text, None);
            i += n;
            continue;
        }
        chunk.push(lines[i]);
        i += 1;
    }
    prompt(b, &chunk.join("\n"));
}

fn prompt(b: &mut SessionBuilder, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        // The heading ellama leaves for the next prompt.
        return;
    }
    let push_prompt = |b: &mut SessionBuilder, t: &str| {
        if !t.trim().is_empty() {
            b.push(Message {
                role: Role::User,
                content: t.trim().to_string(),
                ..Message::default()
            });
        }
    };
    let push_context = |b: &mut SessionBuilder, t: &str| {
        if !t.trim().is_empty() {
            b.context("context", t.trim().to_string(), None);
        }
    };
    if let Some(rest) = text.strip_prefix("Context:\n") {
        let (ctx, p) = rest.split_once("\n\n").unwrap_or((rest, ""));
        push_context(b, ctx);
        push_prompt(b, p);
    } else if let Some(at) = text.rfind("\n\nContext:\n") {
        push_prompt(b, &text[..at]);
        push_context(b, &text[at + "\n\nContext:\n".len()..]);
    } else {
        push_prompt(b, text);
    }
}

/// A fenced region of a reply, inside which no block or notice is looked for.
#[derive(Clone, Copy)]
enum Fence {
    Backticks,
    Tildes,
    Org(&'static str),
}

fn opens_fence(line: &str, org: bool) -> Option<Fence> {
    let t = line.trim_start();
    if org {
        let up = t.to_ascii_uppercase();
        ["SRC", "EXAMPLE", "EXPORT", "VERSE"]
            .into_iter()
            .find(|k| up.starts_with(&format!("#+BEGIN_{k}")))
            .map(Fence::Org)
    } else if t.starts_with("```") {
        Some(Fence::Backticks)
    } else if t.starts_with("~~~") {
        Some(Fence::Tildes)
    } else {
        None
    }
}

fn closes_fence(f: Fence, line: &str) -> bool {
    let t = line.trim();
    match f {
        Fence::Backticks => t.starts_with("```"),
        Fence::Tildes => t.starts_with("~~~"),
        Fence::Org(k) => t.to_ascii_uppercase().starts_with(&format!("#+END_{k}")),
    }
}

/// A reply's text, reasoning and tool calls so far: one assistant message.
#[derive(Default)]
struct Segment {
    thinking: Vec<String>,
    text: Vec<String>,
    calls: Vec<(String, String)>,
}

impl Segment {
    fn has_text(&self) -> bool {
        self.text.iter().any(|l| !l.trim().is_empty())
    }

    fn flush(&mut self, b: &mut SessionBuilder) {
        let seg = std::mem::take(self);
        let content = seg.text.join("\n").trim().to_string();
        let thinking: Vec<String> = seg.thinking.into_iter().filter(|t| !t.is_empty()).collect();
        if content.is_empty() && thinking.is_empty() && seg.calls.is_empty() {
            return;
        }
        let tool_calls = seg
            .calls
            .into_iter()
            .map(|(name, output)| ToolCall {
                tool_name: name,
                output: Some(output),
                ..ToolCall::default()
            })
            .collect();
        b.push(Message {
            role: Role::Assistant,
            content,
            thinking: (!thinking.is_empty()).then(|| thinking.join("\n\n")),
            tool_calls,
            ..Message::default()
        });
    }
}

/// The `<think>` (Markdown) or `#+BEGIN_QUOTE` (Org) block starting at `lines[i]`: its text,
/// text after its end on the end's line, and how many lines it takes. An unclosed block
/// (a reply still streaming, or cut) runs to the end of the turn.
fn block(lines: &[&str], i: usize, org: bool) -> Option<(String, Option<String>, usize)> {
    let first = lines[i];
    if org {
        if !first.trim().eq_ignore_ascii_case("#+BEGIN_QUOTE") {
            return None;
        }
        let end = lines[i + 1..]
            .iter()
            .position(|l| l.trim().eq_ignore_ascii_case("#+END_QUOTE"));
        return Some(match end {
            Some(e) => (lines[i + 1..i + 1 + e].join("\n"), None, e + 2),
            None => (lines[i + 1..].join("\n"), None, lines.len() - i),
        });
    }
    let rest = first.trim_start().strip_prefix("<think>")?;
    if let Some((inner, after)) = rest.split_once("</think>") {
        return Some((inner.to_string(), Some(after.to_string()), 1));
    }
    let mut body: Vec<&str> = vec![rest];
    for (k, l) in lines[i + 1..].iter().enumerate() {
        if let Some((inner, after)) = l.split_once("</think>") {
            body.push(inner);
            return Some((body.join("\n"), Some(after.to_string()), k + 2));
        }
        body.push(l);
    }
    Some((body.join("\n"), None, lines.len() - i))
}

/// A tool name as ellama writes it over a result.
fn tool_name_like(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// The entries of a tool-results block: each a name line then its result indented by two
/// spaces, entries apart by an empty line. `None` when the block is not of that shape, or
/// names a tool the session does not know (when it knows any).
fn tool_entries(body: &str, known: &BTreeSet<String>) -> Option<Vec<(String, String)>> {
    let lines: Vec<&str> = body.trim_matches('\n').split('\n').collect();
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    let mut after_blank = true;
    for l in lines {
        if l.trim().is_empty() && !l.starts_with("  ") {
            if let Some((_, v)) = out.last_mut() {
                v.push("");
            }
            after_blank = true;
        } else if let Some(r) = l.strip_prefix("  ") {
            out.last_mut()?.1.push(r);
            after_blank = false;
        } else if after_blank && tool_name_like(l.trim_end()) {
            out.push((l.trim_end().to_string(), Vec::new()));
            after_blank = false;
        } else {
            return None;
        }
    }
    if out.is_empty() {
        return None;
    }
    if !known.is_empty() && !out.iter().all(|(n, _)| known.contains(n)) {
        return None;
    }
    Some(
        out.into_iter()
            .map(|(n, v)| (n, v.join("\n").trim_end().to_string()))
            .collect(),
    )
}

/// A reply turn: messages split after each tool-results block, reasoning blocks as
/// thinking, compaction notices as events.
fn assistant_turn(b: &mut SessionBuilder, lines: &[&str], org: bool, known: &BTreeSet<String>) {
    let mut seg = Segment::default();
    let mut fence: Option<Fence> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(f) = fence {
            seg.text.push(line.to_string());
            if closes_fence(f, line) {
                fence = None;
            }
            i += 1;
            continue;
        }
        if let Some(f) = opens_fence(line, org) {
            fence = Some(f);
            seg.text.push(line.to_string());
            i += 1;
            continue;
        }
        if let Some((text, n)) = notice(lines, i) {
            seg.flush(b);
            b.event(text, None);
            i += n;
            continue;
        }
        if let Some((body, after, n)) = block(lines, i, org) {
            i += n;
            match tool_entries(&body, known) {
                Some(entries) => {
                    seg.calls.extend(entries);
                    seg.flush(b);
                }
                None => {
                    if seg.has_text() || !seg.calls.is_empty() {
                        seg.flush(b);
                    }
                    seg.thinking.push(body.trim().to_string());
                }
            }
            if let Some(a) = after.filter(|a| !a.trim().is_empty()) {
                seg.text.push(a);
            }
            continue;
        }
        seg.text.push(line.to_string());
        i += 1;
    }
    seg.flush(b);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn parse(text: &str, org: bool, k: &[&str]) -> Session {
        let mut b = SessionBuilder::new(AGENT, "t");
        parse_chat(&mut b, text, org, &known(k), "t.org");
        b.finish()
    }

    #[test]
    fn roots_are_every_emacs_user_directory() {
        let mut env = Env::at_home(Path::new("/h"));
        let got = |env: &Env| -> Vec<(PathBuf, String)> {
            candidates(env)
                .into_iter()
                .map(|r| (r.path, r.how))
                .collect()
        };
        assert_eq!(
            got(&env),
            [
                (
                    PathBuf::from("/h/.emacs.d/ellama-sessions"),
                    "default".into()
                ),
                (
                    PathBuf::from("/h/.config/emacs/ellama-sessions"),
                    "default".into()
                ),
            ]
        );
        env.vars.insert("XDG_CONFIG_HOME".into(), "/x".into());
        assert_eq!(
            got(&env)[1],
            (
                PathBuf::from("/x/emacs/ellama-sessions"),
                "XDG_CONFIG_HOME".into()
            )
        );
        assert_eq!(got(&env).len(), 3);
    }

    #[test]
    fn names_of_chats_session_files_and_translations() {
        assert!(is_chat(b"ellama hi (llama3).org"));
        assert!(is_chat(b"x.md"));
        assert!(!is_chat(b".hidden.org"));
        assert!(!is_chat(b"x.org~"));
        assert!(!is_chat(b"#x.org#"));
        assert!(!is_chat(b"x.translation.org"));
        assert!(!is_chat(b".org"));
        assert_eq!(
            chat_of_session_file(b".x.org.session.el"),
            Some(&b"x.org"[..])
        );
        assert_eq!(chat_of_session_file(b".x.translation.org.session.el"), None);
        assert_eq!(chat_of_session_file(b"x.org.session.el"), None);
        let chat = Path::new("/d/ellama hi.md");
        assert_eq!(session_file(chat), Path::new("/d/.ellama hi.md.session.el"));
        assert_eq!(
            translation_file(chat),
            Path::new("/d/ellama hi.translation.md")
        );
    }

    #[test]
    fn a_provider_model_is_found_in_either_layout_and_nothing_else_is_read() {
        let mut b = SessionBuilder::new(AGENT, "t");
        let mut read = |text: &str| {
            let mut out = Saved::default();
            provider(&mut b, &elisp::read(text).value.expect("v"), "f", &mut out);
            out.model
        };
        assert_eq!(
            read(r#"#s(llm-ollama nil nil nil "http" "localhost" 11434 "qwen3:8b" nil)"#),
            Some("qwen3:8b".into())
        );
        assert_eq!(
            read(r#"#s(llm-ollama "http" "localhost" 11434 "llama3" "nomic")"#),
            Some("llama3".into())
        );
        assert_eq!(
            read(r#"#s(llm-openai nil nil nil "sk-x" "gpt-4o" "e")"#),
            Some("gpt-4o".into())
        );
        assert_eq!(
            read(r#"#s(llm-openai-compatible nil nil nil llm-key "unset" "unset" "u")"#),
            None
        );
        assert_eq!(
            read(r#"#s(llm-claude "k" "claude-3")"#),
            Some("claude-3".into())
        );
        assert_eq!(read(r#"#s(llm-weird "a")"#), None);
        assert_eq!(read(r#"#s(llm-openai 1 2)"#), None);
        let s = b.finish();
        assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
        assert!(s.tags.contains(&"provider:ollama".to_string()));
    }

    #[test]
    fn turns_context_reasoning_and_the_empty_last_heading() {
        let s = parse(
            "** User:\nContext:\n[[file:/p/a.rs][/p/a.rs]]\n\nexplain\n\n** Ellama:\n#+BEGIN_QUOTE\nthinking here\n#+END_QUOTE\nIt is a function.\n\n** User:\n",
            true,
            &[],
        );
        let m = &s.messages;
        assert_eq!(m.len(), 3, "{m:#?}");
        assert_eq!(
            (m[0].kind, m[0].content.as_str()),
            (MessageKind::Context, "[[file:/p/a.rs][/p/a.rs]]")
        );
        assert_eq!((m[1].role, m[1].content.as_str()), (Role::User, "explain"));
        assert_eq!(m[2].content, "It is a function.");
        assert_eq!(m[2].thinking.as_deref(), Some("thinking here"));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn a_context_sent_from_the_buffer_follows_its_prompt() {
        let s = parse(
            "## User:\nfix it\n\nContext:\n[a.rs](<a.rs>)\n\n## Ellama:\nok\n",
            false,
            &[],
        );
        assert_eq!(s.messages[0].content, "fix it");
        assert_eq!(s.messages[1].kind, MessageKind::Context);
        assert_eq!(s.messages[1].content, "[a.rs](<a.rs>)");
    }

    #[test]
    fn tool_blocks_end_a_message_and_unknown_names_stay_reasoning() {
        let text = "## Ellama:\n<think>\nI should read it\n</think>\n\n<think>\nread_file\n  line one\n  \n  line three\n\nshell_command\n  ok\n</think>\nDone.\n";
        let s = parse(text, false, &["read_file", "shell_command"]);
        let m = &s.messages;
        assert_eq!(m.len(), 2, "{m:#?}");
        assert_eq!(m[0].thinking.as_deref(), Some("I should read it"));
        let calls: Vec<(&str, Option<&str>)> = m[0]
            .tool_calls
            .iter()
            .map(|c| (c.tool_name.as_str(), c.output.as_deref()))
            .collect();
        assert_eq!(
            calls,
            [
                ("read_file", Some("line one\n\nline three")),
                ("shell_command", Some("ok"))
            ]
        );
        assert_eq!(m[1].content, "Done.");
        let s = parse(text, false, &["grep"]);
        assert!(s.messages.iter().all(|m| m.tool_calls.is_empty()));
    }

    #[test]
    fn blocks_inside_code_are_text_and_notices_are_events() {
        let s = parse(
            "## Ellama:\n```\n<think>\nnot a block\n</think>\n```\n\n[Ellama compacted conversation context: summarized 3\nearlier turns, kept 2 recent turns, estimated context 900 -> 200 tokens.]\n",
            false,
            &[],
        );
        let m = &s.messages;
        assert!(m[0].content.contains("not a block") && m[0].thinking.is_none());
        assert_eq!(m[1].kind, MessageKind::Event);
        assert!(m[1]
            .content
            .starts_with("[Ellama compacted conversation context: summarized 3 earlier"));
    }

    #[test]
    fn other_nicks_cost_a_warning_and_show_as_text() {
        let s = parse("** Me:\nhello\n** Bot:\nhi\n", true, &[]);
        assert_eq!(s.messages.len(), 1);
        assert!(s.messages[0].content.contains("** Bot:"));
        assert!(s.warnings[0].contains("no `** User:`"), "{:?}", s.warnings);
        let s = parse("** User:\nhello\n** Bot:\nhi\n", true, &[]);
        assert!(s.messages[0].content.contains("** Bot:\nhi"));
        assert!(s.warnings[0].contains("`** Bot:`"), "{:?}", s.warnings);
    }

    #[test]
    fn prompt_calls_pair_results_by_id_and_match_chat_calls() {
        let prompt = r#"(#s(llm-chat-prompt-interaction user "go" nil nil)
          #s(llm-chat-prompt-interaction assistant (#s(llm-provider-utils-tool-use "c1" "grep" ((pattern . "x"))) #s(llm-provider-utils-tool-use "c2" "grep" ((pattern . "y")))) nil nil)
          #s(llm-chat-prompt-interaction tool-results nil (#s(llm-chat-prompt-tool-result "c2" "grep" "found y") #s(llm-chat-prompt-tool-result "c1" "grep" "\"found x\"")) nil))"#;
        let items = elisp::read(prompt).value.expect("v");
        let mut calls = prompt_calls(items.items().expect("list"));
        assert_eq!(calls[0].result.as_deref(), Some("found x"));
        assert_eq!(calls[1].result.as_deref(), Some("found y"));
        let s = parse(
            "## Ellama:\n<think>\ngrep\n  found y\n\ngrep\n  found x\n</think>\n",
            false,
            &["grep"],
        );
        let mut msgs = s.messages;
        match_calls(&mut msgs, &mut calls);
        let got: Vec<(&str, Value)> = msgs[0]
            .tool_calls
            .iter()
            .map(|c| (c.tool_call_id.as_str(), c.input.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("c2", serde_json::json!({"pattern": "y"})),
                ("c1", serde_json::json!({"pattern": "x"}))
            ]
        );
    }
}
