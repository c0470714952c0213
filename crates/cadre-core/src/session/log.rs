//! One session's log file: versioned records, appended and flushed one line at
//! a time, and read back tolerantly (a line torn by a crash is skipped with a
//! warning, never a panic).
//!
//! The lines of every log of the process are written by one thread, in the
//! order they were asked for, so a slow disk stalls only the agent waiting for
//! its own record, never the runtime's thread. An agent still waits for its
//! record before it goes on ([`SessionLog::append`]): a tool call is in the
//! log before it runs, exactly as when the write was made in place.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::SessionError;
use super::log_writer::{LineWrite, LogFile, log_writer, open_private, write_lines};
use crate::model::{ContentBlock, Message, Role, ToolImage, Usage};
use crate::protocol::CompactTrigger;

/// Version of the record format written now. Readers accept this and older.
pub const LOG_VERSION: u32 = 1;

/// What the model is told about a call that may or may not have run.
pub const UNKNOWN_RESULT: &str = "unknown: cadre stopped while this call was running, so it may or may not have run (and may have had effects). Check before repeating it.";
/// What the model is told about a call that never started.
pub const NOT_RUN_RESULT: &str = "not run: cadre stopped before this call started.";

/// One line of a log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LogRecord {
    /// Format version.
    pub v: u32,
    /// When it was written, ms since the Unix epoch.
    pub time_ms: u64,
    /// The content.
    #[serde(flatten)]
    pub body: RecordBody,
}

