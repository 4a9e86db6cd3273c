//! `sessfs service`: a mount that starts at login and stops at logout.
//!
//! On Linux that is a systemd user unit (`~/.config/systemd/user/sessfs.service`) running
//! `sessfs mount --foreground <dir>`: systemd starts it with the user's session and sends
//! SIGTERM when the session ends, and `--foreground` unmounts cleanly on SIGTERM. The unit
//! carries the store-location variables (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, …) that were set
//! when it was installed, since a user manager does not see a shell's environment. On macOS
//! the same command runs from a launchd agent (`~/Library/LaunchAgents/dev.sessfs.mount.plist`,
//! `RunAtLoad`); its text is written by [`launchd_plist`] and documented in the README.
//!
//! The unit is a plain file the user can read; `uninstall` removes only that file.

use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The unit's name, as `systemctl --user` knows it.
pub const UNIT: &str = "sessfs.service";

/// The launchd label on macOS.
pub const LAUNCHD_LABEL: &str = "dev.sessfs.mount";

/// Variables through which the stores are found somewhere other than under `$HOME`. The unit
/// repeats those that are set at install time. (A unit test checks that every such variable
/// the stores read is here.)
pub const STORE_VARS: &[&str] = &[
    "AGSH_DATA_DIR",
    "AICHAT_CONFIG_DIR",
    "AICHAT_SESSIONS_DIR",
    "AIDER_CHAT_HISTORY_FILE",
    "CHAT_CACHE_PATH",
    "CLAUDE_CONFIG_DIR",
    "CLAWDBOT_STATE_DIR",
    "CLINE_DATA_DIR",
    "CLINE_SESSION_DATA_DIR",
    "CLINE_DIR",
    "CODEX_HOME",
    "CODE_HOME",
    "CONTINUE_GLOBAL_DIR",
    "COPILOT_HOME",
    "CRUSH_GLOBAL_DATA",
    "CURSOR_CONFIG_DIR",
    "FLATPAK_XDG_DATA_HOME",
    "FORGE_CONFIG",
    "GEMINI_CLI_HOME",
    "GPTME_LOGS_HOME",
    "HERMES_HOME",
    "IFLOW_HOME",
    "INDUSAGI_AGENT_DIR",
    "INDUSAGI_CODING_AGENT_DIR",
    "INDUSAGI_DIR",
    "JAN_DATA_FOLDER",
    "KILO_DB",
    "KIMI_SHARE_DIR",
    "KODE_CONFIG_DIR",
    "KODE_LEGACY_CACHE_ROOT",
    "KODE_LOG_ROOT",
    "LLM_USER_PATH",
    "LLXPRT_CONFIG_HOME",
    "LLXPRT_LOG_HOME",
    "MEKA_DATA_DIR",
    "MODS_CACHE_PATH",
    "MUX_ROOT",
    "NANOCODER_DATA_DIR",
    "NVIM_APPNAME",
    "OLLAMA_APP_DB_PATH",
    "OMP_CODING_AGENT_DIR",
    "OPENCLAW_HOME",
    "OPENCLAW_STATE_DIR",
    "OPENCODE_DB",
    "OPENHANDS_CONVERSATIONS_DIR",
    "OPENHANDS_PERSISTENCE_DIR",
    "OTERM_DATA_DIR",
    "PI_CODING_AGENT_DIR",
    "PI_CONFIG_DIR",
    "QWEN_RUNTIME_DIR",
    "STORAGE_DIR",
    "TEMP",
    "TMP",
    "TMPDIR",
    "VIBE_HOME",
    "VSCODE_APPDATA",
    "VSCODE_PORTABLE",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XUM_ROOT",
];

/// What a service runs: the binary, the mountpoint, the extra `--store`/`--threads-root`
/// arguments and the store variables, all absolute.
#[derive(Debug, Clone)]
pub struct Spec {
    pub exe: PathBuf,
    pub dir: PathBuf,
    pub args: Vec<String>,
    pub vars: Vec<(String, String)>,
}

