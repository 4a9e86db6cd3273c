// Realistic agentuse and ATSF stores, laid out file by file the way each agent writes them
// (see docs/formats.md part 2, sections 4 and 7). No public message data exists for either
// agent, so these generators are the fixtures: every id, field name and file name follows the
// agents' own writers, and every message text is distinct so tests can find it.
//
// Plain `//` comments on purpose: the stores' unit tests `include!` this file, where inner
// doc comments are not allowed. Only std and serde_json are used.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// 2026-01-01T00:00:00Z in milliseconds.
const T0: u64 = 1_767_225_600_000;

/// A 1x1 PNG, so asset sizes are real.
const PNG_1X1: [u8; 70] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 100, 96, 248, 95, 15, 0, 2,
    135, 1, 128, 235, 71, 186, 146, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];
/// `sha256-<first 16 hex of sha256(PNG_1X1)>.png`, as ATSF names assets.
const PNG_ASSET: &str = "sha256-497790947d466676.png";

/// A 60-byte silent WAV.
const WAV_SILENCE: [u8; 60] = [
    82, 73, 70, 70, 52, 0, 0, 0, 87, 65, 86, 69, 102, 109, 116, 32, 16, 0, 0, 0, 1, 0, 1, 0, 64,
    31, 0, 0, 128, 62, 0, 0, 2, 0, 16, 0, 100, 97, 116, 97, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0,
];
const WAV_ASSET: &str = "sha256-86b5f5a4a69b226c.wav";

/// A ULID for `ms` (48-bit time, Crockford base32) with a deterministic random part.
#[allow(dead_code)]
pub fn ulid(ms: u64, seq: u64) -> String {
    const A: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut s = String::with_capacity(26);
    for i in (0..10).rev() {
        s.push(A[((ms >> (5 * i)) & 31) as usize] as char);
    }
    let mut x = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5DEE_CE66_D1CE_4E5B;
    for _ in 0..16 {
        s.push(A[(x & 31) as usize] as char);
        x = x.rotate_right(5) ^ seq.wrapping_add(0x2545_F491);
    }
    s
}

fn write_bytes(out: &mut Vec<String>, path: &Path, bytes: &[u8]) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create fixture dir");
    }
    std::fs::write(path, bytes).expect("write fixture file");
    out.push(path.to_string_lossy().into_owned());
}

/// agentuse writes `JSON.stringify(value, null, 2)`.
fn write_pretty(out: &mut Vec<String>, path: &Path, v: &Value) {
    let text = serde_json::to_string_pretty(v).expect("serialize fixture");
    write_bytes(out, path, text.as_bytes());
}

/// A writer for one agentuse session directory.
struct AuSession {
    dir: PathBuf,
    /// The dir's path relative to the `session/` container, as artifact refs spell it.
    rel: String,
    id: String,
}

impl AuSession {
    fn new(container: &Path, parent_rel: Option<&str>, id: String, agent_id: &str) -> AuSession {
        let name = format!("{id}-{}", sanitize_agent(agent_id));
        let rel = match parent_rel {
            Some(p) => format!("{p}/subagent/{name}"),
            None => name,
        };
        AuSession {
            dir: container.join(&rel),
            rel,
            id,
        }
    }

    fn part(&self, out: &mut Vec<String>, msg: &str, ms: u64, seq: u64, body: Value) -> String {
        let pid = ulid(ms, seq);
        let mut v = json!({"id": pid, "sessionID": self.id, "messageID": msg});
        if let (Some(obj), Value::Object(b)) = (v.as_object_mut(), body) {
            obj.extend(b);
        }
        write_pretty(
            out,
            &self.dir.join(msg).join("part").join(format!("{pid}.json")),
            &v,
        );
        pid
    }
}

fn sanitize_agent(name: &str) -> String {
    let mut out = String::new();
    for c in name.to_lowercase().chars() {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_' {
            c
        } else {
            '-'
        };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    let t = out.trim_matches('-').to_string();
    if t.is_empty() {
        "default".into()
    } else {
        t
    }
}

