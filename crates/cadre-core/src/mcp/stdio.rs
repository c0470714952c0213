//! A stdio server's connection: its process (started so that all it starts
//! goes with cadre, see the reaper), its stdout read by rmcp's line
//! transport with a reply over the line limit answered at once by an error
//! for its request, and its stderr copied to its log up to a cap.

use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

/// Longest line (one JSON-RPC message) taken from a server: rmcp's own
/// default, pinned here so the guard below and rmcp agree on it.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// The error message that stands in for a reply over [`MAX_LINE_BYTES`].
pub const TOO_LARGE: &str = "result too large (over 16 MiB)";
/// Default cap on what one server's log keeps of its stderr.
pub const DEFAULT_LOG_CAP: u64 = 8 * 1024 * 1024;
/// How long a closed server may take to exit, before SIGTERM, then SIGKILL.
const EXIT_GRACE: Duration = Duration::from_secs(3);
/// Bytes of the start of each line kept to find its id.
const HEAD_BYTES: usize = 256;
/// Bytes of the end of each line kept to find its id (replies that put it last).
const TAIL_BYTES: usize = 256;
/// Bytes of the newest stderr kept in memory to explain a failed start.
const STDERR_TAIL_BYTES: usize = 4096;

/// rmcp drops a line over its limit and waits for the next one, so the call
/// it answered would wait its whole timeout. This reader passes everything
/// through and, after the newline that ends such a line, adds a line of its
/// own: a JSON-RPC error with the dropped reply's id, which rmcp hands to the
/// waiting call at once.
pub struct LineGuard<R> {
    inner: R,
    line_len: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
    /// The stand-in reply still to be read.
    reply: Vec<u8>,
    /// Bytes read from `inner` after a cut, not yet passed on or scanned.
    unscanned: Vec<u8>,
}

impl<R> LineGuard<R> {
    /// `inner`, guarded.
    pub fn new(inner: R) -> Self {
        LineGuard {
            inner,
            line_len: 0,
            head: Vec::new(),
            tail: Vec::new(),
            reply: Vec::new(),
            unscanned: Vec::new(),
        }
    }

    /// Follows `bytes` line by line; at the end of the first line over the
    /// limit that is a reply with an id: where to cut and the stand-in.
    fn scan(&mut self, bytes: &[u8]) -> Option<(usize, Vec<u8>)> {
        let mut at = 0;
        while at < bytes.len() {
            let rest = &bytes[at..];
            let (piece, ends) = match rest.iter().position(|b| *b == b'\n') {
                Some(i) => (&rest[..=i], true),
                None => (rest, false),
            };
            self.note(piece);
            at += piece.len();
            if ends {
                let over = self.line_len > MAX_LINE_BYTES;
                let reply = over.then(|| self.stand_in()).flatten();
                self.line_len = 0;
                self.head.clear();
                self.tail.clear();
                if let Some(reply) = reply {
                    return Some((at, reply));
                }
            }
        }
        None
    }

    fn note(&mut self, piece: &[u8]) {
        self.line_len = self.line_len.saturating_add(piece.len());
        let room = HEAD_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&piece[..room.min(piece.len())]);
        if piece.len() >= TAIL_BYTES {
            self.tail.clear();
            self.tail
                .extend_from_slice(&piece[piece.len() - TAIL_BYTES..]);
        } else {
            self.tail.extend_from_slice(piece);
            let extra = self.tail.len().saturating_sub(TAIL_BYTES);
            self.tail.drain(..extra);
        }
    }

    /// The error reply for the line just ended, when it is a reply whose id
    /// can be found.
    fn stand_in(&self) -> Option<Vec<u8>> {
        let result_at = find(&self.head, b"\"result\"")?;
        let id = id_before(&self.head[..result_at]).or_else(|| id_at_end(&self.tail))?;
        Some(
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32603,\"message\":\"{TOO_LARGE}\"}}}}\n"
            )
            .into_bytes(),
        )
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// The JSON id value (a number, or a plain string with its quotes) that
/// starts `text` after `:` and spaces, and the bytes after it.
fn id_value(text: &[u8]) -> Option<(String, &[u8])> {
    let text = text.strip_prefix(b":").or_else(|| {
        let t = text.trim_ascii_start();
        t.strip_prefix(b":")
    })?;
    let text = text.trim_ascii_start();
    let len = if text.first() == Some(&b'"') {
        let end = text[1..].iter().position(|b| *b == b'"')? + 2;
        let inner = &text[1..end - 1];
        // Only plain strings: nothing that would need escaping again.
        if !inner
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(b))
        {
            return None;
        }
        end
    } else {
        let n = text
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'-')
            .count();
        if n == 0 {
            return None;
        }
        n
    };
    let value = std::str::from_utf8(&text[..len]).ok()?.to_string();
    Some((value, &text[len..]))
}