impl Spec {
    /// The spec for this process: its own binary, the store variables of its environment.
    pub fn here(dir: PathBuf, args: Vec<String>) -> Result<Spec> {
        let exe = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .context("cannot tell where the sessfs binary is")?;
        let vars = STORE_VARS
            .iter()
            .filter_map(|v| {
                let val = std::env::var(v).ok().filter(|s| !s.is_empty())?;
                Some((v.to_string(), val))
            })
            .collect();
        Ok(Spec {
            exe,
            dir,
            args,
            vars,
        })
    }

    fn command(&self) -> Vec<String> {
        let mut c = vec![
            self.exe.display().to_string(),
            "mount".into(),
            "--foreground".into(),
        ];
        c.extend(self.args.iter().cloned());
        c.push(self.dir.display().to_string());
        c
    }
}

/// The systemd user unit for `spec`.
pub fn systemd_unit(spec: &Spec) -> String {
    let exec = |words: &[String]| -> String {
        words
            .iter()
            .map(|w| systemd_quote(w))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let umount = [
        spec.exe.display().to_string(),
        "umount".into(),
        spec.dir.display().to_string(),
    ];
    let mut out = String::new();
    out.push_str(
        "# Written by `sessfs service install`; remove it with `sessfs service uninstall`.\n",
    );
    out.push_str("[Unit]\n");
    out.push_str(&format!(
        "Description=sessfs: every coding-agent session as files on {}\n",
        spec.dir.display().to_string().replace('%', "%%")
    ));
    out.push_str("\n[Service]\nType=simple\n");
    for (k, v) in &spec.vars {
        out.push_str(&format!(
            "Environment={}\n",
            systemd_quote(&format!("{k}={v}"))
        ));
    }
    // A mount left stale by a crash would make the next start fail; `-` ignores the error
    // of the usual case, nothing mounted.
    out.push_str(&format!("ExecStartPre=-{}\n", exec(&umount)));
    out.push_str(&format!("ExecStart={}\n", exec(&spec.command())));
    out.push_str("Restart=on-failure\nRestartSec=10\n\n[Install]\nWantedBy=default.target\n");
    out
}

/// A word quoted for a unit's command line and `Environment=`: in double quotes, with `\`,
/// `"` escaped and `%` doubled (systemd's specifier character) and `$` doubled (its
/// variable expansion).
fn systemd_quote(w: &str) -> String {
    let mut s = String::with_capacity(w.len() + 2);
    s.push('"');
    for c in w.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '%' => s.push_str("%%"),
            '$' => s.push_str("$$"),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// The launchd agent for `spec` (macOS).
pub fn launchd_plist(spec: &Spec) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n",
    );
    out.push_str(&format!(
        "  <key>Label</key>\n  <string>{LAUNCHD_LABEL}</string>\n  <key>ProgramArguments</key>\n  <array>\n"
    ));
    for w in spec.command() {
        out.push_str(&format!("    <string>{}</string>\n", esc(&w)));
    }
    out.push_str("  </array>\n");
    if !spec.vars.is_empty() {
        out.push_str("  <key>EnvironmentVariables</key>\n  <dict>\n");
        for (k, v) in &spec.vars {
            out.push_str(&format!(
                "    <key>{}</key>\n    <string>{}</string>\n",
                esc(k),
                esc(v)
            ));
        }
        out.push_str("  </dict>\n");
    }
    out.push_str(
        "  <key>RunAtLoad</key>\n  <true/>\n  <key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n  </dict>\n</dict>\n</plist>\n",
    );
    out
}

/// Where the unit (Linux) or agent (macOS) file lives.
pub fn unit_path() -> Result<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from).ok_or_else(|| {
        anyhow!("HOME is not set; sessfs cannot tell where your user services live")
    })?;
    if cfg!(target_os = "macos") {
        return Ok(home
            .join("Library/LaunchAgents")
            .join(format!("{LAUNCHD_LABEL}.plist")));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| home.join(".config"));
    Ok(config.join("systemd/user").join(UNIT))
}

/// The default mountpoint: `~/sessions`.
pub fn default_dir() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join("sessions"))
        .ok_or_else(|| {
            anyhow!("HOME is not set; name the mountpoint: sessfs service install <dir>")
        })
}

