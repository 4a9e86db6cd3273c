//! ShellGPT chats, written here the way `sgpt --chat <id>` and `sgpt --repl <id>` write them
//! (TheR1D/shell_gpt `sgpt/handlers/chat_handler.py` `ChatSession._write`: `json.dump` of the
//! chat's messages, the first kept and the last `CHAT_CACHE_LENGTH - 1` after it, into
//! `<chat cache>/<chat id>`; `sgpt/handlers/handler.py` `handle_function_call` for a call and
//! its result; the 1.4 and 0.9 shapes from the repository's history), rendered with `sessfs
//! render` and mounted once. The test home's chat cache is `tmp/chat_cache`
//! (`CHAT_CACHE_PATH`, set for every test by the shared harness).
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, shape, shapes, transcript, Rendered};
use common::{stdout, Home, Mount, SGPT_CHAT_CACHE};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// An API key, planted in ShellGPT's `.sgptrc`.
const SECRET: &str = "sk-PLANTED-sgpt-key-doNotRead-0000";
/// Text in ShellGPT's files that are no chats: roles, functions, the completion cache, and a
/// chat in the cache `.sgptrc` names (which is never read).
const PLANTED: &str = "PLANTED sgpt text that is no chat of this cache";
/// 2026-03-01T10:30:00Z, the modification time given to chat A.
const A_SAVED: u64 = 1_772_361_000;
const A: &str = "conversation_1";
/// `CHAT_CACHE_LENGTH`'s default.
const LENGTH: usize = 100;

/// What a chat written below must show.
struct Written {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    chats: Vec<Written>,
}

/// Python's `json.dump` with its defaults: `, ` and `: ` between items, every non-ASCII
/// character as a `\uXXXX` escape (`ensure_ascii`).
struct PyJson;

impl serde_json::ser::Formatter for PyJson {
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        for c in fragment.chars() {
            if c.is_ascii() {
                w.write_all(&[c as u8])?;
            } else {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    write!(w, "\\u{u:04x}")?;
                }
            }
        }
        Ok(())
    }
}

fn dump(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PyJson);
    serde::Serialize::serialize(v, &mut ser).expect("json");
    out
}

/// A chat as `ChatSession` keeps it in memory: every message, cut only when written.
struct Chat {
    messages: Vec<Value>,
}

impl Chat {
    /// A chat started with a role (`ROLE_TEMPLATE`: `You are <name>\n<description>`).
    fn with_role(name: &str, description: &str) -> Chat {
        Chat {
            messages: vec![
                json!({"role": "system", "content": format!("You are {name}\n{description}")}),
            ],
        }
    }

    /// One call without a function: the prompt, then the streamed reply.
    fn ask(&mut self, prompt: &str, reply: &str) -> &mut Chat {
        self.messages
            .push(json!({"role": "user", "content": prompt}));
        self.messages
            .push(json!({"role": "assistant", "content": reply}));
        self
    }

    /// One call in which the model called a function (1.5): the call, its result, and the
    /// reply, whose text starts with what ShellGPT printed for the call.
    fn ask_with_call(
        &mut self,
        prompt: &str,
        id: &str,
        name: &str,
        args: &[(&str, &str)],
        result: &str,
        answer: &str,
    ) -> &mut Chat {
        let arguments = Value::Object(
            args.iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect(),
        )
        .to_string();
        self.messages
            .push(json!({"role": "user", "content": prompt}));
        self.messages
            .push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
            ]}));
        self.messages
            .push(json!({"role": "tool", "content": result, "tool_call_id": id}));
        self.messages.push(
            json!({"role": "assistant", "content": format!("{}{answer}", printed(name, args))}),
        );
        self
    }

    /// What `ChatSession._write` saves with `CHAT_CACHE_LENGTH` `length`: the first message
    /// and the last `length - 1`.
    fn saved(&self, length: usize) -> Value {
        let m = &self.messages;
        let from = 1 + m.len().saturating_sub(length);
        let mut kept = vec![m[0].clone()];
        kept.extend(m[from.min(m.len())..].iter().cloned());
        Value::Array(kept)
    }
}

/// The text `handle_function_call` yields for a call, kept at the start of the reply.
fn printed(name: &str, args: &[(&str, &str)]) -> String {
    let joined: Vec<String> = args.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("\n> @FunctionCall `{name}({})` \n\n", joined.join(", "))
}

