//! TODO
use crate::model::Session;
pub fn render(s: &Session) -> String {
    let _ = s;
    String::from("{}\n")
}
