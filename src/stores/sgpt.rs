//! ShellGPT (the `sgpt` command): the chats `sgpt --chat <id>` and `sgpt --repl <id>` keep,
//! one JSON file named by the chat id in ShellGPT's chat cache, `$TMPDIR/chat_cache/` unless
//! `CHAT_CACHE_PATH` moves it.
//!
//! Read from ShellGPT's own source, TheR1D/shell_gpt `a082bd5327ce0c4ef5a0284d9060e833be9444a6`
//! (2026-07-02, 1.5.1):
//!
//! - `sgpt/config.py`: the chat cache is the variable `CHAT_CACHE_PATH`, else
//!   `Path(gettempdir()) / "chat_cache"`; Python's `gettempdir()` is the first usable of
//!   `$TMPDIR`, `$TEMP`, `$TMP`, `/tmp`, `/var/tmp`, `/usr/tmp` (on macOS `$TMPDIR` is the
//!   user's own `/var/folders/…/T/`). At the first run the values are written into
//!   `~/.config/shell_gpt/.sgptrc`, beside `OPENAI_API_KEY`, and the file's value is used when
//!   the variable is unset. `CACHE_PATH` (`gettempdir()/cache`) is the completion cache, one
//!   file of reply text per request hash: no chat.
//! - `sgpt/handlers/chat_handler.py` (`ChatSession`): a chat is the file `<chat cache>/<chat
//!   id>`, no extension; each call reads it, appends the call's messages and the reply
//!   (`{"role": "assistant", "content": <the whole streamed text>}`) and writes it back with
//!   `json.dump` into the file opened for writing (truncated first: a reader may see it cut),
//!   keeping the first message (the role) and the last `CHAT_CACHE_LENGTH - 1` (100 by
//!   default): older messages are gone for good. `--list-chats` lists every entry of the
//!   directory; the chat id `temp` is emptied at the start of each use.
//! - `ChatHandler.make_messages`: a new chat starts with `{"role": "system", "content":
//!   <role>}`, the role text being `You are <role name>\n<description>` (`sgpt/role.py`
//!   `ROLE_TEMPLATE`; the role of a chat is read back from that first line); then one
//!   `{"role": "user", "content": <prompt>}` per call. `sgpt/handlers/repl_handler.py` joins
//!   text piped into `--repl` and the first typed prompt with two empty lines.
//! - `sgpt/handlers/handler.py` (`handle_function_call`): a function the model calls is
//!   saved as `{"role": "assistant", "content": null, "tool_calls": [{id, type: "function",
//!   function: {name, arguments}}]}` and its result as `{"role": "tool", "content": <result>,
//!   "tool_call_id": id}`, before the reply; the reply's text starts with the line
//!   ShellGPT printed for the call, `> @FunctionCall` and the call in backticks (and the
//!   output, with `SHOW_FUNCTIONS_OUTPUT`). `sgpt/function.py` runs the functions. Nothing
//!   else is saved: no time, model, usage or working directory.
//!
//! Older shapes, from the same repository's history: 1.1.0 to 1.4.x (`20ff0f2`, January 2024)
//! saved a call as `{"role": "assistant", "content": "", "function_call": {name,
//! arguments}}` and its result as `{"role": "function", "content", "name"}`, until `4ea2f83`
//! (1.5.0); up to 1.4.4 the cut kept only the last `CHAT_CACHE_LENGTH` messages, the role's
//! too (`859c979`, `b7cad0b` keep it). 0.9.x (April to December 2023) sent the role inside the
//! first prompt (`###\nRole name: <name>\n<role>\n\nRequest: <prompt>\n###\n<expecting>:`,
//! `sgpt/role.py` `PROMPT_TEMPLATE`), a `system` message only with `SYSTEM_ROLES=true`; 0.8.x
//! wrapped the first prompt alike (`###\n<instructions>\nPrompt: <prompt>\n###`,
//! `sgpt/make_prompt.py`) and kept the chat cache in `gettempdir()/shell_gpt/chat_cache`
//! (`sgpt/config.py` until 0.9.0), where an `.sgptrc` written then still points.
//!
//! Design decisions and why:
//! - **Roots**: `$CHAT_CACHE_PATH` when set (it replaces the default, as for ShellGPT);
//!   otherwise `chat_cache/` and the older `shell_gpt/chat_cache/` in the temporary directory
//!   Python would pick. A chat cache moved in `.sgptrc` is given with `--store sgpt=DIR`:
//!   `.sgptrc` holds the API key and is never opened.
//! - **Whose chats**: on Linux the temporary directory is shared, and `/tmp/chat_cache` is one
//!   directory for every user of the machine (ShellGPT issue #256): in the temporary
//!   directory only the files the user owns are listed, and a chat cache another user made
//!   is named by `doctor`, not shown. A root given by variable or `--store` is read whole.
//! - **One file is one chat**, its name the id; every regular file of the directory is a chat,
//!   hidden names too, as `--list-chats` lists them. Nothing else lives there: the completion
//!   cache, the roles (`~/.config/shell_gpt/roles/`) and functions (`functions/`) are other
//!   directories and never read.
//! - **The messages** are saved OpenAI chat messages, the array Fabric saves: they are read
//!   by [`super::fabric`]'s reader with ShellGPT's [`SGPT`] dialect (no `meta` role). The role
//!   is the `system prompt` context and a `role:<name>` tag; the reply is kept as ShellGPT
//!   saved it, its `@FunctionCall` line included, since that is what the model is sent back.
//! - **Failed calls**: OpenAI results carry no error flag, but ShellGPT's own shell function,
//!   `execute_shell_command` (`sgpt/llm_functions/common/execute_shell.py`, copied into the
//!   functions directory at `--install-functions`), returns `Exit code: <n>, Output:\n<output>`:
//!   its result is failed when `<n>` is not 0. Other functions' results are never failed.
//! - **Title**: the first prompt (a chat id is often `temp`); in a 0.8/0.9 chat, the request
//!   inside its wrapped first prompt.
//! - **Dropped messages**: when the first message after the role is not a prompt, ShellGPT's
//!   cut took what came before it; an event says so where they were. A cut that happened to
//!   fall before a prompt cannot be told from a chat that started there.
//! - **Times**: the file's modification time (the last call) is the update time; no creation
//!   time is kept.

