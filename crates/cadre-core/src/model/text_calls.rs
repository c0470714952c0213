//! Tool calls written as plain text, for small local models without native
//! `tool_calls`: the prompt that offers the tools, reading calls back out of
//! a reply (whole or streamed), and writing earlier calls and results back.
//!
//! Pure: no I/O. Parsing and streaming share one scanner, so what the stream
//! shows is exactly the text `parse_reply` keeps.

use serde_json::{Map, Value};

use crate::model::ToolSpec;

/// The call syntax a model family was trained on; decides the prompt's example and how earlier calls are written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallFamily {
    /// Qwen, Hermes, Nous: `<tool_call>{…}</tool_call>`.
    Hermes,
    /// Llama 3.x: a bare `{"name": …, "parameters": {…}}`.
    Llama,
    /// Mistral family: `[TOOL_CALLS][{…}]`.
    Mistral,
    /// Anything else: a fenced ```json block.
    Json,
}

/// The family of a model id (case-insensitive; the last path segment decides first, then the whole id).
pub(crate) fn family_of(model: &str) -> CallFamily {
    let id = model.to_ascii_lowercase();
    let last = id.rsplit('/').next().unwrap_or(&id);
    match family_in(last) {
        CallFamily::Json => family_in(&id),
        found => found,
    }
}

fn family_in(id: &str) -> CallFamily {
    let has = |words: &[&str]| words.iter().any(|w| id.contains(w));
    // Hermes first: "Hermes-3-Llama-3.1" is trained on the Hermes format.
    if has(&["qwen", "qwq", "hermes", "nous"]) {
        CallFamily::Hermes
    } else if has(&[
        "mistral",
        "mixtral",
        "devstral",
        "codestral",
        "ministral",
        "magistral",
    ]) {
        CallFamily::Mistral
    } else if has(&["llama"]) {
        CallFamily::Llama
    } else {
        CallFamily::Json
    }
}

/// One call read out of a reply's text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TextCall {
    /// The tool's name.
    pub name: String,
    /// The arguments object as compact JSON text.
    pub arguments: String,
}

/// What a reply's text holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ParsedReply {
    /// The reply's text with every call's span removed (the text around the calls).
    pub text: String,
    /// The calls, in order.
    pub calls: Vec<TextCall>,
    /// Set when some part looks like a call but cannot be read: a short sentence naming the problem.
    pub problem: Option<String>,
}

/// Reads calls out of `text`.
pub(crate) fn parse_reply(text: &str) -> ParsedReply {
    let mut run = Run::default();
    let mut calls = Vec::new();
    let mut problem = None;
    run.drain(text, true, &mut calls, &mut problem);
    run.emitter.finish();
    ParsedReply {
        text: run.emitter.take(),
        calls,
        problem,
    }
}

/// Releases streamed text as it comes, withholding only what may be a call until it can be decided.
#[derive(Debug, Default)]
pub(crate) struct StreamHold {
    /// Text received but not yet decided.
    buf: String,
    run: Run,
}

impl StreamHold {
    /// Takes the next streamed piece; returns the text that may be shown now (possibly empty).
    pub(crate) fn push(&mut self, piece: &str) -> String {
        self.buf.push_str(piece);
        self.step(false)
    }

    /// The stream ended: returns what was withheld and turned out not to be a call.
    pub(crate) fn finish(&mut self) -> String {
        let mut out = self.step(true);
        self.run.emitter.finish();
        out.push_str(&self.run.emitter.take());
        out
    }

    fn step(&mut self, end: bool) -> String {
        // The calls themselves come from `parse_reply` on the whole reply.
        let mut calls = Vec::new();
        let mut problem = None;
        let used = self.run.drain(&self.buf, end, &mut calls, &mut problem);
        self.buf.drain(..used);
        self.run.emitter.take()
    }
}

/// The scanner and emitter shared by `parse_reply` and `StreamHold`.
#[derive(Debug, Default)]
struct Run {
    scanner: Scanner,
    emitter: Emitter,
}

