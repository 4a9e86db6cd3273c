use super::*;
use std::fs;

mod seeds {
    include!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/common/seeds_json.rs"
    ));
}

fn env_for(home: &Path) -> Env {
    Env::at_home(home)
}

fn store(home: &Path) -> AgentuseStore {
    let roots: Vec<Root> = candidates(&env_for(home))
        .into_iter()
        .filter(|r| r.path.is_dir())
        .collect();
    AgentuseStore::new(roots)
}

fn load_all(st: &AgentuseStore) -> Vec<Session> {
    st.list().iter().map(|l| st.load(l)).collect()
}

#[test]
fn candidates_honour_xdg_data_home() {
    let mut env = env_for(Path::new("/h"));
    assert_eq!(
        candidates(&env)[0].path,
        PathBuf::from("/h/.local/share/agentuse/project")
    );
    env.vars.insert("XDG_DATA_HOME".into(), "/x".into());
    let r = &candidates(&env)[0];
    assert_eq!(r.path, PathBuf::from("/x/agentuse/project"));
    assert_eq!(r.how, "XDG_DATA_HOME");
}

#[test]
fn sanitizes_like_agentuse() {
    assert_eq!(
        sanitize_agent_name("social/quotes/1-quotes-create"),
        "social-quotes-1-quotes-create"
    );
    assert_eq!(sanitize_agent_name("  "), "default");
    assert_eq!(sanitize_agent_name("A__b!!c"), "a__b-c");
}

#[test]
fn generated_store_lists_top_level_sessions_only() {
    let tmp = tempfile::tempdir().unwrap();
    let written = seeds::write_agentuse(tmp.path());
    assert!(!written.is_empty());
    let st = store(tmp.path());
    let listed = st.list();
    assert_eq!(listed.len(), 3, "{listed:#?}");
    for l in &listed {
        assert!(is_ulid(&l.id), "{}", l.id);
        assert_eq!(l.sources[0], l.path);
        assert!(!l.path.to_string_lossy().contains("/subagent/"));
    }
    for s in load_all(&st) {
        assert!(s.warnings.is_empty(), "{}: {:?}", s.id, s.warnings);
    }
}

fn find<'a>(sessions: &'a [Session], tag: &str) -> &'a Session {
    sessions
        .iter()
        .find(|s| s.tags.iter().any(|t| t == tag))
        .unwrap_or_else(|| panic!("no session tagged {tag}"))
}

#[test]
fn main_session_has_tools_artifacts_compaction_and_usage() {
    let tmp = tempfile::tempdir().unwrap();
    seeds::write_agentuse(tmp.path());
    let sessions = load_all(&store(tmp.path()));
    let s = find(&sessions, "agent:review/code-review");
    assert_eq!(s.title.as_deref(), Some("Code reviewer"));
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/projects/webapp"));
    assert!(s.tags.contains(&"status:completed".to_string()));
    assert!(s.created_at.is_some() && s.updated_at.is_some());
    assert_eq!(s.messages[0].role, Role::User);

    let calls: Vec<&ToolCall> = s.messages.iter().flat_map(|m| &m.tool_calls).collect();
    let bash = calls.iter().find(|c| c.tool_name == "bash").unwrap();
    assert_eq!(bash.is_error, Some(false));
    assert_eq!(bash.duration_ms, Some(1250));
    assert_eq!(bash.input["command"], "cargo test --quiet");
    let failed = calls.iter().find(|c| c.is_error == Some(true)).unwrap();
    assert!(failed.output.as_deref().unwrap().contains("ENOENT"));
    // Spilled outputs, JSON and streamed text, are inlined in full.
    let read = calls.iter().find(|c| c.tool_name == "read_file").unwrap();
    assert!(read
        .output
        .as_deref()
        .unwrap()
        .contains("line 400 of the full file"));
    let grep = calls.iter().find(|c| c.tool_name == "grep").unwrap();
    let g = grep.output.as_deref().unwrap();
    assert!(g.contains("match 300: src/router.rs"), "{g}");
    assert!(!g.contains("# AgentUse Tool Output Artifact"));

    assert!(s
        .messages
        .iter()
        .any(|m| m.kind == MessageKind::CompactionSummary));
    assert!(s.messages.iter().any(|m| m.thinking.is_some()));
    // Text after a tool call opens a new assistant message.
    let a: Vec<&Message> = s
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert!(a.len() >= 3);
    // The resumed prompt (a user text part) is a user message.
    assert_eq!(s.turn_count(), 3);
    let cost = s.cost();
    assert_eq!(cost.input_tokens, 12_000 + 3_000);
    assert!((cost.total_usd - 0.0875).abs() < 1e-9, "{}", cost.total_usd);
    assert_eq!(s.primary_model().as_deref(), Some("claude-sonnet-4-0"));
}

