//! The command line (CONTRACT section 9). Every user mistake ends in one line on stderr that
//! says what is wrong and what to do, and a non-zero exit; `main` prints it.

use crate::model::Agent;
use crate::stores::{self, Env, Store};
use crate::tree::{Fs, Kind, Options};
use anyhow::{anyhow, bail, Context, Result};
use chrono::{DateTime, NaiveDate, Utc};
use clap::{Parser, Subcommand, ValueEnum};
use clap_complete::engine::{ArgValueCandidates, ArgValueCompleter};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Parser, Debug)]
#[command(
    name = "sessfs",
    version,
    about = "Every AI coding-agent session as one read-only tree of plain files"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Where to look for stores beyond the automatic discovery.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// Add a store root by hand, e.g. `--store claude=/backup/.claude/projects`.
    #[arg(long = "store", value_name = "AGENT=PATH")]
    pub stores: Vec<String>,
    /// A project or `.agent/threads` directory holding ATSF threads (repeatable).
    #[arg(long = "threads-root", value_name = "DIR")]
    pub threads_roots: Vec<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Mount every session under DIR (returns once the mount is live).
    Mount {
        dir: PathBuf,
        /// Stay attached; unmount cleanly on Ctrl-C or SIGTERM.
        #[arg(long)]
        foreground: bool,
        /// Budget for rendered files, in MiB.
        #[arg(long, default_value_t = 256, value_name = "N")]
        cache_mb: usize,
        /// Let other users read the mount (needs `user_allow_other` in /etc/fuse.conf).
        #[arg(long)]
        allow_other: bool,
        /// Take requests through /dev/fuse even where the kernel offers io_uring queues.
        #[arg(long)]
        no_io_uring: bool,
        /// Budget for rendered sessions kept on disk between mounts, in MiB.
        #[arg(long, default_value_t = 2048, value_name = "N")]
        disk_cache_mb: u64,
        /// Keep no rendered sessions on disk: every mount renders from the stores.
        #[arg(long)]
        no_disk_cache: bool,
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// Unmount a sessfs mount.
    Umount { dir: PathBuf },
    /// List sessions, newest first.
    List {
        #[arg(add = ArgValueCandidates::new(crate::shell::agents))]
        agent: Option<String>,
        /// Sessions active from this date on (YYYY-MM-DD, RFC 3339, today, yesterday, or an
        /// age: 12h, 7d, 2w; UTC).
        #[arg(long)]
        since: Option<String>,
        /// Sessions last active up to this date.
        #[arg(long)]
        until: Option<String>,
        /// Sessions that used a model whose name contains M.
        #[arg(long)]
        model: Option<String>,
        /// Sessions whose working directory starts with P.
        #[arg(long)]
        cwd: Option<String>,
        #[arg(long)]
        tag: Option<String>,
        #[arg(long, value_enum, default_value_t = SortKey::Date)]
        sort: SortKey,
        #[arg(long)]
        asc: bool,
        #[arg(long)]
        limit: Option<usize>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// Print one session.
    Show {
        /// `<agent>:<native id>`, as in `sessfs list`.
        #[arg(add = ArgValueCompleter::new(crate::shell::session_ids))]
        id: String,
        #[arg(long, value_enum, default_value_t = ShowFormat::Markdown)]
        format: ShowFormat,
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// Compare two sessions (any agents): unified diff of the transcripts, or with
    /// `--json` the structural diff of their messages.
    Diff {
        #[arg(add = ArgValueCompleter::new(crate::shell::session_ids))]
        a: String,
        #[arg(add = ArgValueCompleter::new(crate::shell::session_ids))]
        b: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// Search every session's transcript and tool files (a persistent index under
    /// ~/.cache/sessfs, brought up to date first). Words must all occur in one line, each as
    /// a case-insensitive substring; "a phrase" matches as written; a trailing * is a
    /// prefix. Exits 1 when nothing matches.
    Search {
        /// The query (several words are joined with spaces).
        #[arg(required = true)]
        query: Vec<String>,
        /// Only this agent's sessions (repeatable).
        #[arg(long, add = ArgValueCandidates::new(crate::shell::agents))]
        agent: Vec<String>,
        /// Sessions active from this date on (YYYY-MM-DD, RFC 3339, today, yesterday, or an
        /// age: 12h, 7d, 2w; UTC).
        #[arg(long)]
        since: Option<String>,
        /// Sessions last active up to this date.
        #[arg(long)]
        until: Option<String>,
        /// Sessions whose working directory starts with P.
        #[arg(long, value_name = "P")]
        cwd: Option<String>,
        /// At most N hits, best first.
        #[arg(long, default_value_t = 100, value_name = "N")]
        limit: usize,
        /// One JSON object per hit.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// Tokens and USD per agent, model, day, month, working directory or tag, and in total.
    /// A subagent counts in its parent, a fork's copied prefix once; models without a
    /// price are listed as unpriced, never as $0; estimated figures are marked `~`.
    Cost {
        /// Only this agent's sessions (repeatable).
        #[arg(long, add = ArgValueCandidates::new(crate::shell::agents))]
        agent: Vec<String>,
        /// Replies from this date on (YYYY-MM-DD, RFC 3339, today, yesterday, or an
        /// age: 12h, 7d, 2w; UTC).
        #[arg(long)]
        since: Option<String>,
        /// Replies up to this date.
        #[arg(long)]
        until: Option<String>,
        /// Only models whose name contains M.
        #[arg(long)]
        model: Option<String>,
        #[arg(long, value_enum, default_value_t = crate::cost::GroupBy::Model)]
        group_by: crate::cost::GroupBy,
        #[arg(long)]
        json: bool,
        /// A price table laid over the built-in one (same shape as data/prices.json).
        #[arg(long, value_name = "FILE")]
        prices: Option<PathBuf>,
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// Write the same tree into a real directory (no FUSE needed).
    Render {
        dir: PathBuf,
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// Write every session as Parquet tables (sessions, messages, tool_calls, usage)
    /// partitioned by agent and month, for DuckDB, ClickHouse or Spark. A re-run rewrites
    /// only the partitions whose sessions changed; see docs/EXPORT.md.
    Export {
        dir: PathBuf,
        #[arg(long, value_enum, default_value_t = ExportFormat::Parquet)]
        format: ExportFormat,
        /// Only this agent's sessions (repeatable).
        #[arg(long, add = ArgValueCandidates::new(crate::shell::agents))]
        agent: Vec<String>,
        /// Sessions active from this date on (YYYY-MM-DD, RFC 3339, today, yesterday, or an
        /// age: 12h, 7d, 2w; UTC).
        #[arg(long)]
        since: Option<String>,
        /// Sessions last active up to this date.
        #[arg(long)]
        until: Option<String>,
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// Show which stores were found where, what failed, and whether FUSE works.
    Doctor {
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// Mount at login: a systemd user unit (a launchd agent on macOS).
    Service {
        #[command(subcommand)]
        action: ServiceAction,
    },
    /// Print a completion script; load it with e.g. `source <(sessfs completions bash)`.
    /// Agent names and session ids are completed from the stores on the machine.
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the manual page (roff): `sessfs man | man -l -`.
    Man,
}

#[derive(Subcommand, Debug)]
pub enum ServiceAction {
    /// Write the unit mounting DIR (default ~/sessions) at every login, enable and start it.
    Install {
        dir: Option<PathBuf>,
        /// Write the unit file only; do not enable or start it.
        #[arg(long)]
        no_enable: bool,
        #[command(flatten)]
        stores: StoreArgs,
    },
    /// Stop the service (unmounting), disable it and remove its unit file.
    Uninstall { dir: Option<PathBuf> },
    /// Installed or not, running or not, mounted or not, the mount's last log lines and
    /// the cache's size.
    Status { dir: Option<PathBuf> },
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum SortKey {
    Date,
    Cost,
    Turns,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ExportFormat {
    Parquet,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum ShowFormat {
    Markdown,
    Json,
    Jsonl,
}

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Mount {
            dir,
            foreground,
            cache_mb,
            allow_other,
            no_io_uring,
            disk_cache_mb,
            no_disk_cache,
            stores,
        } => crate::mount::mount(
            crate::mount::MountArgs {
                dir,
                foreground,
                cache_mb,
                allow_other,
                io_uring: !no_io_uring,
                disk_cache_mb,
                disk_cache: !no_disk_cache,
                store_args: stores.to_args(),
            },
            || {
                let fs = open_fs_watched(&stores, cache_mb)?;
                enable_search(&fs);
                if !no_disk_cache {
                    enable_disk_cache(&fs, disk_cache_mb << 20);
                }
                Ok(fs)
            },
        ),
        Command::Umount { dir } => crate::mount::umount(&dir),
        Command::List {
            agent,
            since,
            until,
            model,
            cwd,
            tag,
            sort,
            asc,
            limit,
            json,
            stores,
        } => {
            let filter = Filter {
                agent: agent.as_deref().map(parse_agent).transpose()?,
                since: since.as_deref().map(parse_date).transpose()?,
                until: until.as_deref().map(parse_date).transpose()?,
                model,
                cwd,
                tag,
            };
            list(&stores, &filter, sort, asc, limit, json)
        }
        Command::Show { id, format, stores } => show(&stores, &id, format),
        Command::Diff { a, b, json, stores } => diff(&stores, &a, &b, json),
        Command::Search {
            query,
            agent,
            since,
            until,
            cwd,
            limit,
            json,
            stores,
        } => {
            let opts = crate::search::Options {
                agents: agent
                    .iter()
                    .map(|a| parse_agent(a))
                    .collect::<Result<Vec<_>>>()?,
                since: since.as_deref().map(parse_date).transpose()?,
                until: until.as_deref().map(parse_date).transpose()?,
                cwd,
                limit: Some(limit),
            };
            search(&stores, &query.join(" "), &opts, json)
        }
        Command::Cost {
            agent,
            since,
            until,
            model,
            group_by,
            json,
            prices,
            stores,
        } => {
            if let Some(p) = &prices {
                crate::pricing::install(p)?;
            }
            let agents = agent
                .iter()
                .map(|a| parse_agent(a))
                .collect::<Result<Vec<_>>>()?;
            let filter = crate::cost::Filter {
                since: since.as_deref().map(parse_date).transpose()?,
                until: until.as_deref().map(parse_date).transpose()?,
                model,
            };
            let fs = open_fs(&stores, 256, !json)?;
            let records = crate::cost::collect(&fs, &agents);
            let report = crate::cost::Report::build(&records, &filter, group_by);
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.to_text());
            }
            Ok(())
        }
        Command::Render { dir, stores } => render_tree(&stores, &dir),
        Command::Export {
            dir,
            format: ExportFormat::Parquet,
            agent,
            since,
            until,
            stores,
        } => {
            let opts = crate::export::Options {
                agents: agent
                    .iter()
                    .map(|a| parse_agent(a))
                    .collect::<Result<Vec<_>>>()?,
                since: since.as_deref().map(parse_date).transpose()?,
                until: until.as_deref().map(parse_date).transpose()?,
            };
            let fs = open_fs(&stores, 256, true)?;
            let s = crate::export::export(&fs, &dir, &opts)?;
            eprintln!(
                "sessfs: exported {} sessions in {} partitions to {} ({} written, {} removed, {} unchanged)",
                s.sessions,
                s.partitions,
                dir.display(),
                s.rewritten,
                s.removed,
                s.partitions - s.rewritten
            );
            Ok(())
        }
        Command::Doctor { stores } => doctor(&stores),
        Command::Service { action } => match action {
            ServiceAction::Install {
                dir,
                no_enable,
                stores,
            } => {
                open_stores(&stores, &Env::from_process())?;
                let args = stores
                    .to_args()
                    .into_iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                crate::service::install(dir, args, !no_enable)
            }
            ServiceAction::Uninstall { dir } => crate::service::uninstall(dir),
            ServiceAction::Status { dir } => crate::service::status(dir),
        },
        Command::Completions { shell } => {
            let name = match shell {
                Shell::Bash => "bash",
                Shell::Zsh => "zsh",
                Shell::Fish => "fish",
            };
            let exe = std::env::current_exe().context("cannot tell where the sessfs binary is")?;
            let script = crate::shell::registration(name, &exe.to_string_lossy())?;
            use std::io::Write;
            std::io::stdout().write_all(&script)?;
            Ok(())
        }
        Command::Man => {
            use clap::CommandFactory;
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            use std::io::Write;
            std::io::stdout().write_all(&out)?;
            Ok(())
        }
    }
}

/// The environment plus hand-given roots, as every command sees them.
impl StoreArgs {
    /// The options as command-line arguments again (paths made absolute, since the serving
    /// process runs elsewhere).
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut out = Vec::new();
        for s in &self.stores {
            out.push("--store".into());
            out.push(s.into());
        }
        for t in &self.threads_roots {
            out.push("--threads-root".into());
            out.push(std::fs::canonicalize(t).unwrap_or(t.clone()).into());
        }
        out
    }
}

pub fn open_stores(args: &StoreArgs, env: &Env) -> Result<Vec<Box<dyn Store>>> {
    let mut extra = Vec::new();
    for s in &args.stores {
        let (agent, path) = s
            .split_once('=')
            .ok_or_else(|| anyhow!("--store wants AGENT=PATH, got '{s}'"))?;
        let agent = parse_agent(agent)?;
        let path = env.expand(path);
        if !path.exists() {
            bail!("--store {s}: {} does not exist", path.display());
        }
        extra.push((agent, path));
    }
    for dir in &args.threads_roots {
        if !dir.is_dir() {
            bail!("--threads-root {}: not a directory", dir.display());
        }
        extra.push((Agent::Atsf, dir.clone()));
    }
    Ok(stores::open_all(env, &extra))
}

/// The directory of sample stores shipped with sessfs, shown when no real store exists.
pub fn sample_home() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home")
}

/// Keep rendered sessions in `$XDG_CACHE_HOME/sessfs/render/` (see [`crate::diskcache`]).
/// A cache that cannot be opened costs a warning, not the mount.
fn enable_disk_cache(fs: &Arc<Fs>, budget: u64) {
    let Some(dir) = crate::search::default_path()
        .ok()
        .and_then(|p| Some(p.parent()?.join("render")))
    else {
        return;
    };
    match crate::diskcache::DiskCache::open(&dir, budget, crate::tree::set_idle_policy) {
        Ok(d) => {
            d.write_when_quiet(std::time::Duration::from_secs(1));
            fs.use_disk_cache(d);
            fs.fill_disk_cache_when_idle();
        }
        Err(e) => log::warn!("{e}; mounting without it"),
    }
}

/// Open the stores, falling back to the bundled samples when nothing was found.
pub fn open_fs(args: &StoreArgs, cache_mb: usize, announce: bool) -> Result<Arc<Fs>> {
    open_fs_inner(args, cache_mb, announce, false)
}

/// [`open_fs`] for a mount: the change watches go in before the stores are first listed,
/// so that listing is trusted and the mount's warm-up does not list them again.
fn open_fs_watched(args: &StoreArgs, cache_mb: usize) -> Result<Arc<Fs>> {
    open_fs_inner(args, cache_mb, true, true)
}

fn open_fs_inner(
    args: &StoreArgs,
    cache_mb: usize,
    announce: bool,
    watch: bool,
) -> Result<Arc<Fs>> {
    let env = Env::from_process();
    let options = fs_options(cache_mb);
    // A mount's watches go in before the stores are first listed.
    let open = |stores| {
        let fs = Fs::new(stores, options.clone());
        if watch {
            fs.watch_early();
        }
        fs
    };
    let fs = open(open_stores(args, &env)?);
    // Listed through the Fs, which keeps the listing for the command's first use.
    let nothing =
        args.stores.is_empty() && args.threads_roots.is_empty() && fs.sessions().is_empty();
    let fs = if nothing {
        let home = sample_home();
        if home.is_dir() {
            if announce {
                eprintln!(
                    "sessfs: no agent sessions found under {}; showing the bundled samples from {}",
                    env.home.display(),
                    home.display()
                );
            }
            // The samples' temporary directory is theirs too: ShellGPT keeps its chats
            // there, not under the home.
            let tmp = home.join("tmp").display().to_string();
            let sample = Env {
                home,
                vars: [("TMPDIR".to_string(), tmp)].into(),
            };
            open(stores::open_all(&sample, &[]))
        } else {
            fs
        }
    } else {
        fs
    };
    let fs = Arc::new(fs);
    fs.start_prefetch(crate::tree::cores());
    Ok(fs)
}

/// The tree's options for a command: `cache_mb` of rendered files in memory, bigger ones
/// spilled beside the search index, in the user's private cache directory.
fn fs_options(cache_mb: usize) -> Options {
    Options {
        cache_bytes: cache_mb << 20,
        spill_dir: crate::search::default_path()
            .ok()
            .and_then(|p| Some(p.parent()?.to_path_buf())),
    }
}

/// Give a mount its `search/` directory. When an index already exists, what changed since
/// it was last used is indexed in the background now; otherwise the first lookup under
/// `search/` builds it (a mount that is never searched writes nothing to the cache).
fn enable_search(fs: &Arc<Fs>) {
    match crate::search::default_path() {
        Ok(path) => {
            let exists = path.is_file();
            let searcher = crate::search::MountSearcher::new(path);
            if exists {
                searcher.warm(fs);
            }
            fs.set_searcher(Box::new(searcher));
        }
        Err(e) => log::warn!("no search/ directory: {e}"),
    }
}

/// `sessfs search`: bring the index up to date (a progress bar on a terminal when that
/// takes more than a second), then print the hits like `rg`: `path:line:` first.
fn search(args: &StoreArgs, query: &str, opts: &crate::search::Options, json: bool) -> Result<()> {
    use std::io::IsTerminal;
    let q = crate::search::Query::parse(query);
    if q.terms.is_empty() {
        bail!("empty query; see sessfs search --help");
    }
    // Before anything is listed: a glance recorded by this sync is checked against it.
    let since = std::time::SystemTime::now();
    let mut ix = crate::search::Index::open(&crate::search::default_path()?)?;
    // Nothing changed since the last search: the stores' glances say so with a `stat` of
    // each directory and session file, and no store is listed.
    let stores = open_stores(args, &Env::from_process())?;
    let glanced = ix.unchanged(&stores)?;
    if glanced.all && glanced.sessions > 0 {
        log::info!(
            "search index: {} sessions unchanged by their glances, no store listed",
            glanced.sessions
        );
        return print_hits(&ix, &q, opts, json);
    }
    // Some stores unchanged, holding sessions: only the others are listed (and there is no
    // question of showing the samples instead).
    let fs = if glanced.sessions > 0 {
        log::info!(
            "search index: {} sessions unchanged by their glances, the other stores listed",
            glanced.sessions
        );
        Arc::new(Fs::new(stores, fs_options(256)))
    } else {
        drop(stores);
        open_fs(args, 256, false)?
    };
    let bar = indicatif::ProgressBar::hidden();
    let started = std::time::Instant::now();
    let on_terminal = std::io::stderr().is_terminal();
    let mut shown = false;
    ix.sync_since(&fs, Some(since), glanced, &mut |done, total| {
        if !shown && on_terminal && started.elapsed() > std::time::Duration::from_secs(1) {
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "indexing sessions {bar:30} {pos}/{len} ({eta} left)",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_length(total as u64);
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            shown = true;
        }
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    print_hits(&ix, &q, opts, json)
}

/// The hits of `q`, printed; exit status 1 when there are none.
fn print_hits(
    ix: &crate::search::Index,
    q: &crate::search::Query,
    opts: &crate::search::Options,
    json: bool,
) -> Result<()> {
    use std::io::{IsTerminal, Write};
    let hits = ix.search(q, opts)?;
    if hits.is_empty() {
        std::process::exit(1);
    }
    let color = std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    for h in &hits {
        if json {
            writeln!(out, "{}", serde_json::to_string(h)?)?;
        } else {
            writeln!(out, "{}", format_hit(h, q, color))?;
        }
    }
    out.flush()?;
    Ok(())
}

/// `claude/<id>/transcript.md:12: [2026-02-11 · title] the line`, matches in bold red and
/// the path and line number in rg's colours when `color`. Long lines show a window around
/// the first match.
fn format_hit(h: &crate::search::Hit, q: &crate::search::Query, color: bool) -> String {
    const WINDOW: usize = 240;
    let mut text: &str = &h.text;
    let spans = q.highlights(text);
    let mut offset = 0;
    let (mut pre, mut post) = ("", "");
    if text.len() > WINDOW {
        let first = spans.first().map_or(0, |s| s.0);
        let mut start = first.saturating_sub(WINDOW / 4);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (start + WINDOW).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        pre = if start > 0 { "…" } else { "" };
        post = if end < text.len() { "…" } else { "" };
        offset = start;
        text = &text[start..end];
    }
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    };
    let mut body = String::from(pre);
    let mut at = 0;
    for (s, e) in spans {
        let (s, e) = (
            s.saturating_sub(offset),
            e.saturating_sub(offset).min(text.len()),
        );
        if s < at || s >= text.len() || !text.is_char_boundary(s) || !text.is_char_boundary(e) {
            continue;
        }
        body.push_str(&clean(&text[at..s]));
        if color {
            body.push_str(&format!("[1;31m{}[0m", clean(&text[s..e])));
        } else {
            body.push_str(&clean(&text[s..e]));
        }
        at = e;
    }
    body.push_str(&clean(&text[at..]));
    body.push_str(post);
    let date = h
        .updated_at
        .as_deref()
        .map(|d| d.get(..10).unwrap_or(d))
        .unwrap_or("-");
    let title: String = clean(h.title.as_deref().unwrap_or(""))
        .chars()
        .take(50)
        .collect();
    if color {
        format!(
            "[35m{}[0m:[32m{}[0m:[2m[{date} · {title}][0m {body}",
            h.path, h.line
        )
    } else {
        format!("{}:{}:[{date} · {title}] {body}", h.path, h.line)
    }
}

pub fn parse_agent(s: &str) -> Result<Agent> {
    Agent::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Agent::ALL.iter().map(|a| a.name()).collect();
        anyhow!("unknown agent '{s}'; known agents: {}", names.join(", "))
    })
}

fn parse_date(s: &str) -> Result<DateTime<Utc>> {
    parse_date_at(s, Utc::now())
}

/// A date as `--since`/`--until` take it, `now` being the present: `YYYY-MM-DD` (that day's
/// 00:00 UTC), RFC 3339, `today` and `yesterday` (00:00 UTC of that day, like writing the
/// date), or an age: `<N>h`, `<N>d`, `<N>w` (that long before now).
fn parse_date_at(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    if let Ok(d) = DateTime::parse_from_rfc3339(s) {
        return Ok(d.with_timezone(&Utc));
    }
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).map(|t| t.and_utc());
    let word = s.trim().to_ascii_lowercase();
    let day = match word.as_str() {
        "today" => Some(now.date_naive()),
        "yesterday" => now.date_naive().pred_opt(),
        _ => NaiveDate::parse_from_str(s, "%Y-%m-%d").ok(),
    };
    if let Some(at) = day.and_then(midnight) {
        return Ok(at);
    }
    let age = word
        .char_indices()
        .last()
        .and_then(|(i, unit)| Some((word[..i].parse::<i64>().ok()?, unit)))
        .and_then(|(n, unit)| match unit {
            'h' => chrono::Duration::try_hours(n),
            'd' => chrono::Duration::try_days(n),
            'w' => chrono::Duration::try_weeks(n),
            _ => None,
        })
        .filter(|d| *d >= chrono::Duration::zero());
    age.and_then(|d| now.checked_sub_signed(d)).ok_or_else(|| {
        anyhow!("cannot read date '{s}'; use YYYY-MM-DD, RFC 3339, today, yesterday or an age like 7d, 2w, 12h")
    })
}

struct Filter {
    agent: Option<Agent>,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
    model: Option<String>,
    cwd: Option<String>,
    tag: Option<String>,
}

/// `meta.json` of every session that passes the filter, computed from the parsed session
/// (no transcript, tool file or diff is rendered).
fn metas(fs: &Fs, f: &Filter) -> Vec<Value> {
    let mut out = Vec::new();
    for key in fs.sessions() {
        if f.agent.is_some_and(|a| a != key.agent) {
            continue;
        }
        // Parse only: meta.json's fields come from the session, so nothing is rendered.
        let Ok(session) = fs.load_marked(&key) else {
            continue;
        };
        let meta = crate::render::meta::to_value(&session);
        let when = meta["updatedAt"]
            .as_str()
            .or(meta["createdAt"].as_str())
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            .map(|d| d.with_timezone(&Utc));
        if let Some(since) = f.since {
            if when.is_none_or(|w| w < since) {
                continue;
            }
        }
        if let Some(until) = f.until {
            if when.is_none_or(|w| w > until) {
                continue;
            }
        }
        if let Some(m) = &f.model {
            let hit = meta["models"].as_array().is_some_and(|ms| {
                ms.iter()
                    .any(|x| x.as_str().is_some_and(|x| x.contains(m.as_str())))
            });
            if !hit {
                continue;
            }
        }
        if let Some(c) = &f.cwd {
            if !meta["cwd"]
                .as_str()
                .is_some_and(|x| x.starts_with(c.as_str()))
            {
                continue;
            }
        }
        if let Some(t) = &f.tag {
            if !meta["tags"]
                .as_array()
                .is_some_and(|ts| ts.iter().any(|x| x.as_str() == Some(t.as_str())))
            {
                continue;
            }
        }
        out.push(meta);
    }
    out
}

fn list(
    args: &StoreArgs,
    f: &Filter,
    sort: SortKey,
    asc: bool,
    limit: Option<usize>,
    json: bool,
) -> Result<()> {
    let fs = open_fs(args, 256, !json)?;
    let mut metas = metas(&fs, f);
    let key = |m: &Value| -> (f64, String) {
        match sort {
            SortKey::Date => (
                0.0,
                m["updatedAt"]
                    .as_str()
                    .or(m["createdAt"].as_str())
                    .unwrap_or("")
                    .to_string(),
            ),
            SortKey::Cost => (
                total_cost(m)["totalUsd"].as_f64().unwrap_or(0.0),
                String::new(),
            ),
            SortKey::Turns => (m["turnCount"].as_f64().unwrap_or(0.0), String::new()),
        }
    };
    // A cost that is not known (no usage recorded, or unpriced) is neither cheap nor dear:
    // such sessions come after the others whichever way the rest is sorted.
    let unknown = |m: &Value| sort == SortKey::Cost && total_cost(m)["totalUsd"].is_null();
    metas.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        let o =
            ka.0.total_cmp(&kb.0)
                .then_with(|| ka.1.cmp(&kb.1))
                .then_with(|| a["unifiedId"].as_str().cmp(&b["unifiedId"].as_str()));
        unknown(a)
            .cmp(&unknown(b))
            .then(if asc { o } else { o.reverse() })
    });
    if let Some(n) = limit {
        metas.truncate(n);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&metas)?);
        return Ok(());
    }
    println!(
        "{:<48} {:<20} {:>5} {:>9} {:>9}  {:<28} TITLE",
        "ID", "UPDATED", "TURNS", "COST", "OWN", "MODEL"
    );
    // null: the agent recorded no usage, or some usage has no known price; neither is $0.
    let usd = |c: &Value| match c["totalUsd"].as_f64() {
        Some(c) => format!("${c:.2}"),
        None if c["usageRecorded"] == false => "no usage".to_string(),
        None => "unpriced".to_string(),
    };
    for m in &metas {
        let updated = m["updatedAt"]
            .as_str()
            .or(m["createdAt"].as_str())
            .map(|s| s.get(..16).unwrap_or(s).replace('T', " "))
            .unwrap_or_default();
        let title: String = m["title"]
            .as_str()
            .unwrap_or("")
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(60)
            .collect();
        // OWN only where COST also holds subagents.
        let own = if m.get("costWithSubagents").is_some() {
            usd(&m["cost"])
        } else {
            String::new()
        };
        println!(
            "{:<48} {:<20} {:>5} {:>9} {:>9}  {:<28} {}",
            m["unifiedId"].as_str().unwrap_or(""),
            updated,
            m["turnCount"].as_u64().unwrap_or(0),
            usd(total_cost(m)),
            own,
            m["model"].as_str().unwrap_or("-"),
            title
        );
    }
    Ok(())
}