fn chat_path(home: &Path, id: &str) -> std::path::PathBuf {
    home.join(SGPT_CHAT_CACHE).join(id)
}

fn put_chat(home: &Path, id: &str, v: &Value) -> std::path::PathBuf {
    put(home, &format!("{SGPT_CHAT_CACHE}/{id}"), dump(v))
}

const SHELLGPT_ROLE: &str = "You are programming and system administration assistant.\n\
You are managing Linux/Ubuntu 24.04 operating system with zsh shell.\n\
APPLY MARKDOWN formatting when possible.";

/// What ShellGPT's shell function returned in chat A (`Exit code: <n>, Output:\n…`).
const ALPHA_OUTPUT: &str = "Exit code: 0, Output:\nalpha-output: README.md src\n";

/// Chat A: a 1.5 chat with a function call, and a follow-up with non-ASCII text.
fn alpha() -> Chat {
    let mut c = Chat::with_role("ShellGPT", SHELLGPT_ROLE);
    c.ask_with_call(
        "Alpha prompt: what is in the current folder?",
        "call_alpha1",
        "execute_shell_command",
        &[("shell_command", "ls -a")],
        ALPHA_OUTPUT,
        "Alpha reply: a README and a src folder.",
    )
    .ask(
        "Alpha follow-up: and in the café folder?",
        "Alpha reply two: nothing in the café folder.",
    );
    c
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut chats = Vec::new();

    let pa = put_chat(&h, A, &alpha().saved(LENGTH));
    let f = std::fs::File::options()
        .write(true)
        .open(&pa)
        .expect("open");
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(A_SAVED))
        .expect("mtime");
    chats.push(Written {
        dir: format!("sgpt/{A}"),
        lines: vec![
            "Alpha prompt: what is in the current folder?",
            "Alpha reply: a README and a src folder.",
            "Alpha follow-up: and in the café folder?",
            "Alpha reply two: nothing in the café folder.",
        ],
        outputs: vec!["alpha-output: README.md src"],
    });

    // --- B: a 1.4 chat: the legacy `function_call` and its `function` result, a command
    // that failed.
    let b = json!([
        {"role": "system", "content": format!("You are ShellGPT\n{SHELLGPT_ROLE}")},
        {"role": "user", "content": "Bravo prompt: how much disk is free?"},
        {"role": "assistant", "content": "",
         "function_call": {"name": "execute_shell_command", "arguments": "{\"shell_command\":\"df -h\"}"}},
        {"role": "function", "content": "Exit code: 127, Output:\nbravo-output: sh: 1: df: not found\n",
         "name": "execute_shell_command"},
        {"role": "assistant", "content": format!("{}Bravo reply: df is not installed.",
            printed("execute_shell_command", &[("shell_command", "df -h")]))}
    ]);
    put_chat(&h, "bravo-legacy", &b);
    chats.push(Written {
        dir: "sgpt/bravo-legacy".into(),
        lines: vec![
            "Bravo prompt: how much disk is free?",
            "Bravo reply: df is not installed.",
        ],
        outputs: vec!["bravo-output: sh: 1: df: not found"],
    });

    // --- C: a 0.9 chat: the role inside the first prompt, the expected kind after each.
    let c = json!([
        {"role": "user", "content": "###\nRole name: shell\nProvide only zsh commands for Linux without any description.\n\nRequest: Charlie request: find files over 100 MB\n###\nCommand:"},
        {"role": "assistant", "content": "find . -size +100M # charlie command"},
        {"role": "user", "content": "Charlie second request: only in /var\nCommand:"},
        {"role": "assistant", "content": "find /var -size +100M # charlie command two"}
    ]);
    put_chat(&h, "charlie-0.9", &c);
    chats.push(Written {
        dir: "sgpt/charlie-0.9".into(),
        lines: vec![
            "Charlie request: find files over 100 MB",
            "find . -size +100M # charlie command",
            "Charlie second request: only in /var",
            "find /var -size +100M # charlie command two",
        ],
        outputs: vec![],
    });

    // --- D: `sgpt --repl temp --code` with a file piped in: the piped text and the first
    // typed prompt joined by two empty lines.
    let mut d = Chat::with_role(
        "Code Generator",
        "Provide only code as output without any description.",
    );
    d.ask(
        "Delta piped line one: def add(a, b):\nDelta piped line two:     return a + b\n\n\nDelta typed prompt: add type hints",
        "def add(a: int, b: int) -> int: # delta reply",
    );
    put_chat(&h, "temp", &d.saved(LENGTH));
    chats.push(Written {
        dir: "sgpt/temp".into(),
        lines: vec![
            "Delta piped line one: def add(a, b):",
            "Delta typed prompt: add type hints",
            "def add(a: int, b: int) -> int: # delta reply",
        ],
        outputs: vec![],
    });

    // --- E: five calls kept with CHAT_CACHE_LENGTH=6: the role and the last five messages.
    let mut e = Chat::with_role("ShellGPT", SHELLGPT_ROLE);
    for n in 1..=5 {
        e.ask(
            &format!("Echo prompt {n}: count on"),
            &format!("Echo reply {n}: {n}"),
        );
    }
    put_chat(&h, "echo-long", &e.saved(6));
    chats.push(Written {
        dir: "sgpt/echo-long".into(),
        lines: vec![
            "Echo reply 3: 3",
            "Echo prompt 4: count on",
            "Echo reply 5: 5",
        ],
        outputs: vec![],
    });

    // --- F: cut in the middle of its fourth message (the file is truncated, then written).
    let mut fx = Chat::with_role("ShellGPT", SHELLGPT_ROLE);
    fx.ask(
        "Foxtrot prompt: before the cut",
        "Foxtrot reply: also before the cut",
    )
    .ask("Foxtrot torn prompt that never ends", "never written");
    let text = String::from_utf8(dump(&fx.saved(LENGTH))).expect("utf-8");
    let cut = text.find("Foxtrot torn prompt").expect("torn") + "Foxtrot torn".len();
    put(&h, &format!("{SGPT_CHAT_CACHE}/foxtrot"), &text[..cut]);
    chats.push(Written {
        dir: "sgpt/foxtrot".into(),
        lines: vec![
            "Foxtrot prompt: before the cut",
            "Foxtrot reply: also before the cut",
        ],
        outputs: vec![],
    });

    // --- G: not JSON at all.
    put(
        &h,
        &format!("{SGPT_CHAT_CACHE}/golf"),
        "Golf garbage, no JSON here\n",
    );
    chats.push(Written {
        dir: "sgpt/golf".into(),
        lines: vec!["Golf garbage, no JSON here"],
        outputs: vec![],
    });

    // --- H: what no version writes: an element that is no object, an unknown role and field.
    let hotel = json!([
        {"role": "system", "content": "You are ShellGPT\nHotel role"},
        {"role": "user", "content": "Hotel prompt"},
        "Hotel stray element",
        {"role": "critic", "content": "Hotel unknown role"},
        {"role": "assistant", "content": "Hotel reply", "format": "markdown"}
    ]);
    put_chat(&h, "hotel", &hotel);
    chats.push(Written {
        dir: "sgpt/hotel".into(),
        lines: vec![
            "Hotel prompt",
            "Hotel stray element",
            "Hotel unknown role",
            "Hotel reply",
        ],
        outputs: vec![],
    });

    // Beside the chats: the configuration with the API key and a moved chat cache, roles,
    // functions, the completion cache, and a chat in the cache `.sgptrc` names.
    let moved = h.join("moved-chats");
    put(
        &h,
        ".config/shell_gpt/.sgptrc",
        format!(
            "OPENAI_API_KEY={SECRET}\nCHAT_CACHE_PATH={}\nCACHE_PATH={}\n",
            moved.display(),
            h.join("tmp/cache").display()
        ),
    );
    put(
        &h,
        "moved-chats/from-sgptrc",
        dump(&json!([{"role": "user", "content": PLANTED}])),
    );
    put(
        &h,
        ".config/shell_gpt/roles/ShellGPT.json",
        dump(&json!({"name": "ShellGPT", "role": PLANTED})),
    );
    put(
        &h,
        ".config/shell_gpt/functions/execute_shell_command.py",
        format!("# {PLANTED}\n"),
    );
    put(&h, "tmp/cache/0b5f1a2c3d4e5f60718293a4b5c6d7e8", PLANTED);
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, chats }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-sgpt", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.chats {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_chat() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "sgpt"), 8);
}

