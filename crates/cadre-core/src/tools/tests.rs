use super::*;

#[test]
fn the_shared_specs_follow_every_change_to_the_set() {
    let names =
        |specs: &crate::model::ToolSpecs| specs.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    let mut reg = ToolRegistry::builtin();
    let first = reg.model_specs(false);
    assert_eq!(names(&first), reg.names());
    // Made once: the next request shares them (and their encodings).
    assert!(std::ptr::eq(&first[0], &reg.model_specs(false)[0]));
    reg.retain(|t| t.name() != "Bash");
    assert!(!names(&reg.model_specs(false)).contains(&"Bash".to_string()));
    reg.insert(Arc::new(BashTool::default()));
    assert_eq!(
        names(&reg.model_specs(false)).last().map(String::as_str),
        Some("Bash")
    );
    let short = reg.model_specs(true);
    assert!(short.iter().all(|s| !s.description.contains("\n\n")));
    assert_eq!(names(&short), names(&reg.model_specs(false)));
}

#[test]
fn registries_of_the_same_tool_objects_share_one_spec_set() {
    // A batch's children: each a registry of the parent's own objects.
    let parent = ToolRegistry::builtin();
    let kept: Vec<Arc<dyn Tool>> = parent.tools()[..2].to_vec();
    let a = ToolRegistry::from_tools(kept.clone()).model_specs(false);
    let b = ToolRegistry::from_tools(kept.clone()).model_specs(false);
    assert!(std::ptr::eq(&a[0], &b[0]), "made once, shared");
    // The short set is a set of its own.
    let short = ToolRegistry::from_tools(kept.clone()).model_specs(true);
    assert!(!std::ptr::eq(&a[0], &short[0]));
    // Objects of the same names but not the same objects get their own,
    // even once the first ones are gone (their addresses stay reserved).
    drop(parent);
    drop(kept);
    let fresh = ToolRegistry::builtin();
    let c = ToolRegistry::from_tools(fresh.tools()[..2].to_vec()).model_specs(false);
    assert!(!std::ptr::eq(&a[0], &c[0]));
    assert_eq!(
        a.iter().map(|s| &s.name).collect::<Vec<_>>(),
        c.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
}

#[test]
fn a_compact_spec_keeps_first_sentences() {
    let spec = crate::model::ToolSpec {
        name: "Read".into(),
        description: "Reads a file. Lines are numbered.\n\nMore notes.".into(),
        input_schema: serde_json::json!({"type": "object", "properties": {
            "file_path": {"type": "string", "description": "The path. Absolute or relative."}
        }}),
    };
    let c = compact_spec(spec);
    assert_eq!(c.description, "Reads a file.");
    assert_eq!(
        c.input_schema["properties"]["file_path"]["description"],
        "The path."
    );
    assert_eq!(first_sentence(&"x".repeat(500)).chars().count(), 200);
}

#[test]
fn bounds_are_read_from_the_schema_only_for_a_call_with_a_number() {
    let schema = || serde_json::json!({"properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 5}}});
    let call = |v: serde_json::Value| v.as_object().cloned().unwrap();
    let unused = || -> Value { panic!("the schema was made for a call without numbers") };
    assert!(check_bounds_with(unused, &call(serde_json::json!({"path": "a"}))).is_ok());
    assert!(check_bounds_with(schema, &call(serde_json::json!({"limit": 3}))).is_ok());
    let out =
        check_bounds_with(schema, &call(serde_json::json!({"path": "a", "limit": 9}))).unwrap_err();
    assert!(
        out.content
            .contains("limit must be between 1 and 5 (got 9)"),
        "{}",
        out.content
    );
}

#[test]
fn cap_output_cuts_on_char_boundary_with_marker() {
    let text = "é".repeat(20); // 40 bytes
    let out = cap_output(text, 27);
    // 21 bytes of marker room leave 6 bytes: three characters.
    assert_eq!(out, "ééé\n[truncated 34 bytes]");
    assert!(out.len() <= 27);
}

#[test]
fn capping_twice_keeps_one_marker_with_the_first_count() {
    let text = "x".repeat(205_000);
    let once = cap_output(text, DEFAULT_OUTPUT_CAP);
    assert!(once.len() <= DEFAULT_OUTPUT_CAP, "{}", once.len());
    let kept = once.bytes().take_while(|b| *b == b'x').count();
    assert!(
        once.ends_with(&format!("\n[truncated {} bytes]", 205_000 - kept)),
        "{}",
        &once[kept..]
    );
    assert_eq!(cap_output(once.clone(), DEFAULT_OUTPUT_CAP), once);
}

#[test]
fn every_alias_names_a_tool_and_the_registry_finds_it() {
    let registry = ToolRegistry::builtin();
    let task_tools: [&dyn Tool; 3] = [&TaskOutputTool, &TaskStopTool, &TaskListTool];
    for (alias, target) in crate::tool_names::TOOL_ALIASES {
        // `Agent` is the subagents' tool, not a built-in here.
        let known = *target == "Agent"
            || registry.names().contains(target)
            || task_tools.iter().any(|t| t.name() == *target);
        assert!(known, "{alias} → {target}: no such tool");
        if let Some(tool) = registry.get(alias) {
            assert_eq!(tool.name(), *target, "{alias}");
        }
    }
    let name_of = |alias: &str| registry.get(alias).map(|t| t.name().to_string());
    assert_eq!(name_of("LS").as_deref(), Some("Glob"));
    assert_eq!(name_of("MultiEdit").as_deref(), Some("Edit"));
    assert_eq!(name_of("bash").as_deref(), Some("Bash"));
}

#[test]
fn cap_output_leaves_short_text_alone() {
    assert_eq!(cap_output("abc".into(), 3), "abc");
}

#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Args {
    a: String,
    b: Option<bool>,
}

fn parsed(raw: &str) -> Result<Args, ToolOutput> {
    parse_args::<Args>(&parse_input(raw)?)
}

#[test]
fn parse_args_is_strict() {
    assert!(parsed(r#"{"a":"x"}"#).is_ok());
    assert!(parsed(r#" {"a":"x","b":false} "#).is_ok());
    for bad in [
        r#"{"a":"x","c":1}"#,
        r#"{"a":1}"#,
        r#"{}"#,
        r#"{"a":"#,
        r#"{"a":"x"} {"a":"y"}"#,
        r#"{"a":"x","b":"false"}"#,
    ] {
        let err = parsed(bad).unwrap_err();
        assert!(err.is_error);
        assert!(
            err.content.starts_with("invalid_arguments: "),
            "{bad}: {}",
            err.content
        );
    }
}

#[test]
fn parse_input_wants_one_object_with_unique_keys() {
    assert_eq!(parse_input("").unwrap(), ToolInput::new());
    assert_eq!(
        parse_input(r#"{"a":{"b":[1,-2,0.5,null,true]}}"#).unwrap(),
        object(serde_json::json!({"a":{"b":[1,-2,0.5,null,true]}}))
    );
    for (bad, why) in [
        (r#"["x", null, null, null, false]"#, "not an array"),
        (r#""{\"a\":\"x\"}""#, "not a string"),
        ("7", "not a number"),
        ("null", "not null"),
        ("true", "not a boolean"),
        (r#"{"a":"x","a":"y"}"#, "duplicate key `a`"),
        (r#"{"a":"x","b":{"c":1,"c":2}}"#, "duplicate key `c`"),
        (r#"{"a":[{"c":1,"c":2}]}"#, "duplicate key `c`"),
    ] {
        let err = parse_input(bad).unwrap_err();
        assert!(err.is_error);
        assert!(
            err.content.starts_with("invalid_arguments: ") && err.content.contains(why),
            "{bad}: {}",
            err.content
        );
    }
}
