//! Codex rollout records: the lines of a rollout as serde reads them, each payload straight
//! into the struct for its `type` (read off the start of the payload), message contents,
//! parts and tool outputs by what they are. `codex.rs` lists and loads; this is the shape.

use super::*;

/// One line, as far as dispatch needs it: the payload is kept raw and parsed by `type`.
#[derive(Deserialize)]
pub(super) struct RawLine<'a> {
    #[serde(borrow, default)]
    pub(super) timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) payload: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) record_type: Option<Cow<'a, str>>,
}

/// The compact envelope Codex writes, `{"timestamp":"…","type":"…","payload":…}` with no
/// space and nothing after the payload, as `(timestamp, type, payload text)`; `None` for
/// any other line (read as a [`RawLine`] then). The two strings must hold no escape and no
/// control character, so they are the strings a JSON reader would give. The payload is
/// whatever lies between `"payload":` and the line's last `}`: it is a record's payload
/// only if it reads as one JSON value, which the caller's read of it checks.
pub(super) fn envelope(line: &[u8]) -> Option<(&str, &str, &str)> {
    let line = simdutf8::basic::from_utf8(line).ok()?;
    let plain = |s: &str| !s.bytes().any(|b| b == b'\\' || b < 0x20);
    let rest = line.strip_prefix(r#"{"timestamp":""#)?;
    let (ts, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(r#","type":""#)?;
    let (kind, rest) = rest.split_once('"')?;
    let payload = rest.strip_prefix(r#","payload":"#)?.strip_suffix('}')?;
    (plain(ts) && plain(kind)).then_some((ts, kind, payload))
}

/// `session_meta` payload, or the envelope-less first line of mid-2025 files.
#[derive(Deserialize)]
pub(super) struct Meta<'a> {
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) forked_from_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) cwd: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) cli_version: Option<Cow<'a, str>>,
    /// Who wrote the rollout: `codex_cli_rs`, Every Code's `code_cli_rs`, …
    #[serde(borrow, default)]
    pub(super) originator: Option<Cow<'a, str>>,
    /// `"cli"`, `"exec"`, `{"subagent": …}`: shapes vary by version, read leniently.
    #[serde(borrow, default)]
    pub(super) source: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) parent_thread_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) agent_nickname: Option<Cow<'a, str>>,
    #[serde(borrow, default, alias = "agent_type")]
    pub(super) agent_role: Option<Cow<'a, str>>,
    /// Mid-2025 builds: the user's instructions (AGENTS.md), when any.
    #[serde(borrow, default)]
    pub(super) instructions: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct SourceObj<'a> {
    #[serde(borrow, default)]
    pub(super) subagent: Option<&'a RawValue>,
}

#[derive(Deserialize)]
pub(super) struct SpawnWrap<'a> {
    #[serde(borrow, default)]
    pub(super) thread_spawn: Option<ThreadSpawn<'a>>,
}

#[derive(Deserialize)]
pub(super) struct ThreadSpawn<'a> {
    #[serde(borrow, default)]
    pub(super) parent_thread_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) agent_nickname: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) agent_role: Option<Cow<'a, str>>,
}

/// `source.subagent.thread_spawn`, when the source is a spawned subagent.
pub(super) fn spawn_of(source: &str) -> Option<ThreadSpawn<'_>> {
    let obj: SourceObj = serde_json::from_str(source).ok()?;
    let wrap: SpawnWrap = serde_json::from_str(obj.subagent?.get()).ok()?;
    wrap.thread_spawn
}

#[derive(Deserialize)]
pub(super) struct TurnContext<'a> {
    #[serde(borrow, default)]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) cwd: Option<Cow<'a, str>>,
}

/// The `type` of a payload, read first so the payload is then read straight into the
/// struct of that type: serde's internally tagged enums buffer the whole payload (a copy of
/// every escaped string, tool outputs above all) before picking the variant.
#[derive(Deserialize)]
pub(super) struct Tag<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) kind: Cow<'a, str>,
}

