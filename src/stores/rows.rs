//! The [`Store`] of every format whose sessions are rows of one SQLite database per place
//! (Dyad, ForgeCode, Grok CLI, Octofriend, oterm, the Ollama app).
//!
//! Those stores did the same thing five times: find each root's database, list one session
//! per key a query returns, read one session in one snapshot, glance at the databases and
//! their journals, and version each session by a hash of its own rows. Only the queries and
//! the parsing differ, so a format module now says just those ([`RowFormat`]) and
//! [`RowStore`] is its store; how the database is read stays in [`super::sqlite`].

use super::sqlite::{self, Reader};
use super::{Base, Glance, Listed, Root, Store};
use crate::model::{Agent, Session};
use rusqlite::Connection;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// What a format whose sessions are database rows says of itself; [`RowStore`] does the rest.
pub trait RowFormat: 'static {
    const AGENT: Agent;
    /// The database's file name in a root that is a directory (a root may also be the
    /// database itself).
    const DB_FILE: &'static str;
    /// What [`RowFormat::version`] needs of a database, read once per check of it (the
    /// columns its tables have).
    type Probe;
    /// One session's rows, read in one snapshot and parsed after it.
    type Raw;

    /// Every session key of the database, in the order to list them; an error for a
    /// database that is not this agent's.
    fn list(conn: &Connection) -> rusqlite::Result<Vec<String>>;
    fn probe(conn: &Connection) -> rusqlite::Result<Self::Probe>;
    /// A hash of the session's own rows: one write re-renders only the session it touched.
    fn version(conn: &Connection, probe: &Self::Probe, key: &str) -> rusqlite::Result<u64>;
    fn fetch(conn: &Connection, key: &str) -> rusqlite::Result<Self::Raw>;
    fn build(raw: Self::Raw, db: &Path, key: &str) -> Session;
    /// The session shown, with the read's error as a warning, when the database cannot be
    /// read: its source named, nothing else known.
    fn unread(db: &Path, key: &str) -> Session;
}

pub struct RowStore<F> {
    base: Base,
    reader: Reader,
    format: PhantomData<fn() -> F>,
}

impl<F: RowFormat> RowStore<F> {
    pub fn new(roots: Vec<Root>) -> RowStore<F> {
        RowStore {
            base: Base::new(F::AGENT, roots),
            reader: Reader::new(),
            format: PhantomData,
        }
    }

    /// `(root index, database)` of every database the roots lead to, each once.
    fn places(&self) -> Vec<(usize, PathBuf)> {
        sqlite::databases(&self.base.roots, F::DB_FILE)
    }
}

impl<F: RowFormat> Store for RowStore<F> {
    fn base(&self) -> &Base {
        &self.base
    }

    fn problems(&self) -> Vec<String> {
        let dbs = self.places();
        self.reader
            .problems(dbs.iter().map(|(_, db)| db.as_path()), F::list)
    }

    fn list(&self) -> Vec<Listed> {
        sqlite::row_sessions(&self.reader, F::AGENT.name(), &self.places(), F::list)
    }

    fn load(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let key = listed.key.as_deref().unwrap_or(&listed.id);
        sqlite::load_session(
            &self.reader,
            db,
            key,
            sqlite::Access::InPlace,
            |c| F::fetch(c, key),
            |raw| F::build(raw, db, key),
            || F::unread(db, key),
        )
    }

    /// The listing reads every database's keys, and in a root that is a directory looks up
    /// the database: those directories and every database with its journals. A root gone
    /// since it was opened leaves the store without a glance.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        sqlite::glance(&self.base.roots, &self.places())
    }

    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        sqlite::versions_by_db(
            &self.reader,
            listed,
            |l| l.key.as_deref(),
            F::probe,
            F::version,
        )
    }
}
