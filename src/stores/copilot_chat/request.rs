//! Loading a session: each request of the document to prompts, replies, reasoning, tool
//! calls with their results, edits, notices and usage (once per request).

use super::*;

/// Load one session: `path` is the file VS Code reads (the log when there is one), `flat`
/// the older flat file beside it, used only when the log cannot be read.
pub fn load_session(
    path: &Path,
    id: &str,
    flat: Option<&Path>,
    workspace: Option<&PathBuf>,
) -> Session {
    let mut b = SessionBuilder::new(Agent::CopilotChat, id);
    let mut doc = read_doc(path);
    b.s.source.paths.push(path.to_path_buf());
    let mut from = path;
    // Raw lines of a log that held no state, kept when the flat file is read instead.
    let mut log_lines = Vec::new();
    let stateless = match &doc {
        Err(e) => Some(e.to_string()),
        Ok(d) if d.state.is_empty() => Some(format!(
            "{}: holds no readable session state",
            kit::file_name(path)
        )),
        Ok(_) => None,
    };
    if let (Some(why), Some(flat)) = (stateless, flat) {
        b.warn(format!(
            "{why}; read the older {} instead",
            kit::file_name(flat)
        ));
        if let Ok(d) = std::mem::replace(&mut doc, read_doc(flat)) {
            let log = kit::file_name(path);
            log_lines = d
                .unparsed
                .into_iter()
                .map(|(p, t)| (format!("{log} {p}"), t))
                .collect();
        }
        b.s.source.paths.push(flat.to_path_buf());
        from = flat;
    }
    let file = kit::file_name(from).to_string();
    b.s.source.format = if is_log(from) {
        "vscode-chat-log".to_string()
    } else {
        "vscode-chat-json".to_string()
    };
    let mut doc = match doc {
        Ok(d) => d,
        Err(e) => {
            b.warn(e.to_string());
            return b.finish();
        }
    };
    for u in &mut doc.unparsed {
        u.0 = format!("{file} {}", u.0);
    }
    doc.unparsed.extend(log_lines);
    if let Some(ws) = workspace {
        b.s.cwd = workspace_folder(ws);
        if ws.exists() {
            b.s.source.paths.push(ws.clone());
        }
    }
    let mut b = Parser::new(b).session(&doc.state);
    if let Some(cut) = &doc.cut {
        b.warn(format!(
            "{file}: cut mid-write (the editor was writing it?); what came before the cut is shown, the cut text raw"
        ));
        b.context("unparsed cut record", cut.clone(), None);
    }
    for (problem, text) in &doc.unparsed {
        b.unparsed(
            "log lines",
            "not JSON or not applicable",
            || problem.clone(),
            "log line",
            text,
            None,
        );
    }
    b.finish()
}

/// The folder (or `.code-workspace` file) a workspace directory belongs to.
pub(super) fn workspace_folder(path: &Path) -> Option<String> {
    let v = kit::read_json(path, "workspace.json", 1 << 20).ok()?;
    kit::str_any(&v, &["folder", "workspace", "configuration"]).map(uri_string)
}

/// A `file://` URI as a path (percent-decoded); any other URI as it is.
pub(super) fn uri_string(uri: &str) -> String {
    match uri.strip_prefix("file://") {
        Some(rest) => {
            // `file:///home/u` or `file://host/share`.
            let path = if rest.starts_with('/') {
                rest.to_string()
            } else {
                format!("//{rest}")
            };
            percent_decode(&path)
        }
        None => uri.to_string(),
    }
}

pub(super) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(n) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(n);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A URI as VS Code serializes it (`{scheme, path, fsPath?, authority?}`), a URI string, or
/// a location (`{uri, range}`), as text.
pub(super) fn uri_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(uri_string(s)),
        Value::Object(o) => {
            if let Some(u) = o.get("uri") {
                let mut s = uri_text(u)?;
                if let Some(line) = o
                    .get("range")
                    .and_then(|r| r.get("startLineNumber").or_else(|| r.get("start")))
                    .and_then(|l| l.as_u64().or_else(|| l.get("line").and_then(Value::as_u64)))
                {
                    s.push_str(&format!(":{line}"));
                }
                return Some(s);
            }
            let scheme = kit::str_field(v, "scheme").unwrap_or("file");
            if let Some(p) = kit::str_field(v, "fsPath").filter(|_| scheme == "file") {
                return Some(p.to_string());
            }
            let path = kit::str_field(v, "path")?;
            Some(if scheme == "file" {
                path.to_string()
            } else {
                format!(
                    "{scheme}://{}{path}",
                    kit::str_field(v, "authority").unwrap_or("")
                )
            })
        }
        _ => None,
    }
}