#[test]
fn the_file_is_written_as_python_writes_it() {
    // The writer's own check: what the tests read is json.dump's text, escapes included.
    let v = json!([{"role": "user", "content": "café ☕ 🦀"}]);
    assert_eq!(
        String::from_utf8(dump(&v)).expect("ascii"),
        r#"[{"role": "user", "content": "caf\u00e9 \u2615 \ud83e\udd80"}]"#
    );
}

#[test]
fn titles_roles_and_the_mtime_as_the_only_time() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("sgpt/{A}"));
    // The first prompt names the chat; the role is a tag.
    assert_eq!(a["title"], "Alpha prompt: what is in the current folder?");
    assert_eq!(a["tags"], json!(["role:ShellGPT"]));
    // ShellGPT saves no time: the file's modification time is the update time.
    assert_eq!(a["updatedAt"], "2026-03-01T10:30:00.000Z");
    assert_eq!(a["createdAt"], Value::Null);
    // Nor a cwd, a model or usage.
    assert_eq!(a["cwd"], Value::Null);
    assert_eq!(a["model"], Value::Null);
    assert_eq!(stores::tokens(&a["cost"]).0, Some(0));
    assert_eq!(a["turnCount"], 2);
    assert_eq!(a["warnings"], json!([]), "{}", a["warnings"]);
    // 0.9: the request inside the wrapped first prompt, the role from its second line.
    let c = meta(&out.tree, "sgpt/charlie-0.9");
    assert_eq!(c["title"], "Charlie request: find files over 100 MB");
    assert_eq!(c["tags"], json!(["role:shell"]));
    // REPL with piped text: the piped text comes first.
    let d = meta(&out.tree, "sgpt/temp");
    assert_eq!(d["title"], "Delta piped line one: def add(a, b):");
    assert_eq!(d["tags"], json!(["role:Code Generator"]));
    assert_eq!(d["unifiedId"], "sgpt:temp");
}

