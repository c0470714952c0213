//! An MCP tool result as the model gets it: text as text, resources as text
//! with their URI, images kept aside for models that take them (a
//! placeholder in the text says where each one was), `isError` as a failed
//! call. Read from the result's JSON (the protocol's own shape), so what a
//! server sends is what is read.

use serde_json::Value;

use crate::tools::untrusted_text::sanitize_report;

/// Image types the model APIs take.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];
/// Largest image passed on: 5 MB (Anthropic's limit per image), as base64.
const MAX_IMAGE_BASE64_BYTES: usize = 5 * 1024 * 1024 / 3 * 4;

/// An image a tool returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpImage {
    /// `image/png`, …
    pub mime_type: String,
    /// Base64 data.
    pub data: String,
}

/// A tool call's result, converted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct McpResult {
    /// What the model reads.
    pub text: String,
    /// Images, in order.
    pub images: Vec<McpImage>,
    /// The call failed.
    pub is_error: bool,
}

impl McpResult {
    /// A failed call, saying why.
    pub fn error(text: String) -> McpResult {
        McpResult {
            text,
            images: Vec::new(),
            is_error: true,
        }
    }
}

/// Converts a `CallToolResult` (as JSON).
pub fn convert_result(result: &Value) -> McpResult {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for block in blocks {
        let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
        match s("type") {
            "text" => parts.push(s("text").to_string()),
            "image" => {
                let mime = s("mimeType");
                let data = s("data");
                parts.push(format!(
                    "[image {}: {} bytes]",
                    if mime.is_empty() { "?" } else { mime },
                    data.len() / 4 * 3
                ));
                // Only what a model API takes: its four types, 5 MB at most.
                if IMAGE_TYPES.contains(&mime) && data.len() <= MAX_IMAGE_BASE64_BYTES {
                    images.push(McpImage {
                        mime_type: mime.to_string(),
                        data: data.to_string(),
                    });
                }
            }
            "audio" => parts.push(format!("[audio {}: not shown]", s("mimeType"))),
            "resource_link" => {
                let name = s("name");
                let mut line = format!("[resource link] {}", s("uri"));
                if !name.is_empty() {
                    line.push_str(&format!(" ({name})"));
                }
                if let Some(d) = block.get("description").and_then(Value::as_str) {
                    line.push_str(&format!(": {d}"));
                }
                parts.push(line);
            }
            "resource" => {
                let res = block.get("resource").cloned().unwrap_or(Value::Null);
                let r = |k: &str| res.get(k).and_then(Value::as_str).unwrap_or_default();
                if let Some(text) = res.get("text").and_then(Value::as_str) {
                    parts.push(format!("[resource {}]\n{text}", r("uri")));
                } else {
                    parts.push(format!(
                        "[resource {}: {} data, not shown]",
                        r("uri"),
                        if r("mimeType").is_empty() {
                            "binary"
                        } else {
                            r("mimeType")
                        }
                    ));
                }
            }
            other => parts.push(format!("[content of type {other:?} not shown]")),
        }
    }
    // A result with only structured content still says something.
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        parts.push(structured.to_string());
    }
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    McpResult {
        // What a server says is data, never the harness's own markup.
        text: sanitize_report(&parts.join("\n")),
        images,
        is_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_content_kind_becomes_text_and_images_are_kept() {
        let r = convert_result(&json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "https://x/doc", "name": "doc"},
            {"type": "resource", "resource": {"uri": "file:///n.txt", "text": "notes"}},
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "AA==", "mimeType": "application/pdf"}}
        ]}));
        assert!(!r.is_error);
        assert_eq!(
            r.text,
            "hello\n[image image/png: 3 bytes]\n[resource link] https://x/doc (doc)\n\
             [resource file:///n.txt]\nnotes\n[resource file:///b: application/pdf data, not shown]"
        );
        assert_eq!(r.images.len(), 1);
        let err =
            convert_result(&json!({"content": [{"type": "text", "text": "bad"}], "isError": true}));
        assert!(err.is_error);
        assert_eq!(err.text, "bad");
        let structured = convert_result(&json!({"content": [], "structuredContent": {"n": 1}}));
        assert_eq!(structured.text, r#"{"n":1}"#);
    }
}
