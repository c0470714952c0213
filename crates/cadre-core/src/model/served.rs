//! What a local model server says of itself: the context size it serves a
//! model with (llama.cpp's `GET /props`, Ollama's `POST /api/show`), so a
//! small window is known before the first request rather than guessed.

use std::time::Duration;

use serde_json::Value;

use super::{ModelClient, Provider};

/// How long each question to the server may take: it answers from memory.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Ollama's context size when the model sets no `num_ctx` of its own.
const OLLAMA_DEFAULT_NUM_CTX: u64 = 4096;

impl ModelClient {
    /// The context window a loopback server on the OpenAI wire serves the
    /// model in use with, when it says; `None` for any other endpoint, or
    /// when neither question gets an answer.
    pub async fn served_context_window(&self) -> Option<u64> {
        let config = self.config();
        if config.provider != Provider::OpenAI {
            return None;
        }
        let base = super::parse_base_url(&config.base_url).ok()?;
        if !super::url_is_loopback(&base) {
            return None;
        }
        // The server's root: the OpenAI routes sit under `/v1`.
        let mut root = base.clone();
        let path = base.path().trim_end_matches('/');
        root.set_path(path.strip_suffix("/v1").unwrap_or(path));
        let at = |tail: &str| {
            let mut url = root.clone();
            let path = format!("{}{tail}", root.path().trim_end_matches('/'));
            url.set_path(&path);
            url
        };
        let http = self.http();
        // With the key the chat requests carry: a server started with one
        // (`llama-server --api-key`) wants it on every route.
        let mut headers = self.headers().ok()?;
        headers.remove("content-type");
        let props = http
            .get(at("/props"))
            .headers(headers.clone())
            .timeout(PROBE_TIMEOUT)
            .send()
            .await;
        if let Some(n) = json_of(props).await.as_ref().and_then(llama_cpp_window) {
            return Some(n);
        }
        let show = http
            .post(at("/api/show"))
            .headers(headers)
            .timeout(PROBE_TIMEOUT)
            .json(&serde_json::json!({"model": config.model}))
            .send()
            .await;
        json_of(show).await.as_ref().and_then(ollama_window)
    }
}

/// A successful answer's JSON body.
async fn json_of(sent: Result<reqwest::Response, reqwest::Error>) -> Option<Value> {
    let resp = sent.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let bytes = tokio::time::timeout(PROBE_TIMEOUT, resp.bytes())
        .await
        .ok()?
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// llama.cpp: a slot's context, `default_generation_settings.n_ctx` (the
/// top-level `n_ctx` of some builds).
fn llama_cpp_window(props: &Value) -> Option<u64> {
    props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
}

/// Ollama: the model's `num_ctx` parameter, else Ollama's default (never
/// more than the model's own `*.context_length`).
fn ollama_window(show: &Value) -> Option<u64> {
    let num_ctx = show
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|params| {
            params.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse::<u64>().ok())
                    .flatten()
            })
        });
    if let Some(n) = num_ctx.filter(|n| *n > 0) {
        return Some(n);
    }
    let trained = show
        .get("model_info")
        .and_then(Value::as_object)
        .and_then(|info| {
            info.iter()
                .find(|(k, _)| k.ends_with(".context_length"))
                .and_then(|(_, v)| v.as_u64())
        });
    // Only a server that answers as Ollama does (with `model_info` or
    // `parameters`) gets Ollama's default.
    if trained.is_none() && show.get("parameters").is_none() {
        return None;
    }
    Some(trained.map_or(OLLAMA_DEFAULT_NUM_CTX, |t| t.min(OLLAMA_DEFAULT_NUM_CTX)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn windows_are_read_as_each_server_reports_them() {
        let props = json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1});
        assert_eq!(llama_cpp_window(&props), Some(8192));
        assert_eq!(llama_cpp_window(&json!({"n_ctx": 4096})), Some(4096));
        assert_eq!(llama_cpp_window(&json!({"n_ctx": 0})), None);
        let show = json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx 16384", "model_info": {"qwen2.context_length": 32768}});
        assert_eq!(ollama_window(&show), Some(16384));
        let show = json!({"model_info": {"llama.context_length": 131072}});
        assert_eq!(ollama_window(&show), Some(OLLAMA_DEFAULT_NUM_CTX));
        let show = json!({"model_info": {"qwen2.context_length": 2048}});
        assert_eq!(ollama_window(&show), Some(2048));
        assert_eq!(ollama_window(&json!({"error": "model not found"})), None);
    }
}
