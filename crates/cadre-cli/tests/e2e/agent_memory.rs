//! A definition's `memory`: its folder's `MEMORY.md` in the child's first
//! request, and writes there without asking for that child only.

use crate::common;

use common::{Harness, Wire, rule_records, stderr, system_text, tool_results};

#[tokio::test]
async fn a_child_with_memory_reads_and_keeps_it_and_a_sibling_without_is_refused() {
    // The user-scope path is known before the mock's script is written.
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir_in(common::non_temp_base()).unwrap();
    let user_memory = home.path().join("cadre/agent-memory/diarist/MEMORY.md");
    let script = format!(
        r#"
rules:
  - name: keeper
    when: {{ first_user: "keep-task" }}
    replies:
      - tool_calls:
          - {{ name: Read, input: {{ file_path: ".cadre/agent-memory/keeper/MEMORY.md" }} }}
      - tool_calls:
          - {{ name: Write, input: {{ file_path: ".cadre/agent-memory/keeper/MEMORY.md", content: "the answer is 43\n" }} }}
      - text: "kept"
  - name: other
    when: {{ first_user: "other-task" }}
    replies:
      - tool_calls:
          - {{ name: Write, input: {{ file_path: ".cadre/agent-memory/keeper/MEMORY.md", content: "overwritten\n" }} }}
      - text: "tried"
  - name: diarist
    when: {{ first_user: "diary-task" }}
    replies:
      - tool_calls:
          - {{ name: Write, input: {{ file_path: "{user_memory}", content: "day one\n" }} }}
      - text: "written"
  - name: parent
    replies:
      - tool_calls:
          - {{ name: Agent, input: {{ description: "keep", prompt: "keep-task", subagent_type: "keeper" }} }}
          - {{ name: Agent, input: {{ description: "other", prompt: "other-task", subagent_type: "other" }} }}
          - {{ name: Agent, input: {{ description: "diary", prompt: "diary-task", subagent_type: "diarist" }} }}
      - text: "parent done"
"#,
        user_memory = user_memory.display()
    );
    let h = Harness::from_parts(
        project,
        home,
        cadre_mock::MockServer::start(&script, None).await.unwrap(),
        Wire::Anthropic,
    );
    h.write(
        ".claude/agents/keeper.md",
        "---\nname: keeper\ndescription: remembers\ntools: Bash\nmemory: project\n---\nKeep notes.\n",
    );
    h.write(
        ".claude/agents/other.md",
        "---\nname: other\ndescription: no memory\n---\nWork.\n",
    );
    // A user memory is the user's own definitions' (a project's would be
    // refused in this untrusted folder).
    let diarist = h.data_dir().join("agents/diarist.md");
    std::fs::create_dir_all(diarist.parent().unwrap()).unwrap();
    std::fs::write(
        &diarist,
        "---\nname: diarist\ndescription: a user memory\nmemory: user\n---\nWrite.\n",
    )
    .unwrap();
    h.write(".cadre/agent-memory/keeper/MEMORY.md", "the answer is 42\n");
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();

    let keeper = rule_records(&records, "keeper");
    let system = system_text(&keeper[0].body);
    assert!(system.contains("# Your memory"), "{system}");
    assert!(system.contains("the answer is 42"), "{system}");
    let names: Vec<&str> = keeper[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["Read", "Write", "Edit", "Bash"],
        "memory brings Read, Write, Edit"
    );
    let kept = tool_results(&keeper[2].body);
    assert!(
        kept.iter().all(|(_, err)| !err),
        "read and kept without asking: {kept:?}"
    );

    let other = rule_records(&records, "other");
    assert!(!system_text(&other[0].body).contains("# Your memory"));
    let (text, err) = tool_results(&other[1].body).remove(0);
    assert!(err, "another agent's memory is not its to write: {text}");

    assert_eq!(
        h.read(".cadre/agent-memory/keeper/MEMORY.md"),
        "the answer is 43\n"
    );
    assert!(!tool_results(&rule_records(&records, "diarist")[1].body)[0].1);
    assert_eq!(std::fs::read_to_string(&user_memory).unwrap(), "day one\n");
}
