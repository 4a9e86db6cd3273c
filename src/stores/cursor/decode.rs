//! The bytes inside a cursor-agent `store.db`: its protobuf root blob (message blob ids and
//! the workspace), the hex-encoded meta value, and `file://` / `vscode-remote://` URIs.
//!
//! Kept apart from the store because it is pure decoding of untrusted bytes: no database,
//! no session, so every read can be bounds-checked and tested on hand-made buffers. Nothing
//! here panics or allocates more than its input holds.

pub mod pb {
    //! Protobuf wire format, read by hand: varints and length-delimited fields. Every read
    //! is bounds-checked; a malformed buffer is an `Err`, never a panic, and nothing is
    //! allocated beyond the fields actually present.

    /// One field's value.
    #[derive(Debug, PartialEq, Eq)]
    pub enum Val<'a> {
        Varint(u64),
        Bytes(&'a [u8]),
        Fixed64(u64),
        Fixed32(u32),
    }

    /// A varint at `*at`, advancing it.
    pub fn varint(buf: &[u8], at: &mut usize) -> Result<u64, String> {
        let mut v: u64 = 0;
        for shift in 0..10 {
            let b = *buf.get(*at).ok_or("varint runs past the end")?;
            *at += 1;
            v |= u64::from(b & 0x7f) << (7 * shift);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    /// Every `(field number, value)` of a message, in order.
    pub fn fields(buf: &[u8]) -> Result<Vec<(u64, Val<'_>)>, String> {
        let mut out = Vec::new();
        let mut at = 0usize;
        while at < buf.len() {
            let key = varint(buf, &mut at)?;
            let field = key >> 3;
            if field == 0 {
                return Err(format!("field number 0 at byte {at}"));
            }
            let take = |at: &mut usize, n: usize| -> Result<&[u8], String> {
                let end = at
                    .checked_add(n)
                    .filter(|e| *e <= buf.len())
                    .ok_or_else(|| format!("field {field} runs past the end"))?;
                let s = &buf[*at..end];
                *at = end;
                Ok(s)
            };
            let val = match key & 7 {
                0 => Val::Varint(varint(buf, &mut at)?),
                1 => {
                    let b = take(&mut at, 8)?;
                    Val::Fixed64(u64::from_le_bytes(b.try_into().map_err(|_| "fixed64")?))
                }
                2 => {
                    let n = varint(buf, &mut at)?;
                    let n = usize::try_from(n).map_err(|_| "length too large")?;
                    Val::Bytes(take(&mut at, n)?)
                }
                5 => {
                    let b = take(&mut at, 4)?;
                    Val::Fixed32(u32::from_le_bytes(b.try_into().map_err(|_| "fixed32")?))
                }
                w => return Err(format!("unsupported wire type {w} (field {field})")),
            };
            out.push((field, val));
        }
        Ok(out)
    }
}

/// What the root blob says: message blob ids in order, and the workspace.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Root0 {
    pub messages: Vec<String>,
    pub workspace: Option<String>,
}

/// Decode a root blob (field 1: message ids, 32 raw bytes or 64 hex chars; field 9:
/// workspace path or `file://` URI).
pub fn decode_root(buf: &[u8]) -> Result<Root0, String> {
    let mut r = Root0::default();
    for (field, val) in pb::fields(buf)? {
        match (field, val) {
            (1, pb::Val::Bytes(b)) => {
                if b.len() == 32 {
                    r.messages.push(hex(b));
                } else if b.len() == 64 && b.iter().all(u8::is_ascii_hexdigit) {
                    r.messages
                        .push(String::from_utf8_lossy(b).to_ascii_lowercase());
                } else {
                    return Err(format!(
                        "field 1 holds {} bytes, not a 32-byte blob id",
                        b.len()
                    ));
                }
            }
            (1, _) => return Err("field 1 is not length-delimited".into()),
            (9, pb::Val::Bytes(b)) => {
                let s = String::from_utf8_lossy(b);
                r.workspace = Some(uri_to_path(&s));
            }
            _ => {}
        }
    }
    Ok(r)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `"7b22…"` → bytes; `None` for odd lengths or non-hex characters.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim().as_bytes();
    if s.len() % 2 != 0 {
        return None;
    }
    let nib = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.chunks(2)
        .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

/// `file:///a%20b` → `/a b`; `vscode-remote://host/path` → `/path`; a plain path unchanged.
pub fn uri_to_path(s: &str) -> String {
    let rest = if let Some(r) = s.strip_prefix("file://") {
        r
    } else if let Some((_, r)) = s.split_once("://") {
        r.find('/').map_or("", |i| &r[i..])
    } else {
        return s.to_string();
    };
    let b = rest.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
