use super::*;

fn store_at(data: &Path) -> OpencodeStore {
    OpencodeStore::new(vec![Root::new(Agent::Opencode, data, "test")])
}

#[test]
fn discovery_honours_xdg_and_opencode_db() {
    let env = Env {
        home: PathBuf::from("/h"),
        vars: [("OPENCODE_DB".to_string(), "x/dev.db".to_string())].into(),
    };
    let got: Vec<PathBuf> = candidates(&env).into_iter().map(|r| r.path).collect();
    assert_eq!(
        got,
        [
            PathBuf::from("/h/.local/share/opencode/x/dev.db"),
            PathBuf::from("/h/.local/share/opencode")
        ]
    );
    assert!(is_db_name("opencode-dev.db") && !is_db_name("opencode.db-wal"));
}

// A store in the shapes OpenCode 1.1.x wrote: two sessions of two versions, one with a
// `question`, a `task` subagent (a child `session` row with `parent_id`), many tools,
// reasoning (one part with text, one holding only the provider's encrypted metadata), a
// `patch` part and per-step usage; written both as `opencode.db` rows (`message.data` =
// info without ids, `part.data` = part without ids, as OpenCode's JSON-to-SQLite
// migration maps them) and as the legacy `storage/` tree. All ids and text are made up.
const OC_A: &str = "ses_3f9d21c7affeQm4TzR8vLx2NpK";
const OC_A_CHILD: &str = "ses_3f9d0b52effeHt7WcY1sJq6MbD";
const OC_B: &str = "ses_44e6a1d09ffeZp3KxV5nR8uLcE";
const OC_PROJECT: &str = "7c41d2e9a0b8f6e5d4c3b2a1908f7e6d5c4b3a21";
const OC_DIR: &str = "/home/dev/shop-api";
const OC_TASK_CALL: &str = "call_T4skExplore00000000000001";
const OC_QUESTION_ANSWER: &str = "any order is fine, just undo everything at the end";

type OcParts = Vec<(String, serde_json::Value)>;

struct OcSession {
    id: &'static str,
    parent: Option<&'static str>,
    title: &'static str,
    version: &'static str,
    created: i64,
    /// `(message id, info, parts)`, message and part ids ascending.
    messages: Vec<(String, serde_json::Value, OcParts)>,
}

fn oc_tool(call: &str, tool: &str, input: serde_json::Value, output: &str) -> serde_json::Value {
    serde_json::json!({"type": "tool", "callID": call, "tool": tool,
        "state": {"status": "completed", "input": input, "output": output, "title": tool,
                  "metadata": {}, "time": {"start": 1_769_203_400_000_i64, "end": 1_769_203_400_900_i64}}})
}

fn oc_usage(input: u64, output: u64) -> serde_json::Value {
    serde_json::json!({"input": input, "output": output, "reasoning": 0, "cache": {"read": 0, "write": 0}})
}

fn oc_assistant(at: i64, parent: &str, input: u64, output: u64, finish: &str) -> serde_json::Value {
    serde_json::json!({"role": "assistant", "time": {"created": at, "completed": at + 900},
        "parentID": parent, "modelID": "gpt-5.2-codex", "providerID": "openai", "mode": "build",
        "agent": "build", "path": {"cwd": OC_DIR, "root": OC_DIR}, "cost": 0,
        "tokens": oc_usage(input, output), "finish": finish})
}

fn oc_step_finish(reason: &str, input: u64, output: u64) -> serde_json::Value {
    serde_json::json!({"type": "step-finish", "reason": reason, "snapshot": "5d1c0e9f",
                       "cost": 0, "tokens": oc_usage(input, output)})
}

