//! A team in the line front end, through a real pseudo-terminal: the
//! team's events as readable lines, `/team` with the teammates and the
//! board, `@name message` reaching the teammate's next request, and an
//! unknown name refused without reaching anyone.

use crate::common;

use common::line_session::Interactive;
use common::{Harness, Pty, Wire, rule_records, wait_until};

/// A lead that creates one task and starts alice; alice claims the task
/// and then only answers what reaches her.
pub const LEAD_AND_ALICE: &str = r#"
rules:
  - name: alice
    when: { system: "You are 'alice'" }
    replies:
      - tool_calls: [ { name: TaskUpdate, input: { taskId: "1", status: in_progress } } ]
      - text: "alice resting"
      - text: "alice got it"
      - text: "alice got it again"
      - text: "alice still here"
  - name: lead
    when: { system: "You are cadre" }
    step_by: requests
    replies:
      - tool_calls: [ { name: TaskCreate, input: { subject: "Write the schema", description: "tables" } } ]
      - tool_calls: [ { name: Agent, input: { description: "schema side", prompt: "alice: take task 1", name: alice } } ]
      - text: "Team started."
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
"#;

#[tokio::test]
async fn team_shows_the_members_and_board_and_at_name_reaches_the_teammate() {
    let h = Harness::new(LEAD_AND_ALICE, Wire::Anthropic).await;
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &["--teams", "--permission-mode", "acceptEdits"]);
    pty.type_line("start the team");
    cadre.wait_for_stdout("Team started.").await;
    // Alice claimed the task and rests: her claim shows as a team line.
    wait_until("alice to claim task 1", || {
        rule_records(&h.records(), "alice").len() >= 2
    })
    .await;
    cadre
        .wait_for_stderr("[team] task #1 in progress (alice): Write the schema", 1)
        .await;
    cadre
        .wait_for_stderr("[team] alice (general-purpose): idle", 1)
        .await;
    pty.type_line("/team");
    cadre.wait_for_stderr("Board: 1 task(s)", 1).await;
    pty.type_line("@carol hello");
    cadre
        .wait_for_stderr("no teammate named 'carol'; the teammates are alice", 1)
        .await;
    pty.type_line("@alice please check the tests");
    cadre.wait_for_stderr("(sent to alice)", 1).await;
    wait_until("alice's request with the user's words", || {
        rule_records(&h.records(), "alice")
            .iter()
            .any(|r| common::user_texts(&r.body).contains("please check the tests"))
    })
    .await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());

    let err = cadre.stderr();
    let shows = |what: &str| assert!(err.contains(what), "missing {what:?} in:\n{err}");
    shows("[team] task #1 pending: Write the schema");
    shows("Team: team-lead and 1 teammate(s)");
    // Alice's row: type, state, the task she works on.
    let row = err
        .lines()
        .find(|l| l.trim_start().starts_with("alice ") && l.contains("#1 Write the schema"))
        .unwrap_or_else(|| panic!("no alice row in:\n{err}"));
    assert!(row.contains("general-purpose"), "{row}");
    assert!(row.contains("in progress") || row.contains("idle"), "{row}");
    shows("#1   in progress  alice");
    // The unknown name's message reached no one.
    for r in rule_records(&h.records(), "lead") {
        let text = common::user_texts(&r.body);
        assert!(!text.contains("@carol"), "{text}");
    }
}

#[tokio::test]
async fn team_without_a_team_says_how_to_get_one() {
    let h = Harness::new(LEAD_AND_ALICE, Wire::Anthropic).await;
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &[]);
    pty.type_line("/team");
    cadre.wait_for_stderr("this session has no team", 1).await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    assert!(h.records().is_empty());
}