impl Run {
    /// Decides as much of `buf` as it can; returns the bytes consumed.
    fn drain(
        &mut self,
        buf: &str,
        end: bool,
        calls: &mut Vec<TextCall>,
        problem: &mut Option<String>,
    ) -> usize {
        let mut pos = 0;
        while let Some(step) = self.scanner.step(&buf[pos..], end) {
            let len = match step {
                Step::Text(n) => {
                    self.emitter.text(&buf[pos..pos + n]);
                    n
                }
                Step::Calls(n, found) => {
                    self.emitter.call();
                    calls.extend(found);
                    n
                }
                Step::Problem(n, why) => {
                    // A span that fails to parse stays in the text.
                    self.emitter.text(&buf[pos..pos + n]);
                    problem.get_or_insert(why);
                    n
                }
                Step::Drop(n) => {
                    self.emitter.call();
                    n
                }
            };
            if len == 0 {
                break;
            }
            pos += len;
        }
        pos
    }
}

/// Joins the text around removed calls: the whitespace next to a call goes,
/// and text on both sides of calls is joined by one newline.
#[derive(Debug, Default)]
struct Emitter {
    out: String,
    /// Trailing whitespace held back in case a call follows.
    pending_ws: String,
    /// Some non-whitespace text was emitted.
    shown: bool,
    /// A call was removed and no text has followed yet.
    after_call: bool,
}

impl Emitter {
    fn text(&mut self, piece: &str) {
        let mut s = piece;
        if self.after_call {
            s = s.trim_start();
            if s.is_empty() {
                return;
            }
            self.after_call = false;
            if self.shown {
                self.out.push('\n');
            }
        }
        let body = s.trim_end();
        if body.is_empty() {
            self.pending_ws.push_str(s);
            return;
        }
        self.out.push_str(&self.pending_ws);
        self.pending_ws.clear();
        self.out.push_str(body);
        self.shown = true;
        self.pending_ws.push_str(&s[body.len()..]);
    }

    fn call(&mut self) {
        self.pending_ws.clear();
        self.after_call = true;
    }

    fn finish(&mut self) {
        if !self.after_call {
            self.out.push_str(&self.pending_ws);
        }
        self.pending_ws.clear();
    }

    fn take(&mut self) -> String {
        std::mem::take(&mut self.out)
    }
}

const FENCE: &str = "```";
const HERMES_OPEN: &str = "<tool_call>";
const HERMES_CLOSE: &str = "</tool_call>";
const MISTRAL: &str = "[TOOL_CALLS]";
const MISTRAL_ARGS: &str = "[ARGS]";
const MISTRAL_CALL_ID: &str = "[CALL_ID]";
const PYTHON_TAG: &str = "<|python_tag|>";
const END_TOKENS: [&str; 2] = ["<|eom_id|>", "<|eot_id|>"];

/// One decided span at the start of the undecided text.
#[derive(Debug)]
enum Step {
    /// Plain text of this many bytes.
    Text(usize),
    /// A span holding these calls.
    Calls(usize, Vec<TextCall>),
    /// A span that looks like a call but cannot be read.
    Problem(usize, String),
    /// Separator or end token after a call, dropped with it.
    Drop(usize),
}

/// Whether a call may start at a position.
enum Start {
    No,
    /// The text ends in what may become a marker.
    Partial,
    Yes,
}

/// Where in a line the scan stands, carried across steps so streamed and
/// whole-reply scans decide alike.
#[derive(Debug, Clone, Copy)]
struct Scanner {
    /// Only spaces or tabs since the last newline (or the reply's start).
    line_blank: bool,
    /// Only whitespace (or `;` separators) since the last call.
    after_call: bool,
}

impl Default for Scanner {
    fn default() -> Self {
        Self {
            line_blank: true,
            after_call: false,
        }
    }
}

fn advance(line_blank: &mut bool, after_call: &mut bool, c: char) {
    if c == '\n' {
        *line_blank = true;
    } else if !matches!(c, ' ' | '\t' | '\r') {
        *line_blank = false;
    }
    if !c.is_whitespace() {
        *after_call = false;
    }
}

impl Scanner {
    /// The next decided span of `s`, or None when more text is needed
    /// (never when `end`, unless `s` is empty).
    fn step(&mut self, s: &str, end: bool) -> Option<Step> {
        if s.is_empty() {
            return None;
        }
        let (mut lb, mut ac) = (self.line_blank, self.after_call);
        for (i, c) in s.char_indices() {
            let rest = &s[i..];
            match start_at(rest, c, lb, ac, end) {
                Start::No => advance(&mut lb, &mut ac, c),
                Start::Partial | Start::Yes if i > 0 => {
                    self.line_blank = lb;
                    self.after_call = ac;
                    return Some(Step::Text(i));
                }
                Start::Partial => return None,
                Start::Yes => {
                    let step = candidate(rest, end)?;
                    self.commit(rest, &step);
                    return Some(step);
                }
            }
        }
        self.line_blank = lb;
        self.after_call = ac;
        Some(Step::Text(s.len()))
    }

