//! mods conversations, written here the way `mods` saves them (charmbracelet/mods
//! `main.go` `saveConversation`, `internal/cache/convo.go`, `db.go` @ 0425d0d7): for each
//! conversation `gob.NewEncoder(f).Encode(&messages)` of its `[]proto.Message` into
//! `<cache path>/conversations/<sha1>.gob`, then its row in `conversations/mods.db`, built
//! from the DDL `db.go` runs (`fixtures/schema/mods.sql`). Files of mods 1.0-1.7 hold
//! go-openai's `[]openai.ChatCompletionMessage` instead. Rendered with `sessfs render` and
//! mounted once.
//!
//! The gob bytes come from the small encoder below, which follows the format as
//! <https://pkg.go.dev/encoding/gob> specifies it (a stream of counted messages; type
//! definitions `(-id, wireType)` before the value `(id, value)`; unsigned integers below 128
//! in one byte, else a negated byte count and big-endian bytes; signed integers with the
//! complement bit; structs as field-number deltas ending in 0, zero fields left out; a
//! non-struct top-level value after a 0 delta) and defines mods' types in the order Go's
//! encoder does: `writer_matches_what_go_wrote` compares it with bytes Go 1.19 wrote.
//!
//! Every expected value comes from the writer or the lists below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, shape, shapes, transcript, Rendered};
use common::{stdout, Home, Mount};
use rusqlite::{params, Connection};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, SystemTime};

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/mods.sql"
));

/// An API key planted in `mods.yml` and a Copilot token in the expiring cache `temp/`.
const SECRET: &str = "sk-PLANTED-mods-key-doNotRead-000000";
const TOKEN: &str = "tid=PLANTED-copilot-token-doNotRead";
const CACHE: &str = ".local/share/mods";
const CONVOS: &str = ".local/share/mods/conversations";

/// Conversation ids: SHA-1s, as `newConversationID` makes them.
const A: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
const B: &str = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
const C: &str = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3";
const D: &str = "d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4";
const E: &str = "e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5";
const F: &str = "f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6";
const G: &str = "9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f";

// ---------------------------------------------------------------------------------------
// A gob encoder for the types mods saves

/// Go's unsigned integer: one byte below 128, else the negated byte count and the bytes.
fn uint(b: &mut Vec<u8>, u: u64) {
    if u < 0x80 {
        b.push(u as u8);
        return;
    }
    let be = u.to_be_bytes();
    let skip = (u.leading_zeros() / 8) as usize;
    b.push((8 - skip as u8).wrapping_neg());
    b.extend_from_slice(&be[skip..]);
}

/// Go's signed integer: bit 0 says whether the rest is complemented.
fn int(b: &mut Vec<u8>, i: i64) {
    let u = if i < 0 {
        ((!i as u64) << 1) | 1
    } else {
        (i as u64) << 1
    };
    uint(b, u);
}

/// A string or a byte slice: its length, then its bytes.
fn counted(b: &mut Vec<u8>, s: &[u8]) {
    uint(b, s.len() as u64);
    b.extend_from_slice(s);
}

/// One message of the stream: its byte count, then its body.
fn message(out: &mut Vec<u8>, body: &[u8]) {
    uint(out, body.len() as u64);
    out.extend_from_slice(body);
}

/// A struct value's fields: each sent after its number's delta from the last one sent.
struct Fields<'a> {
    b: &'a mut Vec<u8>,
    last: i64,
}