/// The top-level id of a reply that names it before its result.
fn id_before(head: &[u8]) -> Option<String> {
    let at = find(head, b"\"id\"")?;
    id_value(&head[at + 4..]).map(|(v, _)| v)
}

/// The top-level id of a reply that names it last (`…,"id":3}`).
fn id_at_end(tail: &[u8]) -> Option<String> {
    let at = rfind(tail, b"\"id\"")?;
    let (value, after) = id_value(&tail[at + 4..])?;
    let after = after.trim_ascii();
    (after.starts_with(b"}") && after.len() <= 40).then_some(value)
}

impl<R: AsyncRead + Unpin> AsyncRead for LineGuard<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if !this.reply.is_empty() {
            let n = buf.remaining().min(this.reply.len());
            buf.put_slice(&this.reply[..n]);
            this.reply.drain(..n);
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        if this.unscanned.is_empty() {
            match Pin::new(&mut this.inner).poll_read(cx, buf) {
                Poll::Ready(Ok(())) => {}
                other => return other,
            }
        } else {
            let n = buf.remaining().min(this.unscanned.len());
            buf.put_slice(&this.unscanned[..n]);
            this.unscanned.drain(..n);
        }
        if let Some((cut, reply)) = this.scan(&buf.filled()[before..]) {
            let end = before + cut;
            let rest = buf.filled()[end..].to_vec();
            this.unscanned.splice(0..0, rest);
            buf.set_filled(end);
            this.reply = reply;
        }
        Poll::Ready(Ok(()))
    }
}

/// A server process and rmcp's line transport on its stdin and stdout.
/// Closing it ends stdin and gives the server time to exit, then stops its
/// group; dropping it kills the group.
pub struct ChildTransport {
    inner: AsyncRwTransport<RoleClient, LineGuard<ChildStdout>, ChildStdin>,
    child: Option<Child>,
    group: Option<Pid>,
}

impl ChildTransport {
    /// The transport of `child`, spawned with piped stdin and stdout in a
    /// process group of its own.
    pub fn new(mut child: Child) -> std::io::Result<ChildTransport> {
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("its stdin is not a pipe"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("its stdout is not a pipe"))?;
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        let inner = AsyncRwTransport::new_client(LineGuard::new(stdout), stdin)
            .with_max_line_length(MAX_LINE_BYTES);
        Ok(ChildTransport {
            inner,
            child: Some(child),
            group,
        })
    }

    fn signal_group(&self, signal: Signal) {
        if let Some(group) = self.group {
            let _ = killpg(group, signal);
        }
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The MCP way first: stdin closes and the server exits by itself.
        let closed = self.inner.close().await;
        // Dropped midway, the child is killed on drop and its supervisor
        // stops the group.
        if let Some(mut child) = self.child.take()
            && tokio::time::timeout(EXIT_GRACE, child.wait())
                .await
                .is_err()
        {
            self.signal_group(Signal::SIGTERM);
            if tokio::time::timeout(EXIT_GRACE, child.wait())
                .await
                .is_err()
            {
                self.signal_group(Signal::SIGKILL);
                let _ = child.wait().await;
            }
        }
        closed
    }
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        // Still running (never closed): the whole group goes at once.
        if let Some(child) = self.child.as_mut()
            && !matches!(child.try_wait(), Ok(Some(_)))
        {
            self.signal_group(Signal::SIGKILL);
        }
    }
}

/// The newest bytes of a server's stderr, and whether it has ended.
#[derive(Default)]
struct TailState {
    bytes: Vec<u8>,
    ended: bool,
}

