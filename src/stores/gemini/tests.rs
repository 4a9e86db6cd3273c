use super::*;
use std::fs;

/// Project-written chats, each reproducing one real shape (fixtures/shapes/README.md).
const SHAPES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/shapes/gemini");

fn env_for(home: &Path) -> Env {
    Env {
        home: home.to_path_buf(),
        vars: Default::default(),
    }
}

fn store(home: &Path) -> GeminiStore {
    GeminiStore::new(
        candidates(&env_for(home))
            .into_iter()
            .filter(|r| r.path.exists())
            .collect(),
    )
}

/// Write `lines` as `<home>/.gemini/tmp/<project>/chats/<file>`.
fn chat(home: &Path, project: &str, file: &str, lines: &[&str]) -> PathBuf {
    let dir = home.join(".gemini/tmp").join(project).join("chats");
    let path = dir.join(file);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut text = lines.join("\n");
    text.push('\n');
    fs::write(&path, text).unwrap();
    path
}

fn load_one(home: &Path) -> Session {
    let st = store(home);
    let listed = st.list();
    assert_eq!(listed.len(), 1, "{listed:#?}");
    st.load(&listed[0])
}

fn texts(s: &Session) -> Vec<String> {
    s.messages.iter().map(|m| m.content.clone()).collect()
}

const META: &str = r#"{"sessionId":"s-1","projectHash":"h","startTime":"2026-05-01T10:00:00.000Z","lastUpdated":"2026-05-01T10:00:00.000Z","kind":"main"}"#;

#[test]
fn candidates_honour_gemini_cli_home() {
    let mut env = env_for(Path::new("/h"));
    let r = candidates(&env);
    assert_eq!(r[0].path, PathBuf::from("/h/.gemini/tmp"));
    assert_eq!(r[0].how, "default");
    env.vars.insert("GEMINI_CLI_HOME".into(), "/g".into());
    let r = candidates(&env);
    assert_eq!(r[0].path, PathBuf::from("/g/.gemini/tmp"));
    assert_eq!(r[0].how, "GEMINI_CLI_HOME");
    assert!(r.iter().any(|r| r.how == "spec"));
}

/// `gemini/chat.jsonl` reproduces a real `/init` chat: an info event, the `/init` prompt
/// shown by its `displayContent`, five replies each appended twice (running, then with their
/// results) between `$set` lines, a "Please continue." turn and a cancelled request.
#[test]
fn jsonl_fixture_replays_to_one_version_per_id() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(SHAPES).join("chat.jsonl");
    let dst = tmp
        .path()
        .join(".gemini/tmp/bellbot/chats/session-2026-04-20T09-00-3c9d2e1f.jsonl");
    fs::create_dir_all(dst.parent().unwrap()).unwrap();
    fs::copy(&src, &dst).unwrap();
    let s = load_one(tmp.path());
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.id, "3c9d2e1f-7a6b-4c5d-9e8f-0a1b2c3d4e5f");
    // 11 distinct message ids; 5 of them were appended twice.
    assert_eq!(s.messages.len(), 11);
    let roles: Vec<Role> = s.messages.iter().map(|m| m.role).collect();
    use Role::*;
    assert_eq!(
        roles,
        [
            System, User, Assistant, Assistant, Assistant, Assistant, User, Assistant, User,
            Assistant, System
        ]
    );
    assert_eq!(s.messages[0].kind, MessageKind::Event);
    assert_eq!(s.messages[10].content, "info: Request cancelled.");
    let calls: Vec<&ToolCall> = s.messages.iter().flat_map(|m| &m.tool_calls).collect();
    assert_eq!(calls.len(), 11);
    assert!(calls.iter().all(|c| c.is_error == Some(false)));
    let readme = calls.iter().find(|c| c.tool_call_id == "rf01abcd").unwrap();
    assert_eq!(readme.tool_name, "read_file");
    assert_eq!(
        readme.output.as_deref(),
        Some("# Bellbot\n\nA small chat bot that rings a bell.")
    );
    assert!(s.messages[2]
        .thinking
        .as_deref()
        .unwrap()
        .starts_with("Starting the memory file\nI am now reading the project layout"));
    // Usage of the last version of each id; cached tokens counted apart from input.
    let c = s.cost();
    assert_eq!(c.input_tokens, 187_000 - 46_000);
    assert_eq!(c.cached_tokens, 46_000);
    assert_eq!(c.output_tokens, 2_120);
    assert_eq!(c.thinking_tokens, 2_100);
    assert_eq!(s.cwd, None, "no projects.json, no marker: no guessed cwd");
}