/// The payload's `type`: read off its start when it comes first, as Codex writes it (a
/// second pass over the whole payload, tool output and all, would cost more than serde's
/// buffering saves), else by reading the payload once for it.
pub(super) fn tag_of(payload: &str) -> serde_json::Result<Cow<'_, str>> {
    let skip =
        |s: &'_ str| -> usize { s.len() - s.trim_start_matches([' ', '\t', '\n', '\r']).len() };
    let quick = (|| {
        let rest = payload.strip_prefix('{')?;
        let rest = rest[skip(rest)..].strip_prefix(r#""type""#)?;
        let rest = rest[skip(rest)..].strip_prefix(':')?;
        let rest = rest[skip(rest)..].strip_prefix('"')?;
        let (kind, _) = rest.split_once('"')?;
        (!kind.contains('\\')).then_some(kind)
    })();
    match quick {
        Some(kind) => Ok(Cow::Borrowed(kind)),
        None => serde_json::from_str::<Tag>(payload).map(|t| t.kind),
    }
}

/// A `response_item` payload (or a mid-2025 bare item).
pub(super) fn response_item(payload: &str) -> serde_json::Result<ResponseItem<'_>> {
    let kind = tag_of(payload)?;
    let item = match &*kind {
        "message" => {
            let v: ItemMessage = serde_json::from_str(payload)?;
            ResponseItem::Message {
                role: v.role,
                content: v.content,
                id: v.id,
            }
        }
        "reasoning" => {
            let v: ItemReasoning = serde_json::from_str(payload)?;
            ResponseItem::Reasoning {
                summary: v.summary,
                content: v.content,
                encrypted_content: v.encrypted_content,
            }
        }
        "function_call" => {
            let v: ItemFunctionCall = serde_json::from_str(payload)?;
            ResponseItem::FunctionCall {
                name: v.name,
                arguments: v.arguments,
                call_id: v.call_id,
            }
        }
        "custom_tool_call" => {
            let v: ItemCustomToolCall = serde_json::from_str(payload)?;
            ResponseItem::CustomToolCall {
                name: v.name,
                input: v.input,
                call_id: v.call_id,
            }
        }
        "local_shell_call" => {
            let v: ItemLocalShellCall = serde_json::from_str(payload)?;
            ResponseItem::LocalShellCall {
                call_id: v.call_id,
                id: v.id,
                action: v.action,
            }
        }
        "web_search_call" => {
            let v: ItemWebSearchCall = serde_json::from_str(payload)?;
            ResponseItem::WebSearchCall {
                id: v.id,
                action: v.action,
            }
        }
        "function_call_output" => {
            let v: ItemFunctionCallOutput = serde_json::from_str(payload)?;
            ResponseItem::FunctionCallOutput {
                call_id: v.call_id,
                output: v.output,
            }
        }
        "custom_tool_call_output" => {
            let v: ItemCustomToolCallOutput = serde_json::from_str(payload)?;
            ResponseItem::CustomToolCallOutput {
                call_id: v.call_id,
                output: v.output,
            }
        }
        _ => ResponseItem::Other,
    };
    Ok(item)
}

/// An `event_msg` payload.
pub(super) fn event_msg(payload: &str) -> serde_json::Result<EventMsg<'_>> {
    let kind = tag_of(payload)?;
    let ev = match &*kind {
        "user_message" => {
            let v: EventUserMessage = serde_json::from_str(payload)?;
            EventMsg::UserMessage {
                message: v.message,
                images: v.images,
            }
        }
        "agent_message" => {
            let v: EventAgentMessage = serde_json::from_str(payload)?;
            EventMsg::AgentMessage { message: v.message }
        }
        "agent_reasoning" => {
            let v: EventAgentReasoning = serde_json::from_str(payload)?;
            EventMsg::AgentReasoning { text: v.text }
        }
        "token_count" => {
            let v: EventTokenCount = serde_json::from_str(payload)?;
            EventMsg::TokenCount { info: v.info }
        }
        _ => EventMsg::Other,
    };
    Ok(ev)
}

