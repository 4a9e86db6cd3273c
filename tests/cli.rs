//! The command line: output shapes and one-line errors with a non-zero exit.

mod common;

use common::{stderr, stdout, Home, Mount};

fn one_line_error(o: &std::process::Output, needle: &str) {
    assert!(!o.status.success(), "expected failure");
    let e = stderr(o);
    assert_eq!(e.trim_end().lines().count(), 1, "one line, got: {e}");
    assert!(e.starts_with("sessfs: "), "{e}");
    assert!(e.contains(needle), "'{needle}' not in: {e}");
}

#[test]
fn list_json_and_show_agree() {
    let home = Home::spine();
    let out = home.sessfs(&["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!list.is_empty());
    for agent in ["pi", "omp", "indusagi", "claude"] {
        assert!(
            list.iter().any(|m| m["agent"] == agent),
            "no {agent} in list"
        );
    }
    let id = list[0]["unifiedId"].as_str().unwrap();
    let md = home.sessfs(&["show", id]);
    assert!(md.status.success());
    assert!(stdout(&md).starts_with("# "));
    let json = home.sessfs(&["show", id, "--format", "json"]);
    let meta: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(meta["unifiedId"], id);
    let jl = home.sessfs(&["show", id, "--format", "jsonl"]);
    for line in stdout(&jl).lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("each line is JSON");
    }
    // Filters and limits.
    let out = home.sessfs(&["list", "pi", "--json", "--limit", "2"]);
    let l: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    // The spine writes more than two pi sessions, so the limit is what stops the list.
    assert_eq!(l.len(), 2, "{l:?}");
    assert!(l.iter().all(|m| m["agent"] == "pi"));
    let out = home.sessfs(&["list"]);
    assert!(stdout(&out).starts_with("ID"));
}

#[test]
fn user_mistakes_get_one_clear_line() {
    let home = Home::spine();
    one_line_error(
        &home.sessfs(&["show", "pi:no-such-session"]),
        "no session with id",
    );
    one_line_error(&home.sessfs(&["show", "nonsense"]), "not a session id");
    one_line_error(&home.sessfs(&["list", "vim"]), "unknown agent 'vim'");
    one_line_error(
        &home.sessfs(&["mount", "/nonexistent/sessfs-mnt"]),
        "does not exist",
    );
    let file = tempfile::NamedTempFile::new().unwrap();
    one_line_error(
        &home.sessfs(&["mount", file.path().to_str().unwrap()]),
        "not a directory",
    );
    let full = tempfile::tempdir().unwrap();
    std::fs::write(full.path().join("x"), "x").unwrap();
    one_line_error(
        &home.sessfs(&["mount", full.path().to_str().unwrap()]),
        "not empty",
    );
    let empty = tempfile::tempdir().unwrap();
    one_line_error(
        &home.sessfs(&["umount", empty.path().to_str().unwrap()]),
        "not a sessfs mount",
    );
    one_line_error(
        &home.sessfs(&["list", "--since", "last tuesday"]),
        "cannot read date",
    );
    one_line_error(&home.sessfs(&["list", "--store", "claude"]), "AGENT=PATH");
}

#[test]
fn mounting_twice_says_already_mounted() {
    let home = Home::spine();
    let m = Mount::new(&home, &[]);
    one_line_error(
        &home.sessfs(&["mount", m.path().to_str().unwrap()]),
        "already a sessfs mount",
    );
}

#[test]
fn render_writes_the_same_tree_as_the_mount() {
    let home = Home::spine();
    let out_dir = tempfile::tempdir().unwrap();
    let target = out_dir.path().join("tree");
    let out = home.sessfs(&["render", target.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The rendered tree holds what the fixtures hold (a hand-written list, not sessfs)...
    for (dirs, line) in common::expected::SPINE_LINES {
        for dir in dirs.split('|') {
            let grep = std::process::Command::new("grep")
                .args(["-rqF", "--exclude=*.diff", "--", line])
                .arg(target.join(dir))
                .status()
                .unwrap();
            assert!(grep.success(), "render lost '{line}' from {dir}");
        }
    }
    // ...and the mount serves the same tree and bytes, the empty diff/ and search/ included.
    let m = Mount::new(&home, &[]);
    let diff = std::process::Command::new("diff")
        .args(["-r", "--no-dereference"])
        .arg(&target)
        .arg(m.path())
        .output()
        .unwrap();
    assert!(
        diff.status.success(),
        "render and mount differ: {}",
        stdout(&diff)
    );
}

#[test]
fn doctor_names_roots_and_fuse() {
    let home = Home::spine();
    let out = home.sessfs(&["doctor"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains(".pi/agent/sessions"), "{text}");
    assert!(text.contains(".claude/projects"), "{text}");
    assert!(text.contains("/dev/fuse"), "{text}");
    let empty = Home::empty();
    let text = stdout(&empty.sessfs(&["doctor"]));
    assert!(text.contains("none found; looked in"), "{text}");
}

fn mounted(dir: &std::path::Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .contains(dir.to_str().unwrap())
}

fn wait_for(mut f: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(10) {
        if f() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

#[test]
fn foreground_mount_unmounts_cleanly_on_sigint_and_sigterm() {
    common::require_fuse();
    let home = Home::spine();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dir = tempfile::tempdir().unwrap();
        let mut child = home
            .command(&["mount", dir.path().to_str().unwrap(), "--foreground"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        assert!(wait_for(|| mounted(dir.path())), "mount did not come up");
        assert!(std::fs::read_dir(dir.path().join("pi")).is_ok());
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().unwrap();
        assert!(status.success(), "exit after signal {sig}: {status}");
        assert!(!mounted(dir.path()), "still mounted after signal {sig}");
    }
}

#[test]
fn foreground_mount_exits_when_unmounted_from_outside() {
    common::require_fuse();
    let home = Home::spine();
    let dir = tempfile::tempdir().unwrap();
    let mut child = home
        .command(&["mount", dir.path().to_str().unwrap(), "--foreground"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for(|| mounted(dir.path())));
    let out = home.sessfs(&["umount", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut done = None;
    assert!(wait_for(|| {
        done = child.try_wait().unwrap();
        done.is_some()
    }));
    assert!(done.unwrap().success());
}

#[test]
fn a_stale_mount_is_named_and_umount_clears_it() {
    common::require_fuse();
    let home = Home::spine();
    let dir = tempfile::tempdir().unwrap();
    let mut child = home
        .command(&["mount", dir.path().to_str().unwrap(), "--foreground"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for(|| mounted(dir.path())));
    child.kill().unwrap();
    child.wait().unwrap();
    let again = home.sessfs(&["mount", dir.path().to_str().unwrap()]);
    one_line_error(&again, "stale mount");
    assert!(stderr(&again).contains("sessfs umount"));
    let out = home.sessfs(&["umount", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!mounted(dir.path()));
    let m = Mount::new(&home, &[]);
    assert!(m.path().join("pi").is_dir());
}

#[test]
fn a_closed_pipe_ends_output_quietly() {
    let home = Home::spine();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "'{}' show claude:{} --format jsonl | head -1",
            common::bin().display(),
            common::claude::TREE_ID
        ))
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(stderr(&out), "", "no error for a closed pipe");
    assert_eq!(stdout(&out).lines().count(), 1);
}

/// A mount stopped with `sessfs umount` leaves nothing alarming in its log: the log is what
/// `sessfs service status` shows.
#[test]
fn a_mount_stopped_by_umount_logs_no_warning() {
    common::require_fuse();
    let home = Home::spine();
    let dir = tempfile::tempdir().unwrap();
    let mp = dir.path().canonicalize().unwrap();
    let mps = mp.to_str().unwrap();
    let out = home.sessfs(&["mount", mps]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(mp.join("pi").is_dir());
    let out = home.sessfs(&["umount", mps]);
    assert!(out.status.success(), "{}", stderr(&out));
    common::wait_for_mount_exit(mps);
    let log_file = sessfs::mount::log_path(&mp);
    let log = std::fs::read_to_string(&log_file).unwrap_or_default();
    let _ = std::fs::remove_file(&log_file);
    assert!(
        !log.contains(" WARN ") && !log.contains(" ERROR "),
        "the log of a cleanly stopped mount:\n{log}"
    );
}