/// What a server wrote last to stderr, kept to explain a failed start.
#[derive(Clone, Default)]
pub struct StderrTail {
    state: Arc<Mutex<TailState>>,
    ended: Arc<tokio::sync::Notify>,
}

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        if let Ok(mut s) = self.state.lock() {
            s.bytes.extend_from_slice(bytes);
            let extra = s.bytes.len().saturating_sub(STDERR_TAIL_BYTES);
            s.bytes.drain(..extra);
        }
    }

    fn end(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.ended = true;
        }
        self.ended.notify_waiters();
    }

    /// Its last `lines` non-empty lines, once stderr has ended or `wait` has
    /// passed (a process the server left may hold it open).
    pub async fn last_lines(&self, lines: usize, wait: Duration) -> Vec<String> {
        let ended = self.ended.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        let done = self.state.lock().map(|s| s.ended).unwrap_or(true);
        if !done {
            let _ = tokio::time::timeout(wait, ended).await;
        }
        let bytes = self
            .state
            .lock()
            .map(|s| s.bytes.clone())
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let mut last: Vec<String> = text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty())
            .rev()
            .take(lines)
            .map(str::to_string)
            .collect();
        last.reverse();
        last
    }
}

/// Copies `stderr` to `log` until it ends, keeping at most `budget` bytes
/// (then one line saying the log stopped at `cap` bytes, and the rest is
/// read and dropped so the server never blocks on a full pipe); returns
/// the tail it keeps in memory.
pub fn copy_stderr(
    stderr: Option<ChildStderr>,
    mut log: std::fs::File,
    budget: u64,
    cap: u64,
) -> StderrTail {
    let tail = StderrTail::default();
    let Some(mut stderr) = stderr else {
        tail.end();
        return tail;
    };
    let kept = tail.clone();
    tokio::spawn(async move {
        let mut left = budget;
        let mut stopped = false;
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let bytes = &buf[..n];
            kept.push(bytes);
            if stopped {
                continue;
            }
            let take = usize::try_from(left).unwrap_or(usize::MAX).min(n);
            // A full disk loses log lines, never the server.
            let _ = log.write_all(&bytes[..take]);
            left -= take as u64;
            if take < n {
                let _ = write!(
                    log,
                    "\n[cadre: this log stopped at {cap} bytes; the rest of the server's stderr was dropped]\n"
                );
                stopped = true;
            }
        }
        kept.end();
    });
    tail
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(input: Vec<u8>) -> Vec<u8> {
        let mut guard = LineGuard::new(&input[..]);
        let mut out = Vec::new();
        guard.read_to_end(&mut out).await.unwrap();
        out
    }

    fn oversized(prefix: &str, suffix: &str) -> Vec<u8> {
        let mut line = prefix.as_bytes().to_vec();
        line.resize(line.len() + MAX_LINE_BYTES, b'x');
        line.extend_from_slice(suffix.as_bytes());
        line.push(b'\n');
        line
    }

    #[tokio::test]
    async fn a_reply_over_the_limit_is_followed_by_an_error_for_its_id() {
        let small = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n".to_vec();
        // rmcp's order: the id before the result.
        let mut input = small.clone();
        input.extend(oversized(
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"t\":\"",
            "\"}}",
        ));
        input.extend_from_slice(&small);
        let out = read_all(input.clone()).await;
        let stand_in = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{{\"code\":-32603,\"message\":\"{TOO_LARGE}\"}}}}\n"
        );
        let mut expected = input[..input.len() - small.len()].to_vec();
        expected.extend_from_slice(stand_in.as_bytes());
        expected.extend_from_slice(&small);
        assert_eq!(out.len(), expected.len());
        assert!(out == expected, "the stand-in follows the long line");

        // The TypeScript SDK's order: the id last.
        let input = oversized(
            "{\"result\":{\"t\":\"",
            "\"},\"jsonrpc\":\"2.0\",\"id\":\"a-1\"}",
        );
        let out = read_all(input.clone()).await;
        let tail = String::from_utf8_lossy(&out[input.len()..]).into_owned();
        assert!(
            tail.starts_with("{\"jsonrpc\":\"2.0\",\"id\":\"a-1\",\"error\""),
            "{tail}"
        );
    }

    #[test]
    fn the_log_cap_is_8_mib_and_the_line_limit_rmcps_own() {
        assert_eq!(DEFAULT_LOG_CAP, 8 * 1024 * 1024);
        assert_eq!(
            MAX_LINE_BYTES,
            rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH
        );
    }

    #[tokio::test]
    async fn lines_within_the_limit_and_long_requests_pass_unchanged() {
        let mut input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n".to_vec();
        input.extend(oversized(
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\",\"params\":\"",
            "\"}",
        ));
        let out = read_all(input.clone()).await;
        assert!(out == input);
    }
}