#[test]
fn subagents_nest_with_parent_links() {
    let tmp = tempfile::tempdir().unwrap();
    seeds::write_agentuse(tmp.path());
    let sessions = load_all(&store(tmp.path()));
    let s = find(&sessions, "agent:review/code-review");
    assert_eq!(s.subagents.len(), 1);
    let sub = &s.subagents[0];
    assert!(sub.name.ends_with("-review-summarizer"), "{}", sub.name);
    assert_eq!(sub.unified_id, None);
    let calls: Vec<&ToolCall> = s.messages.iter().flat_map(|m| &m.tool_calls).collect();
    let spawn = calls
        .iter()
        .find(|c| c.tool_name == "subagent__summarizer")
        .unwrap();
    assert_eq!(
        sub.tool_call_id.as_deref(),
        Some(spawn.tool_call_id.as_str())
    );
    let child = sub.session.as_ref().unwrap();
    assert_eq!(child.parent.as_deref(), Some(s.unified_id().as_str()));
    assert_eq!(child.id, id_from_dir_name(&sub.name));
    assert!(child.warnings.is_empty(), "{:?}", child.warnings);
    assert_eq!(child.subagents.len(), 1, "grandchild");
    let grand = child.subagents[0].session.as_ref().unwrap();
    assert_eq!(grand.parent.as_deref(), Some(child.unified_id().as_str()));
    assert!(!grand.messages.is_empty());
}

#[test]
fn error_session_ends_with_the_error() {
    let tmp = tempfile::tempdir().unwrap();
    seeds::write_agentuse(tmp.path());
    let sessions = load_all(&store(tmp.path()));
    let s = find(&sessions, "status:error");
    let last = s.messages.last().unwrap();
    assert_eq!(last.role, Role::System);
    assert!(
        last.content.starts_with("Session failed (AUTH_ERROR)"),
        "{}",
        last.content
    );
    assert!(s.messages.iter().any(|m| m
        .content
        .contains("Error in agent (EXECUTION_ERROR) HTTP 401")));
    assert!(s.warnings.is_empty());
}

/// A nested run's messages changed and the parent kept its old render for the life of
/// the mount (found by the chaos test): its files were not among the parent's sources.
#[test]
fn nested_runs_files_version_the_parent() {
    let tmp = tempfile::tempdir().unwrap();
    seeds::write_agentuse(tmp.path());
    let st = store(tmp.path());
    let with_nested: Vec<_> = st
        .list()
        .into_iter()
        .filter(|l| l.path.join("subagent").is_dir())
        .collect();
    assert!(!with_nested.is_empty(), "the seeds have a nested run");
    for l in with_nested {
        let nested_messages = l
            .sources
            .iter()
            .filter(|p| p.to_string_lossy().contains("/subagent/"))
            .filter(|p| p.ends_with("message.json"))
            .count();
        assert!(nested_messages > 0, "{:?}", l.sources);
    }
}

#[test]
fn global_layout_sums_step_finish_parts() {
    let tmp = tempfile::tempdir().unwrap();
    seeds::write_agentuse(tmp.path());
    let st = store(tmp.path());
    let l = st
        .list()
        .into_iter()
        .find(|l| l.path.to_string_lossy().contains("/global/session/"))
        .unwrap();
    let s = st.load(&l);
    let c = s.cost();
    assert_eq!(c.input_tokens, 800 + 900);
    assert_eq!(c.output_tokens, 120 + 60);
    assert!((c.total_usd - 0.004).abs() < 1e-9);
}