#[allow(clippy::too_many_arguments)]
fn session_info(
    id: &str,
    parent: Option<&str>,
    status: &str,
    trigger: &str,
    agent: Value,
    cwd: &str,
    created: u64,
    updated: u64,
) -> Value {
    let mut v = json!({
        "id": id,
        "status": status,
        "trigger": trigger,
        "agent": agent,
        "model": "anthropic:claude-sonnet-4-0",
        "version": "0.15.0",
        "config": {"timeout": 300, "maxSteps": 50, "mcpServers": ["github"],
                   "subagents": [{"path": "./summarizer.agentuse", "name": "summarizer"}]},
        "project": {"root": cwd, "cwd": cwd},
        "time": {"created": created, "updated": updated}
    });
    if let (Some(p), Some(obj)) = (parent, v.as_object_mut()) {
        obj.insert("parentSessionID".into(), json!(p));
    }
    v
}

#[allow(clippy::too_many_arguments)]
fn message_json(
    id: &str,
    session: &str,
    created: u64,
    task: &str,
    user: Option<&str>,
    cwd: &str,
    cost: f64,
    tokens: [u64; 5],
) -> Value {
    let mut prompt = json!({"task": task});
    if let (Some(u), Some(obj)) = (user, prompt.as_object_mut()) {
        obj.insert("user".into(), json!(u));
    }
    json!({
        "id": id,
        "sessionID": session,
        "time": {"created": created, "completed": created + 45_000},
        "user": {"prompt": prompt},
        "assistant": {
            "system": ["You are a careful, terse assistant working in a Rust repository."],
            "modelID": "claude-sonnet-4-0",
            "providerID": "anthropic",
            "mode": "build",
            "path": {"cwd": cwd, "root": cwd},
            "cost": cost,
            "tokens": {"input": tokens[0], "output": tokens[1], "reasoning": tokens[2],
                       "cache": {"read": tokens[3], "write": tokens[4]}}
        }
    })
}