/// A `string | IMarkdownString` field as text.
pub(super) fn md(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => kit::str_field(v, "value").unwrap_or("").to_string(),
        _ => String::new(),
    }
}

pub(super) fn push_para(out: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
    }
    out.push_str(text);
}

/// The model's side of a request's tool calls (`result.metadata`).
#[derive(Debug, Default)]
pub(super) struct ModelCalls {
    /// (id, name, arguments) in call order.
    calls: Vec<(String, String, Value)>,
    /// Tool results by call id, as text.
    results: HashMap<String, String>,
}

pub(super) struct Parser {
    b: SessionBuilder,
    model: Option<String>,
    agent: Option<String>,
    /// Synthetic ids for calls the file gives none.
    synthetic: usize,
}

/// What a reply builds while walking its parts.
#[derive(Default)]
pub(super) struct Reply {
    msgs: Vec<Message>,
    cur: Option<Message>,
    /// The id of the thinking part last appended to, so streamed chunks join.
    thinking_id: Option<String>,
}

impl Reply {
    fn cur(&mut self, base: &Message) -> &mut Message {
        self.cur.get_or_insert_with(|| base.clone())
    }
    fn flush(&mut self) {
        if let Some(m) = self.cur.take() {
            self.msgs.push(m);
        }
        self.thinking_id = None;
    }
    fn text(&mut self, base: &Message, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.cur.as_ref().is_some_and(|m| !m.tool_calls.is_empty()) {
            self.flush();
        }
        self.thinking_id = None;
        self.cur(base).content.push_str(text);
    }
    fn thinking(&mut self, base: &Message, text: &str, id: Option<&str>) {
        if text.is_empty() {
            return;
        }
        let joins = id.is_some() && self.thinking_id.as_deref() == id;
        if !joins
            && self
                .cur
                .as_ref()
                .is_some_and(|m| !m.content.is_empty() || !m.tool_calls.is_empty())
        {
            self.flush();
        }
        let m = self.cur(base);
        let t = m.thinking.get_or_insert_with(String::new);
        if joins {
            t.push_str(text);
        } else {
            push_para(t, text);
        }
        self.thinking_id = id.map(str::to_string);
    }
    fn call(&mut self, base: &Message, c: ToolCall) {
        self.thinking_id = None;
        self.cur(base).tool_calls.push(c);
    }
    fn event(&mut self, base: &Message, text: String) {
        if text.trim().is_empty() {
            return;
        }
        self.flush();
        self.msgs.push(Message {
            role: Role::System,
            kind: MessageKind::Event,
            content: text,
            timestamp: base.timestamp,
            ..Message::default()
        });
    }
}

impl Parser {
    pub(super) fn new(b: SessionBuilder) -> Parser {
        Parser {
            b,
            model: None,
            agent: None,
            synthetic: 0,
        }
    }

    pub(super) fn session(mut self, doc: &Map<String, Value>) -> SessionBuilder {
        let field = |k: &str| doc.get(k).and_then(Value::as_str);
        self.b.s.source.format_version = Some(match doc.get("version") {
            Some(Value::Number(n)) => n.to_string(),
            _ => "1".to_string(),
        });
        self.b.s.created_at = doc.get("creationDate").and_then(crate::stores::parse_time);
        self.b.s.title = ["customTitle", "computedTitle"]
            .iter()
            .find_map(|k| field(k))
            .and_then(kit::title_from_text);
        if let Some(dir) = field("workingDirectory").filter(|s| !s.is_empty()) {
            self.b.s.cwd = Some(uri_string(dir));
        }
        match doc.get("requests") {
            Some(Value::Array(reqs)) => {
                for (i, r) in reqs.iter().enumerate() {
                    self.request(i, r, false);
                }
            }
            Some(other) => self.b.unparsed(
                "fields",
                "requests is not a list",
                || "requests".into(),
                "requests",
                &raw(&other.to_string()),
                None,
            ),
            None => {}
        }
        if let Some(Value::Array(pending)) = doc.get("pendingRequests") {
            for (i, p) in pending.iter().enumerate() {
                if let Some(r) = p.get("request") {
                    self.request(i, r, true);
                }
            }
        }
        self.b
    }