/// The kinds of record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RecordBody {
    /// First record of a session.
    SessionStart {
        /// Session id.
        session_id: String,
        /// Working directory.
        cwd: String,
        /// Provider.
        provider: String,
        /// Model.
        model: String,
    },
    /// The session was resumed here.
    Resumed {
        /// Calls recorded as `unknown` on resume.
        unknown_calls: Vec<String>,
    },
    /// User text.
    User {
        /// The text.
        text: String,
    },
    /// An image the user attached, after the text of their message.
    UserImage {
        /// The image; its data is the name of the copy beside the log.
        image: ToolImage,
    },
    /// A complete assistant message.
    Assistant {
        /// The message.
        message: Message,
        /// Tokens its request used (absent in logs from before cadre counted them).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// What its request cost, in billionths of a US dollar, when the
        /// model's prices were known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_nanodollars: Option<u64>,
    },
    /// A tool call is about to run.
    ToolStart {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Raw arguments.
        input: String,
    },
    /// A tool call's result.
    ToolResult {
        /// Call id.
        call_id: String,
        /// Result text.
        content: String,
        /// Whether it failed.
        is_error: bool,
        /// How the call went.
        status: CallStatus,
        /// Images (or a PDF) the result held; their data names the copies
        /// beside the log (absent in older logs).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ToolImage>,
    },
    /// A turn ended.
    TurnEnd {
        /// How.
        status: String,
        /// Why it did not complete, when it did not (absent in older logs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The conversation was compacted here: from this record on, it is the
    /// summary followed by `kept` (nothing before is deleted; `--resume`
    /// rebuilds from the last boundary).
    CompactBoundary {
        /// Why.
        trigger: CompactTrigger,
        /// The model's summary of everything before.
        summary: String,
        /// The most recent messages, kept verbatim after the summary.
        kept: Vec<Message>,
        /// Tokens in use before.
        tokens_before: u64,
        /// Estimated tokens of the compacted conversation's next request.
        tokens_after: u64,
        /// Tokens the summary request used.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// What the summary request cost, in billionths of a US dollar.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_nanodollars: Option<u64>,
    },
    /// The user went back to before one of their messages: from here on the
    /// conversation is its first `messages` messages and `blocks` blocks of
    /// the next (nothing before is deleted).
    Rewind {
        /// Messages kept whole.
        messages: usize,
        /// Blocks kept of the message after them.
        blocks: usize,
    },
    /// A model request failed transiently and is retried (diagnostic; resume ignores it).
    Retry {
        /// The try about to be made.
        attempt: u32,
        /// What failed.
        reason: String,
        /// Whether streamed text of the failed try was discarded.
        discarded_text: bool,
    },
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// An open log, appended to by one session (and shared by its agents).
#[derive(Debug)]
pub struct SessionLog {
    path: PathBuf,
    file: Arc<LogFile>,
    /// For a log reopened by a resume: [`Rebuilt::counted`] of it.
    counted: Option<(u64, usize)>,
    /// Why a record handed over without a wait ([`Self::append_unawaited`])
    /// could not be written: the next append reports it.
    unawaited_failure: Arc<OnceLock<String>>,
}

impl SessionLog {
    /// Creates a new log file (0600) at `path`; its directory must exist.
    pub fn create(path: &Path) -> Result<SessionLog, SessionError> {
        let file = open_private(path, true)?;
        Ok(SessionLog {
            path: path.to_path_buf(),
            file: Arc::new(LogFile::opened(path, file)),
            counted: None,
            unawaited_failure: Arc::default(),
        })
    }

    /// A new log at `path` whose file (0600) is created by its first write,
    /// on the log writer's thread: the append that writes it (or, for one
    /// not awaited, the next append) reports a file that cannot be created
    /// as [`Self::create`] would. For a batch's children, whose logs are
    /// made while they send their first requests.
    pub fn create_on_first_write(path: &Path) -> SessionLog {
        SessionLog {
            path: path.to_path_buf(),
            file: Arc::new(LogFile::on_first_write(path)),
            counted: None,
            unawaited_failure: Arc::default(),
        }
    }

    /// Reopens an existing log for appending. A torn last line is moved to
    /// its recovery file first ([`recover_torn_tail`]) so the next record
    /// starts cleanly.
    pub fn reopen(path: &Path) -> Result<SessionLog, SessionError> {
        recover_torn_tail(path)?;
        let file = open_private(path, false)?;
        Ok(SessionLog {
            path: path.to_path_buf(),
            file: Arc::new(LogFile::opened(path, file)),
            counted: None,
            unawaited_failure: Arc::default(),
        })
    }

    /// The same log, carrying what the provider last counted for the
    /// conversation it rebuilds to ([`Rebuilt::counted`]), for the agent
    /// that continues it.
    pub fn with_counted(mut self, counted: Option<(u64, usize)>) -> SessionLog {
        self.counted = counted;
        self
    }

    /// See [`Self::with_counted`].
    pub fn counted(&self) -> Option<(u64, usize)> {
        self.counted
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends the records that rebuild `messages` (a child that starts from
    /// an inherited conversation logs it first, so it can be resumed), and
    /// returns once the OS has them all.
    pub async fn append_messages(&self, messages: &[Message]) -> Result<(), SessionError> {
        self.append_all(message_records(messages)).await
    }

    async fn append_all(&self, records: Vec<RecordBody>) -> Result<(), SessionError> {
        let mut lines = Vec::with_capacity(records.len());
        for body in records {
            lines.push(self.line(body)?);
        }
        self.write(lines).await
    }

    /// Appends one record as one line, in one write, and returns once the OS
    /// has it. The write is made by the log writer's thread; this waits for it.
    pub async fn append(&self, body: RecordBody) -> Result<(), SessionError> {
        let line = self.line(body)?;
        self.write(vec![line]).await
    }

    /// Hands a record to the log writer without waiting for it: it lands
    /// before any record appended after it, and an append awaited after it
    /// returns only once it is written. A failure to write it is reported by
    /// the next append (this one's, if an earlier record failed). For records
    /// nothing waits on: the reply logged before its calls' `ToolStart` (which
    /// is awaited), a call's result logged as the next request goes out.
    pub fn append_unawaited(&self, body: RecordBody) -> Result<(), SessionError> {
        self.earlier_failure()?;
        let line = self.line(body)?;
        self.hand_over(vec![line])
    }

    /// Hands `first` and then the records that rebuild `messages` to the log
    /// writer without waiting, as [`Self::append_unawaited`] does: a new
    /// child's whole start, whose file (made by this first write) a slow
    /// disk may take milliseconds to create while the child sends its first
    /// request. A failure to create or write it is reported by the next
    /// append.
    pub fn append_with_messages_unawaited(
        &self,
        first: RecordBody,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        self.earlier_failure()?;
        let mut lines = vec![self.line(first)?];
        for body in message_records(messages) {
            lines.push(self.line(body)?);
        }
        self.hand_over(lines)
    }

    /// Gives `lines` to the log writer; a failure is kept for the next append.
    fn hand_over(&self, lines: Vec<Vec<u8>>) -> Result<(), SessionError> {
        let job = LineWrite {
            file: self.file.clone(),
            lines,
            done: None,
            failure: Some(self.unawaited_failure.clone()),
        };
        let unsent = match log_writer() {
            Some(writer) => writer.send(job).err().map(|e| e.0),
            None => Some(job),
        };
        match unsent {
            Some(job) => write_lines(&self.file, &job.lines).map_err(|e| self.write_error(e)),
            None => Ok(()),
        }
    }

    /// Returns once every record handed over before is written, or with the
    /// failure of one of them.
    pub async fn written(&self) -> Result<(), SessionError> {
        self.write(Vec::new()).await
    }

    /// The failure of a record written without a wait, if one failed.
    fn earlier_failure(&self) -> Result<(), SessionError> {
        match self.unawaited_failure.get() {
            Some(e) => Err(self.write_error(std::io::Error::other(format!(
                "an earlier record could not be written: {e}"
            )))),
            None => Ok(()),
        }
    }

    /// [`Self::append`] made in place, blocking the calling thread: for code
    /// outside the async runtime (`cadre sessions`). Not to be mixed with
    /// [`Self::queue`] on one log, whose lines could still be waiting.
    pub fn append_now(&self, body: RecordBody) -> Result<(), SessionError> {
        let line = self.line(body)?;
        write_lines(&self.file, &[line]).map_err(|e| self.write_error(e))
    }

    /// Hands a record to the log writer without waiting for it (a diagnostic
    /// from code that cannot await); it lands before any record appended
    /// after it. A failure to write it is not reported.
    pub fn queue(&self, body: RecordBody) {
        let Ok(line) = self.line(body) else {
            return;
        };
        let job = LineWrite {
            file: self.file.clone(),
            lines: vec![line],
            done: None,
            failure: None,
        };
        match log_writer() {
            Some(writer) => {
                if let Err(unsent) = writer.send(job) {
                    let _ = write_lines(&self.file, &unsent.0.lines);
                }
            }
            None => {
                let _ = write_lines(&self.file, &job.lines);
            }
        }
    }

    /// The record as one line of JSON, newline included. Its images are
    /// stored beside the log first and named in the line, not inlined.
    fn line(&self, mut body: RecordBody) -> Result<Vec<u8>, SessionError> {
        // The folder's name is made only for a record that holds an image.
        let mut dir = None;
        let mut stored = Ok(());
        for_each_image(&mut body, &mut |image| {
            if stored.is_ok() {
                let dir = dir.get_or_insert_with(|| images_dir(&self.path));
                stored = store_image(dir, image);
            }
        });
        stored.map_err(|source| SessionError::Write {
            path: dir.unwrap_or_else(|| images_dir(&self.path)),
            source,
        })?;
        let record = LogRecord {
            v: LOG_VERSION,
            time_ms: now_ms(),
            body,
        };
        let mut line =
            serde_json::to_vec(&record).map_err(|e| self.write_error(std::io::Error::other(e)))?;
        line.push(b'\n');
        Ok(line)
    }

    /// Has the log writer write `lines`, in order, and waits until it has.
    async fn write(&self, lines: Vec<Vec<u8>>) -> Result<(), SessionError> {
        // Nothing lands after a record that could not be written.
        self.earlier_failure()?;
        let (done, written) = tokio::sync::oneshot::channel();
        let job = LineWrite {
            file: self.file.clone(),
            lines,
            done: Some(done),
            failure: None,
        };
        let Some(writer) = log_writer() else {
            return write_lines(&self.file, &job.lines).map_err(|e| self.write_error(e));
        };
        if let Err(unsent) = writer.send(job) {
            return write_lines(&self.file, &unsent.0.lines).map_err(|e| self.write_error(e));
        }
        match written.await {
            // Records handed over before this one are written by now.
            Ok(result) => result
                .map_err(|e| self.write_error(e))
                .and_then(|()| self.earlier_failure()),
            Err(_) => Err(self.write_error(std::io::Error::other(
                "the log writer stopped before writing the record",
            ))),
        }
    }

    fn write_error(&self, source: std::io::Error) -> SessionError {
        SessionError::Write {
            path: self.path.clone(),
            source,
        }
    }
}

/// The records that rebuild `messages`, in order.
fn message_records(messages: &[Message]) -> Vec<RecordBody> {
    let mut records = Vec::new();
    for m in messages {
        match m.role {
            Role::Assistant => records.push(RecordBody::Assistant {
                message: m.clone(),
                usage: None,
                cost_nanodollars: None,
            }),
            Role::User => {
                for b in &m.content {
                    match b {
                        ContentBlock::Text { text } => {
                            records.push(RecordBody::User { text: text.clone() })
                        }
                        ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                            images,
                        } => records.push(RecordBody::ToolResult {
                            call_id: tool_use_id.clone(),
                            content: content.clone(),
                            is_error: *is_error,
                            status: if *is_error {
                                CallStatus::Error
                            } else {
                                CallStatus::Ok
                            },
                            images: images.clone(),
                        }),
                        ContentBlock::Image(image) => records.push(RecordBody::UserImage {
                            image: image.clone(),
                        }),
                        ContentBlock::ToolUse { .. } | ContentBlock::ServerBlock { .. } => {}
                    }
                }
            }
        }
    }
    records
}

/// Where the images of the log at `path` are kept: `<id>.images/` beside the
/// session's log, shared by its subagents' logs (in `<id>.agents/`), so one
/// image is stored once for the whole session.
pub fn images_dir(path: &Path) -> PathBuf {
    let parent = path.parent().unwrap_or(Path::new("."));
    if let Some(session) = parent
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".agents"))
    {
        let grandparent = parent.parent().unwrap_or(Path::new("."));
        return grandparent.join(format!("{session}.images"));
    }
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("log");
    parent.join(format!("{stem}.images"))
}

