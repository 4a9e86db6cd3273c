//! Checks the per-store tests (`amp`, `cline`, `qwen`, `crush`, `kimi`) share: a store
//! written into a [`Home`] is rendered into a temporary tree or mounted, and each written
//! line must then be found in exactly the session directory its writer put it in, secrets
//! nowhere, the mount read-only and the native store byte-identical afterwards.
//!
//! The tests keep their own writers and records; only the reading of the result lives here
//! (files of a session: [`meta`], [`messages`], [`transcript`], [`shapes`]), so that every
//! store is held to the same checks and read the same way.

use super::{stderr, stdout, Home, Mount};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tempfile::TempDir;

/// Write `bytes` at `home/rel`, making the directories above it.
pub fn put(home: &Path, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = home.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(&p, bytes).expect("write");
    p
}

/// A `sessfs render` of a home: the tree is `tree`, removed with the temporary directory.
pub struct Rendered {
    pub dir: TempDir,
    pub tree: PathBuf,
}

/// `sessfs render <temp>/tree` with `home` as `$HOME` and the variables `unset` removed too.
pub fn render(home: &Home, prefix: &str, unset: &[&str]) -> Rendered {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("tmp");
    let tree = dir.path().join("tree");
    let mut c = home.command(&["render", tree.to_str().expect("utf-8")]);
    for v in unset {
        c.env_remove(v);
    }
    let o = c.output().expect("run");
    assert!(o.status.success(), "{}", stderr(&o));
    Rendered { dir, tree }
}

/// The `<agent>/<session>` directories under `tree` holding `text` in a file below `under`
/// (relative to `tree`); diff files, which quote the other side by design, left out.
pub fn holding(tree: &Path, text: &str, under: &str) -> BTreeSet<String> {
    let o = Command::new("grep")
        .args(["-rlF", "--exclude=*.diff", "-e", text, under])
        .current_dir(tree)
        .output()
        .expect("grep");
    stdout(&o)
        .lines()
        .filter_map(|p| {
            let mut parts = p.trim_start_matches("./").split('/');
            Some(format!("{}/{}", parts.next()?, parts.next()?))
        })
        .collect()
}

/// `text` is in session `dir` and in no other session under `tree`'s `under`.
pub fn assert_only_in(tree: &Path, text: &str, under: &str, dir: &str) {
    assert_eq!(
        holding(tree, text, under),
        BTreeSet::from([dir.to_string()]),
        "'{text}'"
    );
}

/// `out` is in a file under session `dir`'s `tools/`.
pub fn assert_tool_output(tree: &Path, out: &str, dir: &str) {
    let tools = format!("{dir}/tools");
    assert_eq!(
        holding(tree, out, &tools),
        BTreeSet::from([dir.to_string()]),
        "'{out}' not under {tools}"
    );
}

/// Every one of `lines` only in session `dir`, every one of `outputs` in its `tools/`.
pub fn assert_session_holds(
    tree: &Path,
    dir: &str,
    lines: &[impl AsRef<str>],
    outputs: &[impl AsRef<str>],
) {
    for line in lines {
        assert_only_in(tree, line.as_ref(), ".", dir);
    }
    for out in outputs {
        assert_tool_output(tree, out.as_ref(), dir);
    }
}

/// `text` (a planted secret) is in no file under `tree`.
pub fn assert_nowhere(tree: &Path, text: &str) {
    assert_eq!(holding(tree, text, "."), BTreeSet::new());
}

/// `sessfs list --json` succeeds and does not show `secret`.
pub fn assert_list_hides(home: &Home, secret: &str, unset: &[&str]) {
    let mut c = home.command(&["list", "--json"]);
    for v in unset {
        c.env_remove(v);
    }
    let list = c.output().expect("list");
    assert!(list.status.success());
    assert!(!stdout(&list).contains(secret));
}

/// The parsed `meta.json` of session `dir` under `tree`.
pub fn meta(tree: &Path, dir: &str) -> Value {
    serde_json::from_slice(&std::fs::read(tree.join(dir).join("meta.json")).expect("meta"))
        .expect("meta.json parses")
}

