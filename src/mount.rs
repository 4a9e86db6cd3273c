//! Mounting and unmounting: checks that turn every user mistake into one clear line, and the
//! background mode that returns once the mount is live (like sshfs).
//!
//! Background mode re-executes sessfs with `--foreground` in a new session (`setsid`), its
//! output going to a log file, and waits until the mount shows up in `/proc/self/mountinfo`
//! (or the child dies, whose last log line then becomes the error). Re-executing rather than
//! forking keeps the daemon free of any state from the parent's threads.

use crate::tree::Fs;
use anyhow::{anyhow, bail, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct MountArgs {
    pub dir: PathBuf,
    pub foreground: bool,
    pub cache_mb: usize,
    pub allow_other: bool,
    /// Take requests through io_uring where the kernel offers it (`fuse::ring`).
    pub io_uring: bool,
    /// Budget of the render cache on disk, in MiB, and whether there is one.
    pub disk_cache_mb: u64,
    pub disk_cache: bool,
    /// The store options as given (`--store`, `--threads-root`), passed on unchanged to the
    /// serving process in background mode.
    pub store_args: Vec<OsString>,
}

/// Mount on `args.dir`; `open` builds the filesystem in the serving process (called only
/// after the checks, and before FUSE starts).
pub fn mount(args: MountArgs, open: impl FnOnce() -> Result<Arc<Fs>>) -> Result<()> {
    check_fuse()?;
    check_mountpoint(&args.dir)?;
    if args.foreground {
        // Before any thread exists (the render-ahead threads start in `open`).
        crate::fuse::block_stop_signals();
        let fs = open()?;
        let dir = args.dir.clone();
        let ready = || {
            if let Some(fd) = std::env::var_os("SESSFS_QUIET_READY") {
                let _ = fd;
            } else {
                eprintln!("sessfs: mounted on {} (Ctrl-C to unmount)", dir.display());
            }
        };
        crate::fuse::serve(fs, &args.dir, args.allow_other, args.io_uring, ready)
            .map_err(|e| anyhow!("cannot mount {}: {e}", args.dir.display()))?;
        return Ok(());
    }
    daemonize(&args)
}

fn daemonize(args: &MountArgs) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let dir = std::fs::canonicalize(&args.dir)?;
    let exe = std::env::current_exe()?;
    let log = log_path(&dir);
    let logf = std::fs::File::create(&log)
        .map_err(|e| anyhow!("cannot create log file {}: {e}", log.display()))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("mount")
        .arg(&dir)
        .arg("--foreground")
        .arg("--cache-mb")
        .arg(args.cache_mb.to_string());
    if args.allow_other {
        cmd.arg("--allow-other");
    }
    if !args.io_uring {
        cmd.arg("--no-io-uring");
    }
    cmd.arg("--disk-cache-mb")
        .arg(args.disk_cache_mb.to_string());
    if !args.disk_cache {
        cmd.arg("--no-disk-cache");
    }
    cmd.args(&args.store_args);
    cmd.env("SESSFS_QUIET_READY", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(logf.try_clone()?);
    // SAFETY: setsid is async-signal-safe and only detaches the child from our terminal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let start = Instant::now();
    loop {
        if is_mounted(&dir) {
            // Pass on what the serving process said at startup (e.g. that it shows samples).
            for line in std::fs::read_to_string(&log).unwrap_or_default().lines() {
                if line.starts_with("sessfs: ") {
                    eprintln!("{line}");
                }
            }
            eprintln!(
                "sessfs: mounted on {} (log: {}; sessfs umount {} to stop)",
                dir.display(),
                log.display(),
                dir.display()
            );
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("the mount process exited")
                .trim_start_matches("Error: ")
                .trim_start_matches("sessfs: ");
            bail!("{last} (exit {status})");
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            bail!(
                "the mount did not come up within 20 s; see {}",
                log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The log file of the mount on `dir` (canonical): one per mountpoint, truncated each time
/// that mountpoint is mounted, so it never grows across mounts.
pub fn log_path(dir: &Path) -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let h = crate::names::fnv1a(dir.as_os_str().as_encoded_bytes());
    base.join(format!("sessfs-{h:016x}.log"))
}

pub fn umount(dir: &Path) -> Result<()> {
    let canon = match std::fs::canonicalize(dir) {
        Ok(p) => p,
        Err(e) if is_stale(&e) => dir.to_path_buf(),
        Err(_) => bail!("{} does not exist", dir.display()),
    };
    if !is_mounted(&canon) {
        bail!("{} is not a sessfs mount", dir.display());
    }
    let tools: [(&str, &[&str]); 3] = [
        ("fusermount3", &["-u"]),
        ("fusermount", &["-u"]),
        ("umount", &[]),
    ];
    let mut last = String::new();
    for (tool, flags) in tools {
        let Some(bin) = which(tool) else { continue };
        let out = std::process::Command::new(bin)
            .args(flags)
            .arg(&canon)
            .output()?;
        if out.status.success() {
            wait_unmounted(&canon);
            return Ok(());
        }
        last = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if last.contains("busy") {
            bail!(
                "{} is busy: a process is still using it (close it, e.g. a shell cd'd inside)",
                dir.display()
            );
        }
    }
    bail!("cannot unmount {}: {last}", dir.display())
}

fn wait_unmounted(dir: &Path) {
    let start = Instant::now();
    while is_mounted(dir) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every sessfs mountpoint of this machine's mount namespace, as `/proc/self/mountinfo`
/// lists them.
pub fn live_mounts() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mp = left.split(' ').nth(4)?;
            right
                .contains("sessfs")
                .then(|| PathBuf::from(unescape_mountinfo(mp)))
        })
        .collect()
}

/// Log bytes one serving process writes at most; then one line says the rest is dropped.
pub const LOG_LIMIT: u64 = 4 * 1024 * 1024;

/// A log sink that stops writing after `limit` bytes, so a flood of warnings (a kernel
/// retrying a request, a store full of broken lines) cannot fill the disk. The log is
/// for diagnosis; its first few MB say what went wrong.
pub struct CappedLog<W: std::io::Write> {
    inner: W,
    written: u64,
    limit: u64,
    capped: bool,
}

impl<W: std::io::Write> CappedLog<W> {
    pub fn new(inner: W, limit: u64) -> CappedLog<W> {
        CappedLog {
            inner,
            written: 0,
            limit,
            capped: false,
        }
    }
}

impl<W: std::io::Write> std::io::Write for CappedLog<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.capped {
            return Ok(buf.len());
        }
        if self.written + buf.len() as u64 > self.limit {
            self.capped = true;
            let note = format!(
                "sessfs: log capped at {} bytes; later lines are dropped until the next mount\n",
                self.limit
            );
            self.inner.write_all(note.as_bytes())?;
            return Ok(buf.len());
        }
        self.inner.write_all(buf)?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Is `dir` a sessfs mount point right now?
pub fn is_mounted(dir: &Path) -> bool {
    mount_entry(dir).is_some_and(|m| m.contains("sessfs"))
}

/// `<fstype> <source>` of the mount at `dir`, if there is one. sessfs mounts show as
/// `fuse.sessfs sessfs` or, where the subtype is dropped, `fuse sessfs`.
fn mount_entry(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let want = dir.to_str()?;
    text.lines().rev().find_map(|line| {
        let mut parts = line.split(" - ");
        let left = parts.next()?;
        let right = parts.next()?;
        let mp = left.split(' ').nth(4)?;
        let mut r = right.split(' ');
        let fstype = r.next().unwrap_or("");
        let source = r.next().unwrap_or("");
        (unescape_mountinfo(mp) == want).then(|| format!("{fstype} {source}"))
    })
}

fn unescape_mountinfo(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

fn check_fuse() -> Result<()> {
    // The device path can be overridden so the missing-FUSE message can be tested.
    let dev = std::env::var_os("SESSFS_FUSE_DEVICE").unwrap_or_else(|| "/dev/fuse".into());
    if !Path::new(&dev).exists() {
        bail!("FUSE is not available (/dev/fuse is missing); load the fuse kernel module or install fuse3 (apt-get install fuse3)");
    }
    if which("fusermount3").is_none() && which("fusermount").is_none() {
        bail!("fusermount3 is not installed; install it with: apt-get install fuse3");
    }
    Ok(())
}

/// What a mountpoint answers once its FUSE process is gone: `ENOTCONN`, or `ECONNABORTED`
/// while the kernel is still tearing the connection down, just after the process died.
fn is_stale(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOTCONN | libc::ECONNABORTED))
}

fn check_mountpoint(dir: &Path) -> Result<()> {
    let d = dir.display();
    match std::fs::metadata(dir) {
        Err(e) if is_stale(&e) => {
            bail!("{d} is a stale mount (its sessfs process is gone: {e}); run: sessfs umount {d}")
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("mountpoint {d} does not exist; create it with: mkdir -p {d}")
        }
        Err(e) => bail!("cannot use {d} as a mountpoint: {e}"),
        Ok(m) if !m.is_dir() => bail!("mountpoint {d} is not a directory"),
        Ok(_) => {}
    }
    let canon = std::fs::canonicalize(dir)?;
    if let Some(m) = mount_entry(&canon) {
        if m.contains("sessfs") {
            bail!("{d} is already a sessfs mount; run sessfs umount {d} first");
        }
    }
    let mut rd = std::fs::read_dir(dir).map_err(|e| anyhow!("cannot read {d}: {e}"))?;
    if rd.next().is_some() {
        bail!("mountpoint {d} is not empty; use an empty directory");
    }
    Ok(())
}

/// Find an executable on `$PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A flood of warnings made the log grow without bound.
    #[test]
    fn the_log_stops_at_its_limit_with_one_note() {
        let mut out = Vec::new();
        {
            let mut log = CappedLog::new(&mut out, 1000);
            for i in 0..10_000 {
                writeln!(log, "[WARN] line {i}").expect("write");
            }
        }
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.len() <= 1000 + 100, "{}", text.len());
        assert_eq!(text.matches("log capped").count(), 1);
        assert!(text.starts_with("[WARN] line 0\n"));
    }
}
