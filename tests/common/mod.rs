//! Shared test support: a fixture builder that writes native stores in the agents' real
//! layouts under a temporary `$HOME`, and a mounted `sessfs` that unmounts on drop.
#![allow(dead_code)]

pub mod agsh;
pub mod claude;
pub mod codex;
pub mod cursor;
pub mod dbstores;
pub mod expected;
pub mod gemcop;
pub mod pi;
pub mod seeds_json;
pub mod stores;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The project-written shape fixtures: small sessions in each agent's format, each
/// reproducing a shape real stores hold (see `fixtures/shapes/README.md`).
pub fn shapes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/shapes")
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sessfs"))
}

/// A temporary `$HOME` holding native stores.
pub struct Home {
    pub dir: TempDir,
    /// Native files written, for the byte-identity check.
    pub files: Vec<PathBuf>,
}

impl Home {
    pub fn empty() -> Home {
        Home {
            dir: tempfile::Builder::new()
                .prefix("sessfs-home")
                .tempdir()
                .expect("temp dir"),
            files: Vec::new(),
        }
    }

    /// pi, omp, indusagi and Claude Code stores laid out as the agents lay them out.
    pub fn spine() -> Home {
        let mut h = Home::empty();
        let p = h.path().to_path_buf();
        h.files
            .extend(pi::write_stores(&p).into_iter().map(PathBuf::from));
        h.files
            .extend(claude::write_stores(&p).into_iter().map(PathBuf::from));
        h
    }

    /// agentuse (JSON tree), agsh and meka (SQLite) and ATSF threads, as their code writes them.
    pub fn seeds() -> Home {
        let mut h = Home::empty();
        let p = h.path().to_path_buf();
        h.files.extend(
            seeds_json::write_agentuse(&p)
                .into_iter()
                .map(PathBuf::from),
        );
        h.files
            .extend(agsh::write_agsh(&p).into_iter().map(PathBuf::from));
        h.files
            .extend(seeds_json::write_atsf(&p).into_iter().map(PathBuf::from));
        h
    }

    /// Gemini CLI and Copilot CLI stores, with the record of every session written.
    pub fn gemcop() -> (Home, Vec<gemcop::Written>) {
        let mut h = Home::empty();
        let stores = gemcop::write_stores(h.path());
        h.files.extend(stores.files);
        (h, stores.sessions)
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Content hash of every file under the home, for "stores are byte-identical" checks;
    /// sessfs' own cache (`~/.cache/sessfs`: the search index, rendered sessions) is no store.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        snapshot_dir(self.path(), &mut out);
        let own = self.path().join(".cache/sessfs");
        out.retain(|p, _| !p.starts_with(&own));
        out
    }

    /// As [`Home::snapshot`], without SQLite's shared-memory index (`-shm`), which every
    /// reader of a WAL database maps and updates by design; the database and its WAL are kept.
    pub fn snapshot_stable(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut s = self.snapshot();
        s.retain(|p, _| !p.to_string_lossy().ends_with("-shm"));
        s
    }

    /// Run `sessfs` with this home as `$HOME` and a clean environment for agent variables.
    pub fn sessfs(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run sessfs")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .env("HOME", self.path())
            .env("RUST_LOG", "warn");
        for v in AGENT_VARS {
            c.env_remove(v);
        }
        // ShellGPT keeps its chats in the temporary directory, not under the home: the test
        // home holds its chat cache, so the machine's own chats never show in a test.
        c.env("CHAT_CACHE_PATH", self.path().join(SGPT_CHAT_CACHE));
        c
    }
}

/// Where a test home keeps ShellGPT's chat cache (`CHAT_CACHE_PATH`).
pub const SGPT_CHAT_CACHE: &str = "tmp/chat_cache";

