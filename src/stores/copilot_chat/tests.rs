use super::request::*;
use super::*;
use serde_json::json;

#[test]
fn a_log_replays_sets_pushes_cuts_and_deletes() {
    let log = [
        json!({"kind": 0, "v": {"version": 3, "requests": [], "customTitle": "t"}}),
        json!({"kind": 2, "k": ["requests"], "v": [{"requestId": "r1", "response": []}]}),
        json!({"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": "a"}, {"value": "b"}]}),
        json!({"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": "c"}], "i": 1}),
        json!({"kind": 1, "k": ["requests", 0, "modelId"], "v": "copilot/gpt-4.1"}),
        json!({"kind": 3, "k": ["customTitle"]}),
    ]
    .iter()
    .map(|v| v.to_string() + "\n")
    .collect::<String>();
    let doc = parse_doc(log.as_bytes(), true).expect("log");
    assert!(doc.unparsed.is_empty() && doc.cut.is_none());
    assert_eq!(
        Value::Object(doc.state),
        json!({"version": 3, "requests": [{"requestId": "r1", "modelId": "copilot/gpt-4.1",
               "response": [{"value": "a"}, {"value": "c"}]}]})
    );
}

#[test]
fn a_cut_log_line_and_a_cut_flat_file_keep_what_came_before() {
    let log = format!(
        "{}\n{{\"kind\":1,\"k\":[\"customTi",
        json!({"kind": 0, "v": {"requests": []}})
    );
    let doc = parse_doc(log.as_bytes(), true).expect("log");
    assert_eq!(doc.cut.as_deref(), Some("{\"kind\":1,\"k\":[\"customTi"));
    let flat = r#"{"version": 3, "sessionId": "s", "requests": [{"requestId": "a"}, {"requestId": "b", "mess"#;
    let doc = parse_doc(flat.as_bytes(), false).expect("flat");
    assert_eq!(doc.state["requests"].as_array().map(Vec::len), Some(1));
    assert_eq!(doc.state["sessionId"], "s");
    assert!(doc.cut.as_deref().is_some_and(|c| c.contains("\"b\"")));
    assert!(parse_doc(b"[1]", false).is_none());
}

#[test]
fn uris_become_paths() {
    assert_eq!(uri_string("file:///home/u/my%20app"), "/home/u/my app");
    assert_eq!(
        uri_string("vscode-remote://ssh-remote%2Bbox/home/u"),
        "vscode-remote://ssh-remote%2Bbox/home/u"
    );
    assert_eq!(
        uri_text(&json!({"$mid": 1, "scheme": "file", "path": "/a/b.rs"})).as_deref(),
        Some("/a/b.rs")
    );
}

/// Every prefix of the bundled samples (a file cut anywhere while the editor writes it)
/// loads without a panic.
#[test]
fn every_cut_of_the_samples_loads() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/home/.config/Code/User/workspaceStorage/9f1c2e7a4b3d5a6c8e0f1a2b3c4d5e6f/chatSessions"
    );
    for (name, log) in [
        ("7d3e9a10-4c2b-4e8f-9a1d-5b6c7d8e9f01.jsonl", true),
        ("2b8f4c61-0e7a-4d3b-b5c9-8a1e2f3d4c5b.json", false),
    ] {
        let bytes = std::fs::read(Path::new(dir).join(name)).expect("sample");
        for cut in (0..=bytes.len()).step_by(5) {
            if let Some(doc) = parse_doc(&bytes[..cut], log) {
                let b = SessionBuilder::new(Agent::CopilotChat, "x");
                let _ = Parser::new(b).session(&doc.state).finish();
            }
        }
    }
}