/// What a stored image's data starts with in a log (never base64, which has no `:`).
const STORED_PREFIX: &str = "sha256:";

/// Calls `f` on every image a record holds.
fn for_each_image(body: &mut RecordBody, f: &mut dyn FnMut(&mut ToolImage)) {
    match body {
        RecordBody::UserImage { image } => f(image),
        RecordBody::ToolResult { images, .. } => images.iter_mut().for_each(f),
        RecordBody::Assistant { message, .. } => each_image_in(message, f),
        RecordBody::CompactBoundary { kept, .. } => {
            for m in kept {
                each_image_in(m, f);
            }
        }
        _ => {}
    }
}

/// Calls `f` on every image of a message (changing it only when it has any).
fn each_image_in(m: &mut Message, f: &mut dyn FnMut(&mut ToolImage)) {
    if !m.has_images() {
        return;
    }
    for block in m.content.blocks_mut() {
        match block {
            ContentBlock::Image(image) => f(image),
            ContentBlock::ToolResult { images, .. } => {
                for image in images.iter_mut() {
                    f(image);
                }
            }
            _ => {}
        }
    }
}

/// Writes `image` to `dir` under its content's hash (once: a copy already
/// there is the same bytes) and makes its data name that copy.
fn store_image(dir: &Path, image: &mut ToolImage) -> std::io::Result<()> {
    use sha2::Digest;
    if image.data.starts_with(STORED_PREFIX) {
        return Ok(());
    }
    let Some(bytes) = crate::media::base64_decode(&image.data) else {
        // Not base64: kept inline, as it came.
        return Ok(());
    };
    let hash: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let file = dir.join(format!(
        "{hash}.{}",
        crate::media::extension_of(&image.media_type)
    ));
    if !file.is_file() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(dir)?;
        // Written under a temporary name and renamed, so a crash never
        // leaves a half image under the real name.
        let tmp = dir.join(format!(".{hash}.{}.tmp", std::process::id()));
        let mut opts = OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut out = opts.open(&tmp)?;
        out.write_all(&bytes)?;
        out.sync_all()?;
        std::fs::rename(&tmp, &file)?;
    }
    image.data = format!("{STORED_PREFIX}{hash}");
    Ok(())
}