/// Lays out an agentuse store under `home/.local/share/agentuse/project/`: a completed code
/// review with tool calls (one failed), two spilled outputs (JSON and streamed text), a
/// compaction, a learning, a resumed prompt, a subagent with its own subagent; a failed run
/// with a session error; and an old `project/global/session/` run whose usage is only in
/// `step-finish` parts. Returns every file written.
#[allow(dead_code)]
pub fn write_agentuse(home: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let project = home.join(".local/share/agentuse/project");
    let container = project.join("5d41402abc4b2a76/session");
    let cwd = "/home/dev/projects/webapp";

    // --- 1. code review, completed, with subagents --------------------------------------
    let sid = ulid(T0, 1);
    let s = AuSession::new(&container, None, sid.clone(), "review/code-review");
    write_pretty(
        &mut out,
        &s.dir.join("session.json"),
        &session_info(
            &sid,
            None,
            "completed",
            "manual",
            json!({"id": "review/code-review", "name": "Code reviewer",
                   "filePath": "/home/dev/projects/webapp/agents/review/code-review.agentuse",
                   "description": "Reviews pending changes", "isSubAgent": false}),
            cwd,
            T0,
            T0 + 600_000,
        ),
    );
    write_pretty(
        &mut out,
        &s.dir.join("context.json"),
        &json!({"version": 1, "updatedAt": T0 + 590_000,
                "messages": [{"role": "user", "content": "Review the pending changes in src/ for correctness and style."}],
                "usage": {"activeTokens": 30_500, "contextLimit": 200_000, "usagePercentage": 15.25,
                          "compacted": true, "compactions": 1, "updatedAt": T0 + 590_000}}),
    );

    // Exchange 1.
    let m1_ms = T0 + 1_000;
    let m1 = ulid(m1_ms, 2);
    write_pretty(
        &mut out,
        &s.dir.join(&m1).join("message.json"),
        &message_json(
            &m1,
            &sid,
            m1_ms,
            "Review the pending changes in src/ for correctness and style.",
            Some("Focus on the router module."),
            cwd,
            0.0712,
            [12_000, 1_500, 300, 4_000, 1_000],
        ),
    );
    let mut t = m1_ms + 100;
    let mut seq = 10;
    let mut next = || {
        t += 500;
        seq += 1;
        (t, seq)
    };
    let (ms, q) = next();
    s.part(
        &mut out,
        &m1,
        ms,
        q,
        json!({"type": "reasoning",
        "text": "I should run the test suite before reading the router.",
        "time": {"start": ms, "end": ms + 200}}),
    );
    let (ms, q) = next();
    s.part(
        &mut out,
        &m1,
        ms,
        q,
        json!({"type": "text",
        "text": "Let me start by running the tests.", "time": {"start": ms, "end": ms + 50}}),
    );
    let (ms, q) = next();
    s.part(
        &mut out,
        &m1,
        ms,
        q,
        json!({"type": "tool", "callID": "toolu_01bash", "tool": "bash",
        "state": {"status": "completed", "input": {"command": "cargo test --quiet"},
                  "output": "test result: ok. 42 passed; 0 failed", "title": "cargo test --quiet",
                  "metadata": {"exitCode": 0}, "time": {"start": ms, "end": ms + 1_250}}}),
    );
    // A read whose full output was spilled to a JSON artifact.
    let (ms, q) = next();
    let art1 = format!("tool-output-read_file-{}.json", ulid(ms, 99));
    let full: String = (1..=400)
        .map(|i| {
            if i == 400 {
                "line 400 of the full file\n".to_string()
            } else {
                format!("// router.rs line {i}\n")
            }
        })
        .collect();
    let art_json = json!({"kind": "tool-output", "toolName": "read_file", "createdAt": ms,
        "sessionID": sid, "agentId": "review/code-review", "messageID": m1,
        "output": {"content": full}});
    let art_text = serde_json::to_string_pretty(&art_json).expect("serialize artifact");
    write_bytes(
        &mut out,
        &s.dir.join(&m1).join("artifact").join(&art1),
        art_text.as_bytes(),
    );
    s.part(&mut out, &m1, ms, q, json!({"type": "tool", "callID": "toolu_02read", "tool": "read_file",
        "state": {"status": "completed", "input": {"path": "src/router.rs"},
                  "output": {"content": "// router.rs line 1\n// router.rs line 2\n[... truncated ...]",
                             "metadata": {"fullOutputArtifact": {"kind": "tool-output",
                                 "path": format!("{}/{m1}/artifact/{art1}", s.rel),
                                 "bytes": art_text.len(), "originalChars": full.len()}}},
                  "time": {"start": ms, "end": ms + 40}}}));
    let (ms, q) = next();
    s.part(
        &mut out,
        &m1,
        ms,
        q,
        json!({"type": "tool", "callID": "toolu_03read", "tool": "read_file",
        "state": {"status": "error", "input": {"path": "src/routes.rs"},
                  "error": "ENOENT: no such file or directory, open 'src/routes.rs'",
                  "time": {"start": ms, "end": ms + 5}}}),
    );
    let (ms, q) = next();
    s.part(
        &mut out,
        &m1,
        ms,
        q,
        json!({"type": "log", "level": "debug",
        "message": "Loaded 3 tools from MCP server github", "time": {"start": ms}}),
    );
    let (ms, q) = next();
    s.part(
        &mut out,
        &m1,
        ms,
        q,
        json!({"type": "text",
        "text": "The tests pass. I'll delegate a summary of the diff to the summarizer.",
        "time": {"start": ms, "end": ms + 30}}),
    );
    let (ms, q) = next();
    s.part(
        &mut out,
        &m1,
        ms,
        q,
        json!({"type": "tool", "callID": "toolu_04sub", "tool": "subagent__summarizer",
        "state": {"status": "completed", "input": {"task": "Summarize the router diff"},
                  "output": "Summary: the router now validates paths before dispatch.",
                  "time": {"start": ms, "end": ms + 20_000}}}),
    );
    let (ms, q) = next();
    s.part(&mut out, &m1, ms, q, json!({"type": "log", "level": "warn",
        "message": "Tool output truncated for read_file", "toolId": "toolu_02read", "time": {"start": ms}}));
    let (ms, q) = next();
    s.part(
        &mut out,
        &m1,
        ms,
        q,
        json!({"type": "text",
        "text": "Review complete: one issue found in router path validation.",
        "time": {"start": ms + 20_000, "end": ms + 20_100}}),
    );

    // Subagent, and its own subagent.
    let cid = ulid(T0 + 20_000, 3);
    let c = AuSession::new(&container, Some(&s.rel), cid.clone(), "review/summarizer");
    write_pretty(
        &mut out,
        &c.dir.join("session.json"),
        &session_info(
            &cid,
            Some(&sid),
            "completed",
            "manual",
            json!({"id": "review/summarizer", "name": "Diff summarizer",
               "description": "Summarizes a diff in two sentences", "isSubAgent": true}),
            cwd,
            T0 + 20_000,
            T0 + 38_000,
        ),
    );
    let cm = ulid(T0 + 20_100, 4);
    write_pretty(
        &mut out,
        &c.dir.join(&cm).join("message.json"),
        &message_json(
            &cm,
            &cid,
            T0 + 20_100,
            "Summarize the router diff in two sentences.",
            None,
            cwd,
            0.0021,
            [900, 80, 0, 0, 0],
        ),
    );
    c.part(&mut out, &cm, T0 + 20_500, 40, json!({"type": "tool", "callID": "toolu_11lint",
        "tool": "subagent__linter",
        "state": {"status": "completed", "input": {"task": "Lint the router module"},
                  "output": "No lint warnings.", "time": {"start": T0 + 20_500, "end": T0 + 30_000}}}));
    c.part(
        &mut out,
        &cm,
        T0 + 30_500,
        41,
        json!({"type": "text",
        "text": "The router now validates paths. Dispatch rejects empty segments.",
        "time": {"start": T0 + 30_500, "end": T0 + 30_600}}),
    );
    let gid = ulid(T0 + 21_000, 5);
    let g = AuSession::new(&container, Some(&c.rel), gid.clone(), "review/linter");
    write_pretty(
        &mut out,
        &g.dir.join("session.json"),
        &session_info(
            &gid,
            Some(&cid),
            "completed",
            "manual",
            json!({"id": "review/linter", "name": "Linter", "isSubAgent": true}),
            cwd,
            T0 + 21_000,
            T0 + 29_000,
        ),
    );
    let gm = ulid(T0 + 21_100, 6);
    write_pretty(
        &mut out,
        &g.dir.join(&gm).join("message.json"),
        &message_json(
            &gm,
            &gid,
            T0 + 21_100,
            "Lint the router module and report warnings.",
            None,
            cwd,
            0.0008,
            [400, 20, 0, 0, 0],
        ),
    );
    g.part(
        &mut out,
        &gm,
        T0 + 22_000,
        50,
        json!({"type": "text",
        "text": "No lint warnings in the router module.", "time": {"start": T0 + 22_000}}),
    );

    // Exchange 2: a resumed run with a compaction and a spilled streamed output.
    let m2_ms = T0 + 300_000;
    let m2 = ulid(m2_ms, 7);
    write_pretty(&mut out, &s.dir.join(&m2).join("message.json"), &message_json(
        &m2, &sid, m2_ms,
        &format!("Continue from previous AgentUse session {sid}.\n\nPrevious session status: completed.\n\nNew instruction:\nAlso check error handling in src/handlers."),
        None, cwd, 0.0163, [3_000, 700, 0, 26_000, 0]));
    let mut t2 = m2_ms + 100;
    let mut seq2 = 60;
    let mut next2 = || {
        t2 += 500;
        seq2 += 1;
        (t2, seq2)
    };
    let (ms, q) = next2();
    s.part(
        &mut out,
        &m2,
        ms,
        q,
        json!({"type": "text", "role": "user", "synthetic": true,
        "text": "Also check error handling in src/handlers.", "time": {"start": ms, "end": ms}}),
    );
    let (ms, q) = next2();
    s.part(
        &mut out,
        &m2,
        ms,
        q,
        json!({"type": "compaction", "reason": "limit",
        "tokensBefore": 150_000, "tokensAfter": 30_000, "messagesBefore": 40, "messagesAfter": 6,
        "usagePercentBefore": 75.0, "time": {"start": ms}}),
    );
    let (ms, q) = next2();
    s.part(&mut out, &m2, ms, q, json!({"type": "reasoning",
        "text": "Handlers return early on error; the grep hits will show where unwrap hides failures.",
        "time": {"start": ms, "end": ms + 100}}));
    let (ms, q) = next2();
    let art2 = format!("tool-output-grep-{}.txt", ulid(ms, 98));
    let mut txt = format!(
        "# AgentUse Tool Output Artifact\nkind: tool-output\ntool: grep\ncreatedAt: 2026-01-01T00:05:02.000Z\nsessionID: {sid}\nagentId: review/code-review\nmessageID: {m2}\n\n"
    );
    for i in 1..=300 {
        txt.push_str(&format!("match {i}: src/router.rs:{i}: .unwrap()\n"));
    }
    write_bytes(
        &mut out,
        &s.dir.join(&m2).join("artifact").join(&art2),
        txt.as_bytes(),
    );
    s.part(&mut out, &m2, ms, q, json!({"type": "tool", "callID": "toolu_05grep", "tool": "grep",
        "state": {"status": "completed", "input": {"pattern": "unwrap\\(\\)", "path": "src"},
                  "output": format!("match 1: src/router.rs:1: .unwrap()\n[... truncated ...]\n\n[Full tool output saved to session artifact: {}/{m2}/artifact/{art2} ({} bytes).]", s.rel, txt.len()),
                  "time": {"start": ms, "end": ms + 300}}}));
    let (ms, q) = next2();
    s.part(
        &mut out,
        &m2,
        ms,
        q,
        json!({"type": "text",
        "text": "Found 300 unwrap calls; the handlers need proper error propagation.",
        "time": {"start": ms, "end": ms + 40}}),
    );
    let (ms, q) = next2();
    s.part(
        &mut out,
        &m2,
        ms,
        q,
        json!({"type": "learning", "status": "captured", "source": "auto",
        "count": 1, "titles": ["Prefer ? over unwrap in request handlers"], "time": {"start": ms}}),
    );

    // --- 2. a failed scheduled run ---------------------------------------------------------
    let eid = ulid(T0 + 3_600_000, 8);
    let e = AuSession::new(&container, None, eid.clone(), "deploy");
    let mut info = session_info(
        &eid,
        None,
        "error",
        "scheduled",
        json!({"id": "deploy", "name": "Deployer", "isSubAgent": false}),
        cwd,
        T0 + 3_600_000,
        T0 + 3_605_000,
    );
    if let Some(obj) = info.as_object_mut() {
        obj.insert("error".into(), json!({"message": "Invalid API key", "code": "AUTH_ERROR",
            "time": T0 + 3_605_000, "statusCode": 401, "url": "https://api.anthropic.com/v1/messages",
            "detail": "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}"}));
    }
    write_pretty(&mut out, &e.dir.join("session.json"), &info);
    let em = ulid(T0 + 3_600_500, 9);
    let mut emsg = message_json(
        &em,
        &eid,
        T0 + 3_600_500,
        "Deploy the staging branch to the preview environment.",
        None,
        cwd,
        0.0,
        [0; 5],
    );
    if let Some(a) = emsg.get_mut("assistant").and_then(Value::as_object_mut) {
        a.insert(
            "error".into(),
            json!({"message": "Invalid API key", "type": "AuthenticationError"}),
        );
    }
    write_pretty(&mut out, &e.dir.join(&em).join("message.json"), &emsg);
    e.part(
        &mut out,
        &em,
        T0 + 3_604_000,
        90,
        json!({"type": "error", "source": "agent",
        "code": "EXECUTION_ERROR", "message": "Unauthorized", "detail": "invalid x-api-key",
        "statusCode": 401, "time": {"start": T0 + 3_604_000}}),
    );

    // --- 3. the older `project/global/session/` layout, usage in step-finish parts -------
    let gcont = project.join("global/session");
    let oid = ulid(T0 - 86_400_000, 10);
    let o = AuSession::new(&gcont, None, oid.clone(), "scratch/hello");
    write_pretty(
        &mut out,
        &o.dir.join("session.json"),
        &session_info(
            &oid,
            None,
            "completed",
            "manual",
            json!({"id": "scratch/hello", "name": "Hello agent", "isSubAgent": false}),
            "/home/dev/scratch",
            T0 - 86_400_000,
            T0 - 86_300_000,
        ),
    );
    let om_ms = T0 - 86_399_000;
    let om = ulid(om_ms, 11);
    write_pretty(
        &mut out,
        &o.dir.join(&om).join("message.json"),
        &message_json(
            &om,
            &oid,
            om_ms,
            "Say hello and list the files in the current directory.",
            None,
            "/home/dev/scratch",
            0.0,
            [0; 5],
        ),
    );
    o.part(&mut out, &om, om_ms + 10, 70, json!({"type": "step-start"}));
    o.part(
        &mut out,
        &om,
        om_ms + 20,
        71,
        json!({"type": "text", "text": "Hello from the old global layout."}),
    );
    o.part(
        &mut out,
        &om,
        om_ms + 30,
        72,
        json!({"type": "tool", "callID": "call_ls", "tool": "ls",
        "state": {"status": "completed", "input": {"path": "."}, "output": "Cargo.toml\nsrc\n",
                  "time": {"start": om_ms + 30, "end": om_ms + 45}}}),
    );
    o.part(
        &mut out,
        &om,
        om_ms + 40,
        73,
        json!({"type": "step-finish", "cost": 0.0015,
        "tokens": {"input": 800, "output": 120, "reasoning": 0, "cache": {"read": 0, "write": 0}}}),
    );
    o.part(&mut out, &om, om_ms + 50, 74, json!({"type": "step-start"}));
    o.part(
        &mut out,
        &om,
        om_ms + 60,
        75,
        json!({"type": "text", "text": "Second step reply in the global layout: two entries."}),
    );
    o.part(
        &mut out,
        &om,
        om_ms + 70,
        76,
        json!({"type": "step-finish", "cost": 0.0025,
        "tokens": {"input": 900, "output": 60, "reasoning": 0, "cache": {"read": 0, "write": 0}}}),
    );

    out
}

