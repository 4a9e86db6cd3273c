//! Go's `encoding/gob` streams, decoded into dynamic values: what mods (Charm's CLI for LLMs)
//! keeps each conversation in (see [`super::mods`]).
//!
//! A gob stream describes its own types, so a reader needs no Go declarations: it learns
//! the types from the stream and reads each value by its type. The format, as
//! <https://pkg.go.dev/encoding/gob> ("Encoding Details") specifies it and Go's encoder
//! writes it:
//!
//! - the stream is a sequence of messages, each an unsigned count of the bytes that follow;
//!   a message starts with a signed type id: negative, it defines type `-id` (a `wireType`
//!   struct: one of `ArrayT`, `SliceT`, `StructT`, `MapT` or a marshaler type, each with
//!   its `CommonType` name and id); positive, a value of that type follows;
//! - an unsigned integer below 128 is one byte; above, the negated byte count then the
//!   big-endian bytes; a signed integer is an unsigned one whose low bit says whether the
//!   rest is complemented; a float is the IEEE bits byte-reversed as an unsigned integer; a
//!   bool is an unsigned 0 or 1; strings and byte slices are a count and the bytes;
//! - a struct value is a sequence of (field number delta, value) pairs ending with a zero
//!   delta, fields with zero values left out; slices and arrays are a count and every
//!   element, maps a count and every key and element; an interface is the registered name
//!   of its concrete type (empty for nil), the type's id, a byte count and the value;
//! - a value at the top of a message that is not a struct is prefixed with a zero delta.
//!
//! Why a decoder of its own rather than a crate: the one crate that decodes gob into dynamic
//! values (`gobwire` 0.1.0, one release) refuses a whole stream when one string is not
//! UTF-8, which mods writes whenever it cuts a long prompt at a byte count
//! (`content[:MaxChars]` in its `stream.go`), and it keeps nothing of a stream cut short.
//! This one keeps strings as Go does (bytes, shown lossily), and keeps every element of a
//! top-level slice decoded before a cut, so a conversation file being rewritten shows its
//! messages up to the cut.
//!
//! The input is untrusted: nothing here panics or allocates more than the input justifies.
//! Counts never reserve more than the bytes left (every element takes at least one byte),
//! values nest at most [`MAX_DEPTH`] deep, a stream holds at most [`MAX_VALUES`] values and
//! [`MAX_TYPES`] types, and a type is looked up only when a value of it is read, so types
//! may be defined in any order (Go defines a slice before its element type).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// Deepest nesting of values read (Go's structs of slices of structs need a handful).
pub const MAX_DEPTH: usize = 64;
/// Most values one stream may hold, against inputs of tiny values that would take far more
/// memory decoded than encoded.
pub const MAX_VALUES: usize = 4_000_000;
/// Most types one stream may define.
pub const MAX_TYPES: usize = 10_000;
/// Longest registered name of an interface's concrete type (Go's own limit).
const MAX_NAME: u64 = 1024;

// The predefined type ids (`encoding/gob` doc, "Encoding Details").
const BOOL: i64 = 1;
const INT: i64 = 2;
const UINT: i64 = 3;
const FLOAT: i64 = 4;
const BYTES: i64 = 5;
const STRING: i64 = 6;
const COMPLEX: i64 = 7;
const INTERFACE: i64 = 8;
/// The first id a stream may define (Go's `firstUserId`).
const FIRST_USER: i64 = 64;

/// A decoded value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Complex(f64, f64),
    Bytes(Vec<u8>),
    /// A Go string: bytes, UTF-8 by convention only.
    String(Vec<u8>),
    Slice(Vec<Value>),
    Array(Vec<Value>),
    /// Key and element pairs in stream order.
    Map(Vec<(Value, Value)>),
    Struct(Struct),
    /// `None` for a nil interface.
    Interface(Option<Box<Named>>),
    /// The bytes a `GobEncoder`, `BinaryMarshaler` or `TextMarshaler` wrote.
    Marshaled(Vec<u8>),
}

/// A struct value: its type's name and the fields the stream carried (Go leaves out fields
/// holding their zero value), in field order.
#[derive(Clone, Debug, PartialEq)]
pub struct Struct {
    pub type_name: Arc<str>,
    pub fields: Vec<(Arc<str>, Value)>,
}