/// Puts the bytes of every stored image of `body` back from `dir`; an
/// image whose copy is gone is named in `missing`.
fn load_images(dir: &Path, body: &mut RecordBody, missing: &mut Vec<String>) {
    for_each_image(body, &mut |image| {
        let Some(hash) = image.data.strip_prefix(STORED_PREFIX) else {
            return;
        };
        let valid = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        let file = dir.join(format!(
            "{hash}.{}",
            crate::media::extension_of(&image.media_type)
        ));
        match std::fs::read(&file) {
            Ok(bytes) if valid => image.data = crate::media::base64_encode(&bytes),
            _ => missing.push(hash.to_string()),
        }
    });
}

/// Where the torn last line of the log at `path` is kept: beside it, with
/// `.torn` added to its name (no session listing reads it).
pub fn recovery_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".torn");
    path.with_file_name(name)
}

/// A torn last line moved out of a log by [`recover_torn_tail`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredTail {
    /// The recovery file the bytes were appended to.
    pub file: PathBuf,
    /// How many bytes were moved.
    pub bytes: usize,
}

/// Makes the log at `path` end with a whole line before anything is
/// appended: an incomplete last line (a crash or a full disk cut it) is
/// appended to the [`recovery_path`] file (0600) and cut from the log, so it
/// never ends up in the middle of the log. A last line that is a whole
/// record and only lacks its newline gets the newline. `None` when the log
/// already ended cleanly.
pub fn recover_torn_tail(path: &Path) -> Result<Option<RecoveredTail>, SessionError> {
    let read_error = |source| SessionError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(read_error)?;
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(None);
    }
    let start = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let tail = &bytes[start..];
    let mut log = open_private(path, false)?;
    let write_error = |source| SessionError::Write {
        path: path.to_path_buf(),
        source,
    };
    if serde_json::from_slice::<LogRecord>(tail).is_ok() {
        log.write_all(b"\n").map_err(write_error)?;
        return Ok(None);
    }
    // Kept first, cut after: a crash in between loses nothing.
    let file = recovery_path(path);
    let mut recovery = open_private_creating(&file)?;
    recovery
        .write_all(tail)
        .and_then(|()| recovery.sync_all())
        .map_err(|source| SessionError::Write {
            path: file.clone(),
            source,
        })?;
    log.set_len(start as u64).map_err(write_error)?;
    Ok(Some(RecoveredTail {
        file,
        bytes: tail.len(),
    }))
}

