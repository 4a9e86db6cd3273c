//! ellama sessions, written here the way ellama leaves them (s-kostyaev/ellama `ellama.el`:
//! `ellama-chat` and `ellama-chat-done` write the chat buffer, `<id>.org` or `<id>.md` in
//! `~/.emacs.d/ellama-sessions/`, under `** User:`/`** Ellama:` headings; `ellama--save-session`
//! writes `prin1` of the `ellama-session` record to `.<id>.<ext>.session.el`), rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, shape, shapes, transcript, warnings, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// An API key: in a provider struct as `llm` printed it before May 2026, in the Emacs init
/// files and in the auth-source file.
const SECRET: &str = "sk-PLANTED-ellama-key-doNotRead-0000";
/// Text of an Emacs backup file beside a chat: no session.
const BACKUP: &str = "Alpha stale backup text, not a session";
const DIR: &str = ".emacs.d/ellama-sessions";
const XDG_DIR: &str = ".config/emacs/ellama-sessions";
/// 2026-03-01T10:30:00Z, the modification time given to session A's chat.
const A_SAVED: u64 = 1_772_361_000;

const A: &str = "ellama Alpha why is the build slow (qwen3_8b)";
const B: &str = "ellama Bravo explain monads (gpt-4-turbo)";
const C: &str = "ellama Charlie hello (zephyr)";
const D: &str = "Delta renamed by hand";
const E: &str = "ellama Echo custom nicks (llama3)";
const F: &str = "ellama Foxtrot torn (mistral)";
const G: &str = "ellama Golf garbage (llama3)";
const H: &str = "ellama Hotel orphan (llama3)";
const I: &str = "India renamed";
const J: &str = "ellama Juliet xdg (llama3)";

/// What a session written below must show.
struct Written {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Written>,
}

