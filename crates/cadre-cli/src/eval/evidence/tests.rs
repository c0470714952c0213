//! Tests of reading a run's evidence.
#![allow(clippy::unwrap_used)]

use cadre_core::model::Usage;
use cadre_core::protocol::ApprovalQuestion;

use super::*;

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

/// Evidence from the events as `exec --json` prints them, one per line.
fn evidence_of(events: &[Event], extra: &[&str]) -> Evidence {
    let mut ev = Evidence::default();
    let lines: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .chain(extra.iter().map(|s| s.to_string()))
        .collect();
    for (i, line) in lines.iter().enumerate() {
        ev.push_line(i as u64 + 1, StdoutLine::parse(line), line);
    }
    ev.read_logs();
    ev
}

fn run() -> Vec<Event> {
    vec![
        Event::SessionStarted {
            session_id: "s1".into(),
            provider: cadre_core::model::Provider::Anthropic,
            model: "m".into(),
            cwd: "/p".into(),
        },
        Event::ToolCallStarted {
            agent: "main".into(),
            call_id: "c1".into(),
            tool: "Read".into(),
            input: serde_json::json!({}),
            summary: String::new(),
        },
        Event::ToolCallEnded {
            agent: "main".into(),
            call_id: "c1".into(),
            tool: "Read".into(),
            summary: String::new(),
            is_error: false,
            outcome: "3 lines".into(),
            output_bytes: 3,
            duration_ms: 1,
        },
        Event::ToolCallStarted {
            agent: "main".into(),
            call_id: "c2".into(),
            tool: "Bash".into(),
            input: serde_json::json!({}),
            summary: String::new(),
        },
        Event::ToolCallEnded {
            agent: "main".into(),
            call_id: "c2".into(),
            tool: "Bash".into(),
            summary: String::new(),
            is_error: true,
            outcome: "error: denied by rule".into(),
            output_bytes: 3,
            duration_ms: 1,
        },
        Event::ToolCallDenied {
            agent: "main".into(),
            call_id: "c2".into(),
            tool: "Bash".into(),
            reason: "denied by rule".into(),
        },
        Event::SubagentStarted {
            index: 1,
            total: 1,
            agent_id: "a1".into(),
            agent_type: "Explore".into(),
            description: "look".into(),
            model: "m".into(),
            mode: cadre_core::protocol::PermissionMode::Plan,
            path: Vec::new(),
            color: None,
        },
        Event::ApprovalRequested {
            id: 1,
            question: ApprovalQuestion {
                agent: "a1".into(),
                label: Some("Subagent: look".into()),
                tool: "Edit".into(),
                call_id: None,
                input: String::new(),
                reason: String::new(),
                sandbox: None,
                session_rule: "Edit".into(),
            },
        },
        Event::SubagentProgress {
            index: 1,
            total: 1,
            agent_type: "Explore".into(),
            agent_id: "a1".into(),
            tool: "Edit".into(),
            outcome: ChildCallOutcome::Denied,
            summary: String::new(),
            path: Vec::new(),
        },
        Event::SubagentEnded {
            index: 1,
            total: 1,
            agent_id: "a1".into(),
            agent_type: "Explore".into(),
            status: ChildStatus::Failed,
            requests: 2,
            tool_calls: 1,
            usage: usage(10, 5),
            duration_ms: 3,
            error: Some("limit".into()),
            cost_usd: None,
            compactions: 0,
            worktree: None,
        },
        Event::Usage {
            agent: "main".into(),
            usage: usage(100, 20),
            cost_usd: None,
        },
        Event::Usage {
            agent: "a1".into(),
            usage: usage(1000, 1000),
            cost_usd: None,
        },
        Event::TurnEnded {
            agent: "main".into(),
            status: TurnStatus::LimitReached,
            final_text: "so far".into(),
            error: Some("too many requests".into()),
            requests: 3,
            tool_calls: 3,
            usage: usage(100, 20),
            cost_usd: None,
        },
    ]
}