#[test]
fn corrupt_parts_and_missing_message_json_are_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    seeds::write_agentuse(tmp.path());
    let st = store(tmp.path());
    let l = st
        .list()
        .into_iter()
        .find(|l| l.path.to_string_lossy().contains("code-review"))
        .unwrap();
    let msgs = message_dirs(&l.path);
    // A bad part, a half-written part, and an exchange without message.json.
    let parts = part_files(&msgs[0].join("part"));
    fs::write(&parts[0], b"{\"id\": \"x\", \"type\": \"te").unwrap();
    fs::write(
        msgs[0].join("part").join("01ZZZZZZZZZZZZZZZZZZZZZZZZ.json"),
        b"[1,2",
    )
    .unwrap();
    fs::remove_file(msgs[1].join("message.json")).unwrap();
    fs::write(
        msgs[1].join("part").join("01ZZZZZZZZZZZZZZZZZZZZZZZY.json"),
        br#"{"type":"hologram"}"#,
    )
    .unwrap();
    let listed = st.list();
    assert_eq!(listed.len(), 3, "still listed");
    let s = st.load(&l);
    // The missing message.json, then one counted warning per kind of unparsable part.
    assert_eq!(s.warnings.len(), 3, "{:?}", s.warnings);
    assert!(s
        .warnings
        .iter()
        .any(|w| w.starts_with("2 part files could not be parsed")));
    // The bad parts are shown as stored; the bare `hologram` marker only counted.
    let shown: Vec<&str> = s
        .messages
        .iter()
        .filter(|m| {
            m.label
                .as_deref()
                .is_some_and(|l| l.starts_with("unparsed "))
        })
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(shown, ["{\"id\": \"x\", \"type\": \"te", "[1,2"]);
    assert!(s
        .warnings
        .iter()
        .any(|w| w.contains("message.json: missing")));
    assert!(s.warnings.iter().any(|w| w.contains("invalid JSON")));
    assert!(s.warnings.iter().any(|w| w.contains("hologram")));
    assert!(!s.messages.is_empty());
}

#[test]
fn missing_and_garbage_session_json_still_load() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp
        .path()
        .join("project/abc/session/01JABCDEFGHJKMNPQRSTVWXYZ0-x");
    fs::create_dir_all(dir.join("01JABCDEFGHJKMNPQRSTVWXYZ1/part")).unwrap();
    fs::write(dir.join("01JABCDEFGHJKMNPQRSTVWXYZ1/message.json"), b"null").unwrap();
    fs::write(
        dir.join("01JABCDEFGHJKMNPQRSTVWXYZ1/part/01JABCDEFGHJKMNPQRSTVWXYZ2.json"),
        br#"{"type":"tool","callID":"c","tool":"t","state":{"status":"completed","input":1,"output":{"metadata":{"fullOutputArtifact":{"kind":"tool-output","path":"../../../../etc/passwd"}}}}}"#,
    )
    .unwrap();
    let st = AgentuseStore::new(vec![Root::new(
        Agent::Agentuse,
        tmp.path().join("project"),
        "t",
    )]);
    let l = st.list();
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].id, "01JABCDEFGHJKMNPQRSTVWXYZ0");
    let s = st.load(&l[0]);
    assert!(s.warnings.iter().any(|w| w.contains("session.json")));
    assert_eq!(s.messages.len(), 1);
    // A path outside `artifact/` is never followed.
    assert!(s.messages[0].tool_calls[0]
        .output
        .as_deref()
        .unwrap()
        .contains("fullOutputArtifact"));
    fs::write(dir.join("session.json"), b"\xff\xfe garbage").unwrap();
    let s = st.load(&l[0]);
    assert!(s
        .warnings
        .iter()
        .any(|w| w.contains("session.json: invalid JSON")));
}

#[test]
fn roots_may_name_a_project_or_a_session() {
    let tmp = tempfile::tempdir().unwrap();
    seeds::write_agentuse(tmp.path());
    let project = tmp.path().join(".local/share/agentuse/project");
    let all = session_dirs(&project);
    assert_eq!(all.len(), 3);
    let one_project = all[0].parent().unwrap().parent().unwrap();
    assert!(!session_dirs(one_project).is_empty());
    assert_eq!(
        session_dirs(all[0].parent().unwrap()).len(),
        session_dirs(one_project).len()
    );
    assert_eq!(session_dirs(&all[0]), vec![all[0].clone()]);
}

#[test]
fn fixture_home_loads() {
    let home = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let st = store(&home);
    let listed = st.list();
    assert!(!listed.is_empty());
    for l in &listed {
        let s = st.load(l);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert!(!s.messages.is_empty());
    }
}