pub(super) enum ResponseItem<'a> {
    Message {
        role: Cow<'a, str>,
        content: Option<Contents<'a>>,
        /// Every Code names the streams of its status items here (`browser-context-…`).
        id: Option<Cow<'a, str>>,
    },
    Reasoning {
        summary: Vec<TextPart<'a>>,
        content: Option<Vec<TextPart<'a>>>,
        encrypted_content: Option<Cow<'a, str>>,
    },
    FunctionCall {
        name: Cow<'a, str>,
        arguments: Cow<'a, str>,
        call_id: Cow<'a, str>,
    },
    CustomToolCall {
        name: Cow<'a, str>,
        input: Cow<'a, str>,
        call_id: Cow<'a, str>,
    },
    LocalShellCall {
        call_id: Option<Cow<'a, str>>,
        id: Option<Cow<'a, str>>,
        /// Free-form (`{type:"exec", command:[…], …}`): shown as the call's input.
        action: serde_json::Value,
    },
    WebSearchCall {
        id: Option<Cow<'a, str>>,
        action: serde_json::Value,
    },
    FunctionCallOutput {
        call_id: Cow<'a, str>,
        output: Output<'a>,
    },
    CustomToolCallOutput {
        call_id: Cow<'a, str>,
        output: Output<'a>,
    },
    Other,
}

#[derive(Deserialize)]
pub(super) struct ItemMessage<'a> {
    #[serde(borrow)]
    pub(super) role: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) content: Option<Contents<'a>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct ItemReasoning<'a> {
    #[serde(borrow, default)]
    pub(super) summary: Vec<TextPart<'a>>,
    #[serde(borrow, default)]
    pub(super) content: Option<Vec<TextPart<'a>>>,
    #[serde(borrow, default)]
    pub(super) encrypted_content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct ItemFunctionCall<'a> {
    #[serde(borrow)]
    pub(super) name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) arguments: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) call_id: Cow<'a, str>,
}

#[derive(Deserialize)]
pub(super) struct ItemCustomToolCall<'a> {
    #[serde(borrow)]
    pub(super) name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) input: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) call_id: Cow<'a, str>,
}

#[derive(Deserialize)]
pub(super) struct ItemLocalShellCall<'a> {
    #[serde(borrow, default)]
    pub(super) call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    /// Free-form (`{type:"exec", command:[…], …}`): shown as the call's input.
    #[serde(default)]
    pub(super) action: serde_json::Value,
}

#[derive(Deserialize)]
pub(super) struct ItemWebSearchCall<'a> {
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) action: serde_json::Value,
}

#[derive(Deserialize)]
pub(super) struct ItemFunctionCallOutput<'a> {
    #[serde(borrow, default)]
    pub(super) call_id: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) output: Output<'a>,
}

#[derive(Deserialize)]
pub(super) struct ItemCustomToolCallOutput<'a> {
    #[serde(borrow, default)]
    pub(super) call_id: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) output: Output<'a>,
}

/// Message content: a list of parts, or (rarely) a bare string.
pub(super) enum Contents<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

/// A string or something else, read by what it is rather than by trying each shape in turn
/// (serde's untagged enums buffer the value first, a copy of every escaped string).
pub(super) struct StrOr<'a, T>(std::marker::PhantomData<(&'a (), T)>);

/// What [`StrOr`] found.
pub(super) enum Either<'a, T> {
    Str(Cow<'a, str>),
    Other(T),
}

impl<'de: 'a, 'a, T: Deserialize<'de>> serde::de::Visitor<'de> for StrOr<'a, T> {
    type Value = Either<'a, T>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string, a list or an object")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Either::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Either::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Either::Str(Cow::Owned(v)))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        T::deserialize(serde::de::value::SeqAccessDeserializer::new(a)).map(Either::Other)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        T::deserialize(serde::de::value::MapAccessDeserializer::new(a)).map(Either::Other)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Contents<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(
            match d.deserialize_any(StrOr::<Vec<Part<'a>>>(std::marker::PhantomData))? {
                Either::Str(s) => Contents::Text(s),
                Either::Other(parts) => Contents::Parts(parts),
            },
        )
    }
}

