//! `tools: Bash(git:*)` in a definition: the child gets Bash restricted to
//! the commands the rule covers, whatever the session's own rules allow.

use crate::common;

use common::{Harness, Wire, rule_records, stderr, tool_results};

const SCRIPT: &str = r#"
rules:
  - name: parent
    when: { system: "You are cadre" }
    replies:
      - tool_calls:
          - { name: Agent, input: { description: "git only", prompt: "git-task", subagent_type: "gitter" } }
      - text: "Parent done."
  - name: child
    when: { first_user: "git-task" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "git --version", description: "v" } }
          - { name: Bash, input: { command: "echo other > other.txt", description: "o" } }
      - tool_calls:
          - { name: Agent, input: { description: "nested", prompt: "nested-task", subagent_type: "free" } }
      - text: "child done"
  - name: nested
    when: { first_user: "nested-task" }
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "echo nested > nested.txt", description: "n" } }
      - text: "nested done"
"#;

#[tokio::test]
async fn a_scoped_bash_entry_allows_only_its_commands_and_binds_the_childs_children() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let agents = h.data_dir().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("gitter.md"),
        "---\nname: gitter\ndescription: Runs git.\ntools: Read, Bash(git:*), Agent\n---\nYou run git.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("free.md"),
        "---\nname: free\ndescription: Anything.\ntools: Bash\n---\nYou are free.\n",
    )
    .unwrap();
    // Children may start children.
    std::fs::write(
        h.data_dir().join("config.toml"),
        "[subagents]\nmax_depth = 2\n",
    )
    .unwrap();
    let out = h.cadre(&["exec", "--json", "--allow", "Bash", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let child = rule_records(&records, "child");
    let results = tool_results(&child[1].body);
    assert_eq!(results.len(), 2, "{results:?}");
    let (version, is_error) = &results[0];
    assert!(!is_error && version.contains("git version"), "{version}");
    let (other, is_error) = &results[1];
    assert!(*is_error, "{other}");
    assert!(
        other.contains("this agent's tools allow Bash only as Bash(git:*)"),
        "{other}"
    );
    assert!(!h.path("other.txt").exists());
    // Its own child, though defined with plain Bash, keeps to the rule too.
    let nested = rule_records(&records, "nested");
    let (text, is_error) = tool_results(&nested[1].body).remove(0);
    assert!(is_error && text.contains("Bash(git:*)"), "{text}");
    assert!(!h.path("nested.txt").exists());
}