use super::fabric::{self, Dialect};
use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, MessageKind, Role, Session};
use serde_json::Value;
use std::path::{Path, PathBuf};

const AGENT: Agent = Agent::Sgpt;
/// The variable that moves the chat cache.
const VAR: &str = "CHAT_CACHE_PATH";
/// The chat cache in the temporary directory, 0.9.0 and later.
const CHAT_CACHE: &str = "chat_cache";
/// The chat cache of 0.7 and 0.8, still named by `.sgptrc` files written then.
const OLD_CHAT_CACHE: &str = "shell_gpt/chat_cache";
/// What Python's `tempfile` consults before its fixed list, in order.
const TEMP_VARS: [&str; 3] = ["TMPDIR", "TEMP", "TMP"];
/// Python's fixed list on Unix.
const TEMP_DIRS: [&str; 3] = ["/tmp", "/var/tmp", "/usr/tmp"];
/// The tag of a root in the temporary directory when no variable named it.
const TEMP_DEFAULT: &str = "default";

/// The shell function ShellGPT installs (`~/.config/shell_gpt/functions/execute_shell.py`).
const SHELL_FUNCTION: &str = "execute_shell_command";

/// ShellGPT's chats: OpenAI messages without Fabric's `meta` role.
pub const SGPT: Dialect = Dialect { meta_program: None };

