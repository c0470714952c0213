//! `/agents` in the full-screen front end, end to end: the real `cadre` in
//! a tmux pane against the scripted model. The list shows definitions with
//! their sources and the files that did not load; Enter shows one as a child
//! gets it; `n` writes a new definition that `cadre agents` accepts and a
//! parent can delegate to at once. Without tmux these tests say so and do
//! nothing; `.ci/run` installs it.

use crate::common;

use common::tmux::{Pane, tmux_available};
use common::{Harness, Wire, rule_records, stdout, system_text};

const FINDER: &str = "---
name: finder
description: Finds things in the project.
tools: Read, Grep, Glob
---
You are FINDER, a search subagent. Report briefly.
";

/// Frontmatter that never ends: the file is skipped with an error.
const BROKEN: &str = "---
name: broken
description: Never loads.
";

/// The list's row of definition `name` (`▸ ` when selected, else two spaces).
fn row<'a>(screen: &'a str, name: &str) -> Option<&'a str> {
    screen.lines().find(|l| {
        let l = l.trim_start_matches('│');
        (l.starts_with("▸ ") || l.starts_with("  "))
            && l.split_whitespace().nth(usize::from(l.starts_with("▸ "))) == Some(name)
    })
}

/// The names the list shows, in order.
fn listed(screen: &str) -> Vec<String> {
    screen
        .lines()
        .map(|l| l.trim_start_matches('│'))
        .filter(|l| l.contains(" built-in ") || l.contains(" project ") || l.contains(" user "))
        .filter_map(|l| {
            l.trim_start_matches("▸ ")
                .split_whitespace()
                .next()
                .map(str::to_string)
        })
        .collect()
}

/// Opens `/agents` and waits for the list.
async fn open_agents(pane: &Pane) -> String {
    pane.type_text("/agents");
    pane.keys(&["Enter"]);
    pane.wait_text("n new").await
}

/// Moves the selection to `name` and waits until it is selected.
async fn select(pane: &Pane, screen: &str, name: &str) {
    let names = listed(screen);
    let from = names
        .iter()
        .position(|n| screen.contains(&format!("▸ {n}")))
        .unwrap();
    let to = names
        .iter()
        .position(|n| n == name)
        .unwrap_or_else(|| panic!("{name} is listed: {screen}"));
    for _ in from..to {
        pane.keys(&["Down"]);
    }
    pane.wait_text(&format!("▸ {name}")).await;
}

#[tokio::test]
async fn agents_lists_sources_shows_a_definition_and_creates_one_a_parent_can_use() {
    if !tmux_available() {
        return;
    }
    let script = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "check the diff", prompt: "review-it", subagent_type: "reviewer" } }
      - text: "Review relayed."
  - name: child
    when: { system: "You are the reviewer agent" }
    replies:
      - text: "no mistakes found"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(".cadre/agents/finder.md", FINDER);
    h.write(".cadre/agents/broken.md", BROKEN);
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;

    // The list: a project definition and the built-ins with their sources,
    // and the broken file with its error.
    let screen = open_agents(&pane).await;
    let finder = row(&screen, "finder").unwrap_or_else(|| panic!("finder: {screen}"));
    assert!(finder.contains(" project "), "{finder}");
    assert!(finder.contains("Finds things in the project."), "{finder}");
    let explore = row(&screen, "Explore").unwrap_or_else(|| panic!("Explore: {screen}"));
    assert!(explore.contains(" built-in "), "{explore}");
    assert!(
        screen.contains("1 definition file(s) skipped"),
        "the broken file is listed: {screen}"
    );
    assert!(
        screen.contains(".cadre/agents/broken.md") && screen.contains("not closed"),
        "with its error: {screen}"
    );
    assert!(row(&screen, "broken").is_none(), "{screen}");

    // Enter: the definition as a child gets it, its prompt included; Esc back.
    select(&pane, &screen, "finder").await;
    pane.keys(&["Enter"]);
    let shown = pane.wait_text("You are FINDER, a search subagent.").await;
    assert!(shown.contains("Agent finder"), "its title: {shown}");
    assert!(shown.contains("source:      project"), "{shown}");
    assert!(shown.contains("tools:       "), "{shown}");
    pane.keys(&["Escape"]);
    pane.wait_for("the list again", |s| {
        s.contains("n new") && !s.contains("You are FINDER")
    })
    .await;

    // `n`: the form writes a new project definition, which the list shows.
    pane.keys(&["n"]);
    pane.wait_text("New agent").await;
    pane.type_text("reviewer");
    pane.keys(&["Tab"]);
    pane.type_text("Reviews diffs for mistakes.");
    pane.keys(&["Tab"]);
    pane.type_text("Read, Grep");
    pane.keys(&["Tab", "Tab"]);
    pane.wait_text("→ .cadre/agents/reviewer.md").await;
    pane.keys(&["Enter"]);
    let screen = pane.wait_text("created reviewer").await;
    let reviewer = row(&screen, "reviewer").unwrap_or_else(|| panic!("listed: {screen}"));
    assert!(
        reviewer.starts_with("▸ ") || reviewer.contains("▸ reviewer"),
        "selected: {reviewer}"
    );
    assert!(reviewer.contains(" project "), "{reviewer}");
    let text = h.read(".cadre/agents/reviewer.md");
    assert!(
        text.starts_with(
            "---\nname: reviewer\ndescription: Reviews diffs for mistakes.\ntools: Read, Grep\n---\n"
        ),
        "Claude Code's format: {text}"
    );
    assert!(!text.contains("model:"), "no model: the parent's: {text}");

    // The parent can delegate to it at once: the child runs with its prompt.
    pane.keys(&["Escape"]);
    pane.wait_for("the list to close", |s| !s.contains("n new"))
        .await;
    pane.type_text("review my change");
    pane.keys(&["Enter"]);
    pane.wait_text("Review relayed.").await;
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);

    let records = h.records();
    let child = rule_records(&records, "child");
    assert_eq!(child.len(), 1, "the new agent ran once");
    let system = system_text(&child[0].body);
    assert!(
        system.contains("You are the reviewer agent. Your task: Reviews diffs for mistakes."),
        "the new definition's prompt: {system}"
    );
    let mut tools: Vec<&str> = child[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    tools.sort_unstable();
    assert_eq!(tools, ["Grep", "Read"], "its tools");

    // And `cadre agents` accepts it.
    let validate = h
        .cadre(&["agents", "validate", ".cadre/agents/reviewer.md"])
        .await;
    assert!(validate.status.success(), "{}", stdout(&validate));
    let checked = stdout(&validate);
    assert!(
        checked.starts_with("ok      project (") && checked.contains(": reviewer"),
        "{checked}"
    );
    assert!(!checked.contains("warning"), "{checked}");
    let show = h.cadre(&["agents", "show", "reviewer"]).await;
    assert!(show.status.success(), "{}", stdout(&show));
    let shown = stdout(&show);
    assert!(shown.contains("source:      project"), "{shown}");
    assert!(
        shown.contains("description: Reviews diffs for mistakes."),
        "{shown}"
    );
    assert!(shown.contains("tools:       Read, Grep"), "{shown}");
}