/// A non-nil interface value: the name its concrete type was registered under, and the value.
#[derive(Clone, Debug, PartialEq)]
pub struct Named {
    pub name: String,
    pub value: Value,
}

impl Value {
    /// The field `name` of a struct; `None` when absent (zero in Go) or not a struct.
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Struct(s) => s.fields.iter().find(|(n, _)| &**n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A string or byte slice as text, invalid UTF-8 replaced.
    pub fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Value::String(b) | Value::Bytes(b) => Some(String::from_utf8_lossy(b)),
            _ => None,
        }
    }

    /// The text of field `name`, empty when it is absent (Go's zero string).
    pub fn text_field(&self, name: &str) -> Cow<'_, str> {
        self.field(name)
            .and_then(Value::text)
            .unwrap_or(Cow::Borrowed(""))
    }

    /// The elements of a slice or array; none for other values.
    pub fn items(&self) -> &[Value] {
        match self {
            Value::Slice(v) | Value::Array(v) => v,
            _ => &[],
        }
    }

    /// A bool's value; false for other values (Go's zero).
    pub fn is_true(&self) -> bool {
        matches!(self, Value::Bool(true))
    }

    /// The struct's type name, if it is a struct.
    pub fn type_name(&self) -> Option<&str> {
        match self {
            Value::Struct(s) => Some(&s.type_name),
            _ => None,
        }
    }
}

/// Why a stream could not be read to its end. Offsets count bytes from the stream's start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("the data ends inside a message at byte {0} (cut while being written?)")]
    Cut(usize),
    #[error("bad data at byte {at}: {what}")]
    Bad { at: usize, what: String },
    #[error("type {id}, used at byte {at}, is never defined")]
    Undefined { at: usize, id: i64 },
    #[error("values nest deeper than {MAX_DEPTH} levels at byte {0}")]
    TooDeep(usize),
    #[error("more than {MAX_VALUES} values")]
    TooMany,
}

/// What a stream held: every value read, and the error that stopped the reading, if any.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decoded {
    /// The values in stream order. When the error struck inside a top-level slice or array,
    /// the last value holds the elements read before it (see [`Decoded::partial`]).
    pub values: Vec<Value>,
    pub error: Option<Error>,
    /// The last of `values` was read from a message cut short by `error`: a slice or array
    /// holding the elements read before it.
    pub partial: bool,
}

/// Decode a whole gob stream. Never fails: what could be read is returned with the error
/// that stopped the reading.
pub fn decode(bytes: &[u8]) -> Decoded {
    let mut d = Decoder {
        types: HashMap::new(),
        values: 0,
    };
    let mut out = Decoded::default();
    let mut pos = 0;
    while pos < bytes.len() {
        match d.message(bytes, pos) {
            Ok((next, value)) => {
                out.values.extend(value);
                pos = next;
            }
            Err((partial, e)) => {
                out.partial = partial.is_some();
                out.values.extend(partial);
                out.error = Some(e);
                break;
            }
        }
    }
    out
}

/// A defined type, as its `wireType` describes it.
#[derive(Clone, Debug)]
enum Wire {
    Array {
        elem: i64,
        len: u64,
    },
    Slice {
        elem: i64,
    },
    Struct {
        name: Arc<str>,
        fields: Arc<[(Arc<str>, i64)]>,
    },
    Map {
        key: i64,
        elem: i64,
    },
    /// A type that encodes itself (`GobEncoder`, `BinaryMarshaler`, `TextMarshaler`).
    Marshaler,
}

struct Decoder {
    types: HashMap<i64, Wire>,
    /// Values read so far, against [`MAX_VALUES`].
    values: usize,
}

/// A cursor over one message: `end` is where the message ends (or the data, when the
/// message was cut), and `cut` says which, so running out reads as [`Error::Cut`] rather
/// than as bad data.
struct Cur<'a> {
    data: &'a [u8],
    pos: usize,
    end: usize,
    cut: bool,
}

type Res<T> = Result<T, Error>;