#[test]
fn legacy_and_partial_fixtures_load() {
    let tmp = tempfile::tempdir().unwrap();
    let hash = "c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3";
    let chats = tmp.path().join(".gemini/tmp").join(hash).join("chats");
    fs::create_dir_all(&chats).unwrap();
    fs::copy(
        Path::new(SHAPES).join("legacy.json"),
        chats.join("session-2026-03-28T11-00-7e8f9a0b.json"),
    )
    .unwrap();
    // The JSONL chat with the agent cut off while writing one more record.
    let mut partial = fs::read_to_string(Path::new(SHAPES).join("chat.jsonl")).unwrap();
    partial.push_str(r#"{"id":"g-7","timestamp":"2026-04-20T09:05:00.000Z","type":"gem"#);
    fs::write(
        chats.join("session-2026-04-20T09-00-3c9d2e1f.jsonl"),
        partial,
    )
    .unwrap();
    let st = store(tmp.path());
    let mut listed = st.list();
    listed.sort_by(|a, b| a.id.cmp(&b.id));
    let ids: Vec<&str> = listed.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "3c9d2e1f-7a6b-4c5d-9e8f-0a1b2c3d4e5f",
            "7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b"
        ]
    );
    let partial = st.load(&listed[0]);
    assert_eq!(partial.warnings.len(), 2, "{:?}", partial.warnings);
    assert!(partial.warnings[0].contains("partial last line"));
    assert!(partial.warnings[1].contains("unparsed.txt"));
    assert_eq!(partial.messages.len(), 11);

    let legacy = st.load(&listed[1]);
    assert!(legacy.warnings.is_empty(), "{:?}", legacy.warnings);
    assert_eq!(legacy.source.format, "gemini-json");
    assert_eq!(legacy.messages.len(), 4);
    assert!(legacy.messages[0]
        .content
        .starts_with("split the user docs from the contributor docs in README.md"));
    let calls: Vec<&ToolCall> = legacy.messages.iter().flat_map(|m| &m.tool_calls).collect();
    assert_eq!(calls.len(), 7);
    assert!(calls.iter().all(|c| c.output.is_some()));
    assert_eq!(
        legacy.cost().input_tokens,
        (11_000 + 21_000 + 23_000) - (7_000 + 12_000 + 13_000)
    );
    assert_eq!(
        legacy.title.as_deref(),
        Some("split the user docs from the contributor docs in README.md")
    );
}

/// Real chats of every shape are read by the real-corpus suite (`tests/real.rs`, when
/// `SESSFS_REAL_SESSIONS` names them); here, every shape fixture.
#[test]
fn every_shape_fixture_loads_into_a_transcript() {
    let mut n = 0;
    for f in kit::entries(Path::new(SHAPES)) {
        let name = kit::file_name(&f);
        if !(name.ends_with(".jsonl") || name.ends_with(".json")) {
            continue;
        }
        n += 1;
        let s = load_file(&f, None, 0);
        assert!(s.warnings.is_empty(), "{name}: {:?}", s.warnings);
        assert!(!s.messages.is_empty(), "{name}");
        assert!(s.messages.iter().any(|m| m.role == Role::User), "{name}");
    }
    assert_eq!(n, 2);
}

