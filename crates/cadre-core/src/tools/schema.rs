//! Tool input schemas derived from the argument structs that `parse_args`
//! reads, so the schema a model is shown cannot drift from what a call may
//! contain. Field descriptions come from the fields' doc comments.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// `schema` with the description of its property `field` replaced (a tool
/// whose text depends on the tools beside it).
pub fn with_description(mut schema: Value, field: &str, text: &str) -> Value {
    if let Some(prop) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut(field))
        .and_then(Value::as_object_mut)
    {
        prop.insert("description".into(), Value::String(text.into()));
    }
    schema
}

/// The JSON schema of a tool's arguments `T`, in the plain form models are
/// shown: no meta-schema, title or `$defs`, optional fields not nullable, and
/// a string enum as `enum`. The output depends only on `T`, so it is the
/// same bytes at every run (the prompt cache depends on it).
pub fn input_schema<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.meta_schema = None;
        s.inline_subschemas = true;
    });
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Value::Object(schema) = &mut value {
        // The struct's doc comment is for Rust readers; the tool's description says what it does.
        schema.remove("description");
        tidy(schema);
    }
    value
}

/// Rewrites one schema object (and its subschemas) into the plain form.
fn tidy(schema: &mut Map<String, Value>) {
    schema.remove("$schema");
    schema.remove("title");
    // `Option<T>` is `T` or null to serde; a model is told only `T`: leaving a field out is how it says none.
    drop_null_alternative(schema);
    if schema.get("type").and_then(Value::as_str) == Some("integer") {
        // `uint64` and the like say nothing the bounds don't.
        schema.remove("format");
    }
    collapse_string_consts(schema);
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            if let Value::Object(property) = property {
                tidy(property);
            }
        }
    }
    if let Some(Value::Object(items)) = schema.get_mut("items") {
        tidy(items);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(alternatives)) = schema.get_mut(key) {
            for alternative in alternatives {
                if let Value::Object(alternative) = alternative {
                    tidy(alternative);
                }
            }
        }
    }
}

/// `"type": ["T", "null"]` → `"type": "T"` (and `null` out of an `enum`);
/// `anyOf: [S, {"type": "null"}]` → `S` merged in.
fn drop_null_alternative(schema: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            schema.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    let is_null = |s: &Value| s.get("type").and_then(Value::as_str) == Some("null");
    if let Some(Value::Array(alternatives)) = schema.get("anyOf")
        && alternatives.len() == 2
        && let Some(null_at) = alternatives.iter().position(is_null)
    {
        let kept = alternatives[1 - null_at].clone();
        schema.remove("anyOf");
        if let Value::Object(kept) = kept {
            for (key, value) in kept {
                // The field's own description wins over the type's.
                schema.entry(key).or_insert(value);
            }
        }
    }
}

/// `oneOf` of string constants (an enum whose variants have doc comments)
/// → `"type": "string", "enum": [...]`: the variants' docs are for Rust readers.
fn collapse_string_consts(schema: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = schema.get("oneOf") else {
        return;
    };
    let consts: Option<Vec<Value>> = alternatives
        .iter()
        .map(|a| a.get("const").filter(|c| c.is_string()).cloned())
        .collect();
    let Some(consts) = consts else {
        return;
    };
    schema.remove("oneOf");
    schema.insert("type".into(), Value::String("string".into()));
    schema.insert("enum".into(), Value::Array(consts));
}

/// Checks shared by the tools' schema tests: the parser and the schema agree.
#[cfg(test)]
pub(crate) mod testing {
    use schemars::JsonSchema;
    use serde::de::DeserializeOwned;
    use serde_json::Value;

    use super::input_schema;
    use crate::tools::{Tool, object, parse_args};