impl Cur<'_> {
    fn bad<T>(&self, what: impl Into<String>) -> Res<T> {
        Err(Error::Bad {
            at: self.pos,
            what: what.into(),
        })
    }

    /// Running out of the message: the data was cut, or the message lies about its content.
    fn short<T>(&self) -> Res<T> {
        if self.cut {
            Err(Error::Cut(self.end))
        } else {
            self.bad("a value runs past the end of its message")
        }
    }

    fn byte(&mut self) -> Res<u8> {
        match self.data.get(self.pos) {
            Some(&b) if self.pos < self.end => {
                self.pos += 1;
                Ok(b)
            }
            _ => self.short(),
        }
    }

    fn uint(&mut self) -> Res<u64> {
        let first = self.byte()?;
        if first < 0x80 {
            return Ok(u64::from(first));
        }
        let n = usize::from(first.wrapping_neg());
        if n > 8 {
            return self.bad("an unsigned integer longer than eight bytes");
        }
        let b = self.take(n)?;
        Ok(b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    fn int(&mut self) -> Res<i64> {
        let u = self.uint()?;
        let x = (u >> 1) as i64;
        Ok(if u & 1 == 1 { !x } else { x })
    }

    fn float(&mut self) -> Res<f64> {
        Ok(f64::from_bits(self.uint()?.swap_bytes()))
    }

    /// The next `n` bytes of the message.
    fn take(&mut self, n: usize) -> Res<&[u8]> {
        match self.pos.checked_add(n) {
            Some(e) if e <= self.end => {
                let b = &self.data[self.pos..e];
                self.pos = e;
                Ok(b)
            }
            _ => self.short(),
        }
    }

    /// A count and that many bytes.
    fn counted(&mut self) -> Res<Vec<u8>> {
        let n = self.uint()?;
        let n = usize::try_from(n).or_else(|_| self.short())?;
        Ok(self.take(n)?.to_vec())
    }

    /// How many elements of at least one byte each the message can still hold: the most a
    /// count is allowed to reserve.
    fn room(&self) -> usize {
        self.end.saturating_sub(self.pos)
    }

    /// The fields of a struct the decoder knows the layout of (the `wireType` structs):
    /// `f` reads field `n`, for each field sent, up to `max`.
    fn fields(&mut self, max: i64, mut f: impl FnMut(&mut Self, i64) -> Res<()>) -> Res<()> {
        let mut field: i64 = -1;
        loop {
            let delta = self.uint()?;
            if delta == 0 {
                return Ok(());
            }
            field = match i64::try_from(delta).ok().and_then(|d| field.checked_add(d)) {
                Some(n) if n <= max => n,
                _ => return self.bad("a type definition with an unknown field"),
            };
            f(self, field)?;
        }
    }
}

impl Decoder {
    /// Read the message at `pos`: a type definition (no value) or a value. On an error, the
    /// elements of a top-level slice read before it come back with it.
    fn message(
        &mut self,
        data: &[u8],
        pos: usize,
    ) -> Result<(usize, Option<Value>), (Option<Value>, Error)> {
        // The count itself may be cut.
        let mut head = Cur {
            data,
            pos,
            end: data.len(),
            cut: true,
        };
        let len = head.uint().map_err(|e| (None, e))?;
        let start = head.pos;
        let (end, cut) = match usize::try_from(len).ok().and_then(|n| start.checked_add(n)) {
            Some(e) if e <= data.len() => (e, false),
            _ => (data.len(), true),
        };
        if len == 0 {
            let e = Error::Bad {
                at: pos,
                what: "an empty message".into(),
            };
            return Err((None, e));
        }
        let mut c = Cur {
            data,
            pos: start,
            end,
            cut,
        };
        let id = c.int().map_err(|e| (None, e))?;
        if id == 0 {
            let e = Error::Bad {
                at: start,
                what: "type id 0".into(),
            };
            return Err((None, e));
        }
        if id < 0 {
            self.define(&mut c, id).map_err(|e| (None, e))?;
            return Ok((end, None));
        }
        let value = self.top(&mut c, id)?;
        if cut {
            // The value ended early, yet its message claims more bytes than the data holds.
            return Err((Some(value), Error::Cut(end)));
        }
        Ok((end, Some(value)))
    }

    fn define(&mut self, c: &mut Cur<'_>, neg: i64) -> Res<()> {
        let at = c.pos;
        let id = neg.checked_neg().unwrap_or(0);
        if id < FIRST_USER {
            return c.bad(format!("type {id} is predefined and cannot be defined"));
        }
        if self.types.contains_key(&id) {
            return c.bad(format!("type {id} is defined twice"));
        }
        if self.types.len() >= MAX_TYPES {
            return c.bad(format!("more than {MAX_TYPES} types"));
        }
        let wire = wire_type(c)?;
        if c.pos != c.end {
            return Err(Error::Bad {
                at,
                what: format!("type {id}'s definition leaves bytes over"),
            });
        }
        self.types.insert(id, wire);
        Ok(())
    }

    /// A value at the top of a message: a struct as it is, anything else after a zero delta.
    /// The elements of a slice or array are read one by one, so that those before an error
    /// are kept.
    fn top(&mut self, c: &mut Cur<'_>, id: i64) -> Result<Value, (Option<Value>, Error)> {
        if matches!(self.types.get(&id), Some(Wire::Struct { .. })) {
            return self.value(c, id, 0).map_err(|e| (None, e));
        }
        match c.uint() {
            Ok(0) => {}
            Ok(_) => {
                let e = Error::Bad {
                    at: c.pos,
                    what: "a value that is neither a struct nor a single value".into(),
                };
                return Err((None, e));
            }
            Err(e) => return Err((None, e)),
        }
        let (elem, array) = match self.types.get(&id) {
            Some(Wire::Slice { elem }) => (*elem, false),
            Some(Wire::Array { elem, .. }) => (*elem, true),
            _ => return self.value(c, id, 0).map_err(|e| (None, e)),
        };
        let n = c.uint().map_err(|e| (None, e))?;
        let mut items = Vec::with_capacity(capacity(n, c));
        for _ in 0..n {
            match self.value(c, elem, 1) {
                Ok(v) => items.push(v),
                Err(e) => {
                    let partial = if array {
                        Value::Array(items)
                    } else {
                        Value::Slice(items)
                    };
                    return Err((Some(partial), e));
                }
            }
        }
        Ok(if array {
            Value::Array(items)
        } else {
            Value::Slice(items)
        })
    }

    /// One value of type `id`.
    fn value(&mut self, c: &mut Cur<'_>, id: i64, depth: usize) -> Res<Value> {
        if depth > MAX_DEPTH {
            return Err(Error::TooDeep(c.pos));
        }
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(Error::TooMany);
        }
        Ok(match id {
            BOOL => Value::Bool(c.uint()? != 0),
            INT => Value::Int(c.int()?),
            UINT => Value::Uint(c.uint()?),
            FLOAT => Value::Float(c.float()?),
            BYTES => Value::Bytes(c.counted()?),
            STRING => Value::String(c.counted()?),
            COMPLEX => Value::Complex(c.float()?, c.float()?),
            INTERFACE => self.interface(c, depth)?,
            _ => {
                let Some(wire) = self.types.get(&id) else {
                    return Err(Error::Undefined { at: c.pos, id });
                };
                // Cheap to copy: a struct's names and fields are shared.
                match wire.clone() {
                    Wire::Slice { elem } => Value::Slice(self.elements(c, elem, depth)?),
                    Wire::Array { elem, len } => {
                        let at = c.pos;
                        let items = self.elements(c, elem, depth)?;
                        if items.len() as u64 != len {
                            return Err(Error::Bad {
                                at,
                                what: format!("an array of {} elements for [{len}]", items.len()),
                            });
                        }
                        Value::Array(items)
                    }
                    Wire::Map { key, elem } => {
                        let n = c.uint()?;
                        let mut pairs = Vec::with_capacity(capacity(n, c) / 2);
                        for _ in 0..n {
                            let k = self.value(c, key, depth + 1)?;
                            let v = self.value(c, elem, depth + 1)?;
                            pairs.push((k, v));
                        }
                        Value::Map(pairs)
                    }
                    Wire::Struct { name, fields } => {
                        Value::Struct(self.structure(c, name, &fields, depth)?)
                    }
                    Wire::Marshaler => Value::Marshaled(c.counted()?),
                }
            }
        })
    }

    fn elements(&mut self, c: &mut Cur<'_>, elem: i64, depth: usize) -> Res<Vec<Value>> {
        let n = c.uint()?;
        let mut items = Vec::with_capacity(capacity(n, c));
        for _ in 0..n {
            items.push(self.value(c, elem, depth + 1)?);
        }
        Ok(items)
    }

    fn structure(
        &mut self,
        c: &mut Cur<'_>,
        name: Arc<str>,
        fields: &[(Arc<str>, i64)],
        depth: usize,
    ) -> Res<Struct> {
        let mut out = Vec::new();
        let mut field: i64 = -1;
        loop {
            let at = c.pos;
            let delta = c.uint()?;
            if delta == 0 {
                break;
            }
            let n = i64::try_from(delta).ok().and_then(|d| field.checked_add(d));
            let Some((fname, fid)) = n
                .and_then(|n| usize::try_from(n).ok())
                .and_then(|i| fields.get(i))
            else {
                return Err(Error::Bad {
                    at,
                    what: format!("field number past the {} fields of {name}", fields.len()),
                });
            };
            field = n.unwrap_or(field);
            let v = self.value(c, *fid, depth + 1)?;
            out.push((Arc::clone(fname), v));
        }
        Ok(Struct {
            type_name: name,
            fields: out,
        })
    }

    /// An interface value: the concrete type's registered name (empty: nil), its type id,
    /// a byte count, and the value as at the top of a message. Go may put the definitions of
    /// a concrete type first used inside a nested interface right after the name; such
    /// streams are not read.
    fn interface(&mut self, c: &mut Cur<'_>, depth: usize) -> Res<Value> {
        let n = c.uint()?;
        if n == 0 {
            return Ok(Value::Interface(None));
        }
        if n > MAX_NAME {
            return c.bad(format!("an interface type name of {n} bytes"));
        }
        let name = String::from_utf8_lossy(c.take(n as usize)?).into_owned();
        let at = c.pos;
        let id = c.int()?;
        if id < 0 {
            return Err(Error::Bad {
                at,
                what: format!("an interface value ({name}) defining its own types: not read"),
            });
        }
        let len = c.uint()?;
        let len = usize::try_from(len).or_else(|_| c.short())?;
        let end = match c.pos.checked_add(len) {
            Some(e) if e <= c.end => e,
            _ => return c.short(),
        };
        // The value is read inside its own count.
        let outer = std::mem::replace(&mut c.end, end);
        let outer_cut = std::mem::replace(&mut c.cut, false);
        let v = if matches!(self.types.get(&id), Some(Wire::Struct { .. })) {
            self.value(c, id, depth + 1)
        } else {
            match c.uint() {
                Ok(0) => self.value(c, id, depth + 1),
                Ok(_) => c.bad("an interface value that is neither a struct nor a single value"),
                Err(e) => Err(e),
            }
        };
        c.pos = end;
        c.end = outer;
        c.cut = outer_cut;
        Ok(Value::Interface(Some(Box::new(Named { name, value: v? }))))
    }
}