#[test]
fn a_repeated_id_replaces_the_message_where_it_stands_and_counts_usage_once() {
    let tmp = tempfile::tempdir().unwrap();
    chat(
        tmp.path(),
        "p",
        "session-2026-05-01T10-00-s-1.jsonl",
        &[
            META,
            r#"{"id":"u1","timestamp":"2026-05-01T10:00:01Z","type":"user","content":[{"text":"list the files"}]}"#,
            r#"{"id":"g1","timestamp":"2026-05-01T10:00:02Z","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"ls","args":{"dir":"."},"status":"executing"}],"tokens":{"input":100,"output":10,"cached":0,"total":110},"model":"gemini-2.5-pro"}"#,
            r#"{"$set":{"lastUpdated":"2026-05-01T10:00:02Z"}}"#,
            r#"{"id":"g1","timestamp":"2026-05-01T10:00:02Z","type":"gemini","content":"Here they are.","toolCalls":[{"id":"c1","name":"ls","args":{"dir":"."},"status":"success","result":[{"functionResponse":{"id":"c1","name":"ls","response":{"output":"a.txt\nb.txt"}}}],"resultDisplay":"2 files"}],"tokens":{"input":120,"output":12,"cached":20,"thoughts":3,"total":135},"model":"gemini-2.5-pro"}"#,
            r#"{"id":"u2","timestamp":"2026-05-01T10:00:03Z","type":"user","content":"thanks"}"#,
        ],
    );
    let s = load_one(tmp.path());
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(texts(&s), ["list the files", "Here they are.", "thanks"]);
    let call = &s.messages[1].tool_calls[0];
    assert_eq!(call.output.as_deref(), Some("a.txt\nb.txt"));
    assert_eq!(call.is_error, Some(false));
    assert_eq!(call.input["dir"], ".");
    let c = s.cost();
    assert_eq!(
        (
            c.input_tokens,
            c.cached_tokens,
            c.output_tokens,
            c.thinking_tokens
        ),
        (100, 20, 12, 3)
    );
    assert_eq!(s.title.as_deref(), Some("list the files"));
}

#[test]
fn set_patches_metadata_and_set_messages_replaces_all() {
    let tmp = tempfile::tempdir().unwrap();
    chat(
        tmp.path(),
        "p",
        "session-2026-05-01T10-00-s-1.jsonl",
        &[
            META,
            r#"{"id":"u1","timestamp":"2026-05-01T10:00:01Z","type":"user","content":"first draft prompt"}"#,
            r#"{"$set":{"summary":"Renaming the crate","lastUpdated":"2026-05-01T11:00:00Z"}}"#,
            r#"{"$set":{"messages":[{"id":"m1","timestamp":"2026-05-01T10:30:00Z","type":"user","content":"checkpointed prompt"},{"id":"m2","timestamp":"2026-05-01T10:30:01Z","type":"gemini","content":"checkpointed answer"}]}}"#,
            r#"{"id":"u3","timestamp":"2026-05-01T10:40:00Z","type":"user","content":"after the checkpoint"}"#,
            r#"{"id":"m1","timestamp":"2026-05-01T10:30:00Z","type":"user","content":"checkpointed prompt, edited"}"#,
        ],
    );
    let s = load_one(tmp.path());
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(
        texts(&s),
        [
            "checkpointed prompt, edited",
            "checkpointed answer",
            "after the checkpoint"
        ]
    );
    assert_eq!(s.title.as_deref(), Some("Renaming the crate"));
    assert_eq!(s.updated_at, kit::parse_rfc3339("2026-05-01T11:00:00Z"));
    assert_eq!(s.created_at, kit::parse_rfc3339("2026-05-01T10:00:00Z"));
}

#[test]
fn the_environment_sent_first_is_context_not_a_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    chat(
        tmp.path(),
        "p",
        "session-2026-05-01T10-00-s-1.jsonl",
        &[
            META,
            r#"{"id":"c1","timestamp":"2026-05-01T10:00:01Z","type":"user","content":[{"text":"<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\nToday's date is Friday, May 1, 2026.\nMy operating system is: linux\n</session_context>"}]}"#,
            r#"{"id":"c2","timestamp":"2026-05-01T10:00:02Z","type":"user","content":"This is the Gemini CLI. We are setting up the context for our chat.\nMy operating system is: darwin"}"#,
            r#"{"id":"u1","timestamp":"2026-05-01T10:00:03Z","type":"user","content":"This is the plan. We are setting up the context for our chat, then fix the bug."}"#,
        ],
    );
    let s = load_one(tmp.path());
    let kinds: Vec<(Role, MessageKind, Option<&str>)> = s
        .messages
        .iter()
        .map(|m| (m.role, m.kind, m.label.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        [
            (Role::System, MessageKind::Context, Some("session context")),
            (Role::System, MessageKind::Context, Some("session context")),
            (Role::User, MessageKind::Normal, None),
        ]
    );
    assert_eq!(
        s.title.as_deref(),
        Some("This is the plan. We are setting up the context for our chat, then fix the bug.")
    );
}