fn oc_sessions() -> Vec<OcSession> {
    use serde_json::json;
    let user = |at: i64| {
        json!({"role": "user", "time": {"created": at}, "agent": "build",
                                "model": {"providerID": "openai", "modelID": "gpt-5.2-codex"}})
    };
    let text = |t: &str| json!({"type": "text", "text": t});
    let step = || json!({"type": "step-start", "snapshot": "5d1c0e9f"});
    let t0 = 1_769_203_363_105_i64;
    let m = |n: u32| format!("msg_c0a1{n:06}AAAAAAAAAAAAAA");
    let p = |n: u32, i: u32| format!("prt_c0a1{n:06}{i:02}BBBBBBBBBBBB");
    let task_out = format!(
        "The manifest is package.json at the repository root.\n\n<task_metadata>\nsession_id: {OC_A_CHILD}\n</task_metadata>"
    );
    let mut task = oc_tool(
        OC_TASK_CALL,
        "task",
        json!({"description": "Locate the package manifest", "prompt": "Find the package manifest", "subagent_type": "explore"}),
        &task_out,
    );
    task["state"]["metadata"] = json!({"sessionId": OC_A_CHILD});
    let question = format!(
        "User has answered your questions: \"Any order you want the tools in?\"=\"{OC_QUESTION_ANSWER}\"."
    );
    let a = OcSession {
        id: OC_A,
        parent: None,
        title: "Tool tour: use every tool once, then undo the edits",
        version: "1.1.34",
        created: t0,
        messages: vec![
            (
                m(1),
                user(t0 + 10),
                vec![(
                    p(1, 0),
                    text("Use each tool once, then undo every edit and write you made."),
                )],
            ),
            (
                m(2),
                oc_assistant(t0 + 20, &m(1), 4821, 97, "tool-calls"),
                vec![
                    (p(2, 0), step()),
                    (
                        p(2, 1),
                        json!({"type": "reasoning", "text": "",
                        "metadata": {"openai": {"itemId": "rs_made_up_0001", "reasoningEncryptedContent": "gAAAAAB-made-up-0001"}},
                        "time": {"start": t0 + 21, "end": t0 + 22}}),
                    ),
                    (
                        p(2, 2),
                        oc_tool(
                            "call_Qu3stion000000000000001",
                            "question",
                            json!({"questions": [{"question": "Any order you want the tools in?", "header": "Order",
                                              "options": [{"label": "Any", "description": "Pick yourself"}]}]}),
                            &question,
                        ),
                    ),
                    (p(2, 3), oc_step_finish("tool-calls", 4821, 97)),
                ],
            ),
            (
                m(3),
                oc_assistant(t0 + 30, &m(1), 5230, 412, "tool-calls"),
                vec![
                    (p(3, 0), step()),
                    (
                        p(3, 1),
                        json!({"type": "reasoning",
                        "text": "**Planning the tour**\n\nGlob first, then read, then delegate the manifest search.",
                        "metadata": {}, "time": {"start": t0 + 31, "end": t0 + 32}}),
                    ),
                    (
                        p(3, 2),
                        oc_tool(
                            "call_Gl0b000000000000000001",
                            "glob",
                            json!({"pattern": "src/**/*.ts"}),
                            "src/server.ts\nsrc/routes/orders.ts",
                        ),
                    ),
                    (
                        p(3, 3),
                        oc_tool(
                            "call_R3ad000000000000000001",
                            "read",
                            json!({"filePath": "/home/dev/shop-api/src/server.ts"}),
                            "<file>\n00001| import { serve } from './http'\n</file>",
                        ),
                    ),
                    (p(3, 4), task),
                    (
                        p(3, 5),
                        oc_tool(
                            "call_Bash000000000000000001",
                            "bash",
                            json!({"command": "git status --short", "description": "Show changes"}),
                            " M src/server.ts",
                        ),
                    ),
                    (
                        p(3, 6),
                        oc_tool(
                            "call_Ed1t000000000000000001",
                            "edit",
                            json!({"filePath": "/home/dev/shop-api/src/server.ts", "oldString": "serve(", "newString": "serve(app, "}),
                            "Edit applied successfully.",
                        ),
                    ),
                    (
                        p(3, 7),
                        oc_tool(
                            "call_Wr1te00000000000000001",
                            "write",
                            json!({"filePath": "/home/dev/shop-api/NOTES.md", "content": "tour notes"}),
                            "Wrote file successfully.",
                        ),
                    ),
                    (
                        p(3, 8),
                        oc_tool(
                            "call_Todo000000000000000001",
                            "todowrite",
                            json!({"todos": [{"content": "undo edits", "status": "pending", "id": "1"}]}),
                            "[{\"content\":\"undo edits\",\"status\":\"pending\"}]",
                        ),
                    ),
                    (
                        p(3, 9),
                        json!({"type": "patch", "hash": "9e8d7c6b",
                                     "files": ["/home/dev/shop-api/src/server.ts", "/home/dev/shop-api/NOTES.md"]}),
                    ),
                    (p(3, 10), oc_step_finish("tool-calls", 5230, 412)),
                ],
            ),
            (
                m(4),
                oc_assistant(t0 + 40, &m(1), 6012, 88, "stop"),
                vec![
                    (p(4, 0), step()),
                    (
                        p(4, 1),
                        text("Done: every tool ran once and both edits are undone."),
                    ),
                    (p(4, 2), oc_step_finish("stop", 6012, 88)),
                ],
            ),
        ],
    };
    // The subagent's session: a child row only (its messages play no part here).
    let child = OcSession {
        id: OC_A_CHILD,
        parent: Some(OC_A),
        title: "Locate the package manifest (@explore subagent)",
        version: "1.1.34",
        created: t0 + 35,
        messages: vec![],
    };
    let t1 = 1_768_172_351_896_i64;
    let m = |n: u32| format!("msg_baf4{n:06}CCCCCCCCCCCCCC");
    let p = |n: u32, i: u32| format!("prt_baf4{n:06}{i:02}DDDDDDDDDDDD");
    let b = OcSession {
        id: OC_B,
        parent: None,
        title: "New session - 2026-01-11T22:59:11.896Z",
        version: "1.1.13",
        created: t1,
        messages: vec![
            (
                m(1),
                user(t1 + 5),
                vec![(p(1, 0), text("What does the orders route return?"))],
            ),
            (
                m(2),
                oc_assistant(t1 + 9, &m(1), 3120, 64, "stop"),
                vec![
                    (p(2, 0), step()),
                    (p(2, 1), text("A JSON list of orders, newest first.")),
                    (p(2, 2), oc_step_finish("stop", 3120, 64)),
                ],
            ),
        ],
    };
    vec![a, child, b]
}