#[test]
fn every_message_kind_lands_in_messages_jsonl() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("sgpt/{A}"));
    let reply = format!(
        "{}Alpha reply: a README and a src folder.",
        printed("execute_shell_command", &[("shell_command", "ls -a")])
    );
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "context",
                &format!("You are ShellGPT\n{SHELLGPT_ROLE}")
            ),
            shape("user", "", "Alpha prompt: what is in the current folder?"),
            shape("assistant", "", ""),
            shape("tool", "", ""),
            shape("assistant", "", &reply),
            shape("user", "", "Alpha follow-up: and in the café folder?"),
            shape(
                "assistant",
                "",
                "Alpha reply two: nothing in the café folder."
            ),
        ]
    );
    assert_eq!(m[0]["label"], "system prompt");
    assert_eq!(
        m[2]["toolCalls"][0],
        json!({"toolCallId": "call_alpha1", "toolName": "execute_shell_command",
               "input": {"shell_command": "ls -a"}})
    );
    let r = &m[3]["toolResult"];
    assert_eq!(
        (
            &r["toolCallId"],
            &r["toolName"],
            &r["output"],
            &r["isError"]
        ),
        (
            &json!("call_alpha1"),
            &json!("execute_shell_command"),
            &json!(ALPHA_OUTPUT),
            &json!(false)
        )
    );
    let t = transcript(&out.tree, &format!("sgpt/{A}"));
    assert!(t.contains("### System · context"), "{t}");
    assert!(t.contains("execute_shell_command"), "{t}");

    // 1.4: the legacy call and the result after it, paired.
    let b = messages(&out.tree, "sgpt/bravo-legacy");
    let call = &b[2]["toolCalls"][0];
    assert_eq!(call["toolName"], "execute_shell_command");
    assert_eq!(call["input"], json!({"shell_command": "df -h"}));
    let r = &b[3]["toolResult"];
    assert_eq!(r["toolCallId"], call["toolCallId"]);
    // ShellGPT's shell function said the command failed.
    assert_eq!(r["isError"], true);
    let tool = std::fs::read_to_string(
        out.tree
            .join("sgpt/bravo-legacy/tools/0001-execute_shell_command.md"),
    )
    .expect("tool file");
    assert!(
        tool.contains("bravo-output: sh: 1: df: not found"),
        "{tool}"
    );
    assert!(tool.contains("| Status | error |"), "{tool}");

    // 0.9: no system message, the prompts as they were sent.
    let c = messages(&out.tree, "sgpt/charlie-0.9");
    assert_eq!(
        shapes(&c).iter().map(|s| s.0.as_str()).collect::<Vec<_>>(),
        ["user", "assistant", "user", "assistant"]
    );
}