/// Agent variables that must not leak from the developer's environment into tests.
pub const AGENT_VARS: &[&str] = &[
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "CODE_HOME",
    "GEMINI_CLI_HOME",
    "COPILOT_HOME",
    "CURSOR_CONFIG_DIR",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "LLM_USER_PATH",
    "XDG_CACHE_HOME",
    "OPENCODE_DB",
    "KILO_DB",
    "PI_CODING_AGENT_DIR",
    "PI_CONFIG_DIR",
    "OMP_CODING_AGENT_DIR",
    "OPENCLAW_STATE_DIR",
    "CLAWDBOT_STATE_DIR",
    "CRUSH_GLOBAL_DATA",
    "HERMES_HOME",
    "IFLOW_HOME",
    "AGSH_DATA_DIR",
    "MEKA_DATA_DIR",
    "INDUSAGI_DIR",
    "JAN_DATA_FOLDER",
    "QWEN_RUNTIME_DIR",
    "OPENHANDS_PERSISTENCE_DIR",
    "OPENHANDS_CONVERSATIONS_DIR",
    "OTERM_DATA_DIR",
    "MODS_CACHE_PATH",
    "STORAGE_DIR",
    "INDUSAGI_AGENT_DIR",
    "INDUSAGI_CODING_AGENT_DIR",
    "FORGE_CONFIG",
    "MUX_ROOT",
    "XUM_ROOT",
    "NANOCODER_DATA_DIR",
    "NVIM_APPNAME",
    "OLLAMA_APP_DB_PATH",
    "VSCODE_APPDATA",
    "VSCODE_PORTABLE",
];

fn snapshot_dir(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let ft = e.file_type().expect("file type");
        if ft.is_dir() {
            snapshot_dir(&p, out);
        } else if ft.is_file() {
            out.insert(p.clone(), std::fs::read(&p).expect("read native file"));
        }
    }
}

/// FUSE must be usable: mounted tests fail (never skip) when it is not.
pub fn require_fuse() {
    assert!(
        Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: mounted tests need FUSE (apt-get install fuse3)"
    );
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("fusermount3").is_file()))
        .unwrap_or(false);
    assert!(found, "fusermount3 is missing: apt-get install fuse3");
}

/// A live `sessfs mount` of a home; unmounts on drop.
pub struct Mount {
    pub dir: TempDir,
}

