//! The HTTP server: routing, failure injection, streaming and recording.

use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use axum::serve::ListenerExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::extract::request_info;

/// Largest request body taken: several images at the APIs' 5 MB each.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
use crate::script::{Failure, Script, StepBy};
use crate::wire::{self, Ctx};
use crate::{MockError, parse_script};

/// Which API a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// `POST /v1/messages`.
    Anthropic,
    /// `POST /v1/chat/completions`.
    Openai,
}

/// One served request, as written to the record file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Arrival time, ms since the Unix epoch.
    pub t_start_ms: u64,
    /// End of the response (including the whole streamed body), ms since the Unix epoch.
    pub t_end_ms: u64,
    /// Arrival time, µs since the Unix epoch (for latencies under a millisecond).
    #[serde(default)]
    pub t_start_us: u64,
    /// End of the response, µs since the Unix epoch.
    #[serde(default)]
    pub t_end_us: u64,
    /// Name of the matched rule, if any.
    pub rule: Option<String>,
    /// Number of assistant turns in the request.
    pub step: usize,
    /// Which API was used.
    pub wire: Wire,
    /// HTTP status served.
    pub status: u16,
    /// The request body (a JSON string holding the raw text if it was not JSON).
    pub body: Value,
    /// The request's `User-Agent` header, if it had one.
    #[serde(default)]
    pub user_agent: Option<String>,
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A served request as kept in memory: when the body parsed as JSON, it is
/// kept as received and `rec.body` is null until `records()` parses it again,
/// so a long conversation does not grow the heap by a tree per request.
struct Kept {
    rec: Record,
    raw: Option<Bytes>,
}

impl Kept {
    fn record(&self) -> Record {
        let mut rec = self.rec.clone();
        if let Some(raw) = &self.raw {
            rec.body = serde_json::from_slice(raw)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(raw).into_owned()));
        }
        rec
    }
}

struct RecorderInner {
    records: Vec<Kept>,
    file: Option<File>,
}

struct Shared {
    script: Script,
    failed_once: Mutex<HashSet<(usize, usize)>>,
    /// Replies served per rule (for `step_by: requests`).
    served: Mutex<std::collections::HashMap<usize, usize>>,
    recorder: Mutex<RecorderInner>,
    counter: AtomicU64,
}

impl Shared {
    /// Keeps `rec` (`raw` is the body as received when it parsed as JSON),
    /// readable at once; returns its index for `close`.
    fn keep(&self, rec: Record, raw: Option<Bytes>) -> usize {
        let mut inner = lock(&self.recorder);
        inner.records.push(Kept { rec, raw });
        inner.records.len() - 1
    }

    /// The kept record `at` ends now: its end time is set and its line
    /// appended to the record file.
    fn close(&self, at: usize) {
        let mut inner = lock(&self.recorder);
        let has_file = inner.file.is_some();
        let Some(kept) = inner.records.get_mut(at) else {
            return;
        };
        kept.rec.t_end_us = now_us();
        kept.rec.t_end_ms = kept.rec.t_end_us / 1000;
        if has_file {
            let (mut rec, raw) = (kept.rec.clone(), kept.raw.clone());
            inner.write(&mut rec, raw.as_deref());
        }
    }
}

impl RecorderInner {
    /// Appends `rec`'s line to the record file.
    fn write(&mut self, rec: &mut Record, raw: Option<&[u8]>) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        match record_line(rec, raw) {
            Ok((head, body, tail)) => {
                let written = file
                    .write_all(&head)
                    .and_then(|()| file.write_all(body))
                    .and_then(|()| file.write_all(&tail));
                if let Err(e) = written {
                    eprintln!("cadre-mock: cannot write record: {e}");
                }
            }
            Err(e) => eprintln!("cadre-mock: cannot serialize record: {e}"),
        }
    }
}

/// A record file line as head, body as received, and tail.
type LineParts<'a> = (Vec<u8>, &'a [u8], Vec<u8>);