/// `opencode.db` rows in the 2026-08 schema, mapped as OpenCode's JSON migration does.
fn write_oc_db(path: &Path, sessions: &[OcSession]) {
    let c = Connection::open(path).unwrap();
    c.execute_batch(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/schema/opencode-2026-08.sql"
    )))
    .unwrap();
    c.execute(
        "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES (?1, ?2, 'git', 1, 1, '[]')",
        rusqlite::params![OC_PROJECT, OC_DIR],
    )
    .unwrap();
    for s in sessions {
        c.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, agent, model, time_created, time_updated)
                 VALUES (?1, ?2, ?3, 'tidy-harbor', ?4, ?5, ?6, 'build', '{\"id\":\"gpt-5.2-codex\",\"providerID\":\"openai\"}', ?7, ?7)",
            rusqlite::params![s.id, OC_PROJECT, s.parent, OC_DIR, s.title, s.version, s.created],
        )
        .unwrap();
        for (mid, info, parts) in &s.messages {
            let at = info["time"]["created"].as_i64().unwrap();
            c.execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
                rusqlite::params![mid, s.id, at, info.to_string()],
            )
            .unwrap();
            for (pid, part) in parts {
                c.execute(
                    "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                    rusqlite::params![pid, mid, s.id, at, part.to_string()],
                )
                .unwrap();
            }
        }
    }
}

/// The pre-SQLite `storage/` tree of the same top-level sessions (ids inside each file).
fn write_oc_legacy(storage: &Path, sessions: &[OcSession]) {
    let put = |rel: String, v: &serde_json::Value| {
        let p = storage.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    };
    for s in sessions.iter().filter(|s| s.parent.is_none()) {
        put(
            format!("session/{OC_PROJECT}/{}.json", s.id),
            &serde_json::json!({"id": s.id, "slug": "tidy-harbor", "version": s.version, "projectID": OC_PROJECT,
                "directory": OC_DIR, "title": s.title, "time": {"created": s.created, "updated": s.created},
                "summary": {"additions": 0, "deletions": 0, "files": 0}}),
        );
        for (mid, info, parts) in &s.messages {
            let mut info = info.clone();
            info["id"] = mid.as_str().into();
            info["sessionID"] = s.id.into();
            put(format!("message/{}/{mid}.json", s.id), &info);
            for (pid, part) in parts {
                let mut part = part.clone();
                part["id"] = pid.as_str().into();
                part["sessionID"] = s.id.into();
                part["messageID"] = mid.as_str().into();
                put(format!("part/{mid}/{pid}.json"), &part);
            }
        }
    }
}