/// A session's cost with everything it spawned (`meta.json` `costWithSubagents`), or its own
/// where it spawned nothing: what `list` shows and `--sort cost` sorts by.
fn total_cost(meta: &Value) -> &Value {
    meta.get("costWithSubagents").unwrap_or(&meta["cost"])
}

fn show(args: &StoreArgs, id: &str, format: ShowFormat) -> Result<()> {
    let fs = open_fs(args, 256, false)?;
    let key = find_session(&fs, id)?;
    let file = match format {
        ShowFormat::Markdown => "transcript.md",
        ShowFormat::Json => "meta.json",
        ShowFormat::Jsonl => "messages.jsonl",
    };
    let bytes = fs
        .read_path(&format!("{}/{}/{file}", key.agent, key.name))
        .map_err(|e| anyhow!("cannot render {id}: {e}"))?;
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

fn diff(args: &StoreArgs, a: &str, b: &str, json: bool) -> Result<()> {
    let fs = open_fs(args, 256, false)?;
    let load = |id: &str| -> Result<crate::model::Session> {
        let key = find_session(&fs, id)?;
        fs.load(&key).map_err(|e| anyhow!("cannot read {id}: {e}"))
    };
    let (sa, sb) = (load(a)?, load(b)?);
    let text = if json {
        crate::render::diff::structural(&sa, &sb).to_json()
    } else {
        crate::render::session_diff(&sa, &sb)
    };
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
    Ok(())
}

pub fn find_session(fs: &Fs, id: &str) -> Result<crate::cache::SessionKey> {
    let (agent, _) = id.split_once(':').ok_or_else(|| {
        anyhow!("'{id}' is not a session id; ids look like pi:<id> (see sessfs list)")
    })?;
    parse_agent(agent)?;
    fs.find(id)
        .ok_or_else(|| anyhow!("no session with id '{id}'; run sessfs list to see the ids"))
}

fn render_tree(args: &StoreArgs, dir: &Path) -> Result<()> {
    if dir.exists() {
        let mut rd =
            std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
        if rd.next().is_some() {
            bail!(
                "{} is not empty; render writes into a new or empty directory",
                dir.display()
            );
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let fs = open_fs(args, 256, true)?;
    let mut files = 0usize;
    copy_dir(&fs, crate::tree::ROOT_INO, dir, &mut files)?;
    // The mount's search/ lists nothing; the rendered tree has it too, empty, so the two
    // trees stay the same.
    std::fs::create_dir_all(dir.join(crate::tree::SEARCH_DIR))?;
    eprintln!("sessfs: wrote {files} files under {}", dir.display());
    Ok(())
}

fn copy_dir(fs: &Fs, ino: u64, to: &Path, files: &mut usize) -> Result<()> {
    let entries = fs
        .readdir(ino)
        .map_err(|e| anyhow!("{}: {e}", to.display()))?;
    for (name, attr) in entries {
        let path = to.join(&name);
        match attr.kind {
            // A session's diff/ lists nothing, so it is written empty, as the mount shows it.
            Kind::Dir => {
                std::fs::create_dir_all(&path)?;
                copy_dir(fs, attr.ino, &path, files)?;
            }
            Kind::File => {
                let data = fs
                    .contents(attr.ino)
                    .map_err(|e| anyhow!("{}: {e}", path.display()))?;
                let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
                data.write_to(&mut out)?;
                out.into_inner().map_err(|e| e.into_error())?;
                *files += 1;
            }
            Kind::Symlink => {
                let target = fs.readlink(attr.ino).map_err(|e| anyhow!("{e}"))?;
                std::os::unix::fs::symlink(target, &path)?;
            }
        }
    }
    Ok(())
}

fn doctor(args: &StoreArgs) -> Result<()> {
    let env = Env::from_process();
    println!("Stores (HOME={}):", env.home.display());
    let candidates = stores::candidates(&env);
    let opened = open_stores(args, &env)?;
    for agent in Agent::ALL {
        let mine: Vec<_> = candidates.iter().filter(|r| r.agent == agent).collect();
        let store = opened.iter().find(|s| s.agent() == agent);
        match store {
            Some(s) => {
                let listed = s.list();
                let n = listed.len();
                println!("  {agent:<9} {n} sessions");
                if agent == Agent::Claude {
                    let orphans = stores::claude::orphan_sets(&listed);
                    if orphans > 0 {
                        println!(
                            "            {orphans} orphaned subagent set{} (main transcript gone; shown as sessions with \"orphaned\": true)",
                            if orphans == 1 { "" } else { "s" }
                        );
                    }
                }
                for r in s.roots() {
                    println!("            found {} ({})", r.path.display(), r.how);
                }
                for p in s.problems() {
                    println!("            problem: {p}");
                }
            }
            None if stores::spec(agent).is_none() => {
                println!("  {agent:<9} not supported yet")
            }
            None if mine.is_empty() => println!(
                "  {agent:<9} none found (scanned {} for .agent/threads)",
                env.home.display()
            ),
            None => {
                println!("  {agent:<9} none found; looked in:");
                for r in mine {
                    println!("            {} ({})", r.path.display(), r.how);
                }
            }
        }
        for (_, why) in stores::NOT_READABLE.iter().filter(|(a, _)| *a == agent) {
            println!("            not readable: {why}");
        }
    }
    println!("FUSE:");
    let dev = Path::new("/dev/fuse");
    let dev_ok = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dev)
        .is_ok();
    println!(
        "  /dev/fuse       {}",
        if dev_ok {
            "ok"
        } else if dev.exists() {
            "present but cannot be opened (permissions?)"
        } else {
            "missing: load the fuse module or install fuse3"
        }
    );
    let fm = crate::mount::which("fusermount3").or_else(|| crate::mount::which("fusermount"));
    println!(
        "  fusermount3     {}",
        fm.map(|p| p.display().to_string())
            .unwrap_or_else(|| "missing: apt-get install fuse3".into())
    );
    println!("  requests        {}", crate::fuse::transport());
    // What a mount of these stores would use to notice changes.
    let roots: Vec<PathBuf> = opened
        .iter()
        .flat_map(|s| {
            let roots = s.roots().iter().map(|r| r.path.clone());
            roots.chain(s.watched_files().iter().cloned())
        })
        .collect();
    println!(
        "  changes         {}",
        match crate::watch::Watcher::new(&roots, std::sync::mpsc::channel().0) {
            Ok(w) => format!("inotify on {} directories", w.watched.len()),
            Err(e) => format!(
                "polling every {:?} (cannot watch: {e}; raise fs.inotify.max_user_watches)",
                crate::tree::POLL
            ),
        }
    );
    let mounts = crate::mount::live_mounts();
    if mounts.is_empty() {
        println!("Mounts: none");
    } else {
        println!("Mounts:");
        for m in mounts {
            let log = crate::mount::log_path(&m);
            if log.is_file() {
                println!("  {} · log: {}", m.display(), log.display());
            } else {
                println!(
                    "  {} · no log file (a --foreground mount logs to its terminal)",
                    m.display()
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_words_and_ages_count_from_now() {
        let now = DateTime::parse_from_rfc3339("2026-03-01T15:30:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let at = |s: &str| parse_date_at(s, now).map(|d| d.to_rfc3339()).ok();
        let want = |s: &str| Some(s.to_string());
        assert_eq!(at("today"), want("2026-03-01T00:00:00+00:00"));
        assert_eq!(at("Yesterday"), want("2026-02-28T00:00:00+00:00"));
        assert_eq!(at("7d"), want("2026-02-22T15:30:00+00:00"));
        assert_eq!(at("2w"), want("2026-02-15T15:30:00+00:00"));
        assert_eq!(at("36h"), want("2026-02-28T03:30:00+00:00"));
        assert_eq!(at("2026-01-05"), want("2026-01-05T00:00:00+00:00"));
        for bad in ["7y", "d", "-3d", "tomorrow", ""] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }
}