#[test]
fn a_cut_chat_shows_where_messages_were_dropped() {
    let fx = write();
    let out = render(&fx);
    let e = messages(&out.tree, "sgpt/echo-long");
    let roles: Vec<(String, String)> = shapes(&e).into_iter().map(|s| (s.0, s.1)).collect();
    assert_eq!(
        roles,
        [
            ("system".to_string(), "context".to_string()),
            ("system".to_string(), "event".to_string()),
            ("assistant".to_string(), String::new()),
            ("user".to_string(), String::new()),
            ("assistant".to_string(), String::new()),
            ("user".to_string(), String::new()),
            ("assistant".to_string(), String::new()),
        ]
    );
    assert!(
        e[1]["content"]
            .as_str()
            .is_some_and(|c| c.contains("CHAT_CACHE_LENGTH")),
        "{}",
        e[1]
    );
    assert_eq!(e[2]["content"], "Echo reply 3: 3");
    let m = meta(&out.tree, "sgpt/echo-long");
    assert_eq!(m["title"], "Echo prompt 4: count on");
    for gone in ["Echo prompt 1", "Echo reply 2", "Echo prompt 3"] {
        stores::assert_nowhere(&out.tree, gone);
    }
    // A chat that was never cut has no such event.
    let a = messages(&out.tree, &format!("sgpt/{A}"));
    assert!(a.iter().all(|x| x["kind"] != "event"), "{a:?}");
}

#[test]
fn odd_elements_a_cut_file_and_garbage_cost_warnings_not_chats() {
    let fx = write();
    let out = render(&fx);
    let h = meta(&out.tree, "sgpt/hotel");
    let w = h["warnings"].to_string();
    assert!(w.contains("not an object"), "{w}");
    assert!(w.contains("unknown role critic"), "{w}");
    assert!(w.contains("does not read: format"), "{w}");
    let f = meta(&out.tree, "sgpt/foxtrot");
    let w = f["warnings"].to_string();
    assert!(w.contains("foxtrot: cut after 3 messages"), "{w}");
    let fm = messages(&out.tree, "sgpt/foxtrot");
    assert_eq!(fm[1]["content"], "Foxtrot prompt: before the cut");
    assert_eq!(fm[2]["content"], "Foxtrot reply: also before the cut");
    let g = meta(&out.tree, "sgpt/golf");
    assert!(
        g["warnings"].to_string().contains("not a JSON array"),
        "{}",
        g["warnings"]
    );
    // The others still load clean.
    let a = meta(&out.tree, &format!("sgpt/{A}"));
    assert_eq!(a["warnings"], json!([]), "{}", a["warnings"]);
}

#[test]
fn the_key_roles_functions_and_the_completion_cache_are_never_read() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_nowhere(&out.tree, PLANTED);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
    stores::assert_list_hides(&fx.home, PLANTED, &[]);
}

/// Without `CHAT_CACHE_PATH`, the chat caches in the temporary directory: `chat_cache/` and
/// the older `shell_gpt/chat_cache/`, never the completion cache beside them.
#[test]
fn the_temporary_directory_holds_both_chat_caches() {
    let fx = write();
    let h = fx.home.path();
    put(
        h,
        "tmp/shell_gpt/chat_cache/india-0.8",
        dump(&json!([
            {"role": "user", "content": "###\nProvide only code as output without any description.\nPrompt: India prompt: hello world in C\n###\nCode:"},
            {"role": "assistant", "content": "India reply: puts(\"hello\");"}
        ])),
    );
    put(h, "tmp/shell_gpt/cache/5f1e", PLANTED);
    let tmp = h.join("tmp");
    let dir = tempfile::tempdir().expect("tmp");
    let tree = dir.path().join("tree");
    let o = fx
        .home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env_remove("CHAT_CACHE_PATH")
        .env("TMPDIR", &tmp)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(stores::entries(&tree, "sgpt"), 9);
    check_tree(&tree, &fx);
    stores::assert_session_holds(
        &tree,
        "sgpt/india-0.8",
        &["India reply: puts(\"hello\");"],
        &[] as &[&str],
    );
    assert_eq!(
        meta(&tree, "sgpt/india-0.8")["title"],
        "India prompt: hello world in C"
    );
    stores::assert_nowhere(&tree, PLANTED);
    let doctor = fx
        .home
        .command(&["doctor"])
        .env_remove("CHAT_CACHE_PATH")
        .env("TMPDIR", &tmp)
        .output()
        .expect("doctor");
    let text = stdout(&doctor);
    assert!(text.contains("tmp/shell_gpt/chat_cache"), "{text}");
    assert!(text.contains("TMPDIR"), "{text}");
}