/// One line of the record file in three parts (head, body, tail; the
/// newline ends the tail). With `raw` (the body as received, which parsed as
/// JSON) on one line, the body part is those bytes, so a large conversation
/// is neither re-serialised nor copied; otherwise the line is the head alone.
fn record_line<'a>(
    rec: &mut Record,
    raw: Option<&'a [u8]>,
) -> Result<LineParts<'a>, serde_json::Error> {
    const BODY: &[u8] = b",\"body\":null,\"user_agent\":";
    let one_line = raw.filter(|r| !r.iter().any(|b| matches!(b, b'\n' | b'\r')));
    if let Some(raw) = one_line {
        let body = std::mem::take(&mut rec.body);
        let text = serde_json::to_vec(&*rec);
        rec.body = body;
        let text = text?;
        // Quotes inside `rule` and `user_agent` are escaped, so the
        // unescaped key sequence occurs exactly once.
        if let Some(at) = text.windows(BODY.len()).position(|w| w == BODY) {
            let mut head = text[..at].to_vec();
            head.extend_from_slice(b",\"body\":");
            let mut tail = b",\"user_agent\":".to_vec();
            tail.extend_from_slice(&text[at + BODY.len()..]);
            tail.push(b'\n');
            return Ok((head, raw, tail));
        }
    }
    let mut line = match raw {
        Some(raw) => {
            let body = std::mem::replace(&mut rec.body, serde_json::from_slice(raw)?);
            let text = serde_json::to_vec(&*rec);
            rec.body = body;
            text?
        }
        None => serde_json::to_vec(&*rec)?,
    };
    line.push(b'\n');
    Ok((line, &[], Vec::new()))
}

/// Writes its record when finished or dropped (e.g. when the client goes away mid-stream).
struct RecordGuard {
    shared: Arc<Shared>,
    rec: Option<Record>,
    /// The body as received, once it parsed as JSON.
    raw: Option<Bytes>,
    /// Where the record was kept at the reply's last piece, until `finish`.
    kept: Option<usize>,
}

impl RecordGuard {
    /// The reply is over: its end time is now and its record is in the file.
    fn finish(&mut self) {
        self.end();
        if let Some(at) = self.kept.take() {
            self.shared.close(at);
        }
    }

    /// The reply's last piece is being handed out: the record is readable
    /// from now, so a client gone right after it finds it. Its end time and
    /// its line in the record file (a copy of the whole request) come at
    /// `finish`, once the piece is out.
    fn end(&mut self) {
        if let Some(mut rec) = self.rec.take() {
            rec.t_end_us = now_us();
            rec.t_end_ms = rec.t_end_us / 1000;
            self.kept = Some(self.shared.keep(rec, self.raw.take()));
        }
    }
}

impl Drop for RecordGuard {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A running mock server. Dropping it stops accepting connections.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// llama.cpp's `GET /props`, when the script gives it.
async fn props(State(shared): State<Arc<Shared>>) -> Response {
    info_reply(shared.script.server.props.as_ref())
}

/// Ollama's `POST /api/show`, when the script gives it.
async fn show(State(shared): State<Arc<Shared>>) -> Response {
    info_reply(shared.script.server.show.as_ref())
}

fn info_reply(value: Option<&Value>) -> Response {
    let (status, body) = match value {
        Some(v) => (StatusCode::OK, v.to_string()),
        None => (
            StatusCode::NOT_FOUND,
            "{\"error\":\"not found\"}".to_string(),
        ),
    };
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap_or_default()
}

impl MockServer {
    /// Parses the script text and starts serving on 127.0.0.1:0 in the current tokio runtime.
    pub async fn start(
        script_yaml: &str,
        record: Option<PathBuf>,
    ) -> Result<MockServer, MockError> {
        let script = parse_script(script_yaml)?;
        Self::start_on(script, 0, record).await
    }