impl<'a> Fields<'a> {
    fn new(b: &'a mut Vec<u8>) -> Fields<'a> {
        Fields { b, last: -1 }
    }

    fn field(&mut self, n: i64) -> &mut Vec<u8> {
        uint(self.b, (n - self.last) as u64);
        self.last = n;
        self.b
    }

    /// A string field, left out when empty (its zero value).
    fn text(&mut self, n: i64, s: &[u8]) {
        if !s.is_empty() {
            counted(self.field(n), s);
        }
    }

    fn end(self) {
        uint(self.b, 0);
    }
}

// Predefined type ids.
const BOOL: i64 = 1;
const INT: i64 = 2;
const BYTES: i64 = 5;
const STRING: i64 = 6;

/// `CommonType{Name, Id}` inside a type definition.
fn common_type(b: &mut Vec<u8>, name: &str, id: i64) {
    let mut f = Fields::new(b);
    f.text(0, name.as_bytes());
    int(f.field(1), id);
    f.end();
}

/// The message defining struct type `id`: `wireType{StructT: structType{CommonType,
/// Field: []fieldType{Name, Id}}}`.
fn define_struct(out: &mut Vec<u8>, id: i64, name: &str, fields: &[(&str, i64)]) {
    let mut b = Vec::new();
    int(&mut b, -id);
    let mut wire = Fields::new(&mut b);
    let st = wire.field(2);
    let mut s = Fields::new(st);
    common_type(s.field(0), name, id);
    let list = s.field(1);
    uint(list, fields.len() as u64);
    for (fname, fid) in fields {
        let mut f = Fields::new(list);
        f.text(0, fname.as_bytes());
        int(f.field(1), *fid);
        f.end();
    }
    s.end();
    wire.end();
    message(out, &b);
}

/// The message defining slice type `id` of `elem`: `wireType{SliceT: sliceType{CommonType,
/// Elem}}`.
fn define_slice(out: &mut Vec<u8>, id: i64, name: &str, elem: i64) {
    let mut b = Vec::new();
    int(&mut b, -id);
    let mut wire = Fields::new(&mut b);
    let st = wire.field(1);
    let mut s = Fields::new(st);
    common_type(s.field(0), name, id);
    int(s.field(1), elem);
    s.end();
    wire.end();
    message(out, &b);
}

/// The value message: a top-level slice (a non-struct value, after a zero delta) of `n`
/// structs, each written by `each`.
fn slice_value(out: &mut Vec<u8>, id: i64, n: usize, mut each: impl FnMut(usize, &mut Vec<u8>)) {
    let mut b = Vec::new();
    int(&mut b, id);
    uint(&mut b, 0);
    uint(&mut b, n as u64);
    for i in 0..n {
        each(i, &mut b);
    }
    message(out, &b);
}

/// A call as mods' `proto.ToolCall` holds it.
#[derive(Clone)]
struct Call {
    id: &'static str,
    name: &'static str,
    args: &'static str,
    is_error: bool,
}

fn call(id: &'static str, name: &'static str, args: &'static str) -> Call {
    Call {
        id,
        name,
        args,
        is_error: false,
    }
}

/// mods' `proto.Message`; `content` is bytes, as a Go string is.
#[derive(Clone)]
struct Msg {
    role: &'static str,
    content: Vec<u8>,
    calls: Vec<Call>,
}

fn msg(role: &'static str, content: &str) -> Msg {
    Msg {
        role,
        content: content.as_bytes().to_vec(),
        calls: Vec::new(),
    }
}

fn with_calls(role: &'static str, content: &str, calls: Vec<Call>) -> Msg {
    Msg {
        calls,
        ..msg(role, content)
    }
}

/// `gob.NewEncoder(f).Encode(&messages)` of a `[]proto.Message`, types defined as Go
/// defines them for it: `[]Message` (69), `Message` (65), `[]ToolCall` (68), `ToolCall`
/// (66), `Function` (67); `pkg` is the Go package the slice names carry.
fn proto_gob(pkg: &str, msgs: &[Msg]) -> Vec<u8> {
    let mut out = Vec::new();
    define_slice(&mut out, 69, "", 65);
    define_struct(
        &mut out,
        65,
        "Message",
        &[("Role", STRING), ("Content", STRING), ("ToolCalls", 68)],
    );
    define_slice(&mut out, 68, &format!("[]{pkg}.ToolCall"), 66);
    define_struct(
        &mut out,
        66,
        "ToolCall",
        &[("ID", STRING), ("Function", 67), ("IsError", BOOL)],
    );
    define_struct(
        &mut out,
        67,
        "Function",
        &[("Name", STRING), ("Arguments", BYTES)],
    );
    slice_value(&mut out, 69, msgs.len(), |i, b| {
        let m = &msgs[i];
        let mut f = Fields::new(b);
        f.text(0, m.role.as_bytes());
        f.text(1, &m.content);
        if !m.calls.is_empty() {
            let list = f.field(2);
            uint(list, m.calls.len() as u64);
            for c in &m.calls {
                let mut cf = Fields::new(list);
                cf.text(0, c.id.as_bytes());
                let mut func = Fields::new(cf.field(1));
                func.text(0, c.name.as_bytes());
                func.text(1, c.args.as_bytes());
                func.end();
                if c.is_error {
                    uint(cf.field(2), 1);
                }
                cf.end();
            }
        }
        f.end();
    });
    out
}

/// go-openai v1.40's `ChatCompletionMessage` (mods 1.0-1.7 saved `[]` of it), with the
/// fields these tests fill.
#[derive(Default)]
struct OpenaiMsg {
    role: &'static str,
    content: &'static str,
    refusal: &'static str,
    /// `MultiContent` parts: `(type, text, image URL)`.
    parts: Vec<(&'static str, &'static str, &'static str)>,
    reasoning: &'static str,
}

/// `Encode(&messages)` of a `[]openai.ChatCompletionMessage`, types in Go's order: `[]…`
/// (72), `ChatCompletionMessage` (65), `[]ChatMessagePart` (68), `ChatMessagePart` (66),
/// `ChatMessageImageURL` (67), `FunctionCall` (69), `[]ToolCall` (71), `ToolCall` (70).
fn openai_gob(msgs: &[OpenaiMsg]) -> Vec<u8> {
    let mut out = Vec::new();
    define_slice(&mut out, 72, "", 65);
    define_struct(
        &mut out,
        65,
        "ChatCompletionMessage",
        &[
            ("Role", STRING),
            ("Content", STRING),
            ("Refusal", STRING),
            ("MultiContent", 68),
            ("Name", STRING),
            ("ReasoningContent", STRING),
            ("FunctionCall", 69),
            ("ToolCalls", 71),
            ("ToolCallID", STRING),
        ],
    );
    define_slice(&mut out, 68, "[]openai.ChatMessagePart", 66);
    define_struct(
        &mut out,
        66,
        "ChatMessagePart",
        &[("Type", STRING), ("Text", STRING), ("ImageURL", 67)],
    );
    define_struct(
        &mut out,
        67,
        "ChatMessageImageURL",
        &[("URL", STRING), ("Detail", STRING)],
    );
    define_struct(
        &mut out,
        69,
        "FunctionCall",
        &[("Name", STRING), ("Arguments", STRING)],
    );
    define_slice(&mut out, 71, "[]openai.ToolCall", 70);
    define_struct(
        &mut out,
        70,
        "ToolCall",
        &[
            ("Index", INT),
            ("ID", STRING),
            ("Type", STRING),
            ("Function", 69),
        ],
    );
    slice_value(&mut out, 72, msgs.len(), |i, b| {
        let m = &msgs[i];
        let mut f = Fields::new(b);
        f.text(0, m.role.as_bytes());
        f.text(1, m.content.as_bytes());
        f.text(2, m.refusal.as_bytes());
        if !m.parts.is_empty() {
            let list = f.field(3);
            uint(list, m.parts.len() as u64);
            for (ty, text, url) in &m.parts {
                let mut p = Fields::new(list);
                p.text(0, ty.as_bytes());
                p.text(1, text.as_bytes());
                if !url.is_empty() {
                    let mut u = Fields::new(p.field(2));
                    u.text(0, url.as_bytes());
                    u.end();
                }
                p.end();
            }
        }
        f.text(5, m.reasoning.as_bytes());
        f.end();
    });
    out
}

// ---------------------------------------------------------------------------------------
// The fixture

/// `Convo.Save`'s row: `INSERT INTO conversations (id, title, api, model)`, `updated_at`
/// given (the default, or `CURRENT_TIMESTAMP` after an `UPDATE`).
fn row(c: &Connection, id: &str, title: &str, api: &str, model: &str, updated: &str) {
    c.execute(
        "INSERT INTO conversations (id, title, api, model, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, title, api, model, updated],
    )
    .expect("row");
}

fn db(home: &Path) -> Connection {
    let p = home.join(CONVOS).join("mods.db");
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    let c = Connection::open(p).expect("db");
    c.execute_batch(DDL).expect("ddl");
    c
}

fn gob_file(id: &str) -> String {
    format!("{CONVOS}/{id}.gob")
}

const FORMAT_TEXT: &str = "Format the response as markdown without enclosing backticks.";

/// Conversation A: a format instruction and a role, two runs, an MCP tool that works and
/// one that fails.
fn alpha() -> Vec<Msg> {
    vec![
        msg("system", FORMAT_TEXT),
        msg("system", "Alpha role: you are a release manager."),
        msg(
            "user",
            "Alpha prompt: tidy the changelog\n\n    Alpha piped input: ## 1.2.0",
        ),
        with_calls(
            "assistant",
            "",
            vec![call(
                "call_a1",
                "fs_read_file",
                r#"{"path":"CHANGELOG.md"}"#,
            )],
        ),
        with_calls(
            "tool",
            "Alpha tool output: ## 1.2.0 - fixed things",
            vec![call(
                "call_a1",
                "fs_read_file",
                r#"{"path":"CHANGELOG.md"}"#,
            )],
        ),
        msg("assistant", "Alpha reply: the changelog is tidy."),
        msg("user", "Alpha second prompt: publish it"),
        with_calls(
            "assistant",
            "Alpha calling the release tool.",
            vec![call("call_a2", "gh_release", r#"{"tag":"v1.2.0"}"#)],
        ),
        with_calls(
            "tool",
            "Alpha failure: token expired",
            vec![Call {
                is_error: true,
                ..call("call_a2", "gh_release", r#"{"tag":"v1.2.0"}"#)
            }],
        ),
        msg("assistant", "Alpha second reply: publishing failed."),
    ]
}

/// Conversation G: Ollama's calls, numbered `0` afresh in each reply.
fn golf() -> Vec<Msg> {
    vec![
        msg("user", "Golf prompt: weather in two cities"),
        with_calls(
            "assistant",
            "",
            vec![call("0", "weather", r#"{"city":"Oslo"}"#)],
        ),
        with_calls(
            "tool",
            "Golf output: Oslo 3C",
            vec![call("0", "weather", r#"{"city":"Oslo"}"#)],
        ),
        with_calls(
            "assistant",
            "",
            vec![call("0", "time", r#"{"city":"Lima"}"#)],
        ),
        with_calls(
            "tool",
            "Golf output: Lima 09:00",
            vec![call("0", "time", r#"{"city":"Lima"}"#)],
        ),
        msg("assistant", "Golf reply: cold in Oslo, morning in Lima."),
    ]
}

fn set_mtime(path: &Path, secs: u64) {
    let f = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .expect("mtime");
}

/// 2026-03-02T08:00:00Z, conversation C's file time (it has no row).
const C_SAVED: u64 = 1_772_438_400;

fn write() -> Home {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let c = db(&h);

    put(&h, &gob_file(A), proto_gob("proto", &alpha()));
    row(
        &c,
        A,
        "Alpha: tidy the changelog",
        "openai",
        "gpt-4o",
        "2026-03-01 10:00:00",
    );

    // B: a file of mods 1.7 (go-openai's type), its title a number (NUMERIC affinity).
    let bravo = vec![
        OpenaiMsg {
            role: "system",
            content: "Bravo role: answer in French.",
            ..OpenaiMsg::default()
        },
        OpenaiMsg {
            role: "user",
            parts: vec![
                ("text", "Bravo prompt: what is on this receipt?", ""),
                ("image_url", "", "data:image/png;base64,AAAAAAAAAAAA"),
            ],
            ..OpenaiMsg::default()
        },
        OpenaiMsg {
            role: "assistant",
            content: "Bravo reply: un café.",
            reasoning: "Bravo thinking: the receipt lists a coffee",
            ..OpenaiMsg::default()
        },
        OpenaiMsg {
            role: "user",
            content: "Bravo prompt two: and the card number?",
            ..OpenaiMsg::default()
        },
        OpenaiMsg {
            role: "assistant",
            refusal: "Bravo refusal: not shown",
            ..OpenaiMsg::default()
        },
        OpenaiMsg {
            role: "critic",
            content: "Bravo odd role",
            ..OpenaiMsg::default()
        },
    ];
    put(&h, &gob_file(B), openai_gob(&bravo));
    row(
        &c,
        B,
        "2024",
        "anthropic",
        "claude-3-5-sonnet",
        "2026-02-01 09:30:00.250",
    );

    // C: a file whose row is missing; named by its last prompt's first line.
    let charlie = vec![
        msg("user", "Charlie first prompt"),
        msg("assistant", "Charlie reply"),
        msg("user", "Charlie last prompt\nsecond line"),
        msg("assistant", "Charlie last reply"),
    ];
    let pc = put(&h, &gob_file(C), proto_gob("proto", &charlie));
    set_mtime(&pc, C_SAVED);

    // D: a row whose file is gone.
    row(
        &c,
        D,
        "Delta: the file is gone",
        "openai",
        "gpt-4o-mini",
        "2026-01-05 12:00:00",
    );

    // E: garbage where a file should be.
    put(&h, &gob_file(E), b"not a gob stream \xff\xfe at all");
    row(
        &c,
        E,
        "Echo: garbage",
        "openai",
        "gpt-4o",
        "2026-01-06 12:00:00",
    );

    // F: a file cut while mods rewrote it: the first three messages are whole.
    let foxtrot = vec![
        msg("user", "Foxtrot prompt: before the cut"),
        msg("assistant", "Foxtrot reply: also before the cut"),
        msg("user", "Foxtrot prompt two: still before the cut"),
        msg("assistant", "Foxtrot reply two: after the cut, never shown"),
    ];
    let whole = proto_gob("proto", &foxtrot);
    let cut = whole.len() - "after the cut, never shown".len() - 4;
    put(&h, &gob_file(F), &whole[..cut]);
    row(
        &c,
        F,
        "Foxtrot: cut",
        "ollama",
        "llama3.2",
        "2026-01-07 12:00:00",
    );

    // G: Ollama's reused call ids.
    put(&h, &gob_file(G), proto_gob("proto", &golf()));
    row(
        &c,
        G,
        "Golf: two cities",
        "ollama",
        "qwen3",
        "2026-01-08 12:00:00",
    );
    drop(c);

    // What lives beside the conversations and must never be read.
    put(
        &h,
        ".config/mods/mods.yml",
        format!("apis:\n  openai:\n    api-key: {SECRET}\n"),
    );
    put(&h, &format!("{CACHE}/temp/copilot.4102444800"), TOKEN);
    let mut home = home;
    home.files = common::files_under(home.path());
    home
}

fn render(home: &Home) -> Rendered {
    stores::render(home, "sessfs-mods", &[])
}

fn dir(id: &str) -> String {
    format!("mods/{id}")
}

fn check_tree(tree: &Path) {
    stores::assert_session_holds(
        tree,
        &dir(A),
        &[
            "Alpha role: you are a release manager.",
            "Alpha prompt: tidy the changelog",
            "Alpha reply: the changelog is tidy.",
            "Alpha second reply: publishing failed.",
        ],
        &[
            "Alpha tool output: ## 1.2.0 - fixed things",
            "Alpha failure: token expired",
        ],
    );
    stores::assert_session_holds(
        tree,
        &dir(B),
        &[
            "Bravo prompt: what is on this receipt?",
            "Bravo reply: un café.",
        ],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        tree,
        &dir(C),
        &["Charlie first prompt", "Charlie last reply"],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        tree,
        &dir(G),
        &["Golf reply: cold in Oslo, morning in Lima."],
        &["Golf output: Oslo 3C", "Golf output: Lima 09:00"],
    );
}

// ---------------------------------------------------------------------------------------
// Tests

/// What Go 1.19's `gob.NewEncoder(w).Encode(&msgs)` wrote for five `proto.Message`s of a
/// `main` package (a system message, a prompt, a call, its failed result and a reply): the
/// writer above produces exactly these bytes.
#[test]
fn writer_matches_what_go_wrote() {
    let go = "0dff89020102ff8a0001ff82000039ff81030101074d65737361676501ff820001030104526f6c65010c000107436f6e74656e74010c000109546f6f6c43616c6c7301ff880000001eff870201010f5b5d6d61696e2e546f6f6c43616c6c01ff880001ff84000037ff8303010108546f6f6c43616c6c01ff8400010301024944010c00010846756e6374696f6e01ff8600010749734572726f7201020000002dff850301010846756e6374696f6e01ff8600010201044e616d65010c000109417267756d656e7473010a000000ffd5ff8a0005010673797374656d013c466f726d61742074686520726573706f6e7365206173206d61726b646f776e20776974686f757420656e636c6f73696e67206261636b7469636b732e00010475736572010a6c6973742066696c6573000109617373697374616e740201010663616c6c5f3101010566735f6c73010c7b2270617468223a222e227d0000000104746f6f6c0105612e7478740101010663616c6c5f3101010566735f6c73010c7b2270617468223a222e227d00010100000109617373697374616e7401094f6e652066696c652e00";
    let ls = r#"{"path":"."}"#;
    let msgs = vec![
        msg("system", FORMAT_TEXT),
        msg("user", "list files"),
        with_calls("assistant", "", vec![call("call_1", "fs_ls", ls)]),
        with_calls(
            "tool",
            "a.txt",
            vec![Call {
                is_error: true,
                ..call("call_1", "fs_ls", ls)
            }],
        ),
        msg("assistant", "One file."),
    ];
    let ours: String = proto_gob("main", &msgs)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(ours, go);
}

#[test]
fn every_conversation_shows_its_lines_in_exactly_its_session() {
    let home = write();
    let out = render(&home);
    check_tree(&out.tree);
    // A, B, C, D, E, F, G: files and rows, each once.
    assert_eq!(stores::entries(&out.tree, "mods"), 7);
}

#[test]
fn every_message_kind_lands_in_messages_jsonl() {
    let home = write();
    let out = render(&home);
    let m = messages(&out.tree, &dir(A));
    assert_eq!(
        shapes(&m),
        [
            shape("system", "context", FORMAT_TEXT),
            shape(
                "system",
                "context",
                "Alpha role: you are a release manager."
            ),
            shape(
                "user",
                "",
                "Alpha prompt: tidy the changelog\n\n    Alpha piped input: ## 1.2.0"
            ),
            shape("assistant", "", ""),
            shape("tool", "", ""),
            shape("assistant", "", "Alpha reply: the changelog is tidy."),
            shape("user", "", "Alpha second prompt: publish it"),
            shape("assistant", "", "Alpha calling the release tool."),
            shape("tool", "", ""),
            shape("assistant", "", "Alpha second reply: publishing failed."),
        ]
    );
    assert_eq!(
        (&m[0]["label"], &m[1]["label"]),
        (&json!("system prompt"), &json!("system prompt"))
    );
    assert_eq!(
        m[3]["toolCalls"][0],
        json!({"toolCallId": "call_a1", "toolName": "fs_read_file", "input": {"path": "CHANGELOG.md"}})
    );
    // A result's text is its output.
    let r = &m[4]["toolResult"];
    assert_eq!(
        (
            &r["toolCallId"],
            &r["toolName"],
            &r["isError"],
            &r["output"]
        ),
        (
            &json!("call_a1"),
            &json!("fs_read_file"),
            &json!(false),
            &json!("Alpha tool output: ## 1.2.0 - fixed things")
        )
    );
    assert_eq!(
        m[7]["toolCalls"][0],
        json!({"toolCallId": "call_a2", "toolName": "gh_release", "input": {"tag": "v1.2.0"}})
    );
    let r = &m[8]["toolResult"];
    assert_eq!(
        (
            &r["toolCallId"],
            &r["toolName"],
            &r["isError"],
            &r["output"]
        ),
        (
            &json!("call_a2"),
            &json!("gh_release"),
            &json!(true),
            &json!("Alpha failure: token expired")
        )
    );
    let t = transcript(&out.tree, &dir(A));
    assert!(t.contains("gh_release"), "{t}");
    assert_eq!(stores::warnings(&out.tree, &dir(A)), "[]");
}

#[test]
fn title_time_model_and_api_come_from_the_index() {
    let home = write();
    let out = render(&home);
    let a = meta(&out.tree, &dir(A));
    assert_eq!(a["title"], "Alpha: tidy the changelog");
    assert_eq!(a["updatedAt"], "2026-03-01T10:00:00.000Z");
    assert_eq!(a["model"], "gpt-4o");
    assert_eq!(a["tags"], json!(["api:openai"]));
    assert_eq!(a["sessionId"], A);
    assert_eq!(a["source"]["formatVersion"], "proto.Message");
    // mods keeps no creation time, working directory or usage.
    assert!(a["createdAt"].is_null() && a["cwd"].is_null(), "{a}");
    assert_eq!(a["cost"]["inputTokens"], 0, "{a}");
    let b = meta(&out.tree, &dir(B));
    // `title string` has NUMERIC affinity: "2024" is stored as the integer 2024.
    assert_eq!(b["title"], "2024");
    assert_eq!(b["updatedAt"], "2026-02-01T09:30:00.250Z");
    assert_eq!(b["model"], "claude-3-5-sonnet");
    assert_eq!(b["source"]["formatVersion"], "openai.ChatCompletionMessage");
}

/// The go-openai type mods 1.0-1.7 saved: parts with an image, reasoning, a refusal.
#[test]
fn the_openai_message_type_of_older_releases_reads_too() {
    let home = write();
    let out = render(&home);
    let m = messages(&out.tree, &dir(B));
    assert_eq!(
        shapes(&m),
        [
            shape("system", "context", "Bravo role: answer in French."),
            shape(
                "user",
                "",
                "Bravo prompt: what is on this receipt?\n[image: image/png, 9 B]"
            ),
            shape("assistant", "", "Bravo reply: un café."),
            shape("user", "", "Bravo prompt two: and the card number?"),
            shape("assistant", "", "Refusal: Bravo refusal: not shown"),
            shape("system", "context", "Bravo odd role"),
        ]
    );
    assert_eq!(
        m[2]["thinking"],
        "Bravo thinking: the receipt lists a coffee"
    );
    assert_eq!(m[5]["label"], "unparsed message");
    let w = stores::warnings(&out.tree, &dir(B));
    assert!(w.contains("unknown role critic"), "{w}");
    assert!(!transcript(&out.tree, &dir(B)).contains("AAAAAAAA"));
}

/// Ollama numbers its calls `0` afresh in each reply: each result answers the call just
/// before it.
#[test]
fn reused_call_ids_pair_each_result_with_the_call_before_it() {
    let home = write();
    let out = render(&home);
    let m = messages(&out.tree, &dir(G));
    let results: Vec<(String, String)> = m
        .iter()
        .filter(|x| x["role"] == "tool")
        .map(|x| {
            let r = &x["toolResult"];
            (
                r["toolName"].as_str().unwrap_or_default().to_string(),
                r["output"]
                    .as_str()
                    .unwrap_or(x["content"].as_str().unwrap_or_default())
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("weather".to_string(), "Golf output: Oslo 3C".to_string()),
            ("time".to_string(), "Golf output: Lima 09:00".to_string())
        ]
    );
    assert_eq!(meta(&out.tree, &dir(G))["tags"], json!(["api:ollama"]));
}

/// A file without its row, and a row without its file, each show with a warning.
#[test]
fn a_file_without_its_row_and_a_row_without_its_file_still_show() {
    let home = write();
    let out = render(&home);
    let c = meta(&out.tree, &dir(C));
    // mods' own rule: the first line of the last prompt.
    assert_eq!(c["title"], "Charlie last prompt");
    assert_eq!(c["updatedAt"], "2026-03-02T08:00:00.000Z");
    assert!(c["model"].is_null(), "{c}");
    assert!(
        c["warnings"].to_string().contains("no row in mods.db"),
        "{}",
        c["warnings"]
    );
    assert_eq!(messages(&out.tree, &dir(C)).len(), 4);

    let d = meta(&out.tree, &dir(D));
    assert_eq!(d["title"], "Delta: the file is gone");
    assert_eq!(d["model"], "gpt-4o-mini");
    assert!(
        d["warnings"]
            .to_string()
            .contains(&format!("{D}.gob is missing")),
        "{}",
        d["warnings"]
    );
    assert_eq!(messages(&out.tree, &dir(D)).len(), 0);
}

/// Garbage costs its own conversation a warning; a cut file keeps what came before the cut.
#[test]
fn garbage_and_a_cut_file_cost_warnings_not_sessions() {
    let home = write();
    let out = render(&home);
    let e = meta(&out.tree, &dir(E));
    assert_eq!(e["title"], "Echo: garbage");
    assert!(
        e["warnings"].to_string().contains(&format!("{E}.gob: ")),
        "{}",
        e["warnings"]
    );
    assert_eq!(messages(&out.tree, &dir(E)).len(), 0);

    let f = meta(&out.tree, &dir(F));
    let w = f["warnings"].to_string();
    assert!(w.contains("cut while being written"), "{w}");
    assert!(w.contains("the 3 messages before it are shown"), "{w}");
    let fm = messages(&out.tree, &dir(F));
    assert_eq!(
        shapes(&fm),
        [
            shape("user", "", "Foxtrot prompt: before the cut"),
            shape("assistant", "", "Foxtrot reply: also before the cut"),
            shape("user", "", "Foxtrot prompt two: still before the cut"),
        ]
    );
    // The others are whole.
    check_tree(&out.tree);
}

/// mods cuts a long prompt at a byte count (`content[:MaxChars]`), inside a character: the
/// conversation still reads, the broken character replaced.
#[test]
fn a_prompt_cut_inside_a_character_still_reads() {
    let home = Home::empty();
    let c = db(home.path());
    // "crè" cut inside `è` (`c3 a8`): its first byte alone.
    let mut cut = "Hotel prompt: café crè".as_bytes().to_vec();
    cut.pop();
    let msgs = vec![
        Msg {
            role: "user",
            content: cut,
            calls: Vec::new(),
        },
        msg("assistant", "Hotel reply"),
    ];
    put(home.path(), &gob_file(A), proto_gob("proto", &msgs));
    row(&c, A, "Hotel", "openai", "gpt-4o", "2026-01-09 12:00:00");
    drop(c);
    let out = render(&home);
    let m = messages(&out.tree, &dir(A));
    assert_eq!(m[0]["content"], "Hotel prompt: café cr\u{fffd}");
    assert_eq!(m[1]["content"], "Hotel reply");
}

#[test]
fn keys_tokens_and_settings_are_never_shown() {
    let home = write();
    let out = render(&home);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_nowhere(&out.tree, TOKEN);
    stores::assert_list_hides(&home, SECRET, &[]);
    stores::assert_list_hides(&home, TOKEN, &[]);
}

#[test]
fn doctor_names_mods_and_where_it_found_it() {
    let home = write();
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 7 sessions", "mods")),
        "{text}"
    );
    assert!(text.contains(".local/share/mods"), "{text}");
}

/// `MODS_CACHE_PATH` replaces the default; a cache path mods used before v1.7.0 holds the
/// conversations and `mods.db` itself.
#[test]
fn the_cache_path_variable_and_the_layout_before_1_7() {
    let home = write();
    let other = home.path().join("elsewhere");
    let c = {
        std::fs::create_dir_all(&other).expect("mkdir");
        let c = Connection::open(other.join("mods.db")).expect("db");
        c.execute_batch(DDL).expect("ddl");
        c
    };
    let msgs = vec![msg("user", "India prompt"), msg("assistant", "India reply")];
    std::fs::write(other.join(format!("{A}.gob")), proto_gob("proto", &msgs)).expect("write");
    row(
        &c,
        A,
        "India: old layout",
        "openai",
        "gpt-4",
        "2024-06-01 12:00:00",
    );
    drop(c);
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-mods-var")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("MODS_CACHE_PATH", &other)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(stores::entries(&tree, "mods"), 1);
    assert_eq!(meta(&tree, &dir(A))["title"], "India: old layout");
    stores::assert_only_in(&tree, "India reply", ".", &dir(A));
    assert!(stores::holding(&tree, "Alpha reply", ".").is_empty());
}

#[test]
fn mounted_conversations_sizes_erofs_and_store_untouched() {
    let home = write();
    stores::mounted_untouched(&home, Home::snapshot, |m: &Mount| {
        check_tree(m.path());
        stores::assert_mount_read_only(m, &["mods"], 20, SECRET, &dir(A));
        stores::assert_nowhere(m.path(), TOKEN);
    });
}

/// A run rewrites the conversation's file whole, then updates its row: the new turn and
/// the new time show within a second, and a new conversation appears.
#[test]
fn a_new_run_and_a_new_conversation_show_within_a_second() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let t = m.path().join(format!("{}/transcript.md", dir(A)));
    assert!(stores::file_contains(&t, "Alpha second reply"));
    let mut more = alpha();
    more.push(msg("user", "Alpha fresh prompt after the mount"));
    more.push(msg("assistant", "Alpha fresh reply after the mount"));
    std::fs::write(home.path().join(gob_file(A)), proto_gob("proto", &more)).expect("write");
    let c = Connection::open(home.path().join(CONVOS).join("mods.db")).expect("db");
    c.execute(
        "UPDATE conversations SET title = ?1, updated_at = ?2 WHERE id = ?3",
        params!["Alpha: tidy and publish", "2026-03-03 09:00:00", A],
    )
    .expect("update");
    stores::assert_within_a_second("new run", || {
        stores::file_contains(&t, "Alpha fresh reply after the mount")
    });
    let meta = m.path().join(format!("{}/meta.json", dir(A)));
    stores::assert_within_a_second("new title", || {
        stores::file_contains(&meta, "Alpha: tidy and publish")
    });

    let n = "1111111111111111111111111111111111111111";
    let msgs = vec![
        msg("user", "Juliet prompt"),
        msg("assistant", "Juliet reply"),
    ];
    std::fs::write(home.path().join(gob_file(n)), proto_gob("proto", &msgs)).expect("write");
    row(&c, n, "Juliet", "openai", "gpt-4o", "2026-03-03 10:00:00");
    let t = m.path().join(format!("{}/transcript.md", dir(n)));
    stores::assert_within_a_second("new conversation", || {
        stores::file_contains(&t, "Juliet reply")
    });
}

/// The bundled sample (`fixtures/home/.local/share/mods/conversations/`, written by
/// `scripts/make-samples`): each line in its one conversation, the output in its tool file,
/// the title and model from the index, no warning. The lines are the sample's own text.
#[test]
fn bundled_sample_shows_the_conversation() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-mods-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(stores::entries(&tree, "mods"), 1);
    let id = "3624a7092b681c01546bdd04f3dd32e9077a4929";
    assert!(samples.join(gob_file(id)).is_file());
    stores::assert_session_holds(
        &tree,
        &dir(id),
        &[
            "Which pull requests still need a review?",
            "reviewers: alice, bob",
            "github_list_pull_requests",
            "- #41 Fix the login redirect (no review yet)",
        ],
        &[r#"{"number": 43, "title": "Update the README", "reviews": 2}"#],
    );
    let m = meta(&tree, &dir(id));
    assert_eq!(m["title"], "Which pull requests still need a review?");
    assert_eq!(
        (&m["model"], &m["tags"]),
        (&json!("gpt-4o"), &json!(["api:openai"]))
    );
    assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
}