/// Another call appends to the chat and ShellGPT rewrites the file: the transcript only grows.
#[test]
fn another_call_only_appends_to_the_transcript() {
    let fx = write();
    let before = render(&fx);
    let t0 = transcript(&before.tree, &format!("sgpt/{A}"));
    let mut more = alpha();
    more.ask(
        "Alpha prompt four: and hidden files?",
        "Alpha reply four: only .git.",
    );
    put_chat(fx.home.path(), A, &more.saved(LENGTH));
    let after = render(&fx);
    let t1 = transcript(&after.tree, &format!("sgpt/{A}"));
    assert!(t1.contains("Alpha reply four: only .git."), "{t1}");
    let first = t0.find("### ").expect("a message");
    assert!(t1[first..].starts_with(&t0[first..]), "{t1}");
}

#[test]
fn doctor_names_sgpt_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(text.contains("sgpt"), "{text}");
    assert!(text.contains("8 sessions"), "{text}");
    assert!(text.contains(SGPT_CHAT_CACHE), "{text}");
    assert!(text.contains("CHAT_CACHE_PATH"), "{text}");
}

#[test]
fn mounted_chats_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m: &Mount| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["sgpt"], 8, SECRET, &format!("sgpt/{A}"));
    });
}

/// ShellGPT rewrites a chat's file whole at each call: the new prompt shows within a second
/// on a mount.
#[test]
fn a_rewritten_chat_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("sgpt/{A}/transcript.md"));
    assert!(t.exists(), "{}", t.display());
    let mut more = alpha();
    more.ask(
        "Alpha fresh prompt after the mount",
        "Alpha fresh reply after the mount",
    );
    std::fs::write(chat_path(fx.home.path(), A), dump(&more.saved(LENGTH))).expect("write");
    stores::assert_within_a_second("rewritten chat", || {
        stores::file_contains(&t, "Alpha fresh prompt after the mount")
    });
}

/// The bundled sample (`fixtures/home/tmp/chat_cache/`, the samples' temporary directory):
/// a chat with a function call and a follow-up, each line in the one chat, no warning. The
/// lines are the sample's own text. An empty machine shows it among the samples.
#[test]
fn bundled_sample_shows_the_chat() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let lines = [
        "You are ShellGPT",
        "which containers are using the most memory?",
        "docker stats --no-stream --format",
        "web-1 412MiB",
        "The `web-1` container uses the most memory",
        "stop the worker",
        "docker stop worker-1",
    ];
    let home = Home::empty();
    let check = |tree: &Path| {
        let dir = "sgpt/docker-memory";
        stores::assert_session_holds(tree, dir, &lines, &[] as &[&str]);
        let m = meta(tree, dir);
        assert_eq!(m["title"], "which containers are using the most memory?");
        assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
        assert_eq!(stores::entries(tree, "sgpt"), 1);
    };
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-sgpt-samples")
        .tempdir()
        .expect("tmp");
    // HOME at the samples, the chat cache at theirs.
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .env("CHAT_CACHE_PATH", samples.join("tmp/chat_cache"))
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    check(&tree);
    // Nothing on the machine: the samples are shown, ShellGPT's from their temp directory.
    let fallback = tmp.path().join("fallback");
    let o = home.sessfs(&["render", fallback.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("bundled samples"),
        "{}",
        common::stderr(&o)
    );
    check(&fallback);
}