/// One ATSF thread directory.
fn atsf_thread(
    out: &mut Vec<String>,
    project: &Path,
    manifest: &Value,
    messages: &[Value],
) -> PathBuf {
    let agent = project.join(".agent");
    if !agent.join("config.json").exists() {
        write_bytes(out, &agent.join("config.json"), (serde_json::to_string_pretty(&json!({
            "specVersion": "1.1",
            "createdBy": {"name": "AgentManager", "version": "1.0.0"},
            "defaults": {"agentId": "codex-acp", "modelId": "default", "interactionMode": "bypassPermissions"}
        })).expect("serialize") + "\n").as_bytes());
        write_bytes(out, &agent.join(".gitignore"),
            b"# Agent Thread Storage Format - default .gitignore\nthreads/*/messages.jsonl\nthreads/*/assets/\n");
    }
    let id = manifest["threadId"].as_str().unwrap_or("thread");
    let dir = agent.join("threads").join(id);
    write_bytes(
        out,
        &dir.join("thread.json"),
        (serde_json::to_string_pretty(manifest).expect("serialize") + "\n").as_bytes(),
    );
    // The reference app rewrites the whole file: compact lines, `\n` after each.
    let mut text = String::new();
    for m in messages {
        text.push_str(&serde_json::to_string(m).expect("serialize"));
        text.push('\n');
    }
    write_bytes(out, &dir.join("messages.jsonl"), text.as_bytes());
    dir
}