    fn commit(&mut self, s: &str, step: &Step) {
        match step {
            Step::Text(n) | Step::Problem(n, _) => {
                for c in s[..*n].chars() {
                    advance(&mut self.line_blank, &mut self.after_call, c);
                }
            }
            Step::Calls(..) | Step::Drop(_) => {
                self.line_blank = false;
                self.after_call = true;
            }
        }
    }
}

fn start_at(rest: &str, c: char, line_blank: bool, after_call: bool, end: bool) -> Start {
    let markers = |list: &[&str]| {
        if list.iter().any(|m| rest.starts_with(m)) {
            Start::Yes
        } else if !end && list.iter().any(|m| m.starts_with(rest)) {
            Start::Partial
        } else {
            Start::No
        }
    };
    match c {
        '`' => markers(&[FENCE]),
        '[' => markers(&[MISTRAL]),
        '<' if after_call => markers(&[
            HERMES_OPEN,
            PYTHON_TAG,
            HERMES_CLOSE,
            END_TOKENS[0],
            END_TOKENS[1],
        ]),
        '<' => markers(&[HERMES_OPEN, PYTHON_TAG]),
        ';' if after_call => Start::Yes,
        '{' if line_blank || after_call => {
            // Only an object whose first key is quoted can be a call; this
            // lets prose like "{ see below }" through at once.
            match rest[1..].trim_start().chars().next() {
                None if end => Start::No,
                None => Start::Partial,
                Some('"' | '\'') => Start::Yes,
                Some(_) => Start::No,
            }
        }
        _ => Start::No,
    }
}

/// Decides a span starting with a marker, fence or line-start `{`.
fn candidate(rest: &str, end: bool) -> Option<Step> {
    if rest.starts_with(';') {
        return Some(Step::Drop(1));
    }
    for token in [HERMES_CLOSE, END_TOKENS[0], END_TOKENS[1]] {
        if rest.starts_with(token) {
            return Some(Step::Drop(token.len()));
        }
    }
    if rest.starts_with(FENCE) {
        fenced(rest, end)
    } else if rest.starts_with(HERMES_OPEN) {
        hermes(rest, end)
    } else if rest.starts_with(PYTHON_TAG) {
        python_tag(rest, end)
    } else if rest.starts_with(MISTRAL) {
        mistral(rest, end)
    } else {
        bare(rest, end)
    }
}

fn fenced(rest: &str, end: bool) -> Option<Step> {
    let body = &rest[FENCE.len()..];
    let (len, inner) = match body.find(FENCE) {
        Some(j) => (FENCE.len() * 2 + j, &body[..j]),
        None if end => (rest.len(), body),
        None => return None,
    };
    let tag_len = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(inner.len());
    let tag = inner[..tag_len].to_ascii_lowercase();
    if !matches!(tag.as_str(), "" | "json" | "tool_call") {
        return Some(Step::Text(len));
    }
    let content = &inner[tag_len..];
    Some(match read_calls(content, true) {
        Read::Calls(calls) => Step::Calls(len, calls),
        Read::NotCalls => Step::Text(len),
        Read::Invalid(e) if looks_like_call(content) => Step::Problem(
            len,
            format!("the fenced ```{tag} block looks like a tool call but is not valid JSON: {e}"),
        ),
        Read::Invalid(_) => Step::Text(len),
        Read::BadArgs(why) => Step::Problem(len, why),
    })
}

fn bare(rest: &str, end: bool) -> Option<Step> {
    let len = match balanced_len(rest) {
        Some(n) => n,
        None if end => rest.len(),
        None => return None,
    };
    let span = &rest[..len];
    Some(match read_calls(span, true) {
        Read::Calls(calls) => Step::Calls(len, calls),
        Read::NotCalls => Step::Text(len),
        Read::Invalid(e) if looks_like_call(span) => Step::Problem(
            len,
            format!("the JSON object looks like a tool call but is not valid JSON: {e}"),
        ),
        Read::Invalid(_) => Step::Text(len),
        Read::BadArgs(why) => Step::Problem(len, why),
    })
}

