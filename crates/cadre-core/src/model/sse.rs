//! A Server-Sent Events reader that stays linear in the length of a line and
//! caps the size of one event. (A general-purpose parser that re-scans its
//! whole buffer on every network chunk takes quadratic time on one long line.)

use thiserror::Error;

/// The largest event accepted, in bytes. A real event is one delta of a reply
/// (a few KB); even a whole reply sent as one event is bounded by the output
/// token limit (128k tokens ≈ 512 KB of text, under 4 MB escaped as JSON), so
/// 16 MiB is far above anything legitimate while keeping memory bounded.
pub(crate) const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, empty when none was given.
    pub(crate) event: String,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
}

/// Why the stream cannot be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum SseError {
    /// One event grew past the limit.
    #[error("one event in the reply stream exceeds {limit} bytes; cadre stopped reading it")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// A line was not UTF-8.
    #[error("the reply stream is not valid UTF-8")]
    Utf8,
}

/// Incremental SSE parser: feed it network chunks, collect whole events.
#[derive(Debug)]
pub(crate) struct SseParser {
    /// Bytes not yet consumed; always starts at the beginning of a line.
    buf: Vec<u8>,
    /// How far `buf` has been searched for a line end (never searched twice).
    scanned: usize,
    /// A `\r` ended the last line, so a `\n` at the start of the next chunk belongs to it.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
    limit: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_limit(MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// A parser that rejects events larger than `limit` bytes.
    pub(crate) fn with_limit(limit: usize) -> Self {
        SseParser {
            buf: Vec::new(),
            scanned: 0,
            after_cr: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
            limit,
        }
    }

    /// Adds a chunk and appends every event it completes to `out`.
    pub(crate) fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut chunk = chunk;
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        let mut i = self.scanned;
        while i < self.buf.len() {
            let b = self.buf[i];
            if b != b'\n' && b != b'\r' {
                i += 1;
                continue;
            }
            let line_end = i;
            i += 1;
            if b == b'\r' {
                if i < self.buf.len() {
                    if self.buf[i] == b'\n' {
                        i += 1;
                    }
                } else {
                    self.after_cr = true;
                }
            }
            let line =
                std::str::from_utf8(&self.buf[start..line_end]).map_err(|_| SseError::Utf8)?;
            // Borrow juggling: the line lives in `buf`, the state beside it.
            let (event, data, has_data) = (&mut self.event, &mut self.data, &mut self.has_data);
            if let Some(ev) = process_line(line, event, data, has_data) {
                out.push(ev);
            }
            if self.data.len() > self.limit {
                return Err(SseError::TooLarge { limit: self.limit });
            }
            start = i;
        }
        if start > 0 {
            self.buf.drain(..start);
        }
        self.scanned = self.buf.len();
        if self.buf.len() + self.data.len() > self.limit {
            return Err(SseError::TooLarge { limit: self.limit });
        }
        Ok(())
    }
}

/// Applies one line to the event being built; a blank line dispatches it.
fn process_line(
    line: &str,
    event: &mut String,
    data: &mut String,
    has_data: &mut bool,
) -> Option<SseEvent> {
    if line.is_empty() {
        let out = has_data.then(|| SseEvent {
            event: std::mem::take(event),
            data: std::mem::take(data),
        });
        event.clear();
        data.clear();
        *has_data = false;
        return out;
    }
    if line.starts_with(':') {
        return None;
    }
    let (field, value) = match line.split_once(':') {
        Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
        None => (line, ""),
    };
    match field {
        "data" => {
            if *has_data {
                data.push('\n');
            }
            data.push_str(value);
            *has_data = true;
        }
        "event" => *event = value.to_string(),
        // llama.cpp's server has sent mid-stream errors as an `error:` field.
        "error" => {
            *event = "error".to_string();
            if *has_data {
                data.push('\n');
            }
            data.push_str(value);
            *has_data = true;
        }
        _ => {}
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for c in chunks {
            p.push(c, &mut out).unwrap();
        }
        out
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_across_chunks_and_line_endings() {
        let got = parse_chunks(&[
            b"event: a\r",
            b"\ndata: 1\r\ndata:2\n\n: comment\n",
            b"data: x",
            b"y\r\r",
            b"error: {\"e\":1}\n\n",
            b"data: tail-without-blank-line\n",
        ]);
        assert_eq!(
            got,
            vec![ev("a", "1\n2"), ev("", "xy"), ev("error", "{\"e\":1}")]
        );
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let text = "event: e\r\ndata: héllo\r\n\r\ndata: b\rdata: c\r\rdata: d\n\n";
        let whole = parse_chunks(&[text.as_bytes()]);
        assert_eq!(whole.len(), 3);
        for cut in 0..text.len() {
            let (a, b) = text.as_bytes().split_at(cut);
            assert_eq!(parse_chunks(&[a, b]), whole, "split at {cut}");
        }
    }

    #[test]
    fn an_oversized_event_is_an_error_before_it_is_buffered_whole() {
        let mut p = SseParser::with_limit(1000);
        let mut out = Vec::new();
        p.push(b"data: ", &mut out).unwrap();
        let chunk = [b'x'; 100];
        let mut err = None;
        for _ in 0..20 {
            if let Err(e) = p.push(&chunk, &mut out) {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err, Some(SseError::TooLarge { limit: 1000 }));
        // Many data lines adding up past the limit are caught too.
        let mut p = SseParser::with_limit(1000);
        let line = format!("data: {}\n", "y".repeat(90));
        let mut res = Ok(());
        for _ in 0..20 {
            res = res.and_then(|()| p.push(line.as_bytes(), &mut out));
        }
        assert_eq!(res, Err(SseError::TooLarge { limit: 1000 }));
    }
}