    /// Starts serving `script` on 127.0.0.1:`port` (0 = any free port) in the current tokio runtime.
    /// `record`, if given, is opened for appending (created if missing).
    pub async fn start_on(
        mut script: Script,
        port: u16,
        record: Option<PathBuf>,
    ) -> Result<MockServer, MockError> {
        script.fill_defaults();
        script.validate()?;
        let file = match record {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(|source| MockError::Record { path, source })?,
            ),
            None => None,
        };
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|source| MockError::Bind { port, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| MockError::Bind { port, source })?;
        let shared = Arc::new(Shared {
            script,
            failed_once: Mutex::new(HashSet::new()),
            served: Mutex::new(Default::default()),
            recorder: Mutex::new(RecorderInner {
                records: Vec::new(),
                file,
            }),
            counter: AtomicU64::new(0),
        });
        let app = Router::new()
            .route("/v1/messages", post(anthropic))
            .route("/messages", post(anthropic))
            .route("/v1/chat/completions", post(openai))
            .route("/chat/completions", post(openai))
            .route("/props", axum::routing::get(props))
            .route("/api/show", post(show))
            // Requests with images (a photo is a few MB as base64) pass
            // axum's 2 MB default.
            .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(shared.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = rx.await;
            });
            if let Err(e) = serve.await {
                eprintln!("cadre-mock: server error: {e}");
            }
        });
        Ok(MockServer {
            addr,
            shared,
            shutdown: Some(tx),
        })
    }

    /// Base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// All records so far, in completion order.
    pub fn records(&self) -> Vec<Record> {
        lock(&self.shared.recorder)
            .records
            .iter()
            .map(Kept::record)
            .collect()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

async fn anthropic(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    handle(shared, Wire::Anthropic, user_agent(&headers), body).await
}

async fn openai(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    handle(shared, Wire::Openai, user_agent(&headers), body).await
}

fn user_agent(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::USER_AGENT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

fn preview(s: &str) -> String {
    const MAX: usize = 60;
    let mut out: String = s.chars().take(MAX).collect();
    if s.chars().count() > MAX {
        out.push('…');
    }
    out
}

fn with_headers(mut resp: Response, wire: Wire, n: u64, content_type: &'static str) -> Response {
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    let id_header = match wire {
        Wire::Anthropic => "request-id",
        Wire::Openai => "x-request-id",
    };
    if let Ok(v) = HeaderValue::from_str(&format!("req_mock_{n}")) {
        h.insert(id_header, v);
    }
    resp
}

fn status_code(s: u16) -> StatusCode {
    StatusCode::from_u16(s).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

async fn handle(
    shared: Arc<Shared>,
    wire: Wire,
    user_agent: Option<String>,
    raw: Bytes,
) -> Response {
    let t_start_us = now_us();
    let t_start_ms = t_start_us / 1000;
    let n = shared.counter.fetch_add(1, Ordering::Relaxed) + 1;
    let mut guard = RecordGuard {
        shared: shared.clone(),
        rec: Some(Record {
            t_start_ms,
            t_end_ms: t_start_ms,
            t_start_us,
            t_end_us: t_start_us,
            rule: None,
            step: 0,
            wire,
            status: 400,
            body: Value::Null,
            user_agent,
        }),
        raw: None,
        kept: None,
    };
    let set_rec = |guard: &mut RecordGuard, f: &dyn Fn(&mut Record)| {
        if let Some(r) = guard.rec.as_mut() {
            f(r);
        }
    };

    let body: Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        Err(e) => {
            let text = String::from_utf8_lossy(&raw).into_owned();
            set_rec(&mut guard, &|r| r.body = Value::String(text.clone()));
            return error_response(
                guard,
                wire,
                n,
                400,
                &format!("request body is not JSON: {e}"),
            );
        }
    };
    guard.raw = Some(raw.clone());
    let info = request_info(wire, &body);
    // The record keeps the raw body, not the parsed one: cloning or
    // re-serialising a large conversation on every request would make the
    // mock the bottleneck.
    let step = info.step;
    set_rec(&mut guard, &|r| r.step = step);

    let script = &shared.script;
    let Some(ri) = info.find_rule(script) else {
        let msg = format!(
            "no rule matches this request (system starts: {:?}, first user: {:?})",
            preview(&info.system),
            preview(&info.first_user)
        );
        return error_response(guard, wire, n, 400, &msg);
    };
    let rule = &script.rules[ri];
    set_rec(&mut guard, &|r| r.rule = Some(rule.name.clone()));
    // With `step_by: requests` the step is taken and advanced under one
    // lock, so concurrent requests to one rule get successive replies.
    let (step, chosen) = {
        let mut served = lock(&shared.served);
        let step = match rule.step_by {
            StepBy::AssistantTurns => step,
            StepBy::Requests => served.get(&ri).copied().unwrap_or(0),
        };
        let chosen = rule.replies.get(step).map(|reply| {
            let reply = crate::template::with_task_ids(reply, &body);
            let fails = reply.fail.is_some()
                || (reply.fail_once.is_some() && lock(&shared.failed_once).insert((ri, step)));
            if !fails && rule.step_by == StepBy::Requests {
                *served.entry(ri).or_default() += 1;
            }
            (reply, fails)
        });
        (step, chosen)
    };
    set_rec(&mut guard, &|r| r.step = step);
    let Some((reply, fails)) = chosen else {
        let msg = format!(
            "rule {:?} has {} replies; this request is at step {}",
            rule.name,
            rule.replies.len(),
            step
        );
        return error_response(guard, wire, n, 400, &msg);
    };
    let reply = &reply;
    let failure: Option<&Failure> = if fails {
        reply.fail.as_ref().or(reply.fail_once.as_ref())
    } else {
        None
    };

    if reply.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(reply.latency_ms)).await;
    }

    if let Some(f) = failure
        && f.stall
    {
        // Never answer; the record is written when the client goes away.
        drop(body);
        set_rec(&mut guard, &|r| r.status = 0);
        return std::future::pending::<Response>().await;
    }
    if let Some(f) = failure
        && !f.in_body()
    {
        return failure_response(guard, wire, n, f);
    }

    let streaming = body.get("stream").and_then(Value::as_bool) == Some(true);
    let ctx = Ctx {
        rule: wire::sanitize(&rule.name),
        step,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("mock-model")
            .to_string(),
        id: match wire {
            Wire::Anthropic => format!("msg_mock_{n:06}"),
            Wire::Openai => format!("chatcmpl-mock{n:06}"),
        },
        created: t_start_ms / 1000,
        request_bytes: raw.len(),
        include_usage: body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true),
    };
    drop(body);

    let mut pieces: Vec<Bytes> = if streaming {
        wire::stream_events(wire, reply, &ctx)
    } else {
        vec![Bytes::from(wire::full_body(wire, reply, &ctx).to_string())]
    };
    let cut = failure.and_then(|f| f.cut_after_bytes);
    let abort = failure.is_some_and(|f| f.cut_abort);
    if let Some(limit) = cut {
        pieces = truncate(pieces, limit);
    }
    let mut stall_at_end = false;
    let mut pings: Option<Duration> = None;
    if let (true, Some(f)) = (streaming, failure) {
        if let Some(k) = f.stall_after_events {
            pieces.truncate(k);
            stall_at_end = true;
        }
        if let Some(k) = f.ping_after_events {
            pieces.truncate(k);
            pings = Some(Duration::from_millis(
                f.ping_every_ms.unwrap_or(DEFAULT_PING_EVERY_MS),
            ));
        }
        if let Some(k) = f.error_after_events {
            pieces.truncate(k);
            let msg = f
                .message
                .as_deref()
                .unwrap_or("cadre-mock: scripted error mid-stream");
            pieces.push(wire::stream_error_event(wire, f.error_type.as_deref(), msg));
        }
        if let Some(size) = f.oversized_event_bytes {
            pieces.truncate(1);
            pieces.extend(oversized_event(size));
        }
    }
    if let Some(size) = reply.chunk_bytes {
        pieces = rechunk(pieces, size);
    }
    set_rec(&mut guard, &|r| r.status = 200);
    let content_type = if streaming {
        "text/event-stream"
    } else {
        "application/json"
    };

    let plain = !streaming
        && cut.is_none()
        && !stall_at_end
        && pings.is_none()
        && reply.chunk_bytes.is_none()
        && reply.chunk_delay_ms == 0;
    let body = if plain {
        let bytes: Vec<u8> = pieces.concat();
        guard.finish();
        Body::from(bytes)
    } else {
        Body::from_stream(body_stream(
            pieces,
            guard,
            Duration::from_millis(reply.chunk_delay_ms),
            abort,
            stall_at_end,
            pings,
        ))
    };
    let mut resp = with_headers(Response::new(body), wire, n, content_type);
    if streaming {
        resp.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    resp
}

