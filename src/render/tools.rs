//! TODO
use crate::model::Session;
/// `(file name, body)` for each tool call, in call order.
pub fn render(s: &Session) -> Vec<(String, String)> {
    let _ = s;
    Vec::new()
}