/// What a count of `n` elements may reserve: no more than the bytes left, each element
/// taking at least one.
fn capacity(n: u64, c: &Cur<'_>) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX).min(c.room())
}

/// A `wireType`: `{ArrayT, SliceT, StructT, MapT, GobEncoderT, BinaryMarshalerT,
/// TextMarshalerT}`, exactly one of them sent.
fn wire_type(c: &mut Cur<'_>) -> Res<Wire> {
    let mut out = None;
    c.fields(6, |c, f| {
        out = Some(match f {
            0 => array_type(c)?,
            1 => slice_type(c)?,
            2 => struct_type(c)?,
            3 => map_type(c)?,
            _ => {
                common_type(c)?;
                Wire::Marshaler
            }
        });
        Ok(())
    })?;
    match out {
        Some(w) => Ok(w),
        None => c.bad("an empty type definition"),
    }
}

/// `CommonType{Name string; Id typeId}`: the name (the id is the one being defined).
fn common_type(c: &mut Cur<'_>) -> Res<String> {
    let mut name = String::new();
    c.fields(1, |c, f| {
        if f == 0 {
            name = String::from_utf8_lossy(&c.counted()?).into_owned();
        } else {
            c.int()?;
        }
        Ok(())
    })?;
    Ok(name)
}