#[test]
fn typed_events_give_calls_denials_questions_and_children() {
    let ev = evidence_of(&run(), &[]);
    assert_eq!(ev.unparsed_count, 0, "{:?}", ev.unparsed);
    assert_eq!(ev.session_id.as_deref(), Some("s1"));
    let calls: Vec<(String, String, Option<CallOutcome>)> = ev
        .calls()
        .into_iter()
        .map(|c| (c.who.describe(), c.tool, c.outcome))
        .collect();
    assert_eq!(
        calls,
        [
            ("parent".into(), "Read".into(), Some(CallOutcome::Completed)),
            ("parent".into(), "Bash".into(), Some(CallOutcome::Denied)),
            (
                "child Explore a1".into(),
                "Edit".into(),
                Some(CallOutcome::Denied)
            ),
        ]
    );
    let denials: Vec<(String, Option<String>, Option<String>)> = ev
        .denials()
        .into_iter()
        .map(|d| (d.who.describe(), d.tool, d.reason))
        .collect();
    assert_eq!(
        denials,
        [
            (
                "parent".into(),
                Some("Bash".into()),
                Some("denied by rule".into())
            ),
            ("child Explore a1".into(), Some("Edit".into()), None),
        ]
    );
    assert_eq!(
        ev.approvals(),
        [(
            Who::Child {
                id: "a1".into(),
                agent_type: Some("Explore".into())
            },
            "Edit".to_string()
        )]
    );
    let children = ev.children();
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].status, ChildStatus::Failed);
    assert_eq!(children[0].error.as_deref(), Some("limit"));
}

#[test]
fn the_main_turn_tokens_and_live_requests_come_from_typed_events() {
    let ev = evidence_of(&run(), &[]);
    assert_eq!(ev.final_text(), Some("so far"));
    assert_eq!(
        ev.turn_problem().as_deref(),
        Some("limit_reached: too many requests")
    );
    // Main's usage events and each child's total; a child's own usage
    // events are not counted twice.
    assert_eq!(ev.tokens(), 120 + 15);
    // Without a mock record (a live run), requests come from the events.
    assert!(ev.records.is_none());
    assert_eq!(ev.requests(), (3, 5));
}

#[test]
fn turn_status_names_are_the_printed_ones() {
    for s in [
        TurnStatus::Completed,
        TurnStatus::Interrupted,
        TurnStatus::LimitReached,
        TurnStatus::Failed,
    ] {
        assert_eq!(
            serde_json::to_value(s).unwrap(),
            Value::from(turn_status_name(s))
        );
    }
}

#[test]
fn lines_that_are_not_events_are_kept_aside_and_counted() {
    let long = format!("plain text {}", "x".repeat(500));
    let extra = [
        "not json at all",
        r#"{"type":"brand_new_event","agent":"main"}"#,
        r#"{"type":"turn_started"}"#,
        r#"{"no_type":1}"#,
        long.as_str(),
        "one more",
        "and another",
    ];
    let ev = evidence_of(&run(), &extra);
    let n = run().len() as u64;
    assert_eq!(ev.events.len() as u64, n);
    assert_eq!(ev.unparsed_count, extra.len() as u64);
    assert_eq!(ev.unparsed.len(), UNPARSED_KEPT);
    assert_eq!(ev.unparsed[0].line, n + 1);
    assert_eq!(ev.unparsed[0].text, "not json at all");
    assert!(
        ev.unparsed[1].error.contains("brand_new_event"),
        "{:?}",
        ev.unparsed[1]
    );
    assert!(
        ev.unparsed[2].error.contains("agent"),
        "{:?}",
        ev.unparsed[2]
    );
    assert_eq!(ev.unparsed[4].text.chars().count(), UNPARSED_CHARS + 1);
    assert!(ev.unparsed[4].text.ends_with('…'));
    // The graders still see every event around them.
    assert_eq!(ev.calls().len(), 3);
}

#[test]
fn a_line_gives_its_type_even_when_it_does_not_parse() {
    let line = StdoutLine::parse(r#"{"type":"subagent_started","index":"one"}"#);
    assert!(matches!(line, StdoutLine::Unparsed(..)));
    assert_eq!(line.kind(), Some("subagent_started"));
    assert_eq!(StdoutLine::parse("[1, 2]").kind(), None);
    let ok = StdoutLine::parse(r#"{"type":"turn_started","agent":"main"}"#);
    assert!(matches!(&ok, StdoutLine::Event(e, _) if matches!(**e, Event::TurnStarted { .. })));
    assert_eq!(ok.kind(), Some("turn_started"));
}