#[tokio::test]
async fn the_form_writes_a_private_user_definition_and_never_overwrites_a_file() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let pane = Pane::start(&h, &[]);
    pane.wait_text("mock-model").await;
    open_agents(&pane).await;

    // A user definition: $CADRE_HOME/agents/NAME.md, private.
    pane.keys(&["n"]);
    pane.wait_text("New agent").await;
    pane.type_text("helper-2");
    pane.keys(&["Tab"]);
    pane.type_text("Helps: with anything");
    pane.keys(&["Tab", "Tab"]);
    pane.type_text("sonnet");
    pane.keys(&["Tab", "Space"]);
    pane.wait_text("(•) user").await;
    pane.keys(&["C-s"]);
    let screen = pane.wait_text("created helper-2").await;
    let helper = row(&screen, "helper-2").unwrap_or_else(|| panic!("listed: {screen}"));
    assert!(helper.contains(" user "), "{helper}");
    let path = h.data_dir().join("agents/helper-2.md");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with(
            "---\nname: helper-2\ndescription: \"Helps: with anything\"\nmodel: sonnet\n---\n"
        ),
        "{text}"
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a user file is private");
    }

    // The same name again in the same place: refused, the file untouched.
    // (Under another name, so that only the file is in the way; the list
    // picks the edit up by itself.)
    std::fs::write(&path, "---\nname: other\ndescription: Mine.\n---\nMine.\n").unwrap();
    pane.wait_for("the list to show the edit", |s| {
        row(s, "other").is_some() && row(s, "helper-2").is_none()
    })
    .await;
    pane.keys(&["n"]);
    pane.wait_text("New agent").await;
    pane.type_text("helper-2");
    pane.keys(&["Tab"]);
    pane.type_text("Another one");
    pane.keys(&["Tab", "Tab", "Tab", "Space", "Enter"]);
    let screen = pane.wait_text("was not overwritten").await;
    assert!(screen.contains("helper-2.md already exists"), "{screen}");
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("name: other")
    );
    pane.keys(&["Escape"]);
    pane.wait_for("the list", |s| {
        !s.contains("New agent") && s.contains("n new")
    })
    .await;
    pane.keys(&["Escape"]);
    pane.wait_for("the list to close", |s| !s.contains("n new"))
        .await;
    pane.keys(&["C-c", "C-c"]);
    assert_eq!(pane.exit_status().await, 0);

    let validate = h.cadre(&["agents", "validate"]).await;
    assert!(validate.status.success(), "{}", stdout(&validate));
}

#[tokio::test]
async fn agent_with_an_initial_prompt_sends_it_before_anything_is_typed() {
    if !tmux_available() {
        return;
    }
    let script = r#"
rules:
  - name: first
    when: { first_user: "read the README first" }
    replies:
      - text: "README-READ-REPLY"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".claude/agents/starter.md",
        "---\nname: starter\ndescription: Starts by reading.\ninitialPrompt: read the README first\n---\nYou are STARTER.\n",
    );
    let pane = Pane::start(&h, &["--agent", "starter"]);
    // Nothing typed: the prompt went, and its reply is on the screen.
    let screen = pane.wait_text("README-READ-REPLY").await;
    assert!(screen.contains("read the README first"), "{screen}");
    let records = h.records();
    let first = rule_records(&records, "first");
    assert_eq!(first.len(), 1, "one request, for the initial prompt");
    assert!(system_text(&first[0].body).contains("You are STARTER."));
    pane.type_text("/exit");
    pane.keys(&["Enter"]);
    assert_eq!(pane.exit_status().await, 0);
}