#[test]
fn database_of_a_1_1_store_loads_with_subagent_tools_and_usage() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = oc_sessions();
    write_oc_db(&tmp.path().join("opencode.db"), &sessions);
    let store = store_at(tmp.path());
    let listed = store.list();
    let mut ids: Vec<&str> = listed.iter().map(|l| l.id.as_str()).collect();
    ids.sort();
    // The subagent child is nested, not listed.
    assert_eq!(ids, [OC_A, OC_B]);
    // OpenCode's default name (`New session - <time>`) gives way to the first prompt.
    let b = store.load(listed.iter().find(|l| l.id == OC_B).unwrap());
    assert_eq!(
        b.title.as_deref(),
        Some("What does the orders route return?")
    );
    let l = listed.iter().find(|l| l.id == OC_A).unwrap();
    let s = store.load(l);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(
        s.title.as_deref(),
        Some("Tool tour: use every tool once, then undo the edits")
    );
    assert_eq!(s.source.format_version.as_deref(), Some("1.1.34"));
    assert_eq!(s.subagents.len(), 1);
    let sub = &s.subagents[0];
    assert_eq!(sub.name, OC_A_CHILD);
    assert_eq!(sub.tool_call_id.as_deref(), Some(OC_TASK_CALL));
    assert_eq!(
        sub.description.as_deref(),
        Some("Locate the package manifest")
    );
    let child = sub.session.as_ref().unwrap();
    let parent = format!("opencode:{OC_A}");
    assert_eq!(child.parent.as_deref(), Some(parent.as_str()));
    // Every tool part written, each with its output.
    let calls: Vec<&ToolCall> = s.messages.iter().flat_map(|m| &m.tool_calls).collect();
    let mut names: Vec<&str> = calls.iter().map(|c| c.tool_name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "bash",
            "edit",
            "glob",
            "question",
            "read",
            "task",
            "todowrite",
            "write"
        ]
    );
    assert!(calls.iter().all(|c| c.output.is_some()));
    let q = calls.iter().find(|c| c.tool_name == "question").unwrap();
    assert!(q.output.as_deref().unwrap().contains(OC_QUESTION_ANSWER));
    // Usage: one step per message here, so step sums equal message tokens.
    let first = s
        .messages
        .iter()
        .find(|m| m.native_id.as_deref() == Some("msg_c0a1000002AAAAAAAAAAAAAA"))
        .unwrap();
    assert_eq!(first.token_usage.unwrap().input_tokens, 4821);
    assert_eq!(first.cost, Some(0.0));
    let thinking: Vec<&str> = s
        .messages
        .iter()
        .filter_map(|m| m.thinking.as_deref())
        .collect();
    assert!(
        thinking
            .iter()
            .any(|t| t.starts_with("**Planning the tour**")),
        "{thinking:?}"
    );

    // The legacy tree holds the same sessions: the database wins, nothing twice.
    write_oc_legacy(&tmp.path().join("storage"), &sessions);
    assert_eq!(store.list().len(), 2);
    std::fs::remove_file(tmp.path().join("opencode.db")).unwrap();
    let legacy = store.list();
    assert_eq!(legacy.len(), 2);
    let l = legacy.iter().find(|l| l.id == OC_A).unwrap();
    let s2 = store.load(l);
    assert_eq!(s2.source.format, "opencode-json");
    assert!(s2.warnings.is_empty(), "{:?}", s2.warnings);
    let texts =
        |s: &Session| -> Vec<String> { s.messages.iter().map(|m| m.text().to_string()).collect() };
    assert_eq!(texts(&s2), texts(&s));
    assert!(texts(&s2)
        .iter()
        .any(|t| t == "Done: every tool ran once and both edits are undone."));
}

/// The bundled sample (written by scripts/make-samples; expected values from its rows).
#[test]
fn bundled_sample_database_shows_tools_reasoning_usage_and_subagent() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home/.local/share/opencode");
    let store = store_at(&data);
    let listed = store.list();
    assert_eq!(listed.len(), 1);
    let s = store.load(&listed[0]);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.id, "ses_3a8f2d1c4ffeK7mQ2xV9bN4rTz");
    assert_eq!(
        s.title.as_deref(),
        Some("Cursor pagination for the orders endpoint")
    );
    let calls: Vec<&ToolCall> = s.messages.iter().flat_map(|m| &m.tool_calls).collect();
    let names: Vec<&str> = calls.iter().map(|c| c.tool_name.as_str()).collect();
    assert_eq!(names, ["task", "edit", "bash"]);
    assert!(calls[2]
        .output
        .as_deref()
        .unwrap()
        .contains("Tests  6 passed (6)"));
    assert!(s.messages.iter().any(|m| m
        .thinking
        .as_deref()
        .is_some_and(|t| t.starts_with("The route file is the place to start"))));
    let u = s.messages[1].token_usage.unwrap();
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.cached_tokens),
        (11_840, 212, 9_216)
    );
    assert_eq!(s.messages[1].cost, Some(0.0118));
    assert_eq!(s.subagents.len(), 1);
    let child = s.subagents[0].session.as_ref().unwrap();
    let grep = child
        .messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .next()
        .unwrap();
    assert_eq!(grep.tool_name, "grep");
    assert!(grep
        .output
        .as_deref()
        .unwrap()
        .contains("export async function listOrders"));
}

