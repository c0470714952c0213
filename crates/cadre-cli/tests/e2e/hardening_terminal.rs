//! Issue 23, items 6 and 17: terminal control sequences a model sends are
//! shown, never obeyed, by the line front end and by `exec` on a terminal
//! (while `exec`'s piped stdout keeps the exact bytes); and the smaller
//! things a user found in `/help`, `/permissions`, `/tasks`, `cadre mcp
//! list` and `cadre agents list|show`.

use crate::common;

use cadre_core::tasks::{TaskKind, TaskStatus};
use common::line_session::Interactive;
use common::tmux::{Pane, tmux_available};
use common::{Harness, Pty, Wire, stderr, stdout, tasks, wait_until};

/// A model reply that tries the window title (OSC 0 and 2), the clipboard
/// (OSC 52, "PWNED-CLIP" in base64), a hyperlink (OSC 8) and a clear screen.
const HOSTILE_ANSWER: &str = "answer \u{1b}]0;PWNED-TITLE\u{7} \u{1b}]52;c;UFdORUQtQ0xJUA==\u{7} \u{1b}]8;;http://evil.example/\u{7}link\u{1b}]8;;\u{7} \u{1b}]2;PWNED-TWO\u{1b}\\ \u{1b}[2J end.";

/// `text` as a YAML double-quoted string's content.
fn yaml(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\u{1b}', "\\x1b")
        .replace('\u{7}', "\\x07")
}

/// The pane's text with wrapped lines joined.
fn joined_screen(pane: &Pane) -> String {
    String::from_utf8_lossy(&pane.tmux(&["capture-pane", "-p", "-J"]).stdout).into_owned()
}

/// The pane's title as tmux keeps it.
fn pane_title(pane: &Pane) -> String {
    String::from_utf8_lossy(&pane.tmux(&["display", "-p", "#{pane_title}"]).stdout)
        .trim()
        .to_string()
}

/// The paste buffers tmux holds (an OSC 52 the pane obeyed would add one).
fn paste_buffers(pane: &Pane) -> String {
    let out = pane.tmux(&["show-buffer"]);
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&pane.tmux(&["list-buffers"]).stdout)
    )
}

/// Lets the pane's programs set tmux's paste buffer (OSC 52), as a user
/// with `set-clipboard on` has it; the default ignores them.
fn accept_clipboard_writes(pane: &Pane) {
    assert!(
        pane.tmux(&["set", "-g", "set-clipboard", "on"])
            .status
            .success()
    );
}

#[tokio::test]
async fn the_line_front_end_shows_a_models_escapes_and_obeys_none() {
    if !tmux_available() {
        return;
    }
    let script = format!(
        "rules:\n  - when: {{ system: \"You are cadre\" }}\n    replies:\n      - text: \"{}\"\n",
        yaml(HOSTILE_ANSWER)
    );
    let h = Harness::new(&script, Wire::Anthropic).await;
    let pane = Pane::start(&h, &["--no-tui"]);
    accept_clipboard_writes(&pane);
    pane.wait_text("/exit or Ctrl+D to leave").await;
    let title_before = pane_title(&pane);
    pane.type_text("hello");
    pane.keys(&["Enter"]);
    // The status line after the answer (which wraps: read it joined).
    pane.wait_text("tokens)").await;
    let screen = joined_screen(&pane);
    // Shown in caret notation, on the screen next to the prompt's banner
    // (a clear screen obeyed would have wiped it).
    assert!(screen.contains("answer ^[]0;PWNED-TITLE^G"), "{screen}");
    assert!(screen.contains("^[]52;c;UFdORUQtQ0xJUA==^G"), "{screen}");
    assert!(screen.contains("^[[2J end."), "{screen}");
    assert!(screen.contains("/exit or Ctrl+D to leave"), "{screen}");
    pane.type_text("/exit");
    pane.keys(&["Enter"]);
    assert_eq!(pane.exit_status().await, 0);
    let title = pane_title(&pane);
    assert!(!title.contains("PWNED"), "the title was set: {title}");
    assert_eq!(title, title_before);
    let buffers = paste_buffers(&pane);
    assert!(
        !buffers.contains("PWNED-CLIP") && buffers.trim().is_empty(),
        "the paste buffer was filled: {buffers:?}"
    );
}