#[test]
fn a_rewind_keeps_the_dropped_tail_as_a_branch() {
    let tmp = tempfile::tempdir().unwrap();
    chat(
        tmp.path(),
        "p",
        "session-2026-05-01T10-00-s-1.jsonl",
        &[
            META,
            r#"{"id":"u1","timestamp":"2026-05-01T10:00:01Z","type":"user","content":"write a poem"}"#,
            r#"{"id":"g1","timestamp":"2026-05-01T10:00:02Z","type":"gemini","content":"Roses are red"}"#,
            r#"{"id":"u2","timestamp":"2026-05-01T10:00:03Z","type":"user","content":"make it rhyme harder"}"#,
            r#"{"id":"g2","timestamp":"2026-05-01T10:00:04Z","type":"gemini","content":"Violets are blue"}"#,
            r#"{"$rewindTo":"u2"}"#,
            r#"{"id":"u3","timestamp":"2026-05-01T10:00:05Z","type":"user","content":"make it a haiku"}"#,
            r#"{"$rewindTo":"nope"}"#,
        ],
    );
    let s = load_one(tmp.path());
    assert_eq!(
        texts(&s),
        ["write a poem", "Roses are red", "make it a haiku"]
    );
    assert_eq!(s.branches.len(), 1);
    let b = &s.branches[0];
    assert_eq!(b.name, "branch-g2");
    assert_eq!(b.fork_point.as_deref(), Some("g1"));
    assert_eq!(b.leaf.as_deref(), Some("g2"));
    let bt: Vec<&str> = b.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        bt,
        [
            "write a poem",
            "Roses are red",
            "make it rhyme harder",
            "Violets are blue"
        ]
    );
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(s.warnings[0].contains("rewind to unknown message nope"));
}

#[test]
fn subagent_chats_nest_under_their_parent() {
    let tmp = tempfile::tempdir().unwrap();
    chat(
        tmp.path(),
        "p",
        "session-2026-05-01T10-00-s-1.jsonl",
        &[
            META,
            r#"{"id":"u1","type":"user","content":"investigate the bug"}"#,
            r#"{"id":"g1","type":"gemini","content":"","toolCalls":[{"id":"c9","name":"codebase_investigator","args":{},"status":"success","agentId":"sub-7","result":[{"functionResponse":{"id":"c9","name":"codebase_investigator","response":{"output":"found it in parse.rs"}}}]}]}"#,
        ],
    );
    chat(
        tmp.path(),
        "p",
        "s-1/sub-7.jsonl",
        &[
            r#"{"sessionId":"sub-7","projectHash":"h","startTime":"2026-05-01T10:00:05Z","lastUpdated":"2026-05-01T10:00:05Z","kind":"subagent"}"#,
            r#"{"id":"x1","type":"user","content":"look for the parser bug"}"#,
            r#"{"id":"x2","type":"gemini","content":"The bug is in parse.rs"}"#,
        ],
    );
    let st = store(tmp.path());
    let listed = st.list();
    assert_eq!(listed.len(), 1, "the subagent chat is not top-level");
    assert_eq!(listed[0].sources.len(), 3, "{:?}", listed[0].sources);
    let s = st.load(&listed[0]);
    assert_eq!(s.subagents.len(), 1);
    let sub = &s.subagents[0];
    assert_eq!(sub.name, "sub-7");
    assert_eq!(sub.tool_call_id.as_deref(), Some("c9"));
    let child = sub.session.as_ref().unwrap();
    assert_eq!(child.parent.as_deref(), Some("gemini:s-1"));
    assert_eq!(
        texts(child),
        ["look for the parser bug", "The bug is in parse.rs"]
    );
    assert!(child.tags.contains(&"subagent".to_string()));
}

