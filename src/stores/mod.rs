//! Native stores behind one [`Store`] trait.
//!
//! A store does three things, each as cheap as it can be:
//!
//! 1. **discover** its roots: the agent's own environment overrides first, then the `$HOME`
//!    defaults the agent really uses, then the agent-mux spec path (see `docs/formats.md`,
//!    "Spec vs reality": reality first, both searched);
//! 2. **list** sessions from file names, `stat` and at most a header line, never a full parse,
//!    so `ls` of an agent directory with thousands of sessions stays fast;
//! 3. **load** one session into the unified [`Session`] model. Loading never fails: what
//!    cannot be read becomes a warning on the session, so one corrupt file costs one warning,
//!    never the mount.
//!
//! Stores only read. SQLite is opened read-only; files that an agent would migrate on open
//! (pi, omp, indusagi v1/v2) are migrated in memory.
//!
//! Discovery reads the environment through [`Env`] rather than `std::env`, so tests can lay
//! out a fake `$HOME` without touching the process environment.

pub mod agentuse;
pub mod agsh;
pub mod aichat;
pub mod aider;
pub mod amp;
pub mod anythingllm;
pub mod atsf;
pub mod avante;
pub mod chatgptnvim;
pub mod claude;
pub mod cline;
pub mod cline_sdk;
pub mod codebuff;
pub mod codecompanion;
pub mod codex;
pub mod cody;
pub mod r#continue;
pub mod copilot;
pub mod copilot_chat;
pub mod copilotchat;
pub mod crush;
pub mod cursor;
pub mod droid;
pub mod dyad;
pub mod elisp;
pub mod ellama;
pub mod everycode;
pub mod fabric;
pub mod forge;
pub mod gemini;
pub mod gob;
pub mod goose;
pub mod gp;
pub mod gptme;
pub mod grok;
pub mod hermes;
pub mod iflow;
pub mod interpreter;
pub mod jan;
pub mod jsonl;
pub mod kilo;
pub mod kimi;
pub mod kiro;
pub mod kit;
pub mod kode;
pub mod llm;
pub mod llxprt;
pub mod mods;
pub mod mux;
pub mod nanocoder;
pub mod neovate;
pub mod octofriend;
pub mod ollama;
pub mod opencode;
pub mod openhands;
pub mod oterm;
pub mod parrot;
pub mod pearai;
pub mod pi;
pub mod qwen;
pub mod rows;
pub mod sgpt;
pub mod sqlite;
pub mod vibe;
pub mod void;
pub mod vscode;
pub mod yaml;
pub mod zed;

use crate::model::{Agent, Session};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The environment discovery looks at: `$HOME` plus variables.
#[derive(Clone, Debug, Default)]
pub struct Env {
    pub home: PathBuf,
    pub vars: BTreeMap<String, String>,
}

impl Env {
    pub fn from_process() -> Env {
        let vars: BTreeMap<String, String> = std::env::vars().collect();
        let home = vars
            .get("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        Env { home, vars }
    }

    /// `$HOME` alone, no variables (tests and fuzzing lay out a private home).
    pub fn at_home(home: &Path) -> Env {
        Env {
            home: home.to_path_buf(),
            vars: BTreeMap::new(),
        }
    }

    /// A non-empty variable.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A variable as a path, `~` expanded against [`Env::home`].
    pub fn path_var(&self, name: &str) -> Option<PathBuf> {
        self.var(name).map(|v| self.expand(v))
    }

    pub fn expand(&self, p: &str) -> PathBuf {
        if p == "~" {
            self.home.clone()
        } else if let Some(rest) = p.strip_prefix("~/") {
            self.home.join(rest)
        } else {
            PathBuf::from(p)
        }
    }

    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    pub fn xdg_data_home(&self) -> PathBuf {
        self.path_var("XDG_DATA_HOME")
            .unwrap_or_else(|| self.home.join(".local/share"))
    }
}

/// A place a store looks for sessions, and why it looks there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    pub agent: Agent,
    pub path: PathBuf,
    /// What put this path on the list: `CLAUDE_CONFIG_DIR`, `default`, `spec`, `--store`.
    pub how: String,
}

impl Root {
    pub fn new(agent: Agent, path: impl Into<PathBuf>, how: impl Into<String>) -> Root {
        Root {
            agent,
            path: path.into(),
            how: how.into(),
        }
    }
}

