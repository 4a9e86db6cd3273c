//! OpenCode's legacy JSON tree (`storage/session/<project>/<ses>.json`,
//! `storage/message/<ses>/<msg>.json`, `storage/part/<msg>/<prt>.json`, as OpenCode wrote
//! it before its SQLite database), mounted: a part OpenCode rewrites while a reply streams
//! shows through the mount although the session and message files stay as they were.
//! The database is covered by `tests/dbstores.rs`.

mod common;

use common::stores::{self, put};
use common::{Home, Mount};
use serde_json::json;
use std::path::Path;

const STORAGE: &str = ".local/share/opencode/storage";
const PROJECT: &str = "prj_legacy000000000000000000000001";
const A: &str = "ses_leg0000000000000000000001";
const CHILD: &str = "ses_leg0000000000000000000002";
const T0: i64 = 1_769_203_363_105;

fn session(h: &Path, id: &str, parent: Option<&str>, title: &str) {
    let mut v = json!({"id": id, "version": "0.9.1", "projectID": PROJECT,
        "directory": "/home/dev/legacy", "title": title,
        "time": {"created": T0, "updated": T0}});
    if let Some(p) = parent {
        v["parentID"] = p.into();
    }
    put(
        h,
        &format!("{STORAGE}/session/{PROJECT}/{id}.json"),
        v.to_string(),
    );
}

fn message(h: &Path, ses: &str, mid: &str, role: &str, at: i64) {
    let v = json!({"id": mid, "sessionID": ses, "role": role, "time": {"created": at}});
    put(
        h,
        &format!("{STORAGE}/message/{ses}/{mid}.json"),
        v.to_string(),
    );
}

fn text_part(h: &Path, ses: &str, mid: &str, pid: &str, text: &str) {
    let v = json!({"id": pid, "sessionID": ses, "messageID": mid, "type": "text", "text": text});
    put(
        h,
        &format!("{STORAGE}/part/{mid}/{pid}.json"),
        v.to_string(),
    );
}

fn write() -> Home {
    let home = Home::empty();
    let h = home.path();
    session(h, A, None, "Legacy tree: stream a reply");
    message(h, A, "msg_leg01", "user", T0 + 10);
    text_part(
        h,
        A,
        "msg_leg01",
        "prt_leg0100",
        "Alpha: explain the loader",
    );
    message(h, A, "msg_leg02", "assistant", T0 + 20);
    text_part(h, A, "msg_leg02", "prt_leg0200", "Alpha reply: the loader");
    session(h, CHILD, Some(A), "Child of the legacy session");
    message(h, CHILD, "msg_leg11", "user", T0 + 30);
    text_part(
        h,
        CHILD,
        "msg_leg11",
        "prt_leg1100",
        "Child: find the manifest",
    );
    message(h, CHILD, "msg_leg12", "assistant", T0 + 40);
    text_part(
        h,
        CHILD,
        "msg_leg12",
        "prt_leg1200",
        "Child reply: the manifest",
    );
    home
}

/// OpenCode rewrites a text part as the reply streams and writes the message file again
/// only when it ends: a part rewritten alone, the session's or its child session's, shows
/// within a second.
#[test]
fn a_part_rewritten_alone_shows_within_a_second() {
    let home = write();
    let h = home.path();
    let m = Mount::new(&home, &[]);
    let t = m.path().join(format!("opencode/{A}/transcript.md"));
    assert!(stores::file_contains(&t, "Alpha reply: the loader"));
    text_part(
        h,
        A,
        "msg_leg02",
        "prt_leg0200",
        "Alpha reply: the loader reads each file once",
    );
    stores::assert_within_a_second("the session's streamed part", || {
        stores::file_contains(&t, "the loader reads each file once")
    });
    let child = m
        .path()
        .join(format!("opencode/{A}/subagents/{CHILD}/transcript.md"));
    assert!(stores::file_contains(&child, "Child reply: the manifest"));
    text_part(
        h,
        CHILD,
        "msg_leg12",
        "prt_leg1200",
        "Child reply: the manifest is package.json",
    );
    stores::assert_within_a_second("the child session's streamed part", || {
        stores::file_contains(&child, "the manifest is package.json")
    });
}