/// A string as `prin1` prints it: `"` and `\` escaped, everything else (newlines too) as is.
fn lisp(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn interaction(role: &str, content: &str, results: &str) -> String {
    format!("#s(llm-chat-prompt-interaction {role} {content} {results} nil)")
}

fn tool_use(id: &str, name: &str, args: &str) -> String {
    format!(
        "#s(llm-provider-utils-tool-use {} {} {args})",
        lisp(id),
        lisp(name)
    )
}

fn tool_result(id: &str, name: &str, result: &str) -> String {
    format!(
        "#s(llm-chat-prompt-tool-result {} {} {})",
        lisp(id),
        lisp(name),
        lisp(result)
    )
}

/// An `llm-chat-prompt` (context examples interactions tools temperature max-tokens
/// response-format reasoning non-standard-params tool-options).
fn prompt(system: Option<&str>, interactions: &[String]) -> String {
    format!(
        "#s(llm-chat-prompt {} nil ({}) nil nil nil nil nil nil nil)",
        system.map(lisp).unwrap_or_else(|| "nil".into()),
        interactions.join(" ")
    )
}

/// `llm-ollama` as llm prints it since May 2024: three `default-chat-*` slots, scheme,
/// host, port, chat-model, embedding-model.
fn ollama(model: &str) -> String {
    format!(
        "#s(llm-ollama nil nil nil \"http\" \"localhost\" 11434 {} nil)",
        lisp(model)
    )
}

/// The `ellama-session` record `ellama--save-session` prints.
fn session(id: &str, provider: &str, ext: &str, prompt: &str, extra: &str) -> String {
    let file = format!("/home/demo/{DIR}/{id}.{ext}");
    format!(
        "#s(ellama-session {} {provider} {} {prompt} nil {extra})",
        lisp(id),
        lisp(&file)
    )
}

fn chat_path(id: &str, ext: &str) -> String {
    format!("{DIR}/{id}.{ext}")
}

fn session_path(id: &str, ext: &str) -> String {
    format!("{DIR}/.{id}.{ext}.session.el")
}

fn set_mtime(p: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(p).expect("open");
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .expect("mtime");
}

/// Session A's chat: what `ellama-chat` inserts (the `Context:` paragraph of
/// `ellama-context-format`, the prompt, the reply through the Org filter: reasoning and
/// tool results as quote blocks, a code block as a source block) and `ellama-chat-done`'s
/// next `** User:` heading, `turns` times.
fn alpha_chat(turns: usize) -> String {
    let mut t = String::from(
        "** User:\nContext:\n[[file:/home/demo/alpha/Cargo.toml][/home/demo/alpha/Cargo.toml]]\n\n\
         Alpha prompt: why is the build slow?\n\n** Ellama:\n\
         #+BEGIN_QUOTE\nAlpha thinking: look at the manifest first.\n#+END_QUOTE\n\n\
         #+BEGIN_QUOTE\nread_file\n  [profile.dev]\n  \n  alpha-output: debug = 2\n\n\
         shell_command\n  alpha-output: 41 crates compiled\n#+END_QUOTE\n\
         Alpha reply: full debug info is on; try line tables only.\n\n\
         #+BEGIN_SRC toml\n#+BEGIN_QUOTE\nAlpha quoted in code\n#+END_QUOTE\n#+END_SRC\n\n** User:\n",
    );
    t.push_str("Alpha follow-up: and release builds?\n\n** Ellama:\nAlpha reply two: they strip it already.\n\n** User:\n");
    for n in 2..turns {
        t.push_str(&format!(
            "Alpha prompt {n}: more\n\n** Ellama:\nAlpha reply {n}: done\n\n** User:\n"
        ));
    }
    t
}

fn alpha_session() -> String {
    let interactions = [
        interaction(
            "user",
            &lisp("Context:\nfile /home/demo/alpha/Cargo.toml\n\nAlpha prompt: why is the build slow?"),
            "nil",
        ),
        interaction(
            "assistant",
            &format!(
                "({} {})",
                tool_use("call_read", "read_file", "((file_name . \"/home/demo/alpha/Cargo.toml\"))"),
                tool_use("call_sh", "shell_command", "((cmd . \"cargo build --timings\") (dry . :false))")
            ),
            "nil",
        ),
        interaction(
            "tool-results",
            "nil",
            &format!(
                "({} {})",
                tool_result("call_sh", "shell_command", "alpha-output: 41 crates compiled"),
                tool_result("call_read", "read_file", "[profile.dev]\n\nalpha-output: debug = 2")
            ),
        ),
        interaction("assistant", &lisp("Alpha reply: full debug info is on"), "nil"),
        interaction("user", &lisp("Alpha follow-up: and release builds?"), "nil"),
        interaction("assistant", &lisp("Alpha reply two: they strip it already."), "nil"),
    ];
    session(
        A,
        &ollama("qwen3:8b"),
        "org",
        &prompt(Some("Alpha system: you are a build expert."), &interactions),
        // Saved mid-request: the request context holds a buffer and a process, which print
        // unreadably.
        "(:dir \"~/alpha/\" :uid \"u-alpha\" :tool-names (\"read_file\" \"shell_command\" \"grep\") \
         :provider-symbol ellama-provider :token-count 812 \
         :current-request-context (:buffers (#<buffer ellama Alpha<2>>) :request #<process ollama>))",
    )
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    // --- A: the default Org chat with context, reasoning, two tool results, a code block
    // and a second turn; its session file with the system prompt, the tool calls and ids.
    let pa = put(&h, &chat_path(A, "org"), alpha_chat(2));
    set_mtime(&pa, A_SAVED);
    let ps = put(&h, &session_path(A, "org"), alpha_session());
    set_mtime(&ps, A_SAVED - 5);
    put(
        &h,
        &format!("{DIR}/{A}.org~"),
        format!("** User:\n{BACKUP}\n"),
    );
    sessions.push(Written {
        dir: format!("ellama/{A}"),
        lines: vec![
            "Alpha system: you are a build expert.",
            "Alpha prompt: why is the build slow?",
            "Alpha thinking: look at the manifest first.",
            "Alpha reply: full debug info is on; try line tables only.",
            "Alpha quoted in code",
            "Alpha follow-up: and release builds?",
            "Alpha reply two: they strip it already.",
        ],
        outputs: vec![
            "alpha-output: debug = 2",
            "alpha-output: 41 crates compiled",
        ],
    });

    // --- B: a Markdown chat (`ellama-major-mode` markdown-mode) with `<think>` reasoning,
    // a compaction notice and summary, a translation file; the provider printed by llm
    // before May 2024, its key in clear.
    let bc = "## User:\nBravo prompt: explain monads briefly\n\n## Ellama:\n<think>\nBravo thinking: keep it short.\n</think>\n\
              Bravo reply: a monad chains computations.\n\n\
              [Ellama compacted conversation context: summarized 1 earlier turns, kept 0 recent\n\
              turns, estimated context 812 -> 95 tokens.]\n\n\
              ## User:\nBravo follow-up: an example?\n\n## Ellama:\nBravo reply two: Maybe in Haskell.\n\n## User:\n";
    put(&h, &chat_path(B, "md"), bc);
    let summary = "Bravo summary: the user is learning monads.";
    let b_prompt = prompt(
        None,
        &[
            interaction(
                "assistant",
                &lisp(&format!("Previous conversation summary:\n\n{summary}")),
                "nil",
            ),
            interaction("user", &lisp("Bravo follow-up: an example?"), "nil"),
            interaction(
                "assistant",
                &lisp("Bravo reply two: Maybe in Haskell."),
                "nil",
            ),
        ],
    );
    put(
        &h,
        &session_path(B, "md"),
        session(
            B,
            &format!(
                "#s(llm-openai {} \"gpt-4-turbo\" \"text-embedding-3-small\")",
                lisp(SECRET)
            ),
            "md",
            &b_prompt,
            &format!(
                "(:dir \"/home/demo/bravo/\" :auto-compact-summary {} :auto-compact-count 1 \
                 :auto-compact-last-time (26000 1000 0 0))",
                lisp(summary)
            ),
        ),
    );
    put(
        &h,
        &format!("{DIR}/{B}.translation.md"),
        "## User:\nBravo Übersetzung: erkläre Monaden\n\n## Ellama:\nBravo Antwort: eine Monade verkettet.\n",
    );
    sessions.push(Written {
        dir: format!("ellama/{B}"),
        lines: vec![
            "Bravo prompt: explain monads briefly",
            "Bravo thinking: keep it short.",
            "Bravo reply: a monad chains computations.",
            "Bravo follow-up: an example?",
            "Bravo reply two: Maybe in Haskell.",
            "Bravo summary: the user is learning monads.",
            "Bravo Übersetzung: erkläre Monaden",
        ],
        outputs: vec![],
    });

    // --- C: January 2024: `##` headings in a Markdown chat, the record in a `setq`, no
    // extra slot, the interactions and the prompt with fewer slots, llm's older layout.
    put(
        &h,
        &chat_path(C, "md"),
        "## User:\nCharlie prompt: hello\n\n## Ellama:\nCharlie reply: hi there\n\n## User:\n",
    );
    put(
        &h,
        &session_path(C, "md"),
        format!(
            "(setq ellama--current-session #s(ellama-session {} #s(llm-ollama \"http\" \"localhost\" 11434 \"zephyr\" \"zephyr\") {} \
             #s(llm-chat-prompt nil nil (#s(llm-chat-prompt-interaction user \"Charlie prompt: hello\" nil) \
             #s(llm-chat-prompt-interaction assistant \"Charlie reply: hi there\" nil)) nil nil) nil))",
            lisp(C),
            lisp(&format!("/home/demo/{DIR}/{C}.md"))
        ),
    );
    sessions.push(Written {
        dir: format!("ellama/{C}"),
        lines: vec!["Charlie prompt: hello", "Charlie reply: hi there"],
        outputs: vec![],
    });

    // --- D: a chat renamed by hand: no session file beside it.
    put(
        &h,
        &chat_path(D, "org"),
        "** User:\nDelta prompt: still here?\n\n** Ellama:\nDelta reply: still here.\n\n** User:\n",
    );
    sessions.push(Written {
        dir: format!("ellama/{D}"),
        lines: vec!["Delta prompt: still here?", "Delta reply: still here."],
        outputs: vec![],
    });

    // --- E: custom nicks (`ellama-user-nick` "Me", `ellama-assistant-nick` "Bot").
    put(
        &h,
        &chat_path(E, "org"),
        "** Me:\nEcho prompt under my own nick\n\n** Bot:\nEcho reply under a custom nick\n\n** Me:\n",
    );
    put(
        &h,
        &session_path(E, "org"),
        session(
            E,
            &ollama("llama3"),
            "org",
            &prompt(None, &[]),
            "(:dir \"~/\")",
        ),
    );
    sessions.push(Written {
        dir: format!("ellama/{E}"),
        lines: vec![
            "Echo prompt under my own nick",
            "Echo reply under a custom nick",
        ],
        outputs: vec![],
    });

    // --- F: the session file cut mid-write (`with-temp-file` writes in place).
    put(
        &h,
        &chat_path(F, "org"),
        "** User:\nFoxtrot prompt: before the cut\n\n** Ellama:\nFoxtrot reply: whole in the chat\n\n** User:\n",
    );
    let whole = session(
        F,
        &ollama("mistral"),
        "org",
        &prompt(
            Some("Foxtrot system prompt"),
            &[interaction(
                "user",
                &lisp("Foxtrot prompt: before the cut"),
                "nil",
            )],
        ),
        "nil",
    );
    let cut = whole.find("Foxtrot prompt: before").expect("prompt") + "Foxtrot pro".len();
    put(&h, &session_path(F, "org"), &whole[..cut]);
    sessions.push(Written {
        dir: format!("ellama/{F}"),
        lines: vec![
            "Foxtrot system prompt",
            "Foxtrot prompt: before the cut",
            "Foxtrot reply: whole in the chat",
        ],
        outputs: vec![],
    });

    // --- G: a session file of garbage bytes.
    put(
        &h,
        &chat_path(G, "org"),
        "** User:\nGolf prompt: fine chat\n\n** Ellama:\nGolf reply: bad session file\n\n** User:\n",
    );
    put(
        &h,
        &session_path(G, "org"),
        b"\x00\xff\xfe Golf garbage ))) #?".as_slice(),
    );
    sessions.push(Written {
        dir: format!("ellama/{G}"),
        lines: vec!["Golf prompt: fine chat", "Golf reply: bad session file"],
        outputs: vec![],
    });

    // --- H: a session file whose chat was deleted: shown from the prompt.
    put(
        &h,
        &session_path(H, "org"),
        session(
            H,
            &ollama("llama3"),
            "org",
            &prompt(
                None,
                &[
                    interaction("user", &lisp("Hotel prompt: list the files"), "nil"),
                    interaction(
                        "assistant",
                        &format!(
                            "({})",
                            tool_use("call_ls", "shell_command", "((cmd . \"ls\"))")
                        ),
                        "nil",
                    ),
                    interaction(
                        "tool-results",
                        "nil",
                        &format!(
                            "({})",
                            tool_result("call_ls", "shell_command", "hotel-output: README.md")
                        ),
                    ),
                    interaction("assistant", &lisp("Hotel reply: one file."), "nil"),
                ],
            ),
            "(:dir \"/home/demo/hotel/\")",
        ),
    );
    sessions.push(Written {
        dir: format!("ellama/{H}"),
        lines: vec!["Hotel prompt: list the files", "Hotel reply: one file."],
        outputs: vec!["hotel-output: README.md"],
    });

    // --- I: renamed with `ellama-session-rename`: the files renamed, the record still
    // naming the session by its old id.
    put(
        &h,
        &chat_path(I, "org"),
        "** User:\nIndia prompt: renamed\n\n** Ellama:\nIndia reply: ok\n\n** User:\n",
    );
    put(
        &h,
        &session_path(I, "org"),
        session(
            "ellama India old name (llama3)",
            &ollama("llama3"),
            "org",
            &prompt(None, &[]),
            "nil",
        ),
    );
    sessions.push(Written {
        dir: format!("ellama/{I}"),
        lines: vec!["India prompt: renamed", "India reply: ok"],
        outputs: vec![],
    });

    // --- J: the XDG user directory, `~/.config/emacs`, read too.
    put(
        &h,
        &format!("{XDG_DIR}/{J}.org"),
        "** User:\nJuliet prompt: from the XDG directory\n\n** Ellama:\nJuliet reply: found\n\n** User:\n",
    );
    sessions.push(Written {
        dir: format!("ellama/{J}"),
        lines: vec![
            "Juliet prompt: from the XDG directory",
            "Juliet reply: found",
        ],
        outputs: vec![],
    });

    // Beside the sessions: the init files and the auth-source file, with keys.
    put(
        &h,
        ".emacs.d/init.el",
        format!(
            "(setopt ellama-provider (make-llm-openai :key {}))\n",
            lisp(SECRET)
        ),
    );
    put(
        &h,
        ".emacs.d/custom.el",
        format!("(custom-set-variables '(k {}))\n", lisp(SECRET)),
    );
    put(&h, ".config/emacs/init.el", format!(";; {SECRET}\n"));
    put(
        &h,
        ".authinfo",
        format!("machine api.openai.com login ellama password {SECRET}\n"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-ellama", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "ellama"), 10);
    stores::assert_nowhere(&out.tree, BACKUP);
}

#[test]
fn title_model_cwd_and_times_come_from_the_files() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("ellama/{A}"));
    assert_eq!(a["title"], A);
    assert_eq!(a["model"], "qwen3:8b");
    assert_eq!(a["tags"], json!(["provider:ollama"]));
    assert_eq!(a["cwd"], "~/alpha");
    // No time is kept inside: the newest file's modification time is the update time.
    assert_eq!(a["updatedAt"], "2026-03-01T10:30:00.000Z");
    assert_eq!(a["createdAt"], Value::Null);
    assert_eq!(a["turnCount"], 2);
    assert_eq!(stores::tokens(&a["cost"]).0, Some(0));
    assert_eq!(a["warnings"], json!([]), "{}", a["warnings"]);
    let b = meta(&out.tree, &format!("ellama/{B}"));
    assert_eq!(b["model"], "gpt-4-turbo");
    assert_eq!(b["tags"], json!(["provider:openai"]));
    assert_eq!(b["cwd"], "/home/demo/bravo");
    assert_eq!(b["warnings"], json!([]), "{}", b["warnings"]);
    let c = meta(&out.tree, &format!("ellama/{C}"));
    assert_eq!(c["model"], "zephyr");
    assert_eq!(c["warnings"], json!([]), "{}", c["warnings"]);
}

#[test]
fn every_record_kind_lands_in_messages_jsonl() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("ellama/{A}"));
    assert_eq!(
        shapes(&m),
        [
            shape("system", "context", "Alpha system: you are a build expert."),
            shape(
                "system",
                "context",
                "[[file:/home/demo/alpha/Cargo.toml][/home/demo/alpha/Cargo.toml]]"
            ),
            shape("user", "", "Alpha prompt: why is the build slow?"),
            shape("assistant", "", ""),
            shape(
                "assistant",
                "",
                "Alpha reply: full debug info is on; try line tables only.\n\n\
                 #+BEGIN_SRC toml\n#+BEGIN_QUOTE\nAlpha quoted in code\n#+END_QUOTE\n#+END_SRC"
            ),
            shape("user", "", "Alpha follow-up: and release builds?"),
            shape("assistant", "", "Alpha reply two: they strip it already."),
        ]
    );
    assert_eq!(m[0]["label"], "system prompt");
    assert_eq!(m[1]["label"], "context");
    assert_eq!(
        m[3]["thinking"],
        "Alpha thinking: look at the manifest first."
    );
    assert_eq!(m[3]["model"], "qwen3:8b");
    // The calls carry the prompt's ids and arguments, the chat's outputs.
    let calls = m[3]["toolCalls"].as_array().expect("calls");
    let got: Vec<(&Value, &Value, &Value, &Value)> = calls
        .iter()
        .map(|c| (&c["toolCallId"], &c["toolName"], &c["input"], &c["output"]))
        .collect();
    assert_eq!(
        got,
        [
            (
                &json!("call_read"),
                &json!("read_file"),
                &json!({"file_name": "/home/demo/alpha/Cargo.toml"}),
                &json!("[profile.dev]\n\nalpha-output: debug = 2")
            ),
            (
                &json!("call_sh"),
                &json!("shell_command"),
                &json!({"cmd": "cargo build --timings", "dry": false}),
                &json!("alpha-output: 41 crates compiled")
            ),
        ]
    );
    let t = transcript(&out.tree, &format!("ellama/{A}"));
    assert!(t.contains("<summary>Thinking</summary>"), "{t}");
    assert!(t.contains("\"cargo build --timings\""), "{t}");

    let b = messages(&out.tree, &format!("ellama/{B}"));
    assert_eq!(
        shapes(&b),
        [
            shape("user", "", "Bravo prompt: explain monads briefly"),
            shape("assistant", "", "Bravo reply: a monad chains computations."),
            shape(
                "system",
                "event",
                "[Ellama compacted conversation context: summarized 1 earlier turns, kept 0 recent turns, estimated context 812 -> 95 tokens.]"
            ),
            shape("user", "", "Bravo follow-up: an example?"),
            shape("assistant", "", "Bravo reply two: Maybe in Haskell."),
        ]
    );
    assert_eq!(b[1]["thinking"], "Bravo thinking: keep it short.");
    let dir = out.tree.join(format!("ellama/{B}"));
    assert_eq!(
        std::fs::read_to_string(dir.join("summary.md")).expect("summary"),
        "Bravo summary: the user is learning monads."
    );
    assert!(std::fs::read_to_string(dir.join("translation.md"))
        .expect("translation")
        .starts_with("## User:\nBravo Übersetzung: erkläre Monaden\n"));

    let h = messages(&out.tree, &format!("ellama/{H}"));
    assert_eq!(
        shapes(&h),
        [
            shape("user", "", "Hotel prompt: list the files"),
            shape("assistant", "", ""),
            // A tool result's text is its output, written once (in `toolResult`).
            shape("tool", "", ""),
            shape("assistant", "", "Hotel reply: one file."),
        ]
    );
    assert_eq!(
        h[1]["toolCalls"][0],
        json!({"toolCallId": "call_ls", "toolName": "shell_command", "input": {"cmd": "ls"}})
    );
    let r = &h[2]["toolResult"];
    assert_eq!(
        (&r["toolCallId"], &r["toolName"], &r["output"]),
        (
            &json!("call_ls"),
            &json!("shell_command"),
            &json!("hotel-output: README.md")
        )
    );
}