/// A parent that calls `Read` and `Agent` with escapes in the arguments it
/// chose, a child whose `Grep` pattern holds one, then [`HOSTILE_ANSWER`].
fn exec_script() -> String {
    format!(
        r#"
rules:
  - name: child
    when: {{ first_user: "CHILD-TASK" }}
    replies:
      - tool_calls:
          - {{ name: Grep, input: {{ pattern: "pat\x1b]0;PWNED-GREP\x07" }} }}
      - text: "child done"
  - name: parent
    replies:
      - text: "looking \x1b]0;PWNED-INTERIM\x07 first"
        tool_calls:
          - {{ name: Read, input: {{ file_path: "nope\x1b]0;PWNED-READ\x07.txt" }} }}
          - {{ name: Agent, input: {{ description: "look \x1b]2;PWNED-AGENT\x07", prompt: "CHILD-TASK", subagent_type: "general-purpose" }} }}
      - text: "{}"
"#,
        yaml(HOSTILE_ANSWER)
    )
}

#[tokio::test]
async fn exec_on_a_terminal_shows_escapes_in_its_progress_and_its_answer() {
    if !tmux_available() {
        return;
    }
    let h = Harness::new(&exec_script(), Wire::Anthropic).await;
    let pane = Pane::start(&h, &["exec", "go"]);
    accept_clipboard_writes(&pane);
    let title_before = pane_title(&pane);
    assert_eq!(pane.exit_status().await, 0, "{}", pane.screen());
    let screen = joined_screen(&pane);
    // The progress lines quote the model's arguments, controls shown.
    for shown in [
        "looking ^[]0;PWNED-INTERIM^G first",
        "Read nope^[]0;PWNED-READ^G.txt",
        "Agent look ^[]2;PWNED-AGENT^G",
        "Grep \"pat^[]0;PWNED-GREP^G\"",
        // The answer on stdout.
        "answer ^[]0;PWNED-TITLE^G ^[]52;c;UFdORUQtQ0xJUA==^G",
        "^[]2;PWNED-TWO^[\\ ^[[2J end.",
    ] {
        assert!(screen.contains(shown), "missing {shown:?} in:\n{screen}");
    }
    let title = pane_title(&pane);
    assert!(!title.contains("PWNED"), "the title was set: {title}");
    assert_eq!(title, title_before);
    let buffers = paste_buffers(&pane);
    assert!(
        buffers.trim().is_empty(),
        "the paste buffer was filled: {buffers:?}"
    );
}

#[tokio::test]
async fn exec_into_a_pipe_keeps_the_answers_exact_bytes() {
    let h = Harness::new(&exec_script(), Wire::Anthropic).await;
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // Byte for byte, escapes included, for whatever reads the pipe.
    assert_eq!(
        String::from_utf8(out.stdout.clone()).unwrap(),
        format!("{HOSTILE_ANSWER}\n")
    );
    // Progress is for a person: shown, never obeyed, wherever it goes.
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("Read nope^[]0;PWNED-READ^G.txt"), "{err}");
}

#[tokio::test]
async fn help_and_permissions_say_what_model_and_a_trusted_folder_do() {
    let script = r#"
rules:
  - replies:
      - text: "Answer one."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write(
        ".cadre/config.toml",
        "[permissions]\nallow = [\"Bash(make:*)\"]\n",
    );
    let pty = Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &["--trust"]);
    for line in ["/help", "/permissions", "hello"] {
        pty.type_line(line);
    }
    cadre.wait_for_stdout("Answer one.").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    let err = cadre.stderr();
    // `/model NAME` switches the running session.
    let model_help = err
        .lines()
        .find(|l| l.starts_with("/model [NAME]"))
        .unwrap_or_else(|| panic!("no /model line: {err}"));
    assert!(
        !model_help.contains("next session this process starts"),
        "{model_help}"
    );
    assert!(model_help.contains("now"), "{model_help}");
    // The trusted project's allow rule is listed, and nothing says it is not applied.
    assert!(
        err.lines().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.len() >= 3 && words[0] == "allow" && words[1] == "Bash(make:*)"
        }),
        "{err}"
    );
    assert!(!err.contains("never applied"), "{err}");
    assert!(
        err.contains("this folder is trusted: its project files' allow rules apply"),
        "{err}"
    );
}