    fn request(&mut self, index: usize, r: &Value, queued: bool) {
        if !r.is_object() {
            self.b.unparsed(
                "requests",
                "not an object",
                || format!("request {index}"),
                "request",
                &raw(&r.to_string()),
                None,
            );
            return;
        }
        let ts = r.get("timestamp").and_then(crate::stores::parse_time);
        if let Some(m) = kit::str_field(r, "modelId").filter(|s| !s.is_empty()) {
            // `<vendor>/<id>` as VS Code names language models: `copilot/gpt-4.1`.
            self.model = Some(m.strip_prefix("copilot/").unwrap_or(m).to_string());
        }
        let text = match r.get("message") {
            Some(Value::String(s)) => s.clone(),
            Some(m) => kit::str_field(m, "text").unwrap_or("").to_string(),
            None => String::new(),
        };
        let request_id = kit::str_field(r, "requestId").map(str::to_string);
        if queued {
            self.b.context("queued prompt, not sent yet", text, ts);
            return;
        }
        let agent = r
            .get("agent")
            .and_then(|a| kit::str_field(a, "id"))
            .map(str::to_string);
        if agent.is_some() && agent != self.agent {
            let mut s = format!("agent: {}", agent.as_deref().unwrap_or(""));
            if let Some(c) = r
                .get("slashCommand")
                .and_then(|c| kit::str_field(c, "name"))
            {
                s.push_str(&format!(" /{c}"));
            }
            self.b.event(s, ts);
            self.agent = agent;
        }
        if r.get("isHidden").is_some_and(|v| v == true)
            || r.get("shouldBeRemovedOnSend").is_some_and(Value::is_object)
        {
            self.b.event(
                "this request was undone in the editor (it goes at the next send)".into(),
                ts,
            );
        }
        self.b.push(Message {
            role: Role::User,
            content: text,
            timestamp: ts,
            native_id: request_id.clone(),
            ..Message::default()
        });
        if let Some(att) = attachments(r.get("variableData")) {
            self.b.context("attachments", att, ts);
        }

        let state = r.get("modelState");
        let done = state
            .and_then(|s| s.get("completedAt"))
            .and_then(crate::stores::parse_time);
        let base = Message {
            role: Role::Assistant,
            timestamp: done
                .or_else(|| {
                    r.get("responseTimestamp")
                        .and_then(crate::stores::parse_time)
                })
                .or(ts),
            model: self.model.clone(),
            native_id: kit::str_field(r, "responseId").map(str::to_string),
            ..Message::default()
        };
        let result = r.get("result");
        let meta = result.and_then(|x| x.get("metadata"));
        let model_calls = model_calls(meta);
        let mut reply = Reply::default();
        let parts: &[Value] = match r.get("response") {
            Some(Value::Array(a)) => a,
            _ => &[],
        };
        if let Some(Value::String(s)) = r.get("response") {
            reply.text(&base, s);
        }
        let (pair, used) = pair_calls(parts, &model_calls);

        let mut edits = 0;
        for (pi, p) in parts.iter().enumerate() {
            self.part(&mut reply, &base, p, pi, &pair, &model_calls, &mut edits);
        }
        // Calls only the model's side holds (hidden from the user, or cleared).
        for (ci, c) in model_calls.calls.iter().enumerate() {
            if !used[ci] {
                let output = model_calls.results.get(&c.0).cloned();
                reply.call(
                    &base,
                    ToolCall {
                        tool_call_id: c.0.clone(),
                        tool_name: c.1.clone(),
                        input: c.2.clone(),
                        is_error: output.as_ref().map(|_| false),
                        output,
                        duration_ms: None,
                    },
                );
            }
        }
        // Round texts the reply's parts do not already hold.
        if let Some(Value::Array(rounds)) = meta.and_then(|m| m.get("toolCallRounds")) {
            let shown: String = reply
                .msgs
                .iter()
                .chain(reply.cur.iter())
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            for round in rounds {
                let t = kit::str_field(round, "response").unwrap_or("").trim();
                if !t.is_empty() && !shown.contains(t) {
                    reply.text(&base, t);
                    reply.flush();
                }
            }
        }
        reply.flush();

        if let Some(e) = result.and_then(|x| x.get("errorDetails")) {
            let msg = md(e.get("message"));
            reply.event(&base, format!("error: {msg}"));
        }
        if let Some(e) = r.get("responseErrorDetails").filter(|e| e.is_object()) {
            reply.event(&base, format!("error: {}", md(e.get("message"))));
        }
        let cancelled = state.and_then(|s| s.get("value")).and_then(Value::as_u64) == Some(2)
            || r.get("isCanceled").is_some_and(|v| v == true);
        if cancelled {
            reply.event(&base, "cancelled".into());
        }
        if let Some(summary) = meta
            .and_then(|m| m.get("summary"))
            .and_then(|s| kit::str_field(s, "text"))
            .filter(|s| !s.trim().is_empty())
        {
            reply.msgs.push(Message {
                role: Role::System,
                kind: MessageKind::CompactionSummary,
                content: summary.to_string(),
                timestamp: base.timestamp,
                ..Message::default()
            });
        }

        // Usage once per request, on its last reply message (or an event when it has none).
        if let Some(u) = request_usage(r, meta) {
            match reply
                .msgs
                .iter_mut()
                .rev()
                .find(|m| m.role == Role::Assistant)
            {
                Some(m) => m.token_usage = Some(u),
                None => reply.msgs.push(Message {
                    role: Role::System,
                    kind: MessageKind::Event,
                    content: format!(
                        "usage: {} in, {} out, {} cached",
                        u.input_tokens, u.output_tokens, u.cached_tokens
                    ),
                    timestamp: base.timestamp,
                    model: base.model.clone(),
                    token_usage: Some(u),
                    ..Message::default()
                }),
            }
        }
        for m in reply.msgs {
            self.b.push(m);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn part(
        &mut self,
        reply: &mut Reply,
        base: &Message,
        p: &Value,
        pi: usize,
        pair: &HashMap<usize, usize>,
        mc: &ModelCalls,
        edits: &mut usize,
    ) {
        let kind = kit::str_field(p, "kind");
        match kind {
            // A Markdown part is stored as its bare `IMarkdownString`.
            None if p.get("value").is_some_and(Value::is_string) => {
                reply.text(base, kit::str_field(p, "value").unwrap_or(""));
            }
            None if p.is_string() => reply.text(base, p.as_str().unwrap_or("")),
            Some("markdownContent" | "markdownVuln") => reply.text(base, &md(p.get("content"))),
            Some("inlineReference") => {
                let name = kit::str_field(p, "name")
                    .map(str::to_string)
                    .or_else(|| p.get("inlineReference").and_then(uri_text))
                    .unwrap_or_default();
                reply.text(base, &format!("`{name}`"));
            }
            Some("codeblockUri") => {
                if let Some(u) = p.get("uri").and_then(uri_text) {
                    let what = if p.get("isEdit").is_some_and(|v| v == true) {
                        "edit of"
                    } else {
                        "code block for"
                    };
                    reply.text(base, &format!("\n[{what} {u}]\n"));
                }
            }
            Some("thinking") => {
                let text = match p.get("value") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                    _ => String::new(),
                };
                reply.thinking(base, &text, kit::str_field(p, "id"));
            }
            Some("toolInvocationSerialized") => {
                let c = self.invocation(p, pair.get(&pi).map(|&ci| (ci, mc)));
                reply.call(base, c);
            }
            Some("textEditGroup" | "notebookEditGroup") => {
                *edits += 1;
                reply.call(base, edit_call(p, base, *edits));
            }
            Some("undoStop" | "mcpServersStarting" | "mcpServersStartingSerialized") => {}
            Some(k) => {
                let text = notice(k, p);
                reply.event(base, text);
            }
            None => reply.event(base, format!("part: {}", raw(&p.to_string()))),
        }
    }

    /// A tool invocation part as a call holding its output: the model's arguments and
    /// result when a round's call is paired with it, else what the part itself kept.
    fn invocation(&mut self, p: &Value, model: Option<(usize, &ModelCalls)>) -> ToolCall {
        let data = p.get("toolSpecificData");
        let data_kind = data.and_then(|d| kit::str_field(d, "kind"));
        let details = p.get("resultDetails");
        let mut id = kit::str_field(p, "toolCallId").unwrap_or("").to_string();
        if id.is_empty() {
            self.synthetic += 1;
            id = format!("invocation-{}", self.synthetic);
        }
        let mut name = kit::str_field(p, "toolId").unwrap_or("tool").to_string();
        let mut input = None;
        let mut output = None;
        if let Some((ci, mc)) = model {
            let (cid, cname, args) = &mc.calls[ci];
            name = cname.clone();
            input = Some(args.clone());
            output = mc.results.get(cid).cloned();
        }
        let input = input.unwrap_or_else(|| part_input(data, data_kind, details, p));
        let mut is_error = details
            .and_then(|d| d.get("isError"))
            .is_some_and(|v| v == true)
            || p.get("resultError").is_some_and(|v| !v.is_null());
        // What the editor showed (terminal output, result details), where the model's
        // result does not already hold it.
        if let Some(ui) = part_output(data, data_kind, details) {
            match &mut output {
                None => output = Some(ui),
                Some(o) if !o.contains(ui.trim()) => push_para(o, &ui),
                Some(_) => {}
            }
        }
        let denied = match p.get("isConfirmed") {
            Some(Value::Bool(false)) => true,
            Some(Value::Object(o)) => o.get("type").and_then(Value::as_u64) == Some(0),
            _ => false,
        };
        if denied {
            is_error = true;
            let o = output.get_or_insert_with(String::new);
            push_para(o, "(denied by the user)");
        }
        if let Some(e) = p.get("resultError").filter(|v| !v.is_null()) {
            let o = output.get_or_insert_with(String::new);
            push_para(o, &md(Some(e)).to_string());
            if !e.is_string() && !e.get("value").is_some_and(Value::is_string) {
                push_para(o, &e.to_string());
            }
        }
        let output = output.or_else(|| {
            // Nothing kept but the line the user saw: that line is the result.
            let past = md(p.get("pastTenseMessage"));
            let line = if past.trim().is_empty() {
                md(p.get("invocationMessage"))
            } else {
                past
            };
            (!line.trim().is_empty()).then_some(line)
        });
        ToolCall {
            tool_call_id: id,
            tool_name: name,
            input,
            is_error: Some(is_error),
            output,
            duration_ms: data
                .and_then(|d| d.get("terminalCommandState"))
                .and_then(|s| s.get("duration"))
                .and_then(Value::as_u64),
        }
    }
}

/// Pair a reply's tool invocation parts with the model's calls: by id, then in order when
/// both have as many left. Returns part index -> call index, and which calls are paired.
pub(super) fn pair_calls(
    parts: &[Value],
    model_calls: &ModelCalls,
) -> (HashMap<usize, usize>, Vec<bool>) {
    let inv_ids: Vec<Option<&str>> = parts
        .iter()
        .map(|p| {
            (kit::str_field(p, "kind") == Some("toolInvocationSerialized"))
                .then(|| kit::str_field(p, "toolCallId").unwrap_or(""))
        })
        .collect();
    let mut pair: HashMap<usize, usize> = HashMap::new();
    let mut used = vec![false; model_calls.calls.len()];
    for (pi, id) in inv_ids.iter().enumerate() {
        if let Some(id) = id.filter(|i| !i.is_empty()) {
            if let Some(ci) = model_calls.calls.iter().position(|c| c.0 == id) {
                if !used[ci] {
                    used[ci] = true;
                    pair.insert(pi, ci);
                }
            }
        }
    }
    let left_parts: Vec<usize> = inv_ids
        .iter()
        .enumerate()
        .filter(|(pi, id)| id.is_some() && !pair.contains_key(pi))
        .map(|(pi, _)| pi)
        .collect();
    let left_calls: Vec<usize> = (0..used.len()).filter(|&ci| !used[ci]).collect();
    if left_parts.len() == left_calls.len() {
        for (pi, ci) in left_parts.into_iter().zip(left_calls) {
            used[ci] = true;
            pair.insert(pi, ci);
        }
    }

    (pair, used)
}

/// The arguments a tool invocation part kept, for a call the model's side does not hold.
pub(super) fn part_input(
    data: Option<&Value>,
    data_kind: Option<&str>,
    details: Option<&Value>,
    p: &Value,
) -> Value {
    let d = data.unwrap_or(&Value::Null);
    match data_kind {
        Some("input") if d.get("rawInput").is_some() => {
            return d.get("rawInput").cloned().unwrap_or(Value::Null)
        }
        Some("terminal") => {
            let cmd = d
                .get("commandLine")
                .map(|c| {
                    ["userEdited", "toolEdited", "original"]
                        .iter()
                        .find_map(|k| kit::str_field(c, k))
                        .unwrap_or("")
                        .to_string()
                })
                .or_else(|| kit::str_field(d, "command").map(str::to_string));
            if let Some(cmd) = cmd {
                return serde_json::json!({ "command": cmd });
            }
        }
        Some("simpleToolInvocation") => {
            return serde_json::json!({ "input": kit::str_field(d, "input").unwrap_or("") })
        }
        Some("subagent") => {
            let mut o = Map::new();
            for k in ["agentName", "description", "prompt"] {
                if let Some(v) = kit::str_field(d, k) {
                    o.insert(k.to_string(), Value::String(v.to_string()));
                }
            }
            if !o.is_empty() {
                return Value::Object(o);
            }
        }
        _ => {}
    }
    if let Some(i) = details.and_then(|d| kit::str_field(d, "input")) {
        return serde_json::from_str(i).unwrap_or_else(|_| Value::String(i.to_string()));
    }
    serde_json::json!({ "message": md(p.get("invocationMessage")) })
}

/// The output a tool invocation part kept (`resultDetails`, terminal output, sub-agent
/// result, to-do list), if any.
pub(super) fn part_output(
    data: Option<&Value>,
    data_kind: Option<&str>,
    details: Option<&Value>,
) -> Option<String> {
    let d = data.unwrap_or(&Value::Null);
    let mut out = String::new();
    match details {
        Some(Value::Object(o)) => match o.get("output") {
            Some(Value::String(s)) => push_para(&mut out, s),
            Some(Value::Array(parts)) => {
                for part in parts {
                    let text = match kit::str_field(part, "type") {
                        Some("ref") => part.get("uri").and_then(uri_text).unwrap_or_default(),
                        _ if part.get("isText").is_some_and(|v| v == true) => {
                            kit::str_field(part, "value").unwrap_or("").to_string()
                        }
                        _ => kit::base64_placeholder(
                            "attachment",
                            kit::str_field(part, "mimeType"),
                            kit::str_field(part, "value"),
                        ),
                    };
                    push_para(&mut out, &text);
                }
            }
            Some(Value::Object(data)) => push_para(
                &mut out,
                &kit::base64_placeholder(
                    "attachment",
                    kit::str_field(&Value::Object(data.clone()), "mimeType"),
                    kit::str_field(&Value::Object(data.clone()), "base64Data"),
                ),
            ),
            _ => {}
        },
        Some(Value::Array(uris)) => {
            for u in uris {
                if let Some(t) = uri_text(u) {
                    push_para(&mut out, &t);
                }
            }
        }
        _ => {}
    }
    match data_kind {
        Some("terminal") => {
            if let Some(t) = d
                .get("terminalCommandOutput")
                .and_then(|o| kit::str_field(o, "text"))
            {
                push_para(&mut out, t);
            }
            if let Some(code) = d
                .get("terminalCommandState")
                .and_then(|s| s.get("exitCode"))
                .and_then(Value::as_i64)
            {
                push_para(&mut out, &format!("(exit code {code})"));
            }
        }
        Some("simpleToolInvocation") => {
            push_para(&mut out, kit::str_field(d, "output").unwrap_or(""))
        }
        Some("subagent") => push_para(&mut out, kit::str_field(d, "result").unwrap_or("")),
        Some("todoList") => {
            if let Some(Value::Array(items)) = d.get("todoList") {
                for it in items {
                    push_para(
                        &mut out,
                        &format!(
                            "- [{}] {}",
                            kit::str_field(it, "status").unwrap_or(""),
                            kit::str_field(it, "title").unwrap_or("")
                        ),
                    );
                }
            }
        }
        Some("resources") => {
            if let Some(Value::Array(vs)) = d.get("values") {
                for u in vs {
                    if let Some(t) = uri_text(u) {
                        push_para(&mut out, &t);
                    }
                }
            }
        }
        _ => {}
    }
    (!out.is_empty()).then_some(out)
}

/// An edit group as an `edit` call: the file, and each edit's range and new text.
pub(super) fn edit_call(p: &Value, base: &Message, n: usize) -> ToolCall {
    let file = p.get("uri").and_then(uri_text).unwrap_or_default();
    let mut out = String::new();
    if let Some(Value::Array(batches)) = p.get("edits") {
        for batch in batches {
            let edits: &[Value] = match batch {
                Value::Array(a) => a,
                one => std::slice::from_ref(one),
            };
            for e in edits {
                let e = e.get("edit").unwrap_or(e);
                let r = e.get("range").unwrap_or(&Value::Null);
                let at = |k: &str| kit::u64_field(r, k);
                out.push_str(&format!(
                    "@@ {}:{}-{}:{} @@\n",
                    at("startLineNumber"),
                    at("startColumn"),
                    at("endLineNumber"),
                    at("endColumn")
                ));
                out.push_str(kit::str_field(e, "text").unwrap_or(""));
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
    }
    ToolCall {
        tool_call_id: format!(
            "{}-edit-{n}",
            base.native_id.as_deref().unwrap_or("response")
        ),
        tool_name: "edit".to_string(),
        input: serde_json::json!({ "file": file }),
        output: Some(out),
        is_error: Some(false),
        duration_ms: None,
    }
}

/// A reply part that is neither text, reasoning, a tool call nor an edit, as one line.
pub(super) fn notice(kind: &str, p: &Value) -> String {
    let body = match kind {
        "progressMessage"
        | "warning"
        | "info"
        | "progressTask"
        | "progressTaskSerialized"
        | "systemNotification" => md(p.get("content")),
        "confirmation" => {
            let mut s = format!(
                "{}: {}",
                kit::str_field(p, "title").unwrap_or(""),
                md(p.get("message"))
            );
            if p.get("isUsed").is_some_and(|v| v == true) {
                s.push_str(" (answered)");
            }
            s
        }
        "elicitation" | "elicitationSerialized" | "elicitation2" => format!(
            "{}: {} ({})",
            md(p.get("title")),
            md(p.get("message")),
            kit::str_field(p, "state").unwrap_or("")
        ),
        "questionCarousel" => {
            let mut s = md(p.get("message"));
            if let Some(Value::Array(qs)) = p.get("questions") {
                for q in qs {
                    push_para(&mut s, kit::str_field(q, "title").unwrap_or(""));
                }
            }
            if let Some(d) = p.get("data").filter(|d| d.is_object()) {
                push_para(&mut s, &format!("answers: {d}"));
            }
            s
        }
        "command" => p
            .get("command")
            .and_then(|c| kit::str_field(c, "title"))
            .unwrap_or("")
            .to_string(),
        "extensions" => p
            .get("extensions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default(),
        "multiDiffData" => {
            let d = p.get("multiDiffData").unwrap_or(&Value::Null);
            let mut s = kit::str_field(d, "title").unwrap_or("").to_string();
            if let Some(Value::Array(rs)) = d.get("resources") {
                for r in rs {
                    if let Some(u) = r
                        .get("modifiedUri")
                        .or_else(|| r.get("originalUri"))
                        .and_then(uri_text)
                    {
                        push_para(&mut s, &u);
                    }
                }
            }
            s
        }
        "treeData" => p
            .get("treeData")
            .and_then(|t| kit::str_field(t, "label"))
            .unwrap_or("")
            .to_string(),
        "hook" => [
            kit::str_field(p, "stopReason"),
            kit::str_field(p, "systemMessage"),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n"),
        "pullRequest" => format!(
            "{}: {}",
            kit::str_field(p, "title").unwrap_or(""),
            kit::str_field(p, "description").unwrap_or("")
        ),
        "autoModeResolution" => p
            .get("resolved")
            .and_then(|r| kit::str_field(r, "name"))
            .unwrap_or("")
            .to_string(),
        "externalEdit" => format!(
            "{} {}",
            kit::str_field(p, "editKind").unwrap_or("edit"),
            p.get("uri").and_then(uri_text).unwrap_or_default()
        ),
        "workspaceEdit" => p
            .get("edits")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|e| {
                        format!(
                            "{} -> {}",
                            e.get("oldResource").and_then(uri_text).unwrap_or_default(),
                            e.get("newResource").and_then(uri_text).unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default(),
        "clearToPreviousToolInvocation" => "reply cleared back to the previous tool call".into(),
        _ => raw(&p.to_string()),
    };
    if body.trim().is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {body}")
    }
}

/// The names of a request's attachments, one a line; `None` when it has none.
pub(super) fn attachments(v: Option<&Value>) -> Option<String> {
    let vars = v?.get("variables")?.as_array()?;
    let mut out = String::new();
    for var in vars {
        let name = kit::str_any(var, &["name", "id"]).unwrap_or("");
        let kind = kit::str_field(var, "kind").unwrap_or("");
        let mut line = format!("- {name}");
        if kind == "image" || var.get("isImage").is_some_and(|v| v == true) {
            line.push_str(" [image]");
        } else if let Some(u) = var.get("value").and_then(uri_text).filter(|u| u != name) {
            line.push_str(&format!(" ({u})"));
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&line);
    }
    (!out.is_empty()).then_some(out)
}

/// The model's calls and results from the extension's `result.metadata`.
pub(super) fn model_calls(meta: Option<&Value>) -> ModelCalls {
    let mut mc = ModelCalls::default();
    let Some(meta) = meta else {
        return mc;
    };
    if let Some(Value::Array(rounds)) = meta.get("toolCallRounds") {
        for round in rounds {
            if let Some(Value::Array(calls)) = round.get("toolCalls") {
                for c in calls {
                    let id = kit::str_field(c, "id").unwrap_or("").to_string();
                    let name = kit::str_field(c, "name").unwrap_or("tool").to_string();
                    let args = match c.get("arguments") {
                        Some(Value::String(s)) => {
                            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                        }
                        Some(v) => v.clone(),
                        None => Value::Null,
                    };
                    mc.calls.push((id, name, args));
                }
            }
        }
    }
    if let Some(Value::Object(results)) = meta.get("toolCallResults") {
        for (id, r) in results {
            mc.results.insert(id.clone(), tool_result_text(r));
        }
    }
    mc
}

/// A `LanguageModelToolResult` as serialized: `content` parts holding text `value`s, or
/// prompt-tsx trees whose text nodes hold it.
pub(super) fn tool_result_text(r: &Value) -> String {
    fn tree(v: &Value, out: &mut String) {
        match v {
            Value::Object(o) => {
                if let Some(Value::String(t)) = o.get("text") {
                    out.push_str(t);
                }
                for (k, x) in o {
                    if k != "text" {
                        tree(x, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| tree(x, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    let parts: &[Value] = match r.get("content") {
        Some(Value::Array(a)) => a,
        _ => std::slice::from_ref(r),
    };
    for part in parts {
        let text = match part.get("value") {
            Some(Value::String(s)) => s.clone(),
            Some(v @ Value::Object(_)) => {
                let mut t = String::new();
                tree(v, &mut t);
                t
            }
            _ if part.get("data").is_some() || part.get("mimeType").is_some() => {
                kit::base64_placeholder(
                    "attachment",
                    kit::str_field(part, "mimeType"),
                    kit::str_field(part, "data"),
                )
            }
            _ => match part {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
        };
        push_para(&mut out, &text);
    }
    out
}

/// A request's usage from one source (see the module docs), `None` when it holds none.
pub(super) fn request_usage(r: &Value, meta: Option<&Value>) -> Option<TokenUsage> {
    // The rounds' per-call usage (OpenAI shape: prompt tokens include cached ones).
    let mut u = TokenUsage::default();
    let mut any = false;
    if let Some(Value::Array(rounds)) = meta.and_then(|m| m.get("toolCallRounds")) {
        for round in rounds {
            let Some(us) = round.get("usage").filter(|v| v.is_object()) else {
                continue;
            };
            any = true;
            let cached = kit::u64_at(us, &["prompt_tokens_details", "cached_tokens"]);
            u.input_tokens += kit::u64_field(us, "prompt_tokens").saturating_sub(cached);
            u.cached_tokens += cached;
            u.output_tokens += kit::u64_field(us, "completion_tokens");
        }
    }
    if any {
        return Some(u);
    }
    if let Some(Value::Array(totals)) = r.get("modelTotals") {
        if !totals.is_empty() {
            for t in totals {
                let cached = kit::u64_field(t, "cachedTokens");
                u.input_tokens += kit::u64_field(t, "inputTokens").saturating_sub(cached);
                u.cached_tokens += cached;
                u.output_tokens += kit::u64_field(t, "outputTokens");
            }
            return Some(u);
        }
    }
    let number =
        |v: Option<&Value>, k: &str| v.and_then(|v| v.get(k)).is_some_and(Value::is_number);
    if number(Some(r), "promptTokens") || number(Some(r), "completionTokens") {
        u.input_tokens = kit::u64_field(r, "promptTokens");
        u.output_tokens = kit::u64_field(r, "completionTokens");
        return Some(u);
    }
    if number(meta, "promptTokens") || number(meta, "outputTokens") {
        let m = meta.unwrap_or(&Value::Null);
        u.input_tokens = kit::u64_field(m, "promptTokens");
        u.output_tokens = kit::u64_field(m, "outputTokens");
        return Some(u);
    }
    None
}