#[test]
fn cwd_comes_from_projects_json_or_the_marker_never_a_guess() {
    let tmp = tempfile::tempdir().unwrap();
    let h = tmp.path();
    chat(
        h,
        "webapp",
        "session-2026-05-01T10-00-s-1.jsonl",
        &[META, r#"{"id":"u","type":"user","content":"a"}"#],
    );
    chat(
        h,
        "api-2",
        "session-2026-05-01T10-00-s-2.jsonl",
        &[
            &META.replace("s-1", "s-2"),
            r#"{"id":"u","type":"user","content":"b"}"#,
        ],
    );
    chat(
        h,
        "0123abcd",
        "session-2026-05-01T10-00-s-3.jsonl",
        &[
            &META.replace("s-1", "s-3"),
            r#"{"id":"u","type":"user","content":"c"}"#,
        ],
    );
    fs::write(
        h.join(".gemini/projects.json"),
        r#"{"projects":{"/home/dev/webapp":"webapp","/home/dev/other":"other"}}"#,
    )
    .unwrap();
    fs::write(h.join(".gemini/tmp/api-2/.project_root"), "/srv/api\n").unwrap();
    // Windows paths as Gemini CLI writes them there; a relative path is no cwd.
    for (n, (slug, root)) in [
        ("vault", r"c:\users\dev\documents\vault"),
        ("share", r"\\nas\projects\site"),
        ("rel", r"projects\site"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("s-w{n}");
        chat(
            h,
            slug,
            &format!("session-2026-05-01T10-00-{id}.jsonl"),
            &[
                &META.replace("s-1", &id),
                r#"{"id":"u","type":"user","content":"w"}"#,
            ],
        );
        fs::write(h.join(format!(".gemini/tmp/{slug}/.project_root")), root).unwrap();
    }
    // A marker that is no file (here endless) is no cwd, and costs no memory.
    std::os::unix::fs::symlink("/dev/zero", h.join(".gemini/tmp/0123abcd/.project_root")).unwrap();
    let st = store(h);
    let cwd: BTreeMap<String, Option<String>> = st
        .list()
        .iter()
        .map(|l| (l.id.clone(), st.load(l).cwd))
        .collect();
    assert_eq!(cwd["s-1"].as_deref(), Some("/home/dev/webapp"));
    assert_eq!(cwd["s-2"].as_deref(), Some("/srv/api"));
    assert_eq!(cwd["s-3"], None);
    assert_eq!(
        cwd["s-w0"].as_deref(),
        Some(r"c:\users\dev\documents\vault")
    );
    assert_eq!(cwd["s-w1"].as_deref(), Some(r"\\nas\projects\site"));
    assert_eq!(cwd["s-w2"], None);
}

#[test]
fn tool_errors_display_fallback_and_content_parts() {
    let tmp = tempfile::tempdir().unwrap();
    chat(
        tmp.path(),
        "p",
        "session-2026-05-01T10-00-s-1.jsonl",
        &[
            META,
            r#"{"id":"u1","type":"user","content":[{"text":"see "},{"text":"this"},{"inlineData":{"mimeType":"image/png","data":"AAAAAAAA"}}]}"#,
            r#"{"id":"g1","type":"gemini","content":[{"text":"pondering","thought":true},{"text":"done"}],"toolCalls":[{"id":"a","name":"shell","args":{"command":"false"},"status":"error","result":[{"functionResponse":{"id":"a","name":"shell","response":{"error":"exit code 1"}}}]},{"id":"b","name":"edit","args":{},"status":"success","resultDisplay":"edited 3 lines"},{"id":"c","name":"slow","args":{},"status":"executing"}]}"#,
            r#"{"id":"w1","type":"warning","content":"quota nearly used"}"#,
            r#"{"id":"e1","type":"error","content":"API error 500"}"#,
        ],
    );
    let s = load_one(tmp.path());
    assert_eq!(s.messages[0].content, "see this\n\n[image: image/png, 6 B]");
    let g = &s.messages[1];
    assert_eq!(g.content, "done");
    assert_eq!(g.thinking.as_deref(), Some("pondering"));
    let c = &g.tool_calls;
    assert_eq!(
        (c[0].output.as_deref(), c[0].is_error),
        (Some("exit code 1"), Some(true))
    );
    assert_eq!(
        (c[1].output.as_deref(), c[1].is_error),
        (Some("edited 3 lines"), Some(false))
    );
    assert_eq!((c[2].output.as_deref(), c[2].is_error), (None, None));
    assert_eq!(s.messages[2].content, "warning: quota nearly used");
    assert_eq!(s.messages[3].content, "error: API error 500");
    assert!(s.messages[2..]
        .iter()
        .all(|m| m.role == Role::System && m.kind == MessageKind::Event));
    assert_eq!(s.turn_count(), 1, "events are not prompts");
}

#[test]
fn corrupt_lines_cost_warnings_not_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    let path = chat(
        tmp.path(),
        "p",
        "session-2026-05-01T10-00-s-1.jsonl",
        &[
            &META.replace(r#""kind":"main""#, r#""kind":"main","version":3"#),
            r#"{"id":"u1","type":"user","content":"still here"}"#,
            "garbage {",
            r#"{"id":"g1","type":"gemini","content":"answer","tokens":"lots"}"#,
            r#"{"id":"z1","type":"hologram","content":"from the future"}"#,
            r#"{"id":"g2","type":"gemini","content":"and more"}"#,
        ],
    );
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"id":"g3","type":"gem"#);
    fs::write(&path, bytes).unwrap();
    let s = load_one(tmp.path());
    // The records sessfs cannot read keep their place, as stored.
    assert_eq!(
        texts(&s),
        [
            "still here",
            r#"{"id":"g1","type":"gemini","content":"answer","tokens":"lots"}"#,
            r#"{"id":"z1","type":"hologram","content":"from the future"}"#,
            "and more"
        ]
    );
    assert_eq!(s.warnings.len(), 6, "{:?}", s.warnings);
    assert!(s.warnings.iter().any(|w| w.contains("unparsed.txt")));
    assert!(s
        .warnings
        .iter()
        .any(|w| w.contains("format version 3 is newer")));
    assert!(s.warnings.iter().any(|w| w.contains("line 3: skipped")));
    assert!(s.warnings.iter().any(|w| w.contains("(first: line 4: ")));
    assert!(s.warnings.iter().any(|w| w.contains("unknown type")));
    assert!(s.warnings.iter().any(|w| w.contains("partial last line")));

    // A legacy document that is not JSON at all still lists and shows its text, with a
    // warning.
    let bad = path.with_file_name("session-2026-05-02T10-00-s-9.json");
    fs::write(&bad, b"{\"sessionId\": \"s-9\", \"messages\": [").unwrap();
    let st = store(tmp.path());
    let l = st.list().into_iter().find(|l| l.id == "s-9").unwrap();
    let s = st.load(&l);
    assert_eq!(texts(&s), ["{\"sessionId\": \"s-9\", \"messages\": ["]);
    assert!(
        s.warnings[0].contains("not a Gemini conversation"),
        "{:?}",
        s.warnings
    );
}

#[test]
fn a_migrated_legacy_chat_is_listed_once() {
    let tmp = tempfile::tempdir().unwrap();
    chat(
        tmp.path(),
        "p",
        "session-2026-05-01T10-00-s-1.jsonl",
        &[META],
    );
    let legacy = tmp
        .path()
        .join(".gemini/tmp/p/chats/session-2026-05-01T10-00-s-1.json");
    fs::write(&legacy, r#"{"sessionId":"s-1","messages":[]}"#).unwrap();
    let listed = store(tmp.path()).list();
    assert_eq!(listed.len(), 1);
    assert!(kit::file_name(&listed[0].path).ends_with(".jsonl"));
}

#[test]
fn a_long_header_line_still_names_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<String> = (0..400).map(|i| format!("\"/srv/repo/dir-{i}\"")).collect();
    let meta = format!(
        r#"{{"sessionId":"long-1","projectHash":"h","startTime":"2026-05-01T10:00:00.000Z","lastUpdated":"2026-05-01T10:00:00.000Z","kind":"main","directories":[{}]}}"#,
        dirs.join(",")
    );
    assert!(meta.len() > 4096);
    chat(
        tmp.path(),
        "p",
        "session-2026-05-01T10-00-long-1.jsonl",
        &[&meta, r#"{"id":"u1","type":"user","content":"hello"}"#],
    );
    let st = store(tmp.path());
    let l = st.list();
    assert_eq!(l[0].id, "long-1");
    assert_eq!(st.load(&l[0]).id, "long-1");
}

/// A write keeps the listing while the chat still names the id it was listed under.
#[test]
fn an_append_keeps_the_listing_until_the_chat_names_another_id() {
    let tmp = tempfile::tempdir().unwrap();
    let path = chat(
        tmp.path(),
        "p",
        "session-2026-05-01T10-00-s-1.jsonl",
        &[META],
    );
    let st = store(tmp.path());
    let listed = st.list();
    assert_eq!(listed.len(), 1);
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str("{\"id\":\"u1\",\"type\":\"user\",\"content\":\"hello\"}\n");
    fs::write(&path, &text).unwrap();
    assert!(st.keeps_listing(&listed[0]), "an appended message");
    fs::write(&path, text.replace("\"s-1\"", "\"s-2\"")).unwrap();
    assert!(
        !st.keeps_listing(&listed[0]),
        "a header that names another id"
    );
}
