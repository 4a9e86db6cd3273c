//! TODO: pi / omp / indusagi JSONL-tree stores.
use super::{Env, Listed, Root, Store};
use crate::model::{Agent, Session};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Pi,
    Omp,
    Indusagi,
}

impl Dialect {
    pub const ALL: [Dialect; 3] = [Dialect::Pi, Dialect::Omp, Dialect::Indusagi];
    pub fn agent(self) -> Agent {
        match self {
            Dialect::Pi => Agent::Pi,
            Dialect::Omp => Agent::Omp,
            Dialect::Indusagi => Agent::Indusagi,
        }
    }
}

pub fn candidates(env: &Env, dialect: Dialect) -> Vec<Root> {
    let _ = (env, dialect);
    Vec::new()
}

pub struct PiStore {
    dialect: Dialect,
    roots: Vec<Root>,
}
impl PiStore {
    pub fn new(dialect: Dialect, roots: Vec<Root>) -> PiStore {
        PiStore { dialect, roots }
    }
}
impl Store for PiStore {
    fn agent(&self) -> Agent {
        self.dialect.agent()
    }
    fn roots(&self) -> &[Root] {
        &self.roots
    }
    fn list(&self) -> Vec<Listed> {
        Vec::new()
    }
    fn load(&self, listed: &Listed) -> Session {
        Session::new(self.agent(), listed.id.clone())
    }
}