fn hermes(rest: &str, end: bool) -> Option<Step> {
    let body = &rest[HERMES_OPEN.len()..];
    let (len, inner) = match body.find(HERMES_CLOSE) {
        Some(j) => (HERMES_OPEN.len() + j + HERMES_CLOSE.len(), &body[..j]),
        // A missing closing tag is accepted at the very end of the reply.
        None if end => (rest.len(), body),
        None => return None,
    };
    Some(marker_calls(strip_fence(inner), len, "<tool_call>"))
}

/// The inside of a ```json fence some models put within `<tool_call>`.
fn strip_fence(inner: &str) -> &str {
    let t = inner.trim();
    match t.strip_prefix(FENCE).and_then(|r| r.strip_suffix(FENCE)) {
        Some(r) => r.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_'),
        None => inner,
    }
}

fn mistral(rest: &str, end: bool) -> Option<Step> {
    let body = &rest[MISTRAL.len()..];
    let trimmed = body.trim_start();
    let base = rest.len() - trimmed.len();
    if trimmed.is_empty() {
        return end
            .then(|| Step::Problem(rest.len(), "[TOOL_CALLS] is not followed by a call".into()));
    }
    if trimmed.starts_with(['[', '{']) {
        let n = match balanced_len(trimmed) {
            Some(n) => n,
            None if end => trimmed.len(),
            None => return None,
        };
        return Some(marker_calls(&trimmed[..n], base + n, "[TOOL_CALLS]"));
    }
    // The newer form: `[TOOL_CALLS]Name[ARGS]{…}`, maybe with `[CALL_ID]id`.
    let name_len = trimmed
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .unwrap_or(trimmed.len());
    let name = &trimmed[..name_len];
    let missing = |at: usize| {
        Step::Problem(
            at,
            format!("[TOOL_CALLS]{name} is not followed by [ARGS] and a JSON object"),
        )
    };
    if name.is_empty() {
        return Some(Step::Problem(
            base,
            "[TOOL_CALLS] is not followed by a JSON array or a tool name".into(),
        ));
    }
    let mut at = name_len;
    if trimmed[at..].starts_with(MISTRAL_CALL_ID) {
        at += MISTRAL_CALL_ID.len();
        let id = &trimmed[at..];
        at += id
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(id.len());
    }
    let after = &trimmed[at..];
    if !after.starts_with(MISTRAL_ARGS) {
        let may_grow = after.is_empty()
            || MISTRAL_ARGS.starts_with(after)
            || (at == name_len && MISTRAL_CALL_ID.starts_with(after));
        return if may_grow && !end {
            None
        } else {
            Some(missing(base + at))
        };
    }
    at += MISTRAL_ARGS.len();
    let args = trimmed[at..].trim_start();
    at = trimmed.len() - args.len();
    if args.is_empty() {
        return end.then(|| missing(rest.len()));
    }
    if !args.starts_with('{') {
        return Some(missing(base + at));
    }
    let n = match balanced_len(args) {
        Some(n) => n,
        None if end => args.len(),
        None => return None,
    };
    let len = base + at + n;
    Some(match serde_json::from_str::<Value>(&args[..n]) {
        Ok(v @ Value::Object(_)) => Step::Calls(
            len,
            vec![TextCall {
                name: name.to_string(),
                arguments: v.to_string(),
            }],
        ),
        Ok(_) => Step::Problem(
            len,
            format!("the arguments of `{name}` are not a JSON object"),
        ),
        Err(e) => Step::Problem(
            len,
            format!("the arguments of `{name}` after [ARGS] are not valid JSON: {e}"),
        ),
    })
}

fn python_tag(rest: &str, end: bool) -> Option<Step> {
    let mut pos = PYTHON_TAG.len();
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    let mut expect_value = true;
    loop {
        let r = &rest[pos..];
        let t = r.trim_start();
        let at = rest.len() - t.len();
        if t.is_empty() {
            if end {
                break;
            }
            return None;
        }
        if expect_value {
            if t.starts_with('{') {
                match balanced_len(t) {
                    Some(n) => {
                        pieces.push((at, at + n));
                        pos = at + n;
                        expect_value = false;
                        continue;
                    }
                    None if end => {
                        pieces.push((at, rest.len()));
                        pos = rest.len();
                        break;
                    }
                    None => return None,
                }
            }
            if pieces.is_empty() {
                // Not JSON (Llama's built-in python tools): withheld to the end.
                if !end {
                    return None;
                }
                return Some(Step::Problem(
                    rest.len(),
                    "the <|python_tag|> call is not a JSON object".into(),
                ));
            }
            break;
        }
        if t.starts_with(';') {
            pos = at + 1;
            expect_value = true;
            continue;
        }
        if let Some(token) = END_TOKENS.iter().find(|m| t.starts_with(**m)) {
            pos = at + token.len();
            break;
        }
        if !end && END_TOKENS.iter().any(|m| m.starts_with(t)) {
            return None;
        }
        break;
    }
    if pieces.is_empty() {
        return Some(Step::Problem(
            pos,
            "the <|python_tag|> is not followed by a JSON call".into(),
        ));
    }
    let mut calls = Vec::new();
    for (from, to) in pieces {
        match marker_calls(&rest[from..to], pos, "<|python_tag|>") {
            Step::Calls(_, found) => calls.extend(found),
            other => return Some(other),
        }
    }
    Some(Step::Calls(pos, calls))
}

