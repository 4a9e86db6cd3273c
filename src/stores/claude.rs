//! TODO: Claude Code store.
use super::{Env, Listed, Root, Store};
use crate::model::{Agent, Session};

pub fn candidates(env: &Env) -> Vec<Root> {
    let _ = env;
    Vec::new()
}

pub struct ClaudeStore {
    roots: Vec<Root>,
}
impl ClaudeStore {
    pub fn new(roots: Vec<Root>) -> ClaudeStore {
        ClaudeStore { roots }
    }
}
impl Store for ClaudeStore {
    fn agent(&self) -> Agent {
        Agent::Claude
    }
    fn roots(&self) -> &[Root] {
        &self.roots
    }
    fn list(&self) -> Vec<Listed> {
        Vec::new()
    }
    fn load(&self, listed: &Listed) -> Session {
        Session::new(Agent::Claude, listed.id.clone())
    }
}
