//! Structured answers (`--json-schema`): the final answer of a run must be
//! JSON valid under the user's schema. The model is told the schema; a reply
//! that does not parse or validate gets the errors back and another try.

use serde_json::Value;

/// How many times a reply that is not valid is sent back before the run fails.
pub const MAX_RETRIES: u32 = 3;

/// The start of the error a run ends with when no reply validated (so the
/// result can say `error_max_structured_output_retries`).
pub const RETRIES_EXHAUSTED: &str = "the final answer did not match the JSON schema";

/// A compiled answer schema.
pub struct AnswerSchema {
    schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for AnswerSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerSchema")
            .field("schema", &self.schema)
            .finish()
    }
}

impl AnswerSchema {
    /// Compiles `schema`; the error says why it is not a usable schema.
    pub fn new(schema: Value) -> Result<AnswerSchema, String> {
        let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
        Ok(AnswerSchema { schema, validator })
    }

    /// What the system prompt says about the answer's form.
    pub fn instruction(&self) -> String {
        format!(
            "# Final answer format\nYour final answer (the reply that ends your work, after any tool use) must be a single JSON value, and nothing else, valid under this JSON Schema:\n{}",
            serde_json::to_string_pretty(&self.schema).unwrap_or_default()
        )
    }

    /// The JSON value of a final answer, or what is wrong with it (for the
    /// model to fix). The answer may be bare JSON or one fenced block.
    pub fn check(&self, answer: &str) -> Result<Value, String> {
        let Some(value) = json_in(answer) else {
            return Err("the reply is not JSON: answer with the JSON value alone".into());
        };
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(10)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(errors.join("\n"))
        }
    }

    /// The message that sends a reply back with what is wrong.
    pub fn retry_message(&self, problem: &str) -> String {
        format!(
            "Your final answer does not match the required JSON Schema:\n{problem}\nReply again with only the corrected JSON value."
        )
    }
}

/// The JSON in `text`: all of it, or the inside of its one fenced block.
fn json_in(text: &str) -> Option<Value> {
    let t = text.trim();
    if let Ok(v) = serde_json::from_str(t) {
        return Some(v);
    }
    let start = t.find("```")?;
    let after = &t[start + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.find("```")?;
    serde_json::from_str(body[..end].trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read_bare_or_fenced_and_checked() {
        let s = AnswerSchema::new(json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"]
        }))
        .unwrap();
        assert_eq!(s.check("{\"n\": 3}").unwrap(), json!({"n": 3}));
        assert_eq!(
            s.check("Here:\n```json\n{\"n\": 4}\n```").unwrap(),
            json!({"n": 4})
        );
        let wrong = s.check("{\"n\": \"x\"}").unwrap_err();
        assert!(wrong.contains("/n"), "{wrong}");
        assert!(s.check("no json").unwrap_err().contains("not JSON"));
        assert!(AnswerSchema::new(json!({"type": 5})).is_err());
    }
}
