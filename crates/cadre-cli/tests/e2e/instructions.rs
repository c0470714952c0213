//! Project instructions through the binary: the CLAUDE.md hierarchy, imports
//! and CLAUDE.local.md in the system prompt in order, a cyclic import refused
//! with a warning, a subdirectory's CLAUDE.md given once on the first Read
//! there, and Explore running without any of them.

use crate::common;

use common::line_session::Interactive;
use common::{Harness, Wire, events, rule_records, stderr, system_text, tool_results};
use serde_json::Value;

/// Where `needle` is in `hay`, failing the test if it is not there.
fn at(hay: &str, needle: &str) -> usize {
    hay.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in the system prompt:\n{hay}"))
}

#[tokio::test]
async fn the_hierarchy_imports_and_local_file_reach_the_prompt_in_order() {
    for wire in common::BOTH_WIRES {
        let h = Harness::new("rules:\n  - replies: [{ text: ok }]\n", wire).await;
        std::fs::create_dir_all(h.path(".git")).unwrap();
        h.write("CLAUDE.md", "ROOT-RULES; also read @docs/extra.md");
        h.write("docs/extra.md", "IMPORTED-RULES");
        h.write("mid/CLAUDE.md", "MID-RULES");
        h.write("mid/work/CLAUDE.local.md", "LOCAL-RULES");
        let user_file = h.home.path().join(".claude/CLAUDE.md");
        std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
        std::fs::write(&user_file, "USER-RULES").unwrap();

        let out = h
            .command(&["exec", "--json", "hello"], &[])
            .current_dir(h.path("mid/work"))
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        // No warning about instruction files (others, like the sandbox's, may come).
        let warnings: Vec<Value> = events(&out)
            .into_iter()
            .filter(|e| e["type"] == "warning" && e["message"].to_string().contains(".md"))
            .collect();
        assert!(warnings.is_empty(), "{warnings:?}");

        let system = system_text(&h.records()[0].body);
        let order = [
            at(&system, "USER-RULES"),
            at(&system, "ROOT-RULES"),
            at(&system, "IMPORTED-RULES"),
            at(&system, "MID-RULES"),
            at(&system, "LOCAL-RULES"),
        ];
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{system}");
        // Each file is labelled with its path, just before its text.
        let label = format!(
            "Contents of {} (imported by {}):\n\nIMPORTED-RULES",
            h.path("docs/extra.md").display(),
            h.path("CLAUDE.md").display()
        );
        at(&system, &label);
        at(
            &system,
            &format!(
                "Contents of {} (the user's private",
                h.path("mid/work/CLAUDE.local.md").display()
            ),
        );
    }
}