    /// Whether `value` satisfies `schema`, for the keywords tool schemas use;
    /// any other keyword fails, so a new kind of constraint cannot go unchecked.
    pub(crate) fn schema_accepts(schema: &Value, value: &Value) -> Result<(), String> {
        let Value::Object(schema) = schema else {
            return Err(format!("not a schema: {schema}"));
        };
        for (keyword, rule) in schema {
            match keyword.as_str() {
                "description" | "default" => {}
                "type" => {
                    let is = |t: &Value| match t.as_str() {
                        Some("object") => Ok(value.is_object()),
                        Some("string") => Ok(value.is_string()),
                        Some("integer") => Ok(value.is_u64() || value.is_i64()),
                        Some("boolean") => Ok(value.is_boolean()),
                        Some("array") => Ok(value.is_array()),
                        _ => Err(format!("unsupported type {rule}")),
                    };
                    // One type, or a list of types any of which will do.
                    let ok = match rule.as_array() {
                        Some(types) => types
                            .iter()
                            .map(is)
                            .collect::<Result<Vec<_>, _>>()?
                            .contains(&true),
                        None => is(rule)?,
                    };
                    if !ok {
                        return Err(format!("{value} is not of type {rule}"));
                    }
                }
                "enum" => {
                    if !rule.as_array().is_some_and(|values| values.contains(value)) {
                        return Err(format!("{value} is not one of {rule}"));
                    }
                }
                "minimum" | "maximum" => {
                    let (Some(bound), Some(n)) = (rule.as_f64(), value.as_f64()) else {
                        continue;
                    };
                    if (keyword == "minimum" && n < bound) || (keyword == "maximum" && n > bound) {
                        return Err(format!("{value} is outside {keyword} {rule}"));
                    }
                }
                "minLength" => {
                    let min = rule.as_u64().unwrap_or(0);
                    if value
                        .as_str()
                        .is_some_and(|s| (s.chars().count() as u64) < min)
                    {
                        return Err(format!("{value} is shorter than {min}"));
                    }
                }
                "required" => {
                    for name in rule.as_array().into_iter().flatten() {
                        let name = name.as_str().unwrap_or_default();
                        if value.get(name).is_none() {
                            return Err(format!("missing required `{name}` in {value}"));
                        }
                    }
                }
                "properties" => {
                    let (Some(properties), Some(fields)) = (rule.as_object(), value.as_object())
                    else {
                        continue;
                    };
                    for (name, field) in fields {
                        if let Some(property) = properties.get(name) {
                            schema_accepts(property, field).map_err(|e| format!("{name}: {e}"))?;
                        }
                    }
                }
                "additionalProperties" => {
                    if rule != &Value::Bool(false) {
                        return Err(format!("unsupported additionalProperties {rule}"));
                    }
                    let known = schema.get("properties").and_then(Value::as_object);
                    for name in value.as_object().into_iter().flat_map(|o| o.keys()) {
                        if !known.is_some_and(|k| k.contains_key(name)) {
                            return Err(format!("unknown field `{name}`"));
                        }
                    }
                }
                "items" => {
                    for item in value.as_array().into_iter().flatten() {
                        schema_accepts(rule, item)?;
                    }
                }
                other => return Err(format!("unsupported keyword `{other}`")),
            }
        }
        Ok(())
    }