/// `arrayType{CommonType; Elem typeId; Len int}`.
fn array_type(c: &mut Cur<'_>) -> Res<Wire> {
    let (mut elem, mut len) = (0, 0i64);
    c.fields(2, |c, f| {
        match f {
            0 => drop(common_type(c)?),
            1 => elem = c.int()?,
            _ => len = c.int()?,
        }
        Ok(())
    })?;
    match u64::try_from(len) {
        Ok(len) => Ok(Wire::Array { elem, len }),
        Err(_) => c.bad("an array type of negative length"),
    }
}

/// `sliceType{CommonType; Elem typeId}`.
fn slice_type(c: &mut Cur<'_>) -> Res<Wire> {
    let mut elem = 0;
    c.fields(1, |c, f| {
        if f == 0 {
            common_type(c)?;
        } else {
            elem = c.int()?;
        }
        Ok(())
    })?;
    Ok(Wire::Slice { elem })
}

/// `structType{CommonType; Field []*fieldType}`, `fieldType{Name string; Id typeId}`.
fn struct_type(c: &mut Cur<'_>) -> Res<Wire> {
    let mut name = String::new();
    let mut fields = Vec::new();
    c.fields(1, |c, f| {
        if f == 0 {
            name = common_type(c)?;
            return Ok(());
        }
        let n = c.uint()?;
        fields.reserve(capacity(n, c));
        for _ in 0..n {
            let (mut fname, mut id) = (String::new(), 0);
            c.fields(1, |c, f| {
                if f == 0 {
                    fname = String::from_utf8_lossy(&c.counted()?).into_owned();
                } else {
                    id = c.int()?;
                }
                Ok(())
            })?;
            fields.push((Arc::from(fname), id));
        }
        Ok(())
    })?;
    Ok(Wire::Struct {
        name: Arc::from(name),
        fields: fields.into(),
    })
}