#[tokio::test]
async fn a_cyclic_import_is_refused_with_a_warning() {
    let h = Harness::new("rules:\n  - replies: [{ text: ok }]\n", Wire::Anthropic).await;
    h.write("CLAUDE.md", "TOP @a.md");
    h.write("a.md", "A-TEXT @b.md");
    h.write("b.md", "B-TEXT @a.md");
    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings: Vec<String> = events(&out)
        .iter()
        .filter(|e| e["type"] == "warning")
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .filter(|m| m.contains(".md"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("import cycle"), "{warnings:?}");
    assert!(
        warnings[0].starts_with(&h.path("b.md").display().to_string()),
        "{warnings:?}"
    );
    // Each file still appears once.
    let system = system_text(&h.records()[0].body);
    assert_eq!(system.matches("A-TEXT").count(), 1, "{system}");
    assert_eq!(system.matches("B-TEXT").count(), 1, "{system}");
}

#[tokio::test]
async fn a_subdirectory_claude_md_reaches_the_model_once_on_the_first_read_there() {
    let script = r#"
rules:
  - replies:
      - tool_calls:
          - { name: Read, input: { file_path: "src/parser/lex.rs" } }
      - tool_calls:
          - { name: Read, input: { file_path: "src/parser/parse.rs" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write("CLAUDE.md", "TOP-RULES");
    h.write("src/parser/CLAUDE.md", "PARSER-RULES");
    h.write("src/parser/lex.rs", "fn lex() {}\n");
    h.write("src/parser/parse.rs", "fn parse() {}\n");
    let out = h.cadre(&["exec", "--json", "hello"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    assert!(!system_text(&records[0].body).contains("PARSER-RULES"));
    let results = tool_results(&records.last().unwrap().body);
    assert_eq!(results.len(), 2, "{results:?}");
    let first = &results[0].0;
    assert!(first.contains("fn lex()"), "{first}");
    let reminder = first
        .split_once("<system-reminder>")
        .map(|(_, r)| r)
        .unwrap_or_else(|| panic!("no reminder: {first}"));
    assert!(reminder.contains(&format!(
        "Contents of {}",
        h.path("src/parser/CLAUDE.md").display()
    )));
    assert!(reminder.contains("PARSER-RULES"), "{reminder}");
    assert!(reminder.trim_end().ends_with("</system-reminder>"));
    // The directory's root file is already in the prompt: not repeated.
    assert!(!reminder.contains("TOP-RULES"), "{reminder}");
    let second = &results[1].0;
    assert!(second.contains("fn parse()"), "{second}");
    assert!(!second.contains("PARSER-RULES"), "{second}");
}

#[tokio::test]
async fn explore_runs_without_project_instructions() {
    let script = r#"
rules:
  - name: explore
    when: { first_user: "explore-task" }
    replies:
      - tool_calls:
          - { name: Read, input: { file_path: "src/parser/lex.rs" } }
      - text: "explored"
  - name: general
    when: { first_user: "general-task" }
    replies:
      - text: "generally done"
  - name: parent
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "e", prompt: "explore-task", subagent_type: "Explore" } }
      - tool_calls:
          - { name: Agent, input: { description: "g", prompt: "general-task", subagent_type: "general-purpose" } }
      - text: "parent done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write("CLAUDE.md", "PROJECT-RULES");
    h.write("src/parser/CLAUDE.md", "PARSER-RULES");
    h.write("src/parser/lex.rs", "fn lex() {}\n");
    let out = h.cadre(&["exec", "--json", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let explore = rule_records(&records, "explore");
    assert_eq!(explore.len(), 2);
    for r in &explore {
        let system = system_text(&r.body);
        assert!(system.contains("You are Explore"), "{system}");
        assert!(!system.contains("PROJECT-RULES"), "{system}");
    }
    // Its Read in a subdirectory brings no instructions either.
    let read = tool_results(&explore[1].body);
    assert!(read[0].0.contains("fn lex()"), "{read:?}");
    assert!(!read[0].0.contains("PARSER-RULES"), "{read:?}");
    // A general-purpose child and the parent do carry them.
    let general = rule_records(&records, "general");
    assert!(system_text(&general[0].body).contains("PROJECT-RULES"));
    let parent = rule_records(&records, "parent");
    assert!(system_text(&parent[0].body).contains("PROJECT-RULES"));
}

#[tokio::test]
async fn memory_lists_the_loaded_files_with_sizes() {
    let h = Harness::new("rules:\n  - replies: [{ text: ok }]\n", Wire::Anthropic).await;
    std::fs::create_dir_all(h.path(".git")).unwrap();
    h.write("CLAUDE.md", "rules @notes.md");
    h.write("notes.md", &"n".repeat(3000));
    let pty = common::Pty::open();
    let mut cadre = Interactive::start(&h, &pty, &[]);
    pty.type_line("/memory");
    let claude_line = format!("  {}  15 B  (project)", h.path("CLAUDE.md").display());
    cadre.wait_for_stderr(&claude_line, 1).await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    let err = cadre.stderr();
    let notes_line = format!(
        "  {}  2.9 kB  (imported by {})",
        h.path("notes.md").display(),
        h.path("CLAUDE.md").display()
    );
    assert!(err.contains(&notes_line), "{err}");
    // Answered in cadre: nothing reached the model.
    assert!(h.records().is_empty());
}