/// One session as a cheap listing sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Listed {
    /// The agent's native session id.
    pub id: String,
    /// The file `load` starts from (a JSONL file, a session directory, a database).
    pub path: PathBuf,
    /// Every file whose size and mtime decide the session's rendered version; `path` first.
    pub sources: Vec<PathBuf>,
    /// Store-specific key inside `path` (a row id in a database), if any.
    pub key: Option<String>,
    /// Index of the root this came from, in [`Store::roots`] order.
    pub root: usize,
}

impl Listed {
    pub fn file(id: impl Into<String>, path: PathBuf, root: usize) -> Listed {
        Listed {
            id: id.into(),
            sources: vec![path.clone()],
            path,
            key: None,
            root,
        }
    }
}

/// What every store holds: its agent and the roots it reads.
#[derive(Clone, Debug)]
pub struct Base {
    pub agent: Agent,
    pub roots: Vec<Root>,
}

impl Base {
    pub fn new(agent: Agent, roots: Vec<Root>) -> Base {
        Base { agent, roots }
    }
}

pub trait Store: Send + Sync {
    fn base(&self) -> &Base;

    fn agent(&self) -> Agent {
        self.base().agent
    }

    /// The roots that exist and are being read.
    fn roots(&self) -> &[Root] {
        &self.base().roots
    }

    /// Files outside the roots that some sessions have among their sources (the database
    /// an editor keeps beside the agent's directory): the change watcher watches each as
    /// it watches a database root (through its directory, not recursively), and a source
    /// that is one of them, or its journal, is as watched as one under the roots. Fixed for
    /// the store's life, as its roots are; none by default.
    fn watched_files(&self) -> &[PathBuf] {
        &[]
    }

    /// Every session under every root. Problems are logged and skipped, never fatal.
    fn list(&self) -> Vec<Listed>;

    /// Parse one session. Never fails: problems become `Session::warnings`.
    fn load(&self, listed: &Listed) -> Session;

    /// Problems with the roots themselves (a file that is not a database), for `doctor`.
    fn problems(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether the places discovery found hold this agent's data at all. A store whose
    /// places other programs keep too (VS Code's global-state databases, on every machine
    /// with the editor) says no when none of them holds its data, so that a machine without
    /// the agent shows no empty directory for it. Roots given with `--store` are kept
    /// whatever this says.
    fn found(&self) -> bool {
        true
    }

    /// The versions of `listed`, in order, for stores where one file holds many sessions
    /// (SQLite): a hash of each session's own rows, so a write to one session changes only
    /// its version. `None` (the default, and where the store cannot tell) versions a session
    /// by the size and mtime of [`Listed::sources`]. Called on freshness checks (at most once
    /// a second per session) and, after a write to a database, for every session of it the
    /// kernel has seen: a store reads each database once for all of them, and must be cheap
    /// when nothing changed.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        vec![None; listed.len()]
    }

    /// Whether [`list`] would still give `listed` as it is after a write to its own file
    /// ([`Listed::path`]). The change watcher then checks just that session instead of
    /// listing the store again, so an agent writing one session costs nothing per session
    /// beside it. True where the listing reads only names; where it reads a header, true
    /// once that header gives what the listing took from it. False (the default) where one
    /// write can add sessions (a database).
    ///
    /// [`list`]: Store::list
    fn keeps_listing(&self, _listed: &Listed) -> bool {
        false
    }

    /// What `sessfs search` looks at instead of listing the store, to know that [`list`]
    /// would give `listed` again with every session's version unchanged (see [`Glance`]):
    /// what the listing reads. Every listed session's [`Listed::sources`] are added by the
    /// caller. Called after a listing, so it may read directories again; it must not parse
    /// sessions. `None` (the default): the store cannot say, and is listed at every search.
    ///
    /// [`list`]: Store::list
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        None
    }
}

/// The paths a store's listing and its sessions' versions depend on, for a search's
/// freshness check without a listing: the `stat` of each, taken right after a listing and
/// kept in the search index, is taken again at the next search, and any difference lists
/// the store again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Glance {
    /// Directories whose entries the listing reads: their mtime moves when an entry is
    /// added, removed or renamed in them (not when a file in them grows).
    pub dirs: Vec<PathBuf>,
    /// Files the listing read whose size and mtime move with what it read (the sessions'
    /// sources are added to these by the search).
    pub files: Vec<PathBuf>,
}