/// One `data:` line of `size` bytes of filler, in 64 KiB pieces, ended as an event.
fn oversized_event(size: usize) -> Vec<Bytes> {
    const PIECE: usize = 64 * 1024;
    let filler = Bytes::from(vec![b'x'; PIECE]);
    let mut out = vec![Bytes::from_static(b"data: ")];
    let mut left = size;
    while left > 0 {
        let take = left.min(PIECE);
        out.push(filler.slice(..take));
        left -= take;
    }
    out.push(Bytes::from_static(b"\n\n"));
    out
}

fn truncate(pieces: Vec<Bytes>, limit: usize) -> Vec<Bytes> {
    let mut left = limit;
    let mut out = Vec::new();
    for p in pieces {
        if left == 0 {
            break;
        }
        let take = p.len().min(left);
        left -= take;
        out.push(p.slice(..take));
    }
    out
}

fn rechunk(pieces: Vec<Bytes>, size: usize) -> Vec<Bytes> {
    let all = Bytes::from(pieces.concat());
    let size = size.max(1);
    (0..all.len())
        .step_by(size)
        .map(|i| all.slice(i..(i + size).min(all.len())))
        .collect()
}

/// Milliseconds between pings of `ping_after_events` when `ping_every_ms` is not given.
const DEFAULT_PING_EVERY_MS: u64 = 100;