#[test]
fn odd_chats_and_session_files_cost_warnings_not_sessions() {
    let fx = write();
    let out = render(&fx);
    let w = warnings(&out.tree, &format!("ellama/{D}"));
    assert!(
        w.contains(&format!("no `.{D}.org.session.el` beside it")),
        "{w}"
    );
    let w = warnings(&out.tree, &format!("ellama/{E}"));
    assert!(w.contains("no `** User:` or `** Ellama:` heading"), "{w}");
    let e = messages(&out.tree, &format!("ellama/{E}"));
    assert_eq!(e.len(), 1);
    assert_eq!(e[0]["label"], "chat text");
    let f = meta(&out.tree, &format!("ellama/{F}"));
    let w = f["warnings"].to_string();
    assert!(w.contains("cannot be read whole"), "{w}");
    assert!(w.contains("ends inside a string"), "{w}");
    // What came before the cut is used.
    assert_eq!(f["model"], "mistral");
    let w = warnings(&out.tree, &format!("ellama/{G}"));
    assert!(
        w.contains(&format!(
            ".{G}.org.session.el: holds no ellama-session record"
        )),
        "{w}"
    );
    assert_eq!(meta(&out.tree, &format!("ellama/{G}"))["turnCount"], 1);
    let w = warnings(&out.tree, &format!("ellama/{H}"));
    assert!(w.contains(&format!("its chat `{H}.org` is missing")), "{w}");
    let w = warnings(&out.tree, &format!("ellama/{I}"));
    assert!(
        w.contains("names the session `ellama India old name (llama3)` (the chat was renamed)"),
        "{w}"
    );
}