/// One registry line per store: the agent, where it looks, and how it opens.
///
/// This is the one place a store is added; `open_all`, `candidates`, `doctor` and the
/// mount derive from it.
pub struct Spec {
    pub agent: Agent,
    /// Every root the agent might use, existing or not, in priority order.
    pub candidates: fn(&Env) -> Vec<Root>,
    /// Turns hand-given (`--store`) roots into the roots to read; most stores take them as
    /// they are.
    pub given: fn(Vec<Root>) -> Vec<Root>,
    pub open: fn(Vec<Root>) -> Box<dyn Store>,
}

fn as_given(roots: Vec<Root>) -> Vec<Root> {
    roots
}

/// Every store sessfs has, in no particular order (the mount orders by [`Agent::ALL`]).
pub const REGISTRY: &[Spec] = &[
    Spec {
        agent: Agent::Claude,
        candidates: claude::candidates,
        given: as_given,
        open: |r| Box::new(claude::ClaudeStore::new(r)),
    },
    Spec {
        agent: Agent::Codex,
        candidates: codex::candidates,
        given: as_given,
        open: |r| Box::new(codex::CodexStore::new(r)),
    },
    Spec {
        agent: Agent::Gemini,
        candidates: gemini::candidates,
        given: as_given,
        open: |r| Box::new(gemini::GeminiStore::new(r)),
    },
    Spec {
        agent: Agent::Copilot,
        candidates: copilot::candidates,
        given: as_given,
        open: |r| Box::new(copilot::CopilotStore::new(r)),
    },
    Spec {
        agent: Agent::Cursor,
        candidates: cursor::candidates,
        given: as_given,
        open: |r| Box::new(cursor::CursorStore::new(r)),
    },
    Spec {
        agent: Agent::Opencode,
        candidates: opencode::candidates,
        given: as_given,
        open: |r| Box::new(opencode::OpencodeStore::new(r)),
    },
    Spec {
        agent: Agent::Pi,
        candidates: |e| pi::candidates(e, pi::Dialect::Pi),
        given: as_given,
        open: |r| Box::new(pi::PiStore::new(pi::Dialect::Pi, r)),
    },
    Spec {
        agent: Agent::Omp,
        candidates: |e| pi::candidates(e, pi::Dialect::Omp),
        given: as_given,
        open: |r| Box::new(pi::PiStore::new(pi::Dialect::Omp, r)),
    },
    Spec {
        agent: Agent::Indusagi,
        candidates: |e| pi::candidates(e, pi::Dialect::Indusagi),
        given: as_given,
        open: |r| Box::new(pi::PiStore::new(pi::Dialect::Indusagi, r)),
    },
    Spec {
        agent: Agent::Openclaw,
        candidates: |e| pi::candidates(e, pi::Dialect::Openclaw),
        given: as_given,
        open: |r| Box::new(pi::openclaw::OpenclawStore::new(r)),
    },
    Spec {
        agent: Agent::Hermes,
        candidates: hermes::candidates,
        given: as_given,
        open: |r| Box::new(hermes::HermesStore::new(r)),
    },
    Spec {
        agent: Agent::Agsh,
        candidates: agsh::candidates,
        given: as_given,
        open: |r| Box::new(agsh::AgshStore::new(r)),
    },
    Spec {
        agent: Agent::Agentuse,
        candidates: agentuse::candidates,
        given: as_given,
        open: |r| Box::new(agentuse::AgentuseStore::new(r)),
    },
    Spec {
        agent: Agent::Atsf,
        candidates: atsf::candidates,
        given: atsf::given_roots,
        open: |r| Box::new(atsf::AtsfStore::new(r)),
    },
    Spec {
        agent: Agent::Cline,
        candidates: |e| cline::candidates(e, cline::Dialect::Cline),
        given: as_given,
        open: |r| Box::new(cline::ClineStore::new(cline::Dialect::Cline, r)),
    },
    Spec {
        agent: Agent::Roo,
        candidates: |e| cline::candidates(e, cline::Dialect::Roo),
        given: as_given,
        open: |r| Box::new(cline::ClineStore::new(cline::Dialect::Roo, r)),
    },
    Spec {
        agent: Agent::Kilo,
        candidates: kilo::candidates,
        given: as_given,
        open: |r| Box::new(kilo::KiloStore::new(r)),
    },
    Spec {
        agent: Agent::Crush,
        candidates: crush::candidates,
        given: crush::given_roots,
        open: |r| Box::new(crush::CrushStore::new(r)),
    },
    Spec {
        agent: Agent::Amp,
        candidates: amp::candidates,
        given: as_given,
        open: |r| Box::new(amp::AmpStore::new(r)),
    },
    Spec {
        agent: Agent::Qwen,
        candidates: qwen::candidates,
        given: as_given,
        open: |r| Box::new(qwen::QwenStore::new(r)),
    },
    Spec {
        agent: Agent::Kimi,
        candidates: kimi::candidates,
        given: as_given,
        open: |r| Box::new(kimi::KimiStore::new(r)),
    },
    Spec {
        agent: Agent::Aider,
        candidates: aider::candidates,
        given: aider::given_roots,
        open: |r| Box::new(aider::AiderStore::new(r)),
    },
    Spec {
        agent: Agent::Continue,
        candidates: r#continue::candidates,
        given: as_given,
        open: |r| Box::new(r#continue::ContinueStore::new(r)),
    },
    Spec {
        agent: Agent::Zed,
        candidates: zed::candidates,
        given: as_given,
        open: |r| Box::new(zed::ZedStore::new(r)),
    },
    Spec {
        agent: Agent::CopilotChat,
        candidates: copilot_chat::candidates,
        given: as_given,
        open: |r| Box::new(copilot_chat::CopilotChatStore::new(r)),
    },
    Spec {
        agent: Agent::Droid,
        candidates: droid::candidates,
        given: as_given,
        open: |r| Box::new(droid::DroidStore::new(r)),
    },
    Spec {
        agent: Agent::Openhands,
        candidates: openhands::candidates,
        given: as_given,
        open: |r| Box::new(openhands::OpenhandsStore::new(r)),
    },
    Spec {
        agent: Agent::Goose,
        candidates: goose::candidates,
        given: as_given,
        open: |r| Box::new(goose::GooseStore::new(r)),
    },
    Spec {
        agent: Agent::Gptme,
        candidates: gptme::candidates,
        given: as_given,
        open: |r| Box::new(gptme::GptmeStore::new(r)),
    },
    Spec {
        agent: Agent::Kiro,
        candidates: kiro::candidates,
        given: as_given,
        open: |r| Box::new(kiro::KiroStore::new(r)),
    },
    Spec {
        agent: Agent::Vibe,
        candidates: vibe::candidates,
        given: as_given,
        open: |r| Box::new(vibe::VibeStore::new(r)),
    },
    Spec {
        agent: Agent::Grok,
        candidates: grok::candidates,
        given: as_given,
        open: |r| Box::new(grok::GrokStore::new(r)),
    },
    Spec {
        agent: Agent::Forge,
        candidates: forge::candidates,
        given: as_given,
        open: |r| Box::new(forge::ForgeStore::new(r)),
    },
    Spec {
        agent: Agent::Mux,
        candidates: mux::candidates,
        given: as_given,
        open: |r| Box::new(mux::MuxStore::new(r)),
    },
    Spec {
        agent: Agent::Neovate,
        candidates: neovate::candidates,
        given: as_given,
        open: |r| Box::new(neovate::NeovateStore::new(r)),
    },
    Spec {
        agent: Agent::Llxprt,
        candidates: llxprt::candidates,
        given: as_given,
        open: |r| Box::new(llxprt::LlxprtStore::new(r)),
    },
    Spec {
        agent: Agent::Codebuff,
        candidates: codebuff::candidates,
        given: as_given,
        open: |r| Box::new(codebuff::CodebuffStore::new(r)),
    },
    Spec {
        agent: Agent::Kode,
        candidates: kode::candidates,
        given: as_given,
        open: |r| Box::new(kode::KodeStore::new(r)),
    },
    Spec {
        agent: Agent::Nanocoder,
        candidates: nanocoder::candidates,
        given: as_given,
        open: |r| Box::new(nanocoder::NanocoderStore::new(r)),
    },
    Spec {
        agent: Agent::Interpreter,
        candidates: interpreter::candidates,
        given: as_given,
        open: |r| Box::new(interpreter::InterpreterStore::new(r)),
    },
    Spec {
        agent: Agent::Cody,
        candidates: cody::candidates,
        given: as_given,
        open: |r| Box::new(cody::CodyStore::new(r)),
    },
    Spec {
        agent: Agent::Void,
        candidates: void::candidates,
        given: as_given,
        open: |r| Box::new(void::VoidStore::new(r)),
    },
    Spec {
        agent: Agent::Aichat,
        candidates: aichat::candidates,
        given: as_given,
        open: |r| Box::new(aichat::AichatStore::new(r)),
    },
    Spec {
        agent: Agent::Codecompanion,
        candidates: codecompanion::candidates,
        given: as_given,
        open: |r| Box::new(codecompanion::CodecompanionStore::new(r)),
    },
    Spec {
        agent: Agent::Avante,
        candidates: avante::candidates,
        given: as_given,
        open: |r| Box::new(avante::AvanteStore::new(r)),
    },
    Spec {
        agent: Agent::Llm,
        candidates: llm::candidates,
        given: as_given,
        open: |r| Box::new(llm::LlmStore::new(r)),
    },
    Spec {
        agent: Agent::Copilotchat,
        candidates: copilotchat::candidates,
        given: as_given,
        open: |r| Box::new(copilotchat::CopilotchatStore::new(r)),
    },
    Spec {
        agent: Agent::Gp,
        candidates: gp::candidates,
        given: as_given,
        open: |r| Box::new(gp::open(r)),
    },
    Spec {
        agent: Agent::Parrot,
        candidates: parrot::candidates,
        given: as_given,
        open: |r| Box::new(parrot::open(r)),
    },
    Spec {
        agent: Agent::Fabric,
        candidates: fabric::candidates,
        given: as_given,
        open: |r| Box::new(fabric::FabricStore::new(r)),
    },
    Spec {
        agent: Agent::Chatgptnvim,
        candidates: chatgptnvim::candidates,
        given: as_given,
        open: |r| Box::new(chatgptnvim::ChatgptnvimStore::new(r)),
    },
    Spec {
        agent: Agent::Everycode,
        candidates: everycode::candidates,
        given: as_given,
        open: |r| Box::new(codex::CodexStore::with_dialect(everycode::DIALECT, r)),
    },
    Spec {
        agent: Agent::Ellama,
        candidates: ellama::candidates,
        given: as_given,
        open: |r| Box::new(ellama::EllamaStore::new(r)),
    },
    Spec {
        agent: Agent::Octofriend,
        candidates: octofriend::candidates,
        given: as_given,
        open: |r| Box::new(octofriend::OctofriendStore::new(r)),
    },
    Spec {
        agent: Agent::Pearai,
        candidates: pearai::candidates,
        given: as_given,
        open: |r| Box::new(r#continue::ContinueStore::with_dialect(pearai::DIALECT, r)),
    },
    Spec {
        agent: Agent::Jan,
        candidates: jan::candidates,
        given: as_given,
        open: |r| Box::new(jan::JanStore::new(r)),
    },
    Spec {
        agent: Agent::Sgpt,
        candidates: sgpt::candidates,
        given: as_given,
        open: |r| Box::new(sgpt::SgptStore::new(r)),
    },
    Spec {
        agent: Agent::Oterm,
        candidates: oterm::candidates,
        given: as_given,
        open: |r| Box::new(oterm::OtermStore::new(r)),
    },
    Spec {
        agent: Agent::Dyad,
        candidates: dyad::candidates,
        given: as_given,
        open: |r| Box::new(dyad::DyadStore::new(r)),
    },
    Spec {
        agent: Agent::Mods,
        candidates: mods::candidates,
        given: as_given,
        open: |r| Box::new(mods::ModsStore::new(r)),
    },
    Spec {
        agent: Agent::Iflow,
        candidates: iflow::candidates,
        given: as_given,
        open: |r| Box::new(iflow::IflowStore::new(r)),
    },
    Spec {
        agent: Agent::Anythingllm,
        candidates: anythingllm::candidates,
        given: as_given,
        open: |r| Box::new(anythingllm::AnythingllmStore::new(r)),
    },
    Spec {
        agent: Agent::Ollama,
        candidates: ollama::candidates,
        given: as_given,
        open: |r| Box::new(ollama::OllamaStore::new(r)),
    },
];

/// What sessfs cannot read of an agent's sessions, and why: `doctor` prints it under the
/// agent's line, so a store it cannot see is named instead of staying silent.
pub const NOT_READABLE: &[(Agent, &str)] = &[
    (
        Agent::Kiro,
        "Kiro CLI's own formats (the `conversations_v2` table, ~/.kiro/sessions/cli/) are closed source and not read; only the Amazon Q `conversations` table is",
    ),
    (
        Agent::Grok,
        "Grok CLI before its SQLite history (grok-cli 15cb446, March 2026) kept chats in memory only: nothing on disk to read",
    ),
];

/// The registry line of `agent`, `None` for an agent without a store yet.
pub fn spec(agent: Agent) -> Option<&'static Spec> {
    REGISTRY.iter().find(|s| s.agent == agent)
}

/// Every root each agent might use, existing or not, in priority order. `doctor` prints these.
pub fn candidates(env: &Env) -> Vec<Root> {
    Agent::ALL
        .into_iter()
        .filter_map(spec)
        .flat_map(|s| (s.candidates)(env))
        .collect()
}

/// Open a store for every agent with at least one existing root that holds its data
/// ([`Store::found`]). `extra` are `--store` roots given by hand; they come first, are used
/// even when defaults exist, and always open their store.
pub fn open_all(env: &Env, extra: &[(Agent, PathBuf)]) -> Vec<Box<dyn Store>> {
    let mut stores: Vec<Box<dyn Store>> = Vec::new();
    for spec in Agent::ALL.into_iter().filter_map(spec) {
        let given: Vec<Root> = extra
            .iter()
            .filter(|(a, _)| *a == spec.agent)
            .map(|(a, p)| Root::new(*a, p.clone(), "--store"))
            .collect();
        let mut roots = (spec.given)(given);
        // `exists`, not `is_dir`: some roots are database files (agsh, meka).
        for r in (spec.candidates)(env)
            .into_iter()
            .filter(|r| r.path.exists())
        {
            if !roots.iter().any(|x| same_path(&x.path, &r.path)) {
                roots.push(r);
            }
        }
        if roots.is_empty() {
            continue;
        }
        let by_hand = extra.iter().any(|(a, _)| *a == spec.agent);
        let store = (spec.open)(roots);
        if by_hand || store.found() {
            stores.push(store);
        }
    }
    stores
}

/// Whether two paths name one file or directory (the same path when either cannot be
/// resolved, as for a root that does not exist).
pub fn same_path(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// `(size, mtime)` of a file; `None` when it cannot be read (it then versions as missing).
pub fn stat_version(path: &Path) -> Option<(u64, SystemTime)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// A hash of the size and mtime of each of `paths` (a missing one counts as missing) and,
/// for a directory, of each entry directly in it: what the mount's version of a session by
/// its sources looks at, for a [`Store::versions`] that keeps that and replaces only the
/// part a file shared by many sessions plays with what the session takes from it.
pub fn stat_fingerprint<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = crate::names::Fnv1a::default();
    for p in paths {
        p.hash(&mut h);
        let Ok(m) = std::fs::metadata(p) else {
            0xdead_u16.hash(&mut h);
            continue;
        };
        (m.len(), m.modified().ok()).hash(&mut h);
        if m.is_dir() {
            let mut children: Vec<_> = std::fs::read_dir(p)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let m = e.metadata().ok()?;
                    Some((e.file_name(), m.len(), m.modified().ok()))
                })
                .collect();
            children.sort();
            children.hash(&mut h);
        }
    }
    h.finish()
}

