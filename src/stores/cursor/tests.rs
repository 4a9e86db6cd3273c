use super::transcript::parse_txt;
use super::*;
use crate::model::Role;

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

fn field(n: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = varint(n << 3 | 2);
    out.extend(varint(payload.len() as u64));
    out.extend(payload);
    out
}

#[test]
fn the_root_blob_lists_message_ids_and_the_workspace() {
    let mut buf = field(1, &[0xab; 32]);
    buf.extend(varint(3 << 3));
    buf.extend(varint(300));
    buf.extend(field(1, &[0x01; 32]));
    buf.extend(field(9, b"file:///home/u/My%20Project"));
    let r = decode_root(&buf).unwrap();
    assert_eq!(r.messages, vec!["ab".repeat(32), "01".repeat(32)]);
    assert_eq!(r.workspace.as_deref(), Some("/home/u/My Project"));
}

#[test]
fn malformed_protobuf_is_an_error_never_a_panic() {
    let good = field(1, &[7; 32]);
    for cut in 0..good.len() {
        let _ = decode_root(&good[..cut]);
    }
    assert!(decode_root(&good[..10]).is_err());
    // A length of 2^63 must not allocate or overflow.
    let mut huge = varint(1 << 3 | 2);
    huge.extend(varint(u64::MAX >> 1));
    assert!(decode_root(&huge).is_err());
    assert!(decode_root(&[0xff; 11]).is_err());
    assert!(decode_root(&[0x0b]).is_err(), "wire type 3 (groups)");
    assert!(decode_root(&field(1, b"short")).is_err());
    // Every byte string: no panic.
    let mut x: u32 = 1;
    for _ in 0..20_000 {
        let len = (x % 40) as usize;
        let buf: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let _ = decode_root(&buf);
    }
}

#[test]
fn hex_meta_and_uris_decode() {
    assert_eq!(unhex("7b7d").as_deref(), Some(&b"{}"[..]));
    assert_eq!(unhex("7b7"), None);
    assert_eq!(unhex("zz"), None);
    assert_eq!(
        uri_to_path("vscode-remote://ssh-remote+%7B%22host%22%7D/home/ubuntu/x"),
        "/home/ubuntu/x"
    );
    assert_eq!(uri_to_path("/plain/path"), "/plain/path");
    assert_eq!(uri_to_path("file:///a%2"), "/a%2");
}

#[test]
fn user_queries_are_split_from_injected_context() {
    let (q, rest) =
        split_user_query("<user_info>os</user_info>\n<user_query>\nfix it\n</user_query>");
    assert_eq!(
        (q.as_str(), rest.as_str()),
        ("fix it", "<user_info>os</user_info>")
    );
    assert_eq!(split_user_query("plain").0, "plain");
}

#[test]
fn txt_transcripts_become_messages_tool_calls_and_outputs() {
    let mut b = SessionBuilder::new(Agent::Cursor, "t");
    parse_txt(
        &mut b,
        "user:\n<user_query>\nlist files\n</user_query>\n\nassistant:\n[Thinking] I should look\nat the tree.\n\nLet me look.\n[Tool call] Shell\n  command=ls -la\n  cwd=/w\n[Tool result] Shell\nREADME.md\nsrc\n\nassistant:\nThere are two.\n",
    );
    let s = b.finish();
    let roles: Vec<Role> = s.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Assistant]);
    assert_eq!(s.messages[0].content, "list files");
    let a = &s.messages[1];
    assert_eq!(a.thinking.as_deref(), Some("I should look\nat the tree."));
    assert_eq!(a.content, "Let me look.");
    let c = &a.tool_calls[0];
    assert_eq!(c.tool_name, "Shell");
    assert_eq!(c.input["command"], "ls -la");
    assert_eq!(c.output.as_deref(), Some("README.md\nsrc"));
    assert_eq!(s.messages[2].content, "There are two.");
}

/// A workspace chat's version follows its own `ItemTable` value: a new bubble gives a new
/// version (the tree re-renders it), a write to another row leaves it as it was.
#[test]
fn a_workspace_chat_is_versioned_by_its_own_value() {
    let home = tempfile::tempdir().unwrap();
    let user = home.path().join("Cursor/User");
    let db = user.join("workspaceStorage/h1/state.vscdb");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);")
        .unwrap();
    let put = |k: &str, v: &str| {
        c.execute("INSERT INTO ItemTable (key, value) VALUES (?1, ?2)", [k, v])
            .unwrap();
    };
    let tab = |n: usize| {
        let bubbles: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"type":"user","text":"q{i}"}}"#))
            .collect();
        format!(
            r#"{{"tabs":[{{"tabId":"t1","bubbles":[{}]}}]}}"#,
            bubbles.join(",")
        )
    };
    put(workspace::CHATDATA, &tab(1));
    put("cursorAuth/accessToken", "a");
    let store = CursorStore::new(vec![Root::new(Agent::Cursor, &user, "test")]);
    let listed = store.list();
    assert_eq!(
        listed.iter().map(|l| l.id.as_str()).collect::<Vec<_>>(),
        ["t1"]
    );
    let v = |store: &CursorStore| store.versions(&[&listed[0]])[0];
    let first = v(&store).expect("a version");
    put("cursorAuth/accessToken", "b");
    assert_eq!(v(&store), Some(first), "another row changed");
    put(workspace::CHATDATA, &tab(2));
    let second = v(&store).expect("a version");
    assert_ne!(second, first, "a new bubble");
    let s = store.load(&listed[0]);
    assert_eq!(s.messages.len(), 2);
}