fn atsf_manifest(
    id: &str,
    title: &str,
    created: &str,
    updated: &str,
    context: Value,
    counts: [u64; 4],
) -> Value {
    json!({
        "specVersion": "1.1",
        "threadId": id,
        "title": title,
        "createdAt": created,
        "updatedAt": updated,
        "agent": {"id": "codex-acp", "name": "codex-acp", "protocol": "acp"},
        "context": context,
        "stats": {"messageCount": counts[0], "userMessageCount": counts[1],
                  "agentMessageCount": counts[2], "toolCallCount": counts[3]}
    })
}

/// Lays out ATSF threads: a project thread at `home/projects/webapp` with an image asset,
/// thinking, tool calls (one with a diff, one failed), a resource and a link; a forked thread
/// inside an AgentManager worktree (`~/.local/share/agentmanager/worktrees/…`) with audio; and
/// a thread in a project four levels deep. Returns every file written.
#[allow(dead_code)]
pub fn write_atsf(home: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let webapp = home.join("projects/webapp");
    let t1 = "3b1f6c2e-8a4d-4f1e-9c7b-2d5e8f1a6b3c";
    let mut m1 = atsf_manifest(
        t1,
        "Fix empty password crash",
        "2026-02-17T10:02:19.681Z",
        "2026-02-17T10:09:41.250Z",
        json!({"workingDir": "/home/dev/projects/webapp"}),
        [5, 2, 3, 30],
    );
    if let Some(obj) = m1.as_object_mut() {
        obj.insert("metadata".into(), json!({"interactionMode": "full-access"}));
    }
    let old = "export function validate(p: string) {\n  if (!p) throw new Error('empty');\n  return p.length > 0;\n}\n";
    let new = "export function validate(p?: string) {\n  if (!p) return false;\n  return (p ?? '').length > 0;\n}\n";
    let dir = atsf_thread(
        &mut out,
        &webapp,
        &m1,
        &[
            json!({"id": "0c5e7a90-1f2b-4c3d-8e4f-5a6b7c8d9e01", "role": "user", "timestamp": "2026-02-17T10:02:19.681Z",
               "content": [{"type": "text", "text": "The login page crashes when the password field is empty; screenshot attached."},
                           {"type": "image", "assetRef": PNG_ASSET, "mimeType": "image/png"}]}),
            json!({"id": "1d6f8b01-2a3c-4d5e-9f60-6b7c8d9e0f12", "role": "agent", "timestamp": "2026-02-17T10:02:25.066Z",
               "content": [{"type": "thinking", "text": "The crash probably comes from validating an undefined password."},
                           {"type": "text", "text": "I'll read the login form and fix the validation."},
                           {"type": "tool_call_ref", "toolCallId": "call_read_1"},
                           {"type": "tool_call_ref", "toolCallId": "call_edit_1"}],
               "toolCalls": [
                   {"toolCallId": "call_read_1", "name": "Read", "title": "Read src/login.ts", "kind": "read",
                    "status": "completed", "input": "{\"path\":\"src/login.ts\"}", "output": old,
                    "locations": [{"path": "src/login.ts"}]},
                   {"toolCallId": "call_edit_1", "name": "Edit", "title": "Edit src/login.ts", "kind": "edit",
                    "status": "completed", "input": "{\"path\":\"src/login.ts\",\"old_string\":\"throw\"}",
                    "output": "Applied 1 edit to src/login.ts",
                    "diff": {"path": "src/login.ts", "oldText": old, "newText": new}},
                   {"toolCallId": "call_test_1", "name": "Bash", "title": "npm test -- login", "kind": "execute",
                    "status": "failed", "input": "npm test -- login", "output": "1 failing: login.spec.ts expects trimmed input"}],
               "stopReason": "end_turn", "model": "gpt-5-codex", "tokens": {"input": 2100, "output": 340}}),
            json!({"id": "2e7a9c12-3b4d-4e6f-a071-7c8d9e0f1a23", "role": "user", "timestamp": "2026-02-17T10:05:00.000Z",
               "content": [{"type": "text", "text": "Tests still fail; see the spec file and its fixture."},
                           {"type": "resource_link", "uri": "file:///home/dev/projects/webapp/test/login.spec.ts",
                            "name": "login.spec.ts", "mimeType": "text/typescript"},
                           {"type": "resource", "uri": "file:///home/dev/projects/webapp/test/fixtures.json",
                            "mimeType": "application/json", "text": "{\"user\":\"demo\"}"}]}),
            json!({"id": "3f8b0d23-4c5e-4f70-b182-8d9e0f1a2b34", "role": "agent", "timestamp": "2026-02-17T10:09:30.000Z",
               "content": [{"type": "text", "text": "The spec expected a trimmed password; both login tests now pass."}],
               "toolCalls": [{"toolCallId": "call_test_2", "name": "Bash", "title": "npm test -- login", "kind": "execute",
                              "status": "completed", "input": "npm test -- login", "output": "2 passing (41ms)", "duration": 3400}]}),
            json!({"id": "4a9c1e34-5d6f-4081-c293-9e0f1a2b3c45", "role": "system", "timestamp": "2026-02-17T10:09:41.250Z",
               "content": [{"type": "text", "text": "Session resumed after the agent process restarted."}]}),
        ],
    );
    write_bytes(&mut out, &dir.join("assets").join(PNG_ASSET), &PNG_1X1);

    // A worktree thread forked from the first one.
    let wt = home.join(".local/share/agentmanager/worktrees/webapp/thread-7c9e2f41");
    let t2 = "7c9e2f41-5b6a-4c3d-8e2f-1a9b0c7d6e5f";
    let wt_path = wt.to_string_lossy().into_owned();
    let mut m2 = atsf_manifest(
        t2,
        "Port login fix to signup",
        "2026-02-18T08:00:00.000Z",
        "2026-02-18T08:01:10.000Z",
        json!({"workingDir": wt_path, "worktree": {"path": wt_path, "branch": "am-7c9e2f41"}}),
        [2, 1, 1, 0],
    );
    if let Some(obj) = m2.as_object_mut() {
        obj.insert("parentThreadId".into(), json!(t1));
        obj.insert("metadata".into(), json!({"interactionMode": "read-only"}));
    }
    let dir2 = atsf_thread(
        &mut out,
        &wt,
        &m2,
        &[
            json!({"id": "5b0d2f45-6e70-4192-d3a4-0f1a2b3c4d56", "role": "user", "timestamp": "2026-02-18T08:00:00.000Z",
               "content": [{"type": "text", "text": "Port the login fix to the signup form; voice note attached."},
                           {"type": "audio", "assetRef": WAV_ASSET, "mimeType": "audio/wav"}]}),
            json!({"id": "6c1e3056-7f81-42a3-e4b5-1a2b3c4d5e67", "role": "agent", "timestamp": "2026-02-18T08:01:10.000Z",
               "content": [{"type": "text", "text": "Signup now shares the validate() helper from login.ts."}]}),
        ],
    );
    write_bytes(&mut out, &dir2.join("assets").join(WAV_ASSET), &WAV_SILENCE);

    // A project four levels below home.
    let api = home.join("code/clients/acme/api");
    let t3 = "9e2a4c67-8091-43b4-f5c6-2b3c4d5e6f78";
    atsf_thread(
        &mut out,
        &api,
        &atsf_manifest(
            t3,
            "Explain the rate limiter",
            "2026-02-19T14:30:00.000Z",
            "2026-02-19T14:30:20.000Z",
            json!({"workingDir": "/home/dev/code/clients/acme/api"}),
            [2, 1, 1, 0],
        ),
        &[
            json!({"id": "7d2f4167-8092-44b5-a6c7-3c4d5e6f7a89", "role": "user", "timestamp": "2026-02-19T14:30:00.000Z",
               "content": [{"type": "text", "text": "How does the token bucket in ratelimit.go refill?"}]}),
            json!({"id": "8e305278-90a3-45c6-b7d8-4d5e6f7a8b90", "role": "agent", "timestamp": "2026-02-19T14:30:20.000Z",
               "content": [{"type": "thinking", "text": "The refill happens lazily on each Take call."},
                           {"type": "text", "text": "Tokens refill lazily: each Take adds elapsed × rate, capped at the burst size."}]}),
        ],
    );
    out
}