#[test]
fn multi_step_usage_counts_each_step_once_and_revert_is_a_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("opencode.db");
    let c = Connection::open(&db).unwrap();
    c.execute_batch(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/schema/opencode-2026-01.sql"
    )))
    .unwrap();
    c.execute_batch(
        r#"INSERT INTO project VALUES ('p','/w',NULL,NULL,NULL,NULL,1,1,NULL,'[]');
            INSERT INTO session (id,project_id,slug,directory,title,version,revert,time_created,time_updated)
              VALUES ('ses_1','p','s','/w','t','1.2.0','{"messageID":"msg_3"}',1,2);
            INSERT INTO message VALUES ('msg_1','ses_1',1,1,'{"role":"user","time":{"created":1768172351896}}');
            INSERT INTO part VALUES ('prt_1','msg_1','ses_1',1,1,'{"type":"text","text":"hello"}');
            INSERT INTO part VALUES ('prt_2','msg_1','ses_1',1,1,'{"type":"text","text":"file body","synthetic":true}');
            INSERT INTO message VALUES ('msg_2','ses_1',1,1,'{"role":"assistant","time":{"created":1768172351999},"modelID":"m","cost":0.5,"tokens":{"input":7,"output":1,"reasoning":0,"cache":{"read":0,"write":0}}}');
            INSERT INTO part VALUES ('prt_3','msg_2','ses_1',1,1,'{"type":"step-finish","cost":0.2,"tokens":{"input":10,"output":2,"reasoning":0,"cache":{"read":5,"write":0}}}');
            INSERT INTO part VALUES ('prt_4','msg_2','ses_1',1,1,'{"type":"step-finish","cost":0.3,"tokens":{"input":7,"output":1,"reasoning":0,"cache":{"read":0,"write":0}}}');
            INSERT INTO part VALUES ('prt_5','msg_2','ses_1',1,1,'{"type":"hologram"}');
            INSERT INTO message VALUES ('msg_3','ses_1',1,1,'{"role":"user","time":{"created":1768172352999}}');
            INSERT INTO part VALUES ('prt_6','msg_3','ses_1',1,1,'{"type":"text","text":"undone prompt"}');"#,
    )
    .unwrap();
    drop(c);
    let store = store_at(tmp.path());
    let s = store.load(&store.list()[0]);
    let texts: Vec<&str> = s.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["hello", "file body", ""]);
    assert_eq!(s.messages[1].kind, MessageKind::Context);
    let u = s.messages[2].token_usage.unwrap();
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.cached_tokens),
        (17, 3, 5)
    );
    assert_eq!(s.messages[2].cost, Some(0.5));
    assert_eq!(s.cost().total_usd, 0.5);
    assert_eq!(s.branches.len(), 1);
    let b = &s.branches[0];
    assert_eq!(b.name, "reverted");
    assert_eq!(b.fork_point.as_deref(), Some("msg_2"));
    assert_eq!(b.messages.last().unwrap().text(), "undone prompt");
    assert!(s.warnings[0].contains("`hologram`"), "{:?}", s.warnings);
}

#[test]
fn only_opencode_default_names_are_placeholders() {
    assert!(is_default_title("New session - 2026-07-30T14:04:55.689Z"));
    assert!(is_default_title("Child session - 2026-01-11T22:59:11.896Z"));
    for named in [
        "New session - planning",
        "New session - 2026-07-30T14:04:55Z",
        "New session - 2026-07-30T14:04:55.689Z and more",
        "Fix the login test",
        "",
    ] {
        assert!(!is_default_title(named), "{named}");
    }
}