/// One part of a message's content, read without serde's buffering of internally tagged
/// enums (which copies every escaped string once more): `type` picks the variant, `text`
/// and `image_url` are the only fields any variant reads.
#[derive(Deserialize)]
pub(super) struct RawPart<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) text: Field<'a>,
    #[serde(borrow, default)]
    pub(super) image_url: Field<'a>,
}

/// A field that is a string for the part types sessfs reads and may be anything for the
/// others (which are skipped whole, as before).
#[derive(Default)]
pub(super) enum Field<'a> {
    #[default]
    Missing,
    Str(Cow<'a, str>),
    NotStr,
}

impl<'a> Field<'a> {
    /// The string, `""` when absent; another type is an error, as it was when the part was
    /// read by its variant.
    pub(super) fn string<E: serde::de::Error>(self) -> Result<Cow<'a, str>, E> {
        match self {
            Field::Missing => Ok(Cow::Borrowed("")),
            Field::Str(s) => Ok(s),
            Field::NotStr => Err(E::custom("a part's text is not a string")),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Field<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Field<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Field<'a>, E> {
                Ok(Field::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Field<'a>, E> {
                Ok(Field::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Field<'a>, E> {
                Ok(Field::Str(Cow::Owned(v)))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Field<'a>, E> {
                Ok(Field::NotStr)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Field<'a>, E> {
                Ok(Field::NotStr)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Field<'a>, E> {
                Ok(Field::NotStr)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Field<'a>, E> {
                Ok(Field::NotStr)
            }
            fn visit_unit<E>(self) -> Result<Field<'a>, E> {
                Ok(Field::NotStr)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Field<'a>, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Field::NotStr)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Field<'a>, A::Error> {
                while a
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Field::NotStr)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Part<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let p = RawPart::deserialize(d)?;
        Ok(match &*p.kind {
            "input_text" => Part::InputText {
                text: p.text.string()?,
            },
            "output_text" => Part::OutputText {
                text: p.text.string()?,
            },
            "text" => Part::Text {
                text: p.text.string()?,
            },
            "input_image" => Part::InputImage {
                image_url: p.image_url.string()?,
            },
            _ => Part::Other,
        })
    }
}

pub(super) enum Part<'a> {
    InputText { text: Cow<'a, str> },
    OutputText { text: Cow<'a, str> },
    Text { text: Cow<'a, str> },
    InputImage { image_url: Cow<'a, str> },
    Other,
}

#[derive(Deserialize)]
pub(super) struct TextPart<'a> {
    #[serde(borrow, default)]
    pub(super) text: Cow<'a, str>,
}

/// A tool output: a string, or `{content, success}` with content a string or parts.
pub(super) enum Output<'a> {
    Text(Cow<'a, str>),
    Struct {
        content: Option<Contents<'a>>,
        success: Option<bool>,
    },
}

#[derive(Deserialize)]
pub(super) struct OutputStruct<'a> {
    #[serde(borrow, default)]
    pub(super) content: Option<Contents<'a>>,
    #[serde(default)]
    pub(super) success: Option<bool>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Output<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(
            match d.deserialize_any(StrOr::<OutputStruct<'a>>(std::marker::PhantomData))? {
                Either::Str(s) => Output::Text(s),
                Either::Other(o) => Output::Struct {
                    content: o.content,
                    success: o.success,
                },
            },
        )
    }
}

/// The JSON string older shells return: `{"output": "...", "metadata": {"exit_code": 0}}`.
#[derive(Deserialize)]
pub(super) struct ExecJson<'a> {
    #[serde(borrow)]
    pub(super) output: Cow<'a, str>,
    #[serde(default)]
    pub(super) metadata: Option<ExecMeta>,
}