/// Python's `tempfile.gettempdir()` on Unix, with what named it: the first of `$TMPDIR`,
/// `$TEMP`, `$TMP`, `/tmp`, `/var/tmp`, `/usr/tmp` that is a directory. (Python also checks
/// that it can create a file there and falls back to its working directory, which sessfs
/// cannot know; `/tmp` then.)
pub fn temp_dir(env: &Env) -> (PathBuf, &'static str) {
    let named = TEMP_VARS
        .iter()
        .filter_map(|v| Some((PathBuf::from(env.var(v)?), *v)))
        .chain(TEMP_DIRS.iter().map(|d| (PathBuf::from(d), TEMP_DEFAULT)));
    for (dir, how) in named {
        if dir.is_dir() {
            return (dir, how);
        }
    }
    (PathBuf::from("/tmp"), TEMP_DEFAULT)
}

/// The chat caches ShellGPT uses, existing or not.
pub fn candidates(env: &Env) -> Vec<Root> {
    if let Some(dir) = env.path_var(VAR) {
        return vec![Root::new(AGENT, dir, VAR)];
    }
    let (tmp, how) = temp_dir(env);
    vec![
        Root::new(AGENT, tmp.join(CHAT_CACHE), how),
        Root::new(AGENT, tmp.join(OLD_CHAT_CACHE), how),
    ]
}

/// Whether a root is in the temporary directory, shared by every user of the machine.
fn in_temp(root: &Root) -> bool {
    root.how == TEMP_DEFAULT || TEMP_VARS.contains(&root.how.as_str())
}

/// The user sessfs runs as.
fn my_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// The owner of `path` itself (a symlink's own owner, not its target's).
fn owner(path: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().map(|m| m.uid())
}

/// The chat files of a root: every regular file of the directory, or the root itself when
/// it is one file; with `only` a user id, only the files that user owns.
pub fn chat_files(root: &Path, only: Option<u32>) -> Vec<PathBuf> {
    let files = if root.is_file() {
        vec![root.to_path_buf()]
    } else {
        kit::typed_entries(root)
            .into_iter()
            .filter(|(_, t)| *t == EntryType::File)
            .map(|(p, _)| p)
            .collect()
    };
    match only {
        Some(uid) => files
            .into_iter()
            .filter(|p| owner(p) == Some(uid))
            .collect(),
        None => files,
    }
}

pub struct SgptStore {
    base: Base,
}

impl SgptStore {
    pub fn new(roots: Vec<Root>) -> SgptStore {
        SgptStore {
            base: Base::new(AGENT, roots),
        }
    }

    /// The user whose files are listed from `root`: this one in the temporary directory.
    fn only(root: &Root) -> Option<u32> {
        in_temp(root).then(my_uid)
    }
}

impl Store for SgptStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for path in chat_files(&root.path, Self::only(root)) {
                let id = path
                    .file_name()
                    .map(crate::names::os_id)
                    .unwrap_or_default();
                out.push(Listed::file(id, path, i));
            }
        }
        out
    }

    /// A chat cache in the temporary directory that another user made holds none of this
    /// user's chats: no empty `sgpt/` for it.
    fn found(&self) -> bool {
        self.base.roots.iter().any(|r| {
            !in_temp(r)
                || owner(&r.path) == Some(my_uid())
                || !chat_files(&r.path, Self::only(r)).is_empty()
        })
    }

    fn problems(&self) -> Vec<String> {
        let me = my_uid();
        self.base
            .roots
            .iter()
            .filter(|r| in_temp(r) && r.path.is_dir())
            .filter_map(|r| {
                let uid = owner(&r.path).filter(|u| *u != me)?;
                Some(format!(
                    "{} belongs to another user (uid {uid}): only chats of yours in it are shown",
                    r.path.display()
                ))
            })
            .collect()
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads names and owners; a call rewrites a chat, never adds a name.
        true
    }

    /// The listing reads the names in each root directory; a root that is one chat file is
    /// its own source.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        kit::root_dirs_glance(&self.base.roots)
    }

    fn load(&self, listed: &Listed) -> Session {
        load_chat(&listed.path, &listed.id)
    }
}

