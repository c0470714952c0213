//! End-to-end checks of the `cadre-mcp-fixture` binary over raw newline-delimited JSON-RPC.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("cadre-mcp-fixture-{}-{name}", std::process::id()))
}

/// A running fixture and the two ends of its stdio.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cadre-mcp-fixture"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn cadre-mcp-fixture");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write to server");
        self.stdin.flush().expect("flush to server");
    }

    /// The next message from the server, or None at end of output.
    fn next(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).expect("read from server");
        (n > 0).then(|| serde_json::from_str(&line).expect("server line is JSON"))
    }

    /// Sends a request and returns its response; `seen` collects anything else that arrives first.
    fn request(&mut self, id: u64, method: &str, params: Value, seen: &mut Vec<Value>) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.next().expect("server closed before answering");
            if message["id"] == json!(id) {
                return message;
            }
            seen.push(message);
        }
    }

    fn initialize(&mut self) -> Value {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "mcp-fixture-test", "version": "0"}
        });
        let response = self.request(1, "initialize", params, &mut Vec::new());
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        response
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value, seen: &mut Vec<Value>) -> Value {
        let params = json!({"name": tool, "arguments": arguments});
        self.request(id, "tools/call", params, seen)["result"].clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn handshake_list_and_echo() {
    let mut server = Server::start(&[]);
    let init = server.initialize();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "fixture");
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);

    let list = server.request(2, "tools/list", json!({}), &mut Vec::new());
    let tools = list["result"]["tools"].as_array().expect("tools array");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "echo",
            "add",
            "tiny_image",
            "fail",
            "slow",
            "resource",
            "add_tool",
            "add_prompt",
            "add_resource",
            "die",
            "peek",
            "big"
        ]
    );
    for tool in tools {
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
        assert_eq!(tool["inputSchema"]["type"], "object");
        assert!(tool["inputSchema"]["properties"].is_object());
        assert!(tool["inputSchema"]["required"].is_array());
    }
    let peek = tools.iter().find(|t| t["name"] == "peek").expect("peek");
    assert_eq!(peek["annotations"]["readOnlyHint"], true);

    let echo = server.call(3, "echo", json!({"text": "hi"}), &mut Vec::new());
    assert_eq!(
        echo,
        json!({"content": [{"type": "text", "text": "echo: hi"}], "isError": false})
    );
    let fail = server.call(4, "fail", json!({"message": "boom"}), &mut Vec::new());
    assert_eq!(fail["isError"], true);
    assert_eq!(fail["content"][0]["text"], "boom");
    let image = server.call(5, "tiny_image", json!({}), &mut Vec::new());
    assert_eq!(image["content"][0]["mimeType"], "image/png");
    // The base64 of the PNG signature.
    assert!(
        image["content"][0]["data"]
            .as_str()
            .is_some_and(|d| d.starts_with("iVBORw0KGgo"))
    );
}

#[test]
fn add_tool_announces_the_change() {
    let mut server = Server::start(&["--many-tools", "2", "--name", "other"]);
    assert_eq!(server.initialize()["result"]["serverInfo"]["name"], "other");
    let mut seen = Vec::new();
    let added = server.call(2, "add_tool", json!({"name": "fresh"}), &mut seen);
    assert_eq!(added["content"][0]["text"], "added fresh");
    // The notification is sent before the call's result.
    assert_eq!(
        seen,
        [json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})]
    );
    let list = server.request(3, "tools/list", json!({}), &mut Vec::new());
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names[names.len() - 3..], ["t0", "t1", "fresh"]);
    let called = server.call(4, "fresh", json!({}), &mut Vec::new());
    assert_eq!(called["content"][0]["text"], "fresh called");
}

#[test]
fn die_exits_with_status_3_after_recording_the_call() {
    let calls = temp_path("calls.jsonl");
    let pid_file = temp_path("pid");
    let _ = std::fs::remove_file(&calls);
    let mut server = Server::start(&[
        "--calls-file",
        calls.to_str().expect("utf-8 path"),
        "--pid-file",
        pid_file.to_str().expect("utf-8 path"),
    ]);
    server.initialize();
    server.send(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "die", "arguments": {}}
    }));
    assert_eq!(server.next(), None, "die must not answer");
    let status = server.child.wait().expect("wait for server");
    assert_eq!(status.code(), Some(3));

    let pid = server.child.id();
    let recorded = std::fs::read_to_string(&pid_file).expect("pid file");
    assert_eq!(recorded, pid.to_string());
    let line = std::fs::read_to_string(&calls).expect("calls file");
    let call: Value = serde_json::from_str(line.trim_end()).expect("calls line is JSON");
    assert_eq!(call, json!({"tool": "die", "arguments": {}, "pid": pid}));
    let _ = std::fs::remove_file(&calls);
    let _ = std::fs::remove_file(&pid_file);
}