#[test]
fn keys_init_files_and_auth_sources_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
    // The unreadable objects of a session saved mid-request are not shown either.
    stores::assert_nowhere(&out.tree, "#<process");
}

#[test]
fn the_xdg_config_home_user_directory_is_read() {
    let fx = write();
    let xdg = fx.home.path().join("xdg");
    put(
        &xdg,
        "emacs/ellama-sessions/ellama Kilo moved (llama3).org",
        "** User:\nKilo prompt: under XDG_CONFIG_HOME\n\n** Ellama:\nKilo reply\n",
    );
    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    let o = fx
        .home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("XDG_CONFIG_HOME", &xdg)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    stores::assert_only_in(
        &tree,
        "Kilo prompt: under XDG_CONFIG_HOME",
        ".",
        "ellama/ellama Kilo moved (llama3)",
    );
    // `~/.emacs.d` and `~/.config/emacs` are still read.
    assert_eq!(stores::entries(&tree, "ellama"), 11);
}

/// Another prompt and reply only append to the transcript, though ellama rewrites the
/// session file whole.
#[test]
fn another_turn_only_appends_to_the_transcript() {
    let fx = write();
    let before = render(&fx);
    let t0 = transcript(&before.tree, &format!("ellama/{A}"));
    put(fx.home.path(), &chat_path(A, "org"), alpha_chat(3));
    let after = render(&fx);
    let t1 = transcript(&after.tree, &format!("ellama/{A}"));
    assert!(t1.contains("Alpha reply 2: done"), "{t1}");
    let first = t0.find("### ").expect("a message");
    assert!(t1[first..].starts_with(&t0[first..]), "{t1}");
}