impl Mount {
    pub fn new(home: &Home, extra: &[&str]) -> Mount {
        require_fuse();
        let dir = tempfile::Builder::new()
            .prefix("sessfs-mnt")
            .tempdir()
            .expect("temp dir");
        let mp = dir.path().to_str().expect("utf-8 path").to_string();
        let mut args = vec!["mount", mp.as_str()];
        args.extend_from_slice(extra);
        let out = home.sessfs(&args);
        assert!(
            out.status.success(),
            "mount failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Mount { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Run a shell command with the mount as the working directory.
    pub fn sh(&self, script: &str) -> Output {
        Command::new("bash")
            .arg("-c")
            .arg(script)
            .current_dir(self.path())
            .output()
            .expect("run bash")
    }

    /// What `grep -rlF` finds of `text` under `dirs` (the whole mount when empty): the
    /// `<agent>/<session>` directories, and the files. Diff files (`parent.diff`,
    /// `branches/*.diff`) quote the other side of a comparison by design, so they are left
    /// out; `grep -r` does not follow the `subagents/` links.
    pub fn grep(&self, text: &str, dirs: &[&str]) -> (BTreeSet<String>, Vec<String>) {
        let pats = tempfile::NamedTempFile::new().expect("pattern file");
        std::fs::write(pats.path(), format!("{text}\n")).expect("write pattern");
        let under = if dirs.is_empty() {
            ".".to_string()
        } else {
            dirs.join(" ")
        };
        let out = self.sh(&format!(
            "grep -rlF --exclude='*.diff' -f {} {under}",
            pats.path().display()
        ));
        let files: Vec<String> = stdout(&out)
            .lines()
            .map(|p| p.trim_start_matches("./").to_string())
            .collect();
        let sessions = files
            .iter()
            .filter_map(|p| {
                let mut parts = p.split('/');
                Some(format!("{}/{}", parts.next()?, parts.next()?))
            })
            .collect();
        (sessions, files)
    }

    /// The `<agent>/<session>` directories in which [`Mount::grep`] finds `text`.
    pub fn sessions_holding(&self, text: &str, dirs: &[&str]) -> BTreeSet<String> {
        self.grep(text, dirs).0
    }

    /// The parsed `meta.json` of `<agent>/<session>`.
    pub fn meta(&self, session: &str) -> serde_json::Value {
        let p = self.path().join(session).join("meta.json");
        let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        serde_json::from_slice(&bytes).expect("meta.json parses")
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let p = self.dir.path().to_path_buf();
        let ok = Command::new(bin())
            .arg("umount")
            .arg(&p)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            let _ = Command::new("fusermount3").arg("-uz").arg(&p).output();
        }
        let start = Instant::now();
        while std::fs::read_to_string("/proc/self/mountinfo")
            .map(|m| m.contains(p.to_str().unwrap_or("")))
            .unwrap_or(false)
            && start.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        // The process may still be finishing (writing its render cache) after the kernel
        // let go of the mount: wait for it, so it never writes into a home already removed.
        wait_for_mount_exit(p.to_str().unwrap_or(""));
        // The mount's log outlives a mount by design (one per mountpoint); a test's
        // mountpoint is never mounted again.
        let canon = p.canonicalize().unwrap_or(p);
        let _ = std::fs::remove_file(sessfs::mount::log_path(&canon));
    }
}

/// Waits (up to 10 s) until no `sessfs mount <mp> …` process runs any more.
pub fn wait_for_mount_exit(mp: &str) {
    let start = Instant::now();
    while mount_process_alive(mp) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a `sessfs mount <mp> …` process is still running.
fn mount_process_alive(mp: &str) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|e| {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            return false;
        };
        let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        args.len() > 2 && args[1] == b"mount" && args[2] == mp.as_bytes()
    })
}

/// `sessfs mount --foreground` as a child of the test, logging at debug level to a file, so
/// the test can count renders (`rendered <agent>/<name> version …`, one line per render).
pub struct Foreground {
    pub dir: tempfile::TempDir,
    _logdir: tempfile::TempDir,
    pub log: PathBuf,
    pub child: Child,
}

impl Foreground {
    pub fn new(home: &Home) -> Foreground {
        Foreground::with_log(home, "sessfs=debug")
    }

    /// A foreground mount logging at `level` (`RUST_LOG` syntax).
    pub fn with_log(home: &Home, level: &str) -> Foreground {
        Foreground::with_args(home, level, &[])
    }