/// `sessfs service install`: write the unit, then (unless `enable` is false) enable and
/// start it.
pub fn install(dir: Option<PathBuf>, args: Vec<String>, enable: bool) -> Result<()> {
    let dir = match dir {
        Some(d) => d,
        None => default_dir()?,
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the mountpoint {}", dir.display()))?;
    let dir = std::fs::canonicalize(&dir)?;
    let spec = Spec::here(dir.clone(), args)?;
    let path = unit_path()?;
    let text = if cfg!(target_os = "macos") {
        launchd_plist(&spec)
    } else {
        systemd_unit(&spec)
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {}", path.display());
    if !enable {
        return Ok(());
    }
    if cfg!(target_os = "macos") {
        run("launchctl", &["load", "-w", &path.display().to_string()])?;
    } else {
        run("systemctl", &["--user", "daemon-reload"])?;
        run("systemctl", &["--user", "enable", "--now", UNIT])?;
    }
    println!(
        "sessfs now mounts {} at every login (sessfs service status shows how it is doing)",
        dir.display()
    );
    Ok(())
}

/// `sessfs service uninstall`: stop and disable the service, remove its file.
pub fn uninstall(dir: Option<PathBuf>) -> Result<()> {
    let path = unit_path()?;
    let Ok(text) = std::fs::read_to_string(&path) else {
        bail!(
            "no sessfs service is installed ({} does not exist)",
            path.display()
        );
    };
    if let (Some(want), Some(has)) = (&dir, unit_dir(&text)) {
        let want = std::fs::canonicalize(want).unwrap_or(want.clone());
        if want != has {
            bail!(
                "the installed service mounts {}, not {}; run sessfs service uninstall without a directory",
                has.display(),
                want.display()
            );
        }
    }
    // Stopping unmounts (SIGTERM to a foreground mount); a manager that is not running is
    // no reason to keep the file.
    let stopped = if cfg!(target_os = "macos") {
        run("launchctl", &["unload", "-w", &path.display().to_string()])
    } else {
        run("systemctl", &["--user", "disable", "--now", UNIT])
    };
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    if !cfg!(target_os = "macos") {
        let _ = run("systemctl", &["--user", "daemon-reload"]);
    }
    println!("removed {}", path.display());
    if let Err(e) = stopped {
        eprintln!("sessfs: note: {e:#}");
    }
    Ok(())
}

/// `sessfs service status`: installed or not, the manager's view, mounted or not, the last
/// lines of the log, the cache's size.
pub fn status(dir: Option<PathBuf>) -> Result<()> {
    let path = unit_path()?;
    let unit_text = std::fs::read_to_string(&path).ok();
    let dir = dir
        .or_else(|| unit_text.as_deref().and_then(unit_dir))
        .map(Ok)
        .unwrap_or_else(default_dir)?;
    match &unit_text {
        Some(_) => println!("service:   installed ({})", path.display()),
        None => println!("service:   not installed (sessfs service install [<dir>])"),
    }
    if unit_text.is_some() && !cfg!(target_os = "macos") {
        let state = |verb: &str| {
            output("systemctl", &["--user", verb, UNIT])
                .unwrap_or_else(|e| format!("unknown ({e})"))
        };
        println!("enabled:   {}", state("is-enabled"));
        println!("active:    {}", state("is-active"));
    }
    let canon = std::fs::canonicalize(&dir).unwrap_or(dir.clone());
    let mounted = crate::mount::is_mounted(&canon);
    println!(
        "mount:     {} {}",
        dir.display(),
        if mounted {
            "is mounted"
        } else {
            "is not mounted"
        }
    );
    if let Some(cache) = cache_dir() {
        let render = cache.join("render");
        println!(
            "cache:     {} ({}; rendered sessions kept between mounts {}, search index {})",
            cache.display(),
            human(dir_size(&cache)),
            human(dir_size(&render)),
            human(
                ["index.sqlite3", "index.sqlite3-wal"]
                    .iter()
                    .filter_map(|f| std::fs::metadata(cache.join(f)).ok())
                    .map(|m| m.len())
                    .sum()
            )
        );
    }
    let log = if unit_text.is_some() && !cfg!(target_os = "macos") {
        output(
            "journalctl",
            &[
                "--user",
                "-u",
                UNIT,
                "-n",
                "10",
                "--no-pager",
                "-o",
                "short-iso",
            ],
        )
        .ok()
    } else {
        std::fs::read_to_string(crate::mount::log_path(&canon)).ok()
    };
    if let Some(log) = log.filter(|l| !l.trim().is_empty()) {
        println!("log (last lines):");
        let lines: Vec<&str> = log.lines().collect();
        for l in &lines[lines.len().saturating_sub(10)..] {
            println!("  {l}");
        }
    }
    Ok(())
}

/// The mountpoint named on a unit's `ExecStart=` line (its last word).
fn unit_dir(unit: &str) -> Option<PathBuf> {
    let line = unit.lines().find_map(|l| l.strip_prefix("ExecStart="))?;
    let last = line.rsplit_once(" \"")?.1.strip_suffix('"')?;
    Some(PathBuf::from(
        last.replace("\\\"", "\"")
            .replace("\\\\", "\\")
            .replace("%%", "%")
            .replace("$$", "$"),
    ))
}

/// `$XDG_CACHE_HOME/sessfs`, where the search index and spilled files live.
fn cache_dir() -> Option<PathBuf> {
    Some(crate::search::default_path().ok()?.parent()?.to_path_buf())
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn human(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

/// Run a manager command; its failure is one line naming the command and what it said.
fn run(cmd: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| anyhow!("cannot run {cmd}: {e}"))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        bail!(
            "`{cmd} {}` failed: {}; the unit file is in place, run that command in your login session",
            args.join(" "),
            said.lines().next().unwrap_or("no message").trim()
        );
    }
    Ok(())
}

fn output(cmd: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| anyhow!("cannot run {cmd}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if text.is_empty() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Ok(err.lines().next().unwrap_or("").trim().to_string());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec {
            exe: PathBuf::from("/opt/sessfs/bin/sessfs"),
            dir: PathBuf::from("/home/u/my sessions %x"),
            args: vec!["--store".into(), "claude=/backup/$HOME/.claude".into()],
            vars: vec![("CODEX_HOME".into(), "/data/codex".into())],
        }
    }

    #[test]
    fn the_unit_runs_a_foreground_mount_and_quotes_every_word() {
        let unit = systemd_unit(&spec());
        assert!(unit.contains(
            "ExecStart=\"/opt/sessfs/bin/sessfs\" \"mount\" \"--foreground\" \"--store\" \
             \"claude=/backup/$$HOME/.claude\" \"/home/u/my sessions %%x\"\n"
        ));
        assert!(unit.contains("Environment=\"CODEX_HOME=/data/codex\"\n"));
        assert!(unit.contains("ExecStartPre=-\"/opt/sessfs/bin/sessfs\" \"umount\""));
        assert!(unit.contains("WantedBy=default.target"));
        assert_eq!(
            unit_dir(&unit),
            Some(PathBuf::from("/home/u/my sessions %x"))
        );
    }

    #[test]
    fn the_launchd_agent_names_the_same_command() {
        let plist = launchd_plist(&spec());
        assert!(plist.contains("<string>--foreground</string>"));
        assert!(plist.contains("<string>/home/u/my sessions %x</string>"));
        assert!(plist.contains("<key>CODEX_HOME</key>"));
        assert!(plist.contains("<key>RunAtLoad</key>"));
    }

    /// A store that learns a new location variable must have it carried into the unit.
    #[test]
    fn every_variable_the_stores_read_is_carried() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/stores");
        let mut missing = Vec::new();
        let mut files = vec![dir];
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().flatten().map(|e| e.path()));
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            for word in text.split('"') {
                let is_var = word.len() > 4
                    && word.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
                    && ["_HOME", "_DIR", "_DB", "_DATA", "_FILE"]
                        .iter()
                        .any(|s| word.ends_with(s));
                // Names in the stores' own unit tests and build, not locations.
                let not_a_location = ["CARGO_MANIFEST_DIR", "X_HOME"].contains(&word);
                if is_var
                    && !not_a_location
                    && !STORE_VARS.contains(&word)
                    && !missing.contains(&word.to_string())
                {
                    missing.push(word.to_string());
                }
            }
        }
        assert!(missing.is_empty(), "add to STORE_VARS: {missing:?}");
    }
}