/// The calls in a marker's JSON; anything else there is a problem.
fn marker_calls(content: &str, len: usize, label: &str) -> Step {
    match read_calls(content, false) {
        Read::Calls(calls) => Step::Calls(len, calls),
        Read::NotCalls => Step::Problem(
            len,
            format!("the {label} block holds no call with a tool `name`"),
        ),
        Read::Invalid(e) => Step::Problem(len, format!("the {label} block is not valid JSON: {e}")),
        Read::BadArgs(why) => Step::Problem(len, why),
    }
}

/// What a piece of JSON text holds.
enum Read {
    Calls(Vec<TextCall>),
    NotCalls,
    Invalid(String),
    BadArgs(String),
}

/// Reads one or more JSON values (separated by whitespace or `;`) as calls;
/// `need_args` demands an arguments key, which keeps plain JSON out.
fn read_calls(content: &str, need_args: bool) -> Read {
    let mut calls = Vec::new();
    let mut rest = content;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';');
        if rest.is_empty() {
            break;
        }
        let len = if rest.starts_with(['{', '[']) {
            balanced_len(rest).unwrap_or(rest.len())
        } else {
            rest.len()
        };
        let value = match serde_json::from_str::<Value>(&rest[..len]) {
            Ok(v) => v,
            Err(e) => return Read::Invalid(e.to_string()),
        };
        match calls_from_value(&value, need_args) {
            Ok(Some(found)) => calls.extend(found),
            Ok(None) => return Read::NotCalls,
            Err(why) => return Read::BadArgs(why),
        }
        rest = &rest[len..];
    }
    if calls.is_empty() {
        Read::NotCalls
    } else {
        Read::Calls(calls)
    }
}

fn calls_from_value(value: &Value, need_args: bool) -> Result<Option<Vec<TextCall>>, String> {
    match value {
        Value::Object(map) => Ok(call_from_object(map, need_args)?.map(|c| vec![c])),
        Value::Array(items) if !items.is_empty() => {
            let mut calls = Vec::new();
            for item in items {
                let Value::Object(map) = item else {
                    return Ok(None);
                };
                match call_from_object(map, need_args)? {
                    Some(call) => calls.push(call),
                    None => return Ok(None),
                }
            }
            Ok(Some(calls))
        }
        _ => Ok(None),
    }
}

fn call_from_object(map: &Map<String, Value>, need_args: bool) -> Result<Option<TextCall>, String> {
    // OpenAI's shape: {"type": "function", "function": {"name": …, "arguments": …}}.
    if let Some(Value::Object(inner)) = map.get("function")
        && inner.get("name").is_some_and(Value::is_string)
    {
        return call_from_object(inner, need_args);
    }
    let Some(name) = map.get("name").and_then(Value::as_str) else {
        return Ok(None);
    };
    let name = name.trim();
    // Tool names have no spaces; a person's or project's name may.
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Ok(None);
    }
    let arguments = match map.get("arguments").or_else(|| map.get("parameters")) {
        None if need_args => return Ok(None),
        None | Some(Value::Null) => "{}".to_string(),
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(Value::String(s)) if s.trim().is_empty() => "{}".to_string(),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v.to_string(),
            _ => {
                return Err(format!(
                    "the arguments of `{name}` are a string that does not hold a JSON object"
                ));
            }
        },
        Some(_) => return Err(format!("the arguments of `{name}` are not a JSON object")),
    };
    Ok(Some(TextCall {
        name: name.to_string(),
        arguments,
    }))
}

/// Whether invalid JSON text still reads as an attempted call.
fn looks_like_call(s: &str) -> bool {
    let has = |key: &str| s.contains(&format!("\"{key}\"")) || s.contains(&format!("'{key}'"));
    has("name") && (has("arguments") || has("parameters"))
}