/// Every regular file under `dir` whose name ends with `suffix`, recursively, sorted.
/// Unreadable directories are skipped with a log line.
pub fn walk_files(dir: &Path, suffix: &str, max_depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(dir, suffix, max_depth, &mut out);
    out.sort();
    out
}

fn walk(dir: &Path, suffix: &str, depth: usize, out: &mut Vec<PathBuf>) {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            log::warn!("cannot read {}: {e}", dir.display());
            return;
        }
    };
    for ent in rd.flatten() {
        let Ok(ft) = ent.file_type() else { continue };
        let p = ent.path();
        if ft.is_dir() {
            if depth > 0 {
                walk(&p, suffix, depth - 1, out);
            }
        } else if ft.is_file()
            && p.as_os_str()
                .as_encoded_bytes()
                .ends_with(suffix.as_bytes())
        {
            out.push(p);
        }
    }
}

/// Parse an ISO 8601 / RFC 3339 timestamp, or milliseconds since the epoch.
pub fn parse_time(v: &serde_json::Value) -> Option<DateTime<Utc>> {
    match v {
        serde_json::Value::String(s) => DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|d| d.with_timezone(&Utc)),
        serde_json::Value::Number(n) => {
            let ms = n.as_f64()?;
            DateTime::<Utc>::from_timestamp_millis(ms as i64)
        }
        _ => None,
    }
}