#[tokio::test]
async fn mcp_list_in_an_untrusted_folder_names_the_held_back_server_only() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    h.write(
        ".mcp.json",
        r#"{"mcpServers": {"projsrv": {"command": "true"}}}"#,
    );
    let out = h.cadre(&["mcp", "list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("No MCP servers configured"), "{text}");
    assert!(
        text.contains("projsrv: not started (the folder is not trusted)"),
        "{text}"
    );
}

#[tokio::test]
async fn agents_show_names_the_tools_a_session_gives_at_run_time() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    h.write(
        ".cadre/agents/runner.md",
        "---\nname: runner\ndescription: Runs things.\ntools: Read, Skill, mcp__github__get_issue, Bogus\n---\nYou run.\n",
    );
    h.write(
        ".cadre/agents/skilled.md",
        "---\nname: skilled\ndescription: Only skills.\ntools: Skill, mcp__github\n---\nYou use skills.\n",
    );
    let out = h.cadre(&["agents", "show", "runner"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("tools:       Read\n"), "{text}");
    assert!(
        text.contains("at run time: Skill, mcp__github__get_issue (given when"),
        "{text}"
    );
    assert!(
        text.contains("unresolved:  Bogus (name no tool)"),
        "only Bogus names no tool: {text}"
    );
    // Nothing built in, but the child gets its skills and the server's tools.
    let out = h.cadre(&["agents", "show", "skilled"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("would not start"), "{text}");
    assert!(text.contains("at run time: Skill, mcp__github"), "{text}");
}

#[tokio::test]
async fn agents_list_keeps_its_columns_for_long_names() {
    let h = Harness::new("rules: []\n", Wire::Anthropic).await;
    let long = "a-very-long-agent-definition-name";
    for name in [long, "short"] {
        h.write(
            &format!(".cadre/agents/{name}.md"),
            &format!("---\nname: {name}\ndescription: d\n---\nbody\n"),
        );
    }
    let out = h.cadre(&["agents", "list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // The source column starts at the same place on every line.
    let source_at: Vec<usize> = text
        .lines()
        .filter(|l| l.starts_with(long) || l.starts_with("short ") || l.starts_with("Explore "))
        .map(|l| {
            let name_end = l.find(' ').unwrap();
            name_end + l[name_end..].find(|c: char| c != ' ').unwrap()
        })
        .collect();
    assert_eq!(source_at.len(), 3, "{text}");
    assert!(
        source_at.iter().all(|&at| at == source_at[0]),
        "{source_at:?}:\n{text}"
    );
    assert!(source_at[0] > long.len(), "{text}");
}

/// A child that makes one call, then waits (in its second call) for a file
/// the test writes, so the test can look at its task row while it runs.
const WAITING_CHILD: &str = r#"
rules:
  - name: child
    when: { system: "You are HELPER" }
    replies:
      - tool_calls:
          - { name: Read, input: { file_path: "a.txt" } }
      - tool_calls:
          - { name: Bash, input: { command: "for i in $(seq 1 600); do [ -e go ] && break; sleep 0.1; done; echo waited" } }
      - text: "CHILD-REPORT"
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "waits", prompt: "wait for go", subagent_type: "helper" } }
      - text: "moved on"
      - text: "got the report"
"#;

#[tokio::test]
async fn a_child_moved_to_the_background_is_listed_there_with_its_progress() {
    let h = Harness::new(WAITING_CHILD, Wire::Anthropic).await;
    h.write(
        ".cadre/agents/helper.md",
        "---\nname: helper\ndescription: Waits.\ntools: Read, Bash\n---\nYou are HELPER.\n",
    );
    h.write("a.txt", "a\n");
    let mut run = h.spawn_json(&["exec", "--json", "--allow", "Bash", "go"]);
    run.wait_for("subagent_progress", 1).await;
    run.wait_for_nudging("subagent_backgrounded", |run| run.signal(libc::SIGUSR1))
        .await;
    // While it still runs (it waits for `go`): in the background, its call counted.
    let child_row = |h: &Harness| tasks(h).into_iter().find(|r| r.kind == TaskKind::Subagent);
    wait_until("the child's row says background, 1 tool call", || {
        child_row(&h)
            .is_some_and(|r| r.status == TaskStatus::Running && r.background && r.tool_calls >= 1)
    })
    .await;
    h.write("go", "");
    let (status, _) = run.finish().await;
    assert!(status.success());
    let row = child_row(&h).unwrap();
    assert_eq!(row.status, TaskStatus::Succeeded, "{row:?}");
    assert!(row.background, "{row:?}");
    assert_eq!(row.tool_calls, 2, "{row:?}");
}