#[test]
fn doctor_names_ellama_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(text.contains("ellama"), "{text}");
    assert!(text.contains("10 sessions"), "{text}");
    assert!(text.contains(".emacs.d/ellama-sessions"), "{text}");
    assert!(text.contains(".config/emacs/ellama-sessions"), "{text}");
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m: &Mount| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["ellama"], 30, SECRET, &format!("ellama/{A}"));
    });
}

/// Emacs saves the chat buffer after each reply: the new turn shows within a second on a
/// mount.
#[test]
fn a_saved_chat_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("ellama/{A}/transcript.md"));
    assert!(t.exists(), "{}", t.display());
    let mut text = alpha_chat(2);
    text.push_str("Alpha fresh prompt after the mount\n\n** Ellama:\n");
    std::fs::write(fx.home.path().join(chat_path(A, "org")), text).expect("write");
    stores::assert_within_a_second("saved chat", || {
        stores::file_contains(&t, "Alpha fresh prompt after the mount")
    });
}

/// The bundled sample (`fixtures/home/.emacs.d/ellama-sessions/`): an Org chat with
/// context, reasoning, a tool call and a follow-up, each line in the one session, its
/// model from the session file and no warning. The lines are the sample's own text.
#[test]
fn bundled_sample_shows_the_session() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-ellama-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let dir = "ellama/ellama Why does the test time out (qwen3_8b)";
    stores::assert_session_holds(
        &tree,
        dir,
        &[
            "Why does the integration test time out?",
            "The test probably waits on a port.",
            "The test connects to port 5432",
            "Does CI have it?",
        ],
        &["connect(\"localhost:5432\")"],
    );
    let m = meta(&tree, dir);
    assert_eq!(m["model"], "qwen3:8b");
    assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
    assert_eq!(stores::entries(&tree, "ellama"), 1);
}
