//! A team in the full-screen front end, end to end: the real `cadre` in a
//! tmux pane against the scripted model. The lead starts alice; the panel
//! lists her with her state and the task she works on; ↓ selects her and
//! Enter opens her transcript, where what is typed goes to her (her next
//! request holds it); Ctrl+T shows the board. Without tmux these tests say
//! so and do nothing.

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::{Harness, Wire, rule_records, wait_until};

#[tokio::test]
async fn the_panel_lists_a_teammate_enter_opens_it_and_typing_reaches_it() {
    if !tmux_available() {
        eprintln!("tmux is not installed: skipped");
        return;
    }
    let h = Harness::new(crate::line_teams::LEAD_AND_ALICE, Wire::Anthropic).await;
    let pane = Pane::start(&h, &["--teams", "--permission-mode", "acceptEdits"]);
    pane.wait_text("mock-model").await;
    pane.type_text("start the team");
    pane.keys(&["Enter"]);
    pane.wait_text("Team started.").await;
    // Her row: name, type, state, the board task she owns in progress.
    let screen = pane
        .wait_for("alice's row resting on task 1", |s| {
            s.lines().any(|l| {
                l.contains("alice")
                    && l.contains("general-purpose")
                    && l.contains("idle")
                    && l.contains("#1 Write the schema")
            })
        })
        .await;
    assert!(screen.contains("Team · 1 idle · ↓ select"), "{screen}");
    // ↓ from the prompt selects her; Enter opens her transcript.
    pane.keys(&["Down"]);
    pane.wait_text("Enter open · Esc interrupt · x stop").await;
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("teammate alice · t-").await;
    assert!(screen.contains("message to alice"), "{screen}");
    pane.wait_text("alice resting").await;
    // Typed text goes to her, not to the lead.
    let lead_before = rule_records(&h.records(), "lead").len();
    pane.type_text("please check the tests");
    pane.keys(&["Enter"]);
    wait_until("alice's request with the user's words", || {
        rule_records(&h.records(), "alice")
            .iter()
            .any(|r| common::user_texts(&r.body).contains("please check the tests"))
    })
    .await;
    // Her answer shows in the open transcript.
    pane.wait_text("alice got it").await;
    assert!(
        rule_records(&h.records(), "lead")
            .iter()
            .skip(lead_before)
            .all(|r| !common::user_texts(&r.body).contains("please check the tests")),
        "the lead never got the user's words as its own input"
    );
    // She rests: Esc goes back.
    pane.keys(&["Escape"]);
    pane.wait_for("the transcript to close", |s| {
        !s.contains("teammate alice · t-")
    })
    .await;
    // Ctrl+T: the board, with id, status and owner.
    pane.keys(&["C-t"]);
    let screen = pane
        .wait_for("the board", |s| {
            s.contains("Team tasks")
                && s.lines()
                    .any(|l| l.contains("#1") && l.contains("in progress") && l.contains("alice"))
        })
        .await;
    assert!(screen.contains("Write the schema"), "{screen}");
    pane.keys(&["Escape"]);
    pane.wait_for("the board to close", |s| !s.contains("Team tasks"))
        .await;
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);
}