/// The file `rel` under `tree`, as text.
pub fn read(tree: &Path, rel: &str) -> String {
    std::fs::read_to_string(tree.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Session `dir`'s `transcript.md` under `tree`.
pub fn transcript(tree: &Path, dir: &str) -> String {
    std::fs::read_to_string(tree.join(dir).join("transcript.md")).expect("transcript")
}

/// Session `dir`'s `messages.jsonl` under `tree`, one value a line, without the `session`
/// header line: `[0]` is the session's first message.
pub fn messages(tree: &Path, dir: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(tree.join(dir).join("messages.jsonl")).expect("messages");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .filter(|v: &Value| v["type"] != "session")
        .collect()
}

/// The `(role, kind, content)` of each of `messages` (absent fields empty): a session's
/// order and kinds compared in one assertion against a list of [`shape`]s.
pub fn shapes(messages: &[Value]) -> Vec<(String, String, String)> {
    messages
        .iter()
        .map(|x| {
            let s = |k: &str| x[k].as_str().unwrap_or_default().to_string();
            (s("role"), s("kind"), s("content"))
        })
        .collect()
}

/// One expected entry of [`shapes`].
pub fn shape(role: &str, kind: &str, content: &str) -> (String, String, String) {
    (role.into(), kind.into(), content.into())
}

/// Session `dir`'s `meta.json` warnings as one JSON text, for `contains` checks.
pub fn warnings(tree: &Path, dir: &str) -> String {
    meta(tree, dir)["warnings"].to_string()
}

/// How many entries `tree/<agent>/` lists.
pub fn entries(tree: &Path, agent: &str) -> usize {
    std::fs::read_dir(tree.join(agent)).expect(agent).count()
}

/// A `cost` object's input, output, cache-read and cache-write tokens.
pub fn tokens(c: &Value) -> (Option<u64>, Option<u64>, Option<u64>, Option<u64>) {
    (
        c["inputTokens"].as_u64(),
        c["outputTokens"].as_u64(),
        c["cachedTokens"].as_u64(),
        c["cacheWriteTokens"].as_u64(),
    )
}

/// The usage a writer expects of a session whose replies carry no usage at all: no
/// tokens, and a cost that is unknown (`NaN` here; `totalUsd: null` and
/// `usageRecorded: false` in `meta.json`), never $0.
pub const NOT_RECORDED: (u64, u64, u64, u64, f64) = (0, 0, 0, 0, f64::NAN);

/// A `cost` object's `totalUsd` is `usd` (to 1e-9), or, for `usd` NaN, `null` with
/// `usageRecorded: false`; `what` names it in the failure.
pub fn assert_usd(c: &Value, usd: f64, what: &str) {
    if usd.is_nan() {
        assert!(c["totalUsd"].is_null(), "{what}: {c}");
        assert_eq!(c["usageRecorded"], false, "{what}: {c}");
        return;
    }
    let total = c["totalUsd"].as_f64().unwrap_or(-1.0);
    assert!((total - usd).abs() < 1e-9, "{what}: {total} != {usd}");
    assert_eq!(c["usageRecorded"], true, "{what}: {c}");
}

/// Session `dir`'s `cost` is `(input, output, cache reads, cache writes, USD)`.
pub fn assert_cost(tree: &Path, dir: &str, want: (u64, u64, u64, u64, f64)) {
    let c = &meta(tree, dir)["cost"];
    let (i, o, cr, cw, usd) = want;
    assert_eq!(
        tokens(c),
        (Some(i), Some(o), Some(cr), Some(cw)),
        "{dir}: {c}"
    );
    assert_usd(c, usd, dir);
}

/// Writing over `<file>` in the mount (a path relative to it) fails: the file system is
/// read-only.
pub fn assert_erofs(m: &Mount, file: &str) {
    let out = m.sh(&format!("echo x > '{file}'"));
    assert!(
        stderr(&out).contains("Read-only file system"),
        "{}",
        stderr(&out)
    );
}

/// On a live mount: exact sizes under `tops` (at least `min_files` files), `secret`
/// nowhere, and `session/meta.json` refusing a write.
pub fn assert_mount_read_only(
    m: &Mount,
    tops: &[&str],
    min_files: usize,
    secret: &str,
    session: &str,
) {
    super::assert_sizes_agree(m.path(), tops, min_files);
    assert_nowhere(m.path(), secret);
    assert_erofs(m, &format!("{session}/meta.json"));
}

/// Mount `home`, hand the mount to `f`, unmount; then the home's `snapshot` (a
/// [`Home::snapshot`] or [`Home::snapshot_stable`]) must be what it was before the mount.
pub fn mounted_untouched(
    home: &Home,
    snapshot: fn(&Home) -> BTreeMap<PathBuf, Vec<u8>>,
    f: impl FnOnce(&Mount),
) {
    let before = snapshot(home);
    {
        let m = Mount::new(home, &[]);
        f(&m);
    }
    assert!(before == snapshot(home), "a native file changed");
}

/// `path` can be read and holds `text`.
pub fn file_contains(path: &Path, text: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains(text))
}

/// [`super::wait_until`] `f` holds, which a "shows within a second" check allows 1.5 s.
pub fn assert_within_a_second(what: &str, f: impl FnMut() -> bool) {
    let took = super::wait_until(what, f);
    assert!(took < Duration::from_millis(1500), "took {took:?}");
}