#[derive(Deserialize)]
pub(super) struct ExecMeta {
    #[serde(default)]
    pub(super) exit_code: Option<i64>,
}

pub(super) enum EventMsg<'a> {
    UserMessage {
        message: Cow<'a, str>,
        images: Option<Vec<Cow<'a, str>>>,
    },
    AgentMessage {
        message: Cow<'a, str>,
    },
    AgentReasoning {
        text: Cow<'a, str>,
    },
    TokenCount {
        info: Option<TokenInfo>,
    },
    Other,
}

#[derive(Deserialize)]
pub(super) struct EventUserMessage<'a> {
    #[serde(borrow, default)]
    pub(super) message: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) images: Option<Vec<Cow<'a, str>>>,
}

#[derive(Deserialize)]
pub(super) struct EventAgentMessage<'a> {
    #[serde(borrow, default)]
    pub(super) message: Cow<'a, str>,
}

#[derive(Deserialize)]
pub(super) struct EventAgentReasoning<'a> {
    #[serde(borrow, default)]
    pub(super) text: Cow<'a, str>,
}

#[derive(Deserialize)]
pub(super) struct EventTokenCount {
    #[serde(default)]
    pub(super) info: Option<TokenInfo>,
}

#[derive(Deserialize)]
pub(super) struct TokenInfo {
    #[serde(default)]
    pub(super) total_token_usage: Option<Usage>,
    /// The reply's own usage: equal to the total when the counter (re)starts with it.
    #[serde(default)]
    pub(super) last_token_usage: Option<Usage>,
    /// Every Code: the model asked, and the one that answered.
    #[serde(default)]
    pub(super) requested_model: Option<String>,
    #[serde(default)]
    pub(super) latest_response_model: Option<String>,
}

/// One `token_count` total, and whether the counter started at it (its total is the
/// reply's own usage).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    pub total: Usage,
    pub fresh: bool,
}

/// One cumulative `total_token_usage`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub reasoning_output_tokens: u64,
}

impl Usage {
    pub(super) fn plus(self, o: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(o.input_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_add(o.cached_input_tokens),
            output_tokens: self.output_tokens.saturating_add(o.output_tokens),
            reasoning_output_tokens: self
                .reasoning_output_tokens
                .saturating_add(o.reasoning_output_tokens),
        }
    }

    /// Some count is lower than `o`'s: a cumulative counter that went back.
    pub(super) fn below(self, o: Usage) -> bool {
        self.input_tokens < o.input_tokens
            || self.cached_input_tokens < o.cached_input_tokens
            || self.output_tokens < o.output_tokens
            || self.reasoning_output_tokens < o.reasoning_output_tokens
    }

    pub(super) fn minus(self, o: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(o.input_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_sub(o.cached_input_tokens),
            output_tokens: self.output_tokens.saturating_sub(o.output_tokens),
            reasoning_output_tokens: self
                .reasoning_output_tokens
                .saturating_sub(o.reasoning_output_tokens),
        }
    }

    /// OpenAI counts cached prompt tokens inside `input_tokens` and reasoning inside
    /// `output_tokens`; the model keeps the four apart.
    pub(super) fn tokens(self) -> TokenUsage {
        TokenUsage {
            input_tokens: self.input_tokens.saturating_sub(self.cached_input_tokens),
            cached_tokens: self.cached_input_tokens,
            output_tokens: self
                .output_tokens
                .saturating_sub(self.reasoning_output_tokens),
            thinking_tokens: self.reasoning_output_tokens,
            cache_write_tokens: 0,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct Compacted<'a> {
    #[serde(borrow, default)]
    pub(super) message: Cow<'a, str>,
    // `replacement_history` is deliberately not a field: it is skipped unread.
}

#[derive(Deserialize)]
pub(super) struct IndexLine<'a> {
    #[serde(borrow, default)]
    pub(super) id: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(super) thread_name: Option<Cow<'a, str>>,
}