struct StreamState {
    pieces: VecDeque<Bytes>,
    guard: RecordGuard,
    delay: Duration,
    abort: bool,
    stall: bool,
    /// After the pieces: a ping at this interval, until the client goes away.
    pings: Option<Duration>,
    first: bool,
}

fn body_stream(
    pieces: Vec<Bytes>,
    guard: RecordGuard,
    delay: Duration,
    abort: bool,
    stall: bool,
    pings: Option<Duration>,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let state = StreamState {
        pieces: pieces.into(),
        guard,
        delay,
        abort,
        stall,
        pings,
        first: true,
    };
    futures::stream::unfold(state, |mut st| async move {
        if !st.first {
            if st.delay.is_zero() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(st.delay).await;
            }
        }
        st.first = false;
        match st.pieces.pop_front() {
            Some(p) => {
                if st.pieces.is_empty() && st.pings.is_none() && !st.stall && !st.abort {
                    st.guard.end();
                }
                Some((Ok(p), st))
            }
            None if st.pings.is_some() => {
                // The record is written when the client goes away.
                let every = st.pings.unwrap_or_default();
                tokio::time::sleep(every).await;
                Some((Ok(wire::ping_event()), st))
            }
            None if st.stall => {
                // Keep the connection open and silent; the record is written
                // when the client goes away and this stream is dropped.
                std::future::pending::<()>().await;
                None
            }
            None if st.abort => {
                st.abort = false;
                st.guard.finish();
                Some((
                    Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "cadre-mock: scripted stream cut",
                    )),
                    st,
                ))
            }
            None => {
                st.guard.finish();
                None
            }
        }
    })
}