/// Opens `path` for appending, made 0600 when missing.
fn open_private_creating(path: &Path) -> Result<File, SessionError> {
    let mut opts = OpenOptions::new();
    opts.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path).map_err(|source| SessionError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// A log read back.
#[derive(Debug, Clone, Default)]
pub struct LoadedLog {
    /// Records that parsed, in order.
    pub records: Vec<LogRecord>,
    /// Lines that were skipped and why.
    pub warnings: Vec<String>,
}

/// Reads a log; unreadable lines are skipped with a warning.
pub fn read_log(path: &Path) -> Result<LoadedLog, SessionError> {
    let bytes = std::fs::read(path).map_err(|source| SessionError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let ends_clean = bytes.is_empty() || bytes.ends_with(b"\n");
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = LoadedLog::default();
    let last_content = lines.iter().rposition(|l| !l.trim().is_empty());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<LogRecord>(line) {
            Ok(mut r) if r.v <= LOG_VERSION => {
                let mut missing = Vec::new();
                load_images(&images_dir(path), &mut r.body, &mut missing);
                if !missing.is_empty() {
                    // Left unsendable: dropped from the record below.
                    out.warnings.push(format!(
                        "line {} names {} image(s) no longer beside the log; left out",
                        i + 1,
                        missing.len()
                    ));
                    drop_stored(&mut r.body);
                }
                out.records.push(r)
            }
            Ok(r) => out.warnings.push(format!(
                "line {} has record version {} (newer than this cadre's {LOG_VERSION}); skipped",
                i + 1,
                r.v
            )),
            Err(_) if Some(i) == last_content && !ends_clean => out.warnings.push(format!(
                "the last line ({}) was cut off mid-write, probably by a crash; ignored",
                i + 1
            )),
            Err(e) => out.warnings.push(format!(
                "line {} is not a valid record ({e}); skipped",
                i + 1
            )),
        }
    }
    Ok(out)
}

/// Leaves out the images of `body` whose copies could not be read.
fn drop_stored(body: &mut RecordBody) {
    let lost = |i: &ToolImage| i.data.starts_with(STORED_PREFIX);
    let note = |i: &ToolImage| ContentBlock::Text {
        text: format!("[{} no longer stored]", i.media_type),
    };
    let in_message = |m: &mut Message| {
        for block in m.content.blocks_mut() {
            match block {
                ContentBlock::Image(i) if lost(i) => *block = note(i),
                ContentBlock::ToolResult { images, .. } => images.retain(|i| !lost(i)),
                _ => {}
            }
        }
    };
    match body {
        RecordBody::UserImage { image } if lost(image) => {
            *body = RecordBody::User {
                text: format!("[{} no longer stored]", image.media_type),
            };
        }
        RecordBody::ToolResult { images, .. } => images.retain(|i| !lost(i)),
        RecordBody::Assistant { message, .. } => in_message(message),
        RecordBody::CompactBoundary { kept, .. } => kept.iter_mut().for_each(in_message),
        _ => {}
    }
}

/// How a tool call went, as its `tool_result` record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// It ran and succeeded.
    Ok,
    /// It ran and failed, or its arguments or tool were wrong.
    Error,
    /// The permission policy or the user refused it.
    Denied,
    /// It was started but its result was lost (a crash): it may have run.
    Unknown,
    /// It never ran (interrupted, or a limit stopped it first).
    NotRun,
}

#[cfg(test)]
#[path = "log_tests.rs"]
mod tests;