/// The length of the balanced JSON object or array `s` starts with, or None
/// when it does not close within `s`.
fn balanced_len(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, b) in s.bytes().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The system-prompt section that offers `tools` to a model without native tool calls, with one example call in `family`'s syntax.
pub(crate) fn tools_prompt(tools: &[ToolSpec], family: CallFamily) -> String {
    let Some(first) = tools.first() else {
        return String::new();
    };
    let mut out = String::from(
        "# Tools\n\nYou can use these tools. Each is listed with its name, what it does, \
         and the JSON schema of its arguments.\n",
    );
    for tool in tools {
        out.push_str(&format!(
            "\n## {}\n{}\nArguments schema: {}\n",
            tool.name,
            tool.description.trim(),
            tool.input_schema
        ));
    }
    let example = render_call(family, &first.name, &example_arguments(&first.input_schema));
    out.push_str("\n# How to call a tool\n\nTo call a tool, write the call in your reply exactly in this form:\n\n");
    out.push_str(&example);
    out.push_str(
        "\n\nRules:\n\
         - Call tools only this way, with the tool's name and an arguments object that fits its schema. \
         Do not describe a call in words instead of making it.\n\
         - A reply may hold one or more calls; a short sentence before them is fine.\n\
         - After your calls, stop and wait: the results come back in the next message.\n\
         - When the task is done, answer in plain text with no call.\n",
    );
    out
}

/// A plausible arguments object from a schema's required properties.
fn example_arguments(schema: &Value) -> String {
    let props = schema.get("properties").and_then(Value::as_object);
    let mut args = Map::new();
    let required = schema.get("required").and_then(Value::as_array);
    for key in required.into_iter().flatten().filter_map(Value::as_str) {
        let prop = props.and_then(|p| p.get(key));
        args.insert(key.to_string(), example_value(key, prop));
    }
    Value::Object(args).to_string()
}

fn example_value(key: &str, prop: Option<&Value>) -> Value {
    if let Some(first) = prop
        .and_then(|p| p.get("enum"))
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let kind = match prop.and_then(|p| p.get("type")) {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    };
    match kind {
        "integer" | "number" => Value::from(1),
        "boolean" => Value::Bool(false),
        "array" => Value::Array(Vec::new()),
        "object" => Value::Object(Map::new()),
        _ => {
            let key = key.to_ascii_lowercase();
            let text = if key.contains("pattern") || key.contains("glob") {
                "**/*.rs"
            } else if key.contains("path") || key.contains("file") {
                "src/main.rs"
            } else if key.contains("command") {
                "ls"
            } else if key.contains("url") {
                "https://example.com"
            } else {
                "example"
            };
            Value::String(text.to_string())
        }
    }
}

/// An earlier call written back into the assistant message, in `family`'s syntax.
pub(crate) fn render_call(family: CallFamily, name: &str, arguments: &str) -> String {
    let args = match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v.to_string(),
        _ if arguments.trim().is_empty() => "{}".to_string(),
        // Not an object: kept as a string so nothing is lost.
        _ => Value::String(arguments.to_string()).to_string(),
    };
    let name = Value::String(name.to_string());
    match family {
        CallFamily::Hermes => {
            format!("<tool_call>\n{{\"name\": {name}, \"arguments\": {args}}}\n</tool_call>")
        }
        CallFamily::Llama => format!("{{\"name\": {name}, \"parameters\": {args}}}"),
        CallFamily::Mistral => {
            format!("[TOOL_CALLS][{{\"name\": {name}, \"arguments\": {args}}}]")
        }
        CallFamily::Json => {
            format!("```json\n{{\"name\": {name}, \"arguments\": {args}}}\n```")
        }
    }
}

/// A tool result as a user-message part, wrapped so it names the tool, saying "Error:" first when `is_error`.
pub(crate) fn render_result(
    family: CallFamily,
    name: &str,
    content: &str,
    is_error: bool,
) -> String {
    let error = if is_error { "Error: " } else { "" };
    match family {
        CallFamily::Hermes => {
            format!("<tool_response>\nResult of {name}:\n{error}{content}\n</tool_response>")
        }
        _ => format!("[Result of {name}]\n{error}{content}\n[End of result]"),
    }
}

#[cfg(test)]
#[path = "text_calls_tests.rs"]
mod tests;