/// `mapType{CommonType; Key typeId; Elem typeId}`.
fn map_type(c: &mut Cur<'_>) -> Res<Wire> {
    let (mut key, mut elem) = (0, 0);
    c.fields(2, |c, f| {
        match f {
            0 => drop(common_type(c)?),
            1 => key = c.int()?,
            _ => elem = c.int()?,
        }
        Ok(())
    })?;
    Ok(Wire::Map { key, elem })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn s(v: &str) -> Value {
        Value::String(v.as_bytes().to_vec())
    }

    /// What Go 1.19's `gob.NewEncoder(w).Encode(&msgs)` wrote for five messages of mods'
    /// `proto.Message` shape (`{Role, Content string; ToolCalls []ToolCall}`, `ToolCall{ID
    /// string; Function Function; IsError bool}`, `Function{Name string; Arguments []byte}`):
    /// a system message, a prompt, a call, its failed result and a reply. The slice type is
    /// defined before its element type.
    const MODS: &str = "0dff89020102ff8a0001ff82000039ff81030101074d65737361676501ff820001030104526f6c65010c000107436f6e74656e74010c000109546f6f6c43616c6c7301ff880000001eff870201010f5b5d6d61696e2e546f6f6c43616c6c01ff880001ff84000037ff8303010108546f6f6c43616c6c01ff8400010301024944010c00010846756e6374696f6e01ff8600010749734572726f7201020000002dff850301010846756e6374696f6e01ff8600010201044e616d65010c000109417267756d656e7473010a000000ffd5ff8a0005010673797374656d013c466f726d61742074686520726573706f6e7365206173206d61726b646f776e20776974686f757420656e636c6f73696e67206261636b7469636b732e00010475736572010a6c6973742066696c6573000109617373697374616e740201010663616c6c5f3101010566735f6c73010c7b2270617468223a222e227d0000000104746f6f6c0105612e7478740101010663616c6c5f3101010566735f6c73010c7b2270617468223a222e227d00010100000109617373697374616e7401094f6e652066696c652e00";

    /// Go 1.19 again, for a struct of every kind of field: `{B bool; I int64; U uint32; F
    /// float64; C complex128; A [2]int; M map[string]int; Any interface{}; P []Point}` with
    /// `B: true, I: -129, U: 300, F: 17, C: 1-2i, A: {0, 5}, M: {"k": 7}, Any: Point{22, 33}
    /// (registered as main.Point), P: {{1, 2}}`.
    const MIXED: &str = "4eff91030101054d6978656401ff92000109010142010200010149010400010155010600010146010800010143010e0001014101ff940001014d01ff96000103416e7901100001015001ff9a00000016ff93010101065b325d696e7401ff94000104010400001eff950401010e6d61705b737472696e675d696e7401ff9600010c010400001bff990201010c5b5d6d61696e2e506f696e7401ff9a0001ff9800001fff9703010105506f696e7401ff9800010201015801040001015901040000003bff92010101fe010101fe012c01fe314001fef03fffc00102000a0101016b0e010a6d61696e2e506f696e74ff9805012c0142000101010201040000";

    #[test]
    fn a_conversation_go_wrote_reads_field_by_field() {
        let d = decode(&hex(MODS));
        assert_eq!((d.error, d.partial), (None, false));
        assert_eq!(d.values.len(), 1);
        let msgs = d.values[0].items();
        assert_eq!(msgs.len(), 5);
        let roles: Vec<_> = msgs.iter().map(|m| m.text_field("Role")).collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);
        assert_eq!(msgs[0].type_name(), Some("Message"));
        assert_eq!(msgs[1].text_field("Content"), "list files");
        // Zero fields are not sent.
        assert_eq!(msgs[2].field("Content"), None);
        let call = &msgs[2].field("ToolCalls").expect("calls").items()[0];
        assert_eq!(call.text_field("ID"), "call_1");
        let f = call.field("Function").expect("function");
        assert_eq!(f.text_field("Name"), "fs_ls");
        assert_eq!(
            f.field("Arguments"),
            Some(&Value::Bytes(br#"{"path":"."}"#.to_vec()))
        );
        assert!(!call.field("IsError").is_some_and(Value::is_true));
        let result = &msgs[3].field("ToolCalls").expect("calls").items()[0];
        assert!(result.field("IsError").is_some_and(Value::is_true));
        assert_eq!(msgs[4].text_field("Content"), "One file.");
    }

    #[test]
    fn every_kind_of_value_reads_as_go_wrote_it() {
        let d = decode(&hex(MIXED));
        assert_eq!(d.error, None);
        let m = &d.values[0];
        assert_eq!(m.field("B"), Some(&Value::Bool(true)));
        assert_eq!(m.field("I"), Some(&Value::Int(-129)));
        assert_eq!(m.field("U"), Some(&Value::Uint(300)));
        assert_eq!(m.field("F"), Some(&Value::Float(17.0)));
        assert_eq!(m.field("C"), Some(&Value::Complex(1.0, -2.0)));
        assert_eq!(
            m.field("A"),
            Some(&Value::Array(vec![Value::Int(0), Value::Int(5)]))
        );
        assert_eq!(
            m.field("M"),
            Some(&Value::Map(vec![(s("k"), Value::Int(7))]))
        );
        let Some(Value::Interface(Some(any))) = m.field("Any") else {
            panic!("{m:?}")
        };
        assert_eq!(any.name, "main.Point");
        assert_eq!(any.value.field("X"), Some(&Value::Int(22)));
        assert_eq!(any.value.field("Y"), Some(&Value::Int(33)));
        let p = &m.field("P").expect("P").items()[0];
        assert_eq!(
            (p.field("X"), p.field("Y")),
            (Some(&Value::Int(1)), Some(&Value::Int(2)))
        );
    }

    #[test]
    fn a_single_value_and_several_values_in_one_stream() {
        // Go's `Encode(3)` twice: a singleton int needs no type definition.
        let d = decode(&hex("0304000603040008"));
        assert_eq!(d.values, [Value::Int(3), Value::Int(4)]);
        assert_eq!(d.error, None);
        // A message claiming more bytes than the data holds is cut, whole value or not.
        let d = decode(&hex("0504000603"));
        assert_eq!(d.values, [Value::Int(3)]);
        assert_eq!((d.error, d.partial), (Some(Error::Cut(5)), true));
    }

    /// A file cut anywhere keeps every whole message before the cut: the value's elements
    /// read before it, and nothing is invented.
    #[test]
    fn a_cut_stream_keeps_the_elements_before_the_cut() {
        let bytes = hex(MODS);
        // Where the value message starts: after its count (`ff d5`) and type id (`ff 8a`).
        let value_at = bytes.len() - 0xd5;
        for cut in 0..bytes.len() {
            let d = decode(&bytes[..cut]);
            // A cut between two messages leaves a shorter stream, with no value yet.
            assert!(
                matches!(d.error, Some(Error::Cut(_))) || d.values.is_empty(),
                "{cut}: {:?}",
                d.error
            );
            let n = d.values.first().map_or(0, |v| v.items().len());
            assert!(n <= 5, "{cut}");
            if cut > value_at + 80 {
                // The system message (0x3c bytes of text) is whole by then.
                assert!(n >= 1 && d.partial, "{cut}: {n}");
                assert_eq!(d.values[0].items()[0].text_field("Role"), "system");
            }
        }
        let whole = decode(&bytes);
        assert_eq!(whole.values[0].items().len(), 5);
    }

    #[test]
    fn strings_are_bytes_and_invalid_utf8_is_kept() {
        // `Encode("a\xffb")`: a string cut inside a character, as mods writes a long prompt
        // cut at a byte count.
        let d = decode(&hex("060c000361ffc2"));
        assert_eq!(d.values, [Value::String(b"a\xff\xc2".to_vec())]);
        assert_eq!(d.values[0].text().as_deref(), Some("a\u{fffd}\u{fffd}"));
    }

    #[test]
    fn bad_streams_are_errors_never_panics() {
        let cases: &[(&str, &str)] = &[
            ("02ff", "cut"),
            ("0a", "cut"),
            ("00", "bad"),
            ("0200ff", "bad"),                       // type id 0, then a cut value
            ("03ff9e00", "undefined"),               // a value of a type never defined
            ("04f7000000", "bad"),                   // a nine-byte integer
            ("0401000000", "bad"),                   // defining type 1, which is predefined
            ("0dff81020102ff82000104000000", "bad"), // a definition with a byte over
        ];
        for (h, want) in cases {
            let d = decode(&hex(h));
            let got = match d.error {
                Some(Error::Cut(_)) => "cut",
                Some(Error::Bad { .. }) => "bad",
                Some(Error::Undefined { .. }) => "undefined",
                Some(Error::TooDeep(_)) => "deep",
                Some(Error::TooMany) => "many",
                None => "none",
            };
            assert_eq!(got, *want, "{h}: {:?}", d.error);
        }
        // Every byte string of up to three bytes, and every prefix of a real stream with
        // one byte changed, decodes without a panic.
        for a in 0..=255u8 {
            for b in [0u8, 1, 0x7f, 0x80, 0xfe, 0xff] {
                decode(&[a, b]);
                decode(&[3, a, b, 0]);
            }
        }
        let base = hex(MIXED);
        for i in 0..base.len() {
            for x in [0u8, 1, 0x80, 0xff] {
                let mut m = base.clone();
                m[i] = x;
                decode(&m);
            }
        }
    }

    #[test]
    fn a_huge_count_reserves_nothing_it_cannot_read() {
        // `[]int` defined as type 65, then a value claiming 2^62 elements in a 7-byte body.
        let mut b = hex("0cff81020102ff820001040000");
        b.extend(hex("0cff8200f84000000000000000"));
        let d = decode(&b);
        assert!(
            matches!(d.error, Some(Error::Bad { .. }) | Some(Error::Cut(_))),
            "{:?}",
            d.error
        );
    }

    #[test]
    fn self_nesting_values_stop_at_the_depth_limit() {
        // type 65 = []65 (Go's `type L []L`), and a value nesting one element per level.
        let mut body = hex("ff8200");
        body.extend(std::iter::repeat_n(1u8, MAX_DEPTH + 10));
        body.push(0);
        let mut b = hex("0dff81020102ff820001ff820000");
        b.push(body.len() as u8);
        b.extend(body);
        let d = decode(&b);
        assert!(matches!(d.error, Some(Error::TooDeep(_))), "{:?}", d.error);
    }
}