fn error_response(mut guard: RecordGuard, wire: Wire, n: u64, status: u16, msg: &str) -> Response {
    if let Some(r) = guard.rec.as_mut() {
        r.status = status;
    }
    let body = wire::error_body(wire, status, msg).to_string();
    guard.finish();
    let mut resp = with_headers(Response::new(Body::from(body)), wire, n, "application/json");
    *resp.status_mut() = status_code(status);
    resp
}

fn failure_response(mut guard: RecordGuard, wire: Wire, n: u64, f: &Failure) -> Response {
    let status = f.effective_status();
    if let Some(r) = guard.rec.as_mut() {
        r.status = status;
    }
    let (body, ctype) = match &f.body {
        Some(b) => {
            let ctype = if serde_json::from_str::<Value>(b).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            (b.clone(), ctype)
        }
        None => {
            let msg = f
                .message
                .clone()
                .unwrap_or_else(|| format!("cadre-mock: scripted failure (status {status})"));
            (
                wire::error_body(wire, status, &msg).to_string(),
                "application/json",
            )
        }
    };
    guard.finish();
    let mut resp = with_headers(Response::new(Body::from(body)), wire, n, ctype);
    *resp.status_mut() = status_code(status);
    if let Some(secs) = f.retry_after_s
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_and_rechunk() {
        let p = vec![Bytes::from_static(b"abc"), Bytes::from_static(b"defg")];
        assert_eq!(truncate(p.clone(), 5).concat(), b"abcde");
        assert_eq!(truncate(p.clone(), 0).concat(), b"");
        assert_eq!(truncate(p.clone(), 100).concat(), b"abcdefg");
        let r = rechunk(p, 3);
        assert_eq!(r.len(), 3);
        assert_eq!(r[2].as_ref(), b"g");
    }

    #[test]
    fn a_record_line_with_the_raw_body_reads_as_the_record() {
        let raw = br#"{"model":"m","messages":[{"role":"user","content":"a \"b\""}],"n":1.5}"#;
        let mut rec = Record {
            t_start_ms: 1,
            t_end_ms: 2,
            t_start_us: 1000,
            t_end_us: 2000,
            // The spliced key sequence inside a value does not confuse the splice.
            rule: Some(r#","body":null,"user_agent":"#.into()),
            step: 3,
            wire: Wire::Anthropic,
            status: 200,
            body: serde_json::from_slice(raw).unwrap(),
            user_agent: Some("ua".into()),
        };
        let want = serde_json::to_value(&rec).unwrap();
        let pretty = serde_json::to_vec_pretty(&rec.body).unwrap();
        // Without a raw body the value is serialised; a raw body on several
        // lines is parsed again, as the record keeps no value beside it.
        for raw in [Some(&raw[..]), None, Some(&pretty[..])] {
            let mut rec = rec.clone();
            if raw.is_some() {
                rec.body = Value::Null;
            }
            let (head, body, tail) = record_line(&mut rec, raw).unwrap();
            let line = [head.as_slice(), body, tail.as_slice()].concat();
            assert_eq!(line.last(), Some(&b'\n'));
            assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
            let got: Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(got, want);
        }
        let (_, body, _) = record_line(&mut rec, Some(raw)).unwrap();
        assert_eq!(body, raw, "the raw body is written as it came");
    }

    #[test]
    fn record_keys() {
        let r = Record {
            t_start_ms: 1,
            t_end_ms: 2,
            t_start_us: 1000,
            t_end_us: 2000,
            rule: None,
            step: 0,
            wire: Wire::Openai,
            status: 400,
            body: Value::Null,
            user_agent: None,
        };
        let v = serde_json::to_value(&r).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "t_start_ms",
                "t_end_ms",
                "t_start_us",
                "t_end_us",
                "rule",
                "step",
                "wire",
                "status",
                "body",
                "user_agent"
            ]
        );
        assert_eq!(v["wire"], "openai");
        assert!(v["rule"].is_null());
    }
}