    /// `tool`'s schema is `T`'s and the same bytes every time; each of
    /// `valid` is parsed by `T` and satisfies the schema; each of `invalid`
    /// is refused by both.
    pub(crate) fn check_tool<T: JsonSchema + DeserializeOwned>(
        tool: &dyn Tool,
        valid: &[Value],
        invalid: &[Value],
    ) {
        let name = tool.name();
        let shown = serde_json::to_string(&tool.input_schema()).unwrap();
        assert_eq!(
            shown,
            serde_json::to_string(&input_schema::<T>()).unwrap(),
            "{name}: shown schema is its argument struct's"
        );
        assert_eq!(
            shown,
            serde_json::to_string(&tool.input_schema()).unwrap(),
            "{name}: stable"
        );
        let schema = tool.input_schema();
        assert!(!valid.is_empty(), "{name}: no examples");
        for example in valid {
            let parsed = parse_args::<T>(&object(example.clone()));
            assert!(parsed.is_ok(), "{name}: parser refuses {example}");
            if let Err(e) = schema_accepts(&schema, example) {
                panic!("{name}: schema refuses {example}: {e}");
            }
        }
        for example in invalid {
            let parsed = parse_args::<T>(&object(example.clone()));
            assert!(parsed.is_err(), "{name}: parser accepts {example}");
            assert!(
                schema_accepts(&schema, example).is_err(),
                "{name}: schema accepts {example}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::testing::check_tool;
    use crate::tools::*;

    #[test]
    fn every_tool_schema_is_its_parser_and_stable() {
        check_tool::<super::super::read::Args>(
            &ReadTool,
            &[
                json!({"file_path": "a.txt"}),
                json!({"file_path": "/a", "offset": 3, "limit": 2}),
            ],
            &[
                json!({}),
                json!({"file_path": 1}),
                json!({"file_path": "a", "lines": 2}),
                json!({"file_path": "a", "offset": -1}),
            ],
        );
        check_tool::<super::super::write::Args>(
            &WriteTool,
            &[json!({"file_path": "a", "content": ""})],
            &[json!({"file_path": "a"}), json!({"content": "x"})],
        );
        check_tool::<super::super::edit::Args>(
            &EditTool,
            &[
                json!({"file_path": "a", "old_string": "x", "new_string": "y"}),
                json!({"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": true}),
            ],
            &[
                json!({"file_path": "a", "old_string": "x"}),
                json!({"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"}),
            ],
        );
        check_tool::<super::super::glob::Args>(
            &GlobTool,
            &[
                json!({"pattern": "**/*.rs"}),
                json!({"pattern": "*", "path": "src"}),
            ],
            &[json!({"path": "src"}), json!({"pattern": "*", "limit": 1})],
        );
        check_tool::<super::super::grep::Args>(
            &GrepTool,
            &[
                json!({"pattern": "foo"}),
                json!({
                    "pattern": "foo", "path": "src", "glob": "*.rs", "output_mode": "content",
                    "-i": true, "-n": false, "-A": 1, "-B": 2, "-C": 0, "head_limit": 5,
                    "multiline": true, "type": "rust"
                }),
                json!({"pattern": "f", "output_mode": "count"}),
                json!({"pattern": "f", "output_mode": "files_with_matches"}),
            ],
            &[
                json!({"pattern": "f", "output_mode": "lines"}),
                json!({"pattern": "f", "-A": -1}),
                json!({"pattern": "f", "-x": true}),
            ],
        );
        check_tool::<super::super::bash::Args>(
            &BashTool::default(),
            &[
                json!({"command": "ls"}),
                json!({
                    "command": "ls", "timeout": 600000, "description": "list",
                    "run_in_background": false, "sandbox": true
                }),
            ],
            &[
                json!({"command": 1}),
                json!({"command": "ls", "timeout": "100"}),
                json!({"command": "ls", "cwd": "/"}),
            ],
        );
        check_tool::<super::super::todo::Args>(
            &TodoWriteTool,
            &[
                json!({"todos": []}),
                json!({"todos": [
                    {"content": "a", "status": "pending"},
                    {"content": "b", "status": "in_progress", "activeForm": "Bing", "id": "2"},
                    {"content": "c", "status": "completed"}
                ]}),
            ],
            &[
                json!({"todos": [{"content": "a", "status": "done"}]}),
                json!({"todos": [{"content": "a", "status": "pending", "priority": "high"}]}),
                json!({"todos": [{"status": "pending"}]}),
                json!({"todos": "a"}),
            ],
        );
        check_tool::<super::super::task_tools::ListArgs>(
            &TaskListTool,
            &[json!({}), json!({"status": "running"})],
            &[json!({"status": 1}), json!({"all": true})],
        );
        check_tool::<super::super::task_tools::OutputArgs>(
            &TaskOutputTool,
            &[
                json!({"task_id": "t-1"}),
                json!({"task_id": "t-1", "offset": 0, "wait_ms": 30000}),
            ],
            &[json!({}), json!({"task_id": "t-1", "block": true})],
        );
        check_tool::<super::super::task_tools::StopArgs>(
            &TaskStopTool,
            &[json!({"task_id": "t-1"})],
            &[json!({}), json!({"shell_id": "t-1"})],
        );
    }

    /// The statuses `TaskList`'s schema offers are the ones its parser knows.
    #[test]
    fn task_list_statuses_parse() {
        let schema = TaskListTool.input_schema();
        let offered = schema["properties"]["status"]["enum"].as_array().unwrap();
        assert_eq!(offered.len(), 7);
        for status in offered {
            let status = status.as_str().unwrap();
            let parsed = crate::tasks::TaskStatus::parse(status).map(|s| s.as_str());
            assert_eq!(parsed, Some(status));
        }
    }
}