/// Load one chat file.
pub fn load_chat(path: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(AGENT, id);
    b.s.source.format = "sgpt-chat-json".into();
    let records = fabric::read_chat(&SGPT, &mut b, path);
    if let Some(role) = records.first().and_then(role_name) {
        b.s.tags.push(format!("role:{role}"));
    }
    if let Some(title) = first_prompt(&records).and_then(wrapped_request) {
        b.s.title = kit::title_from_text(title);
    }
    let mut s = b.finish();
    for r in s.messages.iter_mut().filter_map(|m| m.tool_result.as_mut()) {
        r.is_error = r.tool_name == SHELL_FUNCTION && shell_failed(&r.output);
    }
    if dropped_before(&records) {
        // The role's message, when kept, is the session's first (one context message).
        let at = usize::from(role(records.first()) == Some("system")).min(s.messages.len());
        s.messages.insert(
            at,
            Message {
                role: Role::System,
                kind: MessageKind::Event,
                content: "Earlier messages were dropped by ShellGPT, which keeps the last \
                          CHAT_CACHE_LENGTH messages of a chat (100 by default)"
                    .into(),
                ..Message::default()
            },
        );
    }
    s
}

/// Whether the result of ShellGPT's own shell function (`Exit code: <n>, Output:\n…`,
/// `sgpt/llm_functions/common/execute_shell.py`) says the command failed.
fn shell_failed(output: &str) -> bool {
    output
        .strip_prefix("Exit code: ")
        .and_then(|rest| rest.split_once(','))
        .is_some_and(|(code, _)| code.trim() != "0")
}

fn role(m: Option<&Value>) -> Option<&str> {
    m.and_then(|m| kit::str_field(m, "role"))
}

