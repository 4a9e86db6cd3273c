use super::*;

#[test]
fn every_tables_schema_parses_and_names_each_column_once() {
    for t in Table::ALL {
        let schema = t.schema();
        let parsed = parquet::schema::parser::parse_message_type(&schema).expect(&schema);
        let names: std::collections::BTreeSet<&str> =
            parsed.get_fields().iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), t.columns().count(), "{schema}");
    }
    assert_eq!(
        Table::ALL.map(Table::name),
        ["sessions", "messages", "tool_calls", "usage"]
    );
}

#[test]
fn a_kind_is_named_as_messages_jsonl_names_it() {
    use MessageKind::*;
    for k in [
        Normal,
        CompactionSummary,
        BranchSummary,
        Execution,
        Event,
        Context,
    ] {
        assert_eq!(serde_json::to_value(k).ok(), Some(kind_name(k).into()));
    }
}

/// A session with a tool call, a branch and a subagent, gathered and encoded: each row
/// pushes a value of the right type into every column (debug assertions), and every
/// table's row group holds its rows.
#[test]
fn rows_of_every_table_encode() {
    use crate::model::{Branch, Role, Subagent, ToolCall, ToolResult};
    let mut s = Session::new(Agent::Pi, "p");
    let call = ToolCall {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        input: serde_json::json!({"command": "ls"}),
        ..Default::default()
    };
    s.messages = vec![
        Message {
            role: Role::User,
            content: "hello".into(),
            ..Default::default()
        },
        Message {
            role: Role::Assistant,
            content: "running".into(),
            tool_calls: vec![call],
            ..Default::default()
        },
        Message {
            role: Role::Tool,
            tool_result: Some(ToolResult {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                output: "a b".into(),
                is_error: false,
            }),
            ..Default::default()
        },
    ];
    let mut branch = s.messages[..1].to_vec();
    branch.push(Message {
        role: Role::Assistant,
        content: "other".into(),
        ..Default::default()
    });
    s.branches.push(Branch {
        name: "b1".into(),
        messages: branch,
        ..Default::default()
    });
    let mut child = Session::new(Agent::Pi, "c");
    child.messages = s.messages[..1].to_vec();
    s.subagents.push(Subagent {
        name: "helper".into(),
        session: Some(Box::new(child)),
        ..Default::default()
    });
    let schemas = Schemas::new().expect("schemas");
    let dir = Path::new("/nonexistent");
    let mut g = Gather::new(&schemas, dir, "0123456789abcdef");
    g.session("agent=pi/month=unknown", &s).expect("rows");
    let done = g.finish().expect("encode");
    assert_eq!(done.len(), 1);
    // 3 on the path, 1 of the branch, 1 of the subagent; one call.
    assert_eq!((done[0].messages.rows, done[0].tool_calls.rows), (5, 1));
    let m = Machine {
        id: "0123456789abcdef".into(),
        hostname: "h".into(),
        user: "u".into(),
    };
    let mut rows = Rows::new(Table::Sessions);
    let key = SessionKey {
        agent: Agent::Pi,
        name: "p".into(),
    };
    SessionRow::new(&key, &s).push(&m, &mut rows);
    let mut usage = Rows::new(Table::Usage);
    UsageRow {
        machine: m.id.as_str().into(),
        record: Record {
            owner: "pi:p".into(),
            agent: Agent::Pi,
            cwd: None,
            tags: Vec::new(),
            model: "m".into(),
            when: None,
            usage: Default::default(),
            usd: Some(0.5),
            estimated: false,
            reply: None,
            recorded: true,
        },
    }
    .push(&mut usage);
    for (rows, n) in [(rows, 1), (usage, 1)] {
        let g = rows.encode(&schemas).expect("encode");
        assert_eq!(g.rows, n);
        assert_eq!(
            g.chunks.len(),
            g.chunks
                .iter()
                .filter(|c| c.1.rows_written == n as u64)
                .count()
        );
    }
}

#[test]
fn a_session_is_in_the_month_it_started() {
    let mut s = Session::new(Agent::Pi, "p");
    assert_eq!(partition_of(&s), "agent=pi/month=unknown");
    s.updated_at = DateTime::parse_from_rfc3339("2026-06-01T00:10:00Z")
        .ok()
        .map(|t| t.with_timezone(&Utc));
    assert_eq!(partition_of(&s), "agent=pi/month=2026-06");
    s.created_at = DateTime::parse_from_rfc3339("2026-05-31T23:50:00Z")
        .ok()
        .map(|t| t.with_timezone(&Utc));
    assert_eq!(partition_of(&s), "agent=pi/month=2026-05");
}