    /// [`Foreground::with_log`] with more `mount` options.
    pub fn with_args(home: &Home, level: &str, extra: &[&str]) -> Foreground {
        require_fuse();
        let dir = tempfile::Builder::new()
            .prefix("sessfs-mnt")
            .tempdir()
            .expect("temp dir");
        let logdir = tempfile::tempdir().expect("temp dir");
        let log = logdir.path().join("sessfs.log");
        let logf = std::fs::File::create(&log).expect("log file");
        let mp = dir.path().to_str().expect("utf-8 path").to_string();
        let mut child = home
            .command(&[&["mount", mp.as_str(), "--foreground"][..], extra].concat())
            .env("RUST_LOG", level)
            .env("SESSFS_QUIET_READY", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(logf)
            .spawn()
            .expect("spawn sessfs");
        let start = Instant::now();
        loop {
            let mounted = std::fs::read_to_string("/proc/self/mountinfo")
                .map(|m| m.contains(&format!(" {mp} ")))
                .unwrap_or(false);
            if mounted {
                break;
            }
            if let Ok(Some(st)) = child.try_wait() {
                panic!(
                    "sessfs exited ({st}): {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            // A guard against a hung test, not a timing assertion.
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "mount never came up"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Foreground {
            dir,
            _logdir: logdir,
            log,
            child,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Everything logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many times each `<agent>/<name>` was rendered so far.
    pub fn renders(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for line in std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
        {
            if let Some((_, rest)) = line.split_once("] rendered ") {
                let key = rest.split(" version ").next().unwrap_or(rest);
                *out.entry(key.to_string()).or_insert(0) += 1;
            }
        }
        out
    }

    pub fn sh(&self, script: &str) -> std::process::Output {
        Command::new("bash")
            .arg("-c")
            .arg(script)
            .current_dir(self.path())
            .output()
            .expect("run bash")
    }
}

impl Drop for Foreground {
    fn drop(&mut self) {
        let _ = Command::new(bin())
            .arg("umount")
            .arg(self.dir.path())
            .output();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = Command::new("fusermount3")
            .arg("-uz")
            .arg(self.dir.path())
            .output();
    }
}

/// For every file of the mount under `tops` (the whole mount when empty): `stat` size =
/// bytes read = bytes mapped (Python's `mmap`), never 0; and at least `min_files` files.
/// `diff/` lists nothing and links are skipped.
pub fn assert_sizes_agree(mnt: &Path, tops: &[&str], min_files: usize) {
    let script = r#"
import mmap, os, sys
bad = 0; n = 0
for top in (sys.argv[3:] or ['.']):
    for root, dirs, files in os.walk(os.path.join(sys.argv[1], top)):
        if os.path.basename(root) == 'diff':
            continue
        for f in files:
            p = os.path.join(root, f)
            if os.path.islink(p):
                continue
            size = os.stat(p).st_size
            with open(p, 'rb') as fh:
                with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    mlen = len(mm[:])
            with open(p, 'rb') as fh:
                data = fh.read()
            n += 1
            if not (size == len(data) == mlen) or size == 0:
                bad += 1
                print(f"MISMATCH {p}: stat {size} read {len(data)} mmap {mlen}")
print(f"checked {n}")
sys.exit(1 if bad or n < int(sys.argv[2]) else 0)
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(mnt)
        .arg(min_files.max(1).to_string())
        .args(tops)
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

/// Every regular file under `dir`, not following symlinks, skipping nothing.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let ft = e.file_type().expect("file type");
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Poll `f` until it holds and return how long that took (printed, never asserted: the
/// one-second freshness figure is measured by `scripts/bench`). Panics after a generous
/// 30 s, which only a change that never shows up reaches.
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what}: not seen within 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = start.elapsed();
    eprintln!("{what}: seen after {took:?}");
    took
}

/// Set `path`'s mtime `secs` seconds back: a store at rest, whose directories moved long
/// before the search that stamps them (one that moved within two seconds is not trusted).
pub fn age(path: &Path, secs: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
    std::fs::File::open(path)
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_modified(t))
        .unwrap();
}

/// `sessfs search` with its log: the sessions found and whether it listed no store.
pub fn logged_search(home: &Home, query: &str) -> (BTreeSet<String>, bool) {
    logged_search_with(home, &[], query)
}

/// [`logged_search`] with more options before the query (`--threads-root DIR`, say).
pub fn logged_search_with(
    home: &Home,
    options: &[&std::ffi::OsStr],
    query: &str,
) -> (BTreeSet<String>, bool) {
    let out = home
        .command(&["search", "--json"])
        .args(options)
        .arg(query)
        .env("RUST_LOG", "sessfs=info")
        .output()
        .unwrap();
    let found = stdout(&out)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let path = v["path"].as_str().unwrap().to_string();
            path.split('/').take(2).collect::<Vec<_>>().join("/")
        })
        .collect();
    (found, stderr(&out).contains("unchanged by their glances"))
}