/// The role a chat was started with, as ShellGPT reads it back from the first message:
/// `You are <name>` on its first line (1.0 and later), or a `Role name: <name>` second line
/// under `###` (0.9).
fn role_name(first: &Value) -> Option<String> {
    let text = kit::str_field(first, "content")?;
    let mut lines = text.lines();
    let head = lines.next()?;
    let name = if head.contains("###") {
        lines.next()?.strip_prefix("Role name: ")?
    } else if kit::str_field(first, "role") == Some("system") {
        head.split_once("You are ")?.1
    } else {
        return None;
    };
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// The text of the first prompt.
fn first_prompt(records: &[Value]) -> Option<&str> {
    records
        .iter()
        .filter(|m| kit::str_field(m, "role") == Some("user"))
        .find_map(|m| kit::str_field(m, "content").filter(|t| !t.trim().is_empty()))
}

/// The request inside a prompt 0.8 or 0.9 wrapped in its instructions (`###` first, the
/// request after `Request: ` or `Prompt: `); `None` for a prompt as the user typed it.
fn wrapped_request(prompt: &str) -> Option<&str> {
    if prompt.lines().next()?.trim() != "###" {
        return None;
    }
    let at = ["\nRequest: ", "\nPrompt: "]
        .iter()
        .find_map(|k| prompt.find(k).map(|i| i + k.len()))?;
    Some(&prompt[at..])
}

/// Whether ShellGPT's cut is evident: the first message after the role's is a reply, a
/// call's result, not a prompt.
fn dropped_before(records: &[Value]) -> bool {
    let first = records
        .iter()
        .find(|m| kit::str_field(m, "role") != Some("system"));
    matches!(role(first), Some("assistant" | "tool" | "function"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_variable_replaces_the_temporary_directory() {
        let tmp = tempfile::tempdir().expect("tmp");
        let mut env = Env::at_home(Path::new("/h"));
        env.vars
            .insert("TMPDIR".into(), tmp.path().display().to_string());
        let roots = |env: &Env| -> Vec<(PathBuf, String)> {
            candidates(env)
                .into_iter()
                .map(|r| (r.path, r.how))
                .collect()
        };
        assert_eq!(
            roots(&env),
            [
                (tmp.path().join("chat_cache"), "TMPDIR".to_string()),
                (
                    tmp.path().join("shell_gpt/chat_cache"),
                    "TMPDIR".to_string()
                ),
            ]
        );
        env.vars.insert(VAR.into(), "~/chats".into());
        assert_eq!(roots(&env), [(PathBuf::from("/h/chats"), VAR.to_string())]);
    }

    #[test]
    fn a_temp_variable_naming_no_directory_is_passed_over() {
        let tmp = tempfile::tempdir().expect("tmp");
        let mut env = Env::at_home(Path::new("/h"));
        env.vars.insert("TMPDIR".into(), "/nonexistent/sgpt".into());
        env.vars
            .insert("TMP".into(), tmp.path().display().to_string());
        assert_eq!(temp_dir(&env), (tmp.path().to_path_buf(), "TMP"));
        let bare = Env::at_home(Path::new("/h"));
        assert_eq!(temp_dir(&bare).1, TEMP_DEFAULT);
    }

    #[test]
    fn every_file_is_a_chat_and_others_files_are_not_listed_from_temp() {
        let dir = tempfile::tempdir().expect("tmp");
        for f in ["temp", ".hidden", "my.chat"] {
            std::fs::write(dir.path().join(f), "[]").expect("write");
        }
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        let names = |only| -> Vec<String> {
            chat_files(dir.path(), only)
                .iter()
                .map(|p| kit::file_name(p).to_string())
                .collect()
        };
        assert_eq!(names(None), [".hidden", "my.chat", "temp"]);
        assert_eq!(names(Some(my_uid())), [".hidden", "my.chat", "temp"]);
        assert!(names(Some(my_uid().wrapping_add(1))).is_empty());
    }

    #[test]
    fn role_names_from_each_era() {
        let now = json!({"role": "system", "content": "You are ShellGPT\nYou are programming and system administration assistant."});
        assert_eq!(role_name(&now).as_deref(), Some("ShellGPT"));
        let nine = json!({"role": "user", "content": "###\nRole name: shell\nProvide only zsh commands.\n\nRequest: list files\n###\nCommand:"});
        assert_eq!(role_name(&nine).as_deref(), Some("shell"));
        assert_eq!(
            role_name(&json!({"role": "user", "content": "You are here"})),
            None
        );
        assert_eq!(
            wrapped_request("###\nRole name: shell\nx\n\nRequest: list files\n###\nCommand:"),
            Some("list files\n###\nCommand:")
        );
        assert_eq!(
            wrapped_request("###\nProvide only code.\nPrompt: hello world\n###\nCode:"),
            Some("hello world\n###\nCode:")
        );
        assert_eq!(wrapped_request("what is ###"), None);
    }

    #[test]
    fn a_shell_result_fails_on_a_nonzero_exit_code() {
        assert!(!shell_failed("Exit code: 0, Output:\nok\n"));
        assert!(shell_failed(
            "Exit code: 127, Output:\nsh: 1: x: not found\n"
        ));
        assert!(shell_failed("Exit code: -9, Output:\n"));
        assert!(!shell_failed("exit code: 1 in the text"));
    }

    #[test]
    fn a_cut_is_evident_only_when_a_reply_follows_the_role() {
        let sys = json!({"role": "system", "content": "You are ShellGPT"});
        let user = json!({"role": "user", "content": "hi"});
        let reply = json!({"role": "assistant", "content": "hello"});
        let result = json!({"role": "tool", "content": "x", "tool_call_id": "c"});
        assert!(!dropped_before(&[sys.clone(), user.clone(), reply.clone()]));
        assert!(dropped_before(&[sys.clone(), reply.clone(), user.clone()]));
        assert!(dropped_before(&[result, reply.clone()]));
        assert!(!dropped_before(&[user, reply]));
        assert!(!dropped_before(&[sys]));
    }
}
