//! Where session logs live, and listing and removing them. Child logs live in
//! `<id>.agents/` beside their parent's log and are never listed.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{LOG_VERSION, SessionError};
use crate::context::Cost;
use crate::model::Usage;

/// `$CADRE_HOME/sessions`.
pub fn sessions_dir(home: &Path) -> PathBuf {
    home.join("sessions")
}

/// True if `id` could be a session id (no path characters).
pub fn is_valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The log of top-level session `id`; refuses ids of child logs and odd ids.
pub fn session_path(home: &Path, id: &str) -> Result<PathBuf, SessionError> {
    if !is_valid_session_id(id) {
        return Err(SessionError::BadId(id.to_string()));
    }
    let dir = sessions_dir(home);
    let path = dir.join(format!("{id}.jsonl"));
    if path.is_file() {
        return Ok(path);
    }
    // A child id lives in some `<parent>.agents/` folder.
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() && p.join(format!("{id}.jsonl")).is_file() {
                return Err(SessionError::Internal);
            }
        }
    }
    Err(SessionError::NotFound(id.to_string()))
}

/// Tokens and cost of a session: the requests of its own log and of its
/// subagents' logs, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SessionTotals {
    /// Tokens of every request, by kind.
    pub usage: Usage,
    /// What they cost, when any request's cost was known (omitted for local models).
    pub cost: Option<Cost>,
}

impl SessionTotals {
    /// All tokens: input, output, cache reads and cache writes.
    pub fn tokens(&self) -> u64 {
        self.usage.total()
    }

    /// Adds one request's figures (`assistant` and `compact_boundary` records carry them).
    pub fn add(&mut self, usage: Option<&Usage>, cost_nanodollars: Option<u64>) {
        if let Some(u) = usage {
            self.usage.add(u);
        }
        if let Some(c) = cost_nanodollars {
            self.cost.get_or_insert_default().add(Cost(c));
        }
    }

    /// Adds another session's or log's totals.
    pub fn merge(&mut self, other: &SessionTotals) {
        self.add(Some(&other.usage), other.cost.map(|c| c.0));
    }
}

/// One line of `cadre sessions`.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    /// Session id.
    pub id: String,
    /// Start time, ms since the Unix epoch.
    pub started_ms: u64,
    /// The first user prompt.
    pub first_prompt: String,
    /// Working directory.
    pub cwd: String,
    /// Tokens and cost, subagents included.
    pub totals: SessionTotals,
    /// Why the listing is incomplete (its first record is unreadable).
    pub warning: Option<String>,
}

/// The few fields of a record that listing reads; the rest of the line
/// (messages, tool results, summaries) is scanned but not kept.
#[derive(Deserialize)]
struct RecordHead {
    v: u32,
    time_ms: u64,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    cost_nanodollars: Option<u64>,
    #[serde(default)]
    model: Option<String>,
}

impl RecordHead {
    /// True for the records that hold a request's usage and cost.
    fn is_request(&self) -> bool {
        matches!(self.kind.as_str(), "assistant" | "compact_boundary")
    }
}

/// Calls `each` with every record of the log at `path`, read one line at a
/// time (a long session's log is never held whole); returns why the first
/// unreadable line was skipped, if one was.
fn scan_log(
    path: &Path,
    mut each: impl FnMut(RecordHead) -> std::ops::ControlFlow<()>,
) -> Result<Option<String>, SessionError> {
    let file = std::fs::File::open(path).map_err(|source| SessionError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    let mut first_warning = None;
    for number in 1.. {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|source| SessionError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        if read == 0 {
            break;
        }
        let torn = !line.ends_with(b"\n");
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<RecordHead>(&line) {
            Ok(r) if r.v <= LOG_VERSION => {
                if each(r).is_break() {
                    break;
                }
            }
            Ok(_) => {}
            Err(e) => {
                first_warning.get_or_insert_with(|| {
                    if torn {
                        format!("the last line ({number}) was cut off mid-write, probably by a crash; ignored")
                    } else {
                        format!("line {number} is not a valid record ({e}); skipped")
                    }
                });
            }
        }
    }
    Ok(first_warning)
}

/// Tokens and cost of the requests in one log.
fn log_totals(path: &Path) -> SessionTotals {
    // An unreadable child log only leaves its figures out.
    log_usage(path).totals
}

/// What one agent's log says it used: the model it started with and the
/// tokens and cost of its requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogUsage {
    /// The model of its `session_start` record.
    pub model: Option<String>,
    /// Its requests' tokens and cost.
    pub totals: SessionTotals,
}

/// Reads [`LogUsage`] from the log at `path` (an unreadable log is empty).
pub fn log_usage(path: &Path) -> LogUsage {
    let mut usage = LogUsage::default();
    let _ = scan_log(path, |r| {
        if r.kind == "session_start" && usage.model.is_none() {
            usage.model = r.model.clone();
        }
        if r.is_request() {
            usage.totals.add(r.usage.as_ref(), r.cost_nanodollars);
        }
        std::ops::ControlFlow::Continue(())
    });
    usage
}

/// Tokens and cost of the subagents of session `id` (their logs in `<id>.agents/`).
fn children_totals(home: &Path, id: &str) -> SessionTotals {
    let mut totals = SessionTotals::default();
    let dir = sessions_dir(home).join(format!("{id}.agents"));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return totals;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_file() && path.extension().and_then(|x| x.to_str()) == Some("jsonl") {
            totals.merge(&log_totals(&path));
        }
    }
    totals
}

/// Tokens and cost of session `id`: its log's requests and its subagents'.
pub fn session_totals(home: &Path, id: &str) -> Result<SessionTotals, SessionError> {
    let path = session_path(home, id)?;
    let mut totals = log_totals(&path);
    totals.merge(&children_totals(home, id));
    Ok(totals)
}

/// Reads one top-level log for the listing, in one pass.
fn summarize(home: &Path, path: &Path, stem: &str) -> Option<SessionSummary> {
    let mut first_time = None;
    let mut start: Option<(String, u64, String)> = None;
    let mut first_prompt: Option<String> = None;
    let mut totals = SessionTotals::default();
    let warning = scan_log(path, |r| {
        first_time.get_or_insert(r.time_ms);
        match r.kind.as_str() {
            "session_start" if start.is_none() => {
                start = Some((
                    r.session_id.clone().unwrap_or_default(),
                    r.time_ms,
                    r.cwd.clone().unwrap_or_default(),
                ));
            }
            // Harness reminders (the agent roster) are not what the user typed.
            "user" if first_prompt.is_none() => {
                if let Some(text) = &r.text
                    && !text.starts_with("<system-reminder>")
                {
                    first_prompt = Some(text.clone());
                }
            }
            _ => {}
        }
        if r.is_request() {
            totals.add(r.usage.as_ref(), r.cost_nanodollars);
        }
        std::ops::ControlFlow::Continue(())
    })
    .ok()?;
    let first_prompt = first_prompt.unwrap_or_default();
    let (id, started_ms, cwd, warning) = match start {
        Some((id, started_ms, cwd)) => (id, started_ms, cwd, None),
        // A torn first line loses the session record, not the session: it is
        // listed by its file name from the records that remain.
        None if is_valid_session_id(stem) => (
            stem.to_string(),
            first_time?,
            "?".to_string(),
            Some(format!(
                "its session record is unreadable ({}); listed from the records that remain",
                warning.as_deref().unwrap_or("missing")
            )),
        ),
        None => return None,
    };
    totals.merge(&children_totals(home, &id));
    Some(SessionSummary {
        id,
        started_ms,
        first_prompt,
        cwd,
        totals,
        warning,
    })
}

/// Top-level sessions, newest first, with their tokens and cost. Unreadable
/// logs are skipped. Each log is read once, a line at a time.
pub fn list_sessions(home: &Path) -> Vec<SessionSummary> {
    let Ok(entries) = std::fs::read_dir(sessions_dir(home)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if !path.is_file() || path.extension().and_then(|x| x.to_str()) != Some("jsonl") {
            continue;
        }
        let stem = path.file_stem().and_then(|x| x.to_str()).unwrap_or("");
        out.extend(summarize(home, &path, stem));
    }
    out.sort_by(|a, b| b.started_ms.cmp(&a.started_ms).then(b.id.cmp(&a.id)));
    out
}

/// Deletes session `id`'s log, its `.agents/` and `.images/` folders and its
/// code checkpoints; returns how many child logs went with it.
pub fn remove_session(home: &Path, id: &str) -> Result<usize, SessionError> {
    let path = session_path(home, id)?;
    // A run using the session still writes its (then unlinked) log, and with the
    // lock file gone another process could take the session too: refuse.
    let locks = super::locks_dir(home);
    let _held = if locks.is_dir() {
        Some(super::SessionLock::acquire(&locks, id)?)
    } else {
        None
    };
    let agents = sessions_dir(home).join(format!("{id}.agents"));
    let mut children = 0;
    if agents.is_dir() {
        children = std::fs::read_dir(&agents).map(|d| d.count()).unwrap_or(0);
        std::fs::remove_dir_all(&agents).map_err(|source| SessionError::Write {
            path: agents.clone(),
            source,
        })?;
    }
    // Its code checkpoints go with it.
    let checkpoints = sessions_dir(home).join(format!("{id}.checkpoints"));
    if checkpoints.is_dir() {
        std::fs::remove_dir_all(&checkpoints).map_err(|source| SessionError::Write {
            path: checkpoints.clone(),
            source,
        })?;
    }
    std::fs::remove_file(&path).map_err(|source| SessionError::Write {
        path: path.clone(),
        source,
    })?;
    let _ = std::fs::remove_file(super::recovery_path(&path));
    // The images its records named.
    let _ = std::fs::remove_dir_all(super::images_dir(&path));
    // An imported session's branches that could not be fetched.
    let _ = std::fs::remove_file(sessions_dir(home).join(format!("{id}.branches.bundle")));
    let _ = std::fs::remove_file(super::lock_path(&super::locks_dir(home), id));
    Ok(children)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `YYYY-MM-DD HH:MM` (UTC) for a time in ms since the Unix epoch.
pub fn utc_datetime(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60
    )
}

#[cfg(test)]
mod tests {
    use super::super::{RecordBody, SessionLog};
    use super::*;

    fn make(home: &Path, id: &str, prompt: &str) {
        let dir = sessions_dir(home);
        std::fs::create_dir_all(&dir).unwrap();
        let log = SessionLog::create(&dir.join(format!("{id}.jsonl"))).unwrap();
        log.append_now(RecordBody::SessionStart {
            session_id: id.into(),
            cwd: "/p".into(),
            provider: "anthropic".into(),
            model: "m".into(),
        })
        .unwrap();
        log.append_now(RecordBody::User {
            text: prompt.into(),
        })
        .unwrap();
    }

    #[test]
    fn lists_newest_first_without_child_logs_and_removes_with_children() {
        let home = tempfile::tempdir().unwrap();
        make(home.path(), "a1", "first");
        std::thread::sleep(std::time::Duration::from_millis(5));
        make(home.path(), "b2", "second");
        let agents = sessions_dir(home.path()).join("b2.agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(agents.join("c3.jsonl"), "").unwrap();
        let list = list_sessions(home.path());
        let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["b2", "a1"]);
        assert_eq!(list[0].first_prompt, "second");
        assert!(matches!(
            session_path(home.path(), "c3"),
            Err(SessionError::Internal)
        ));
        assert!(matches!(
            session_path(home.path(), "../x"),
            Err(SessionError::BadId(_))
        ));
        assert_eq!(remove_session(home.path(), "b2").unwrap(), 1);
        assert!(!agents.exists());
        assert_eq!(list_sessions(home.path()).len(), 1);
    }

    fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: cache_read,
            cache_write_tokens: cache_write,
        }
    }

    fn reply(text: &str) -> crate::model::Message {
        crate::model::Message {
            role: crate::model::Role::Assistant,
            content: vec![crate::model::ContentBlock::Text { text: text.into() }].into(),
        }
    }

    fn assistant(u: Usage, cost: Option<u64>) -> RecordBody {
        RecordBody::Assistant {
            message: reply("hi"),
            usage: Some(u),
            cost_nanodollars: cost,
        }
    }

    #[test]
    fn totals_sum_requests_compactions_and_children_and_cost_is_omitted_when_unknown() {
        let home = tempfile::tempdir().unwrap();
        make(home.path(), "s1", "priced");
        let dir = sessions_dir(home.path());
        let log = SessionLog::reopen(&dir.join("s1.jsonl")).unwrap();
        log.append_now(assistant(usage(100, 20, 1000, 50), Some(7_000)))
            .unwrap();
        log.append_now(RecordBody::CompactBoundary {
            trigger: crate::protocol::CompactTrigger::Auto,
            summary: "sum".into(),
            kept: Vec::new(),
            tokens_before: 3400,
            tokens_after: 900,
            usage: Some(usage(3000, 400, 0, 0)),
            cost_nanodollars: Some(500),
        })
        .unwrap();
        // Records without usage (inherited or older logs) add nothing.
        log.append_now(RecordBody::Assistant {
            message: reply("old"),
            usage: None,
            cost_nanodollars: None,
        })
        .unwrap();
        let agents = dir.join("s1.agents");
        std::fs::create_dir_all(&agents).unwrap();
        let child = SessionLog::create(&agents.join("c1.jsonl")).unwrap();
        child
            .append_now(assistant(usage(10, 5, 0, 0), Some(30)))
            .unwrap();
        std::fs::write(agents.join("torn.jsonl"), "{\"v\":1,\"ti").unwrap();

        make(home.path(), "s2", "local");
        let log2 = SessionLog::reopen(&dir.join("s2.jsonl")).unwrap();
        log2.append_now(assistant(usage(40, 2, 0, 0), None))
            .unwrap();

        let t = session_totals(home.path(), "s1").unwrap();
        assert_eq!(t.usage, usage(3110, 425, 1000, 50));
        assert_eq!(t.tokens(), 4585);
        assert_eq!(t.cost, Some(Cost(7_530)));
        let t2 = session_totals(home.path(), "s2").unwrap();
        assert_eq!(t2.tokens(), 42);
        assert_eq!(t2.cost, None);
        let list = list_sessions(home.path());
        let s1 = list.iter().find(|s| s.id == "s1").unwrap();
        assert_eq!(s1.totals, t);
        assert_eq!(s1.first_prompt, "priced");
        assert!(matches!(
            session_totals(home.path(), "c1"),
            Err(SessionError::Internal)
        ));
    }

    #[test]
    fn a_log_whose_first_line_is_torn_is_listed_by_its_file_name_with_its_totals() {
        let home = tempfile::tempdir().unwrap();
        let dir = sessions_dir(home.path());
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("h1.jsonl");
        std::fs::write(&path, "{\"v\":1,\"time_ms\":5,\"type\":\"sess\n").unwrap();
        let log = SessionLog::reopen(&path).unwrap();
        log.append_now(RecordBody::User {
            text: "still here".into(),
        })
        .unwrap();
        log.append_now(assistant(usage(7, 3, 0, 0), Some(11)))
            .unwrap();
        // Not a session id: not listed.
        std::fs::write(dir.join("x y.jsonl"), "").unwrap();
        let list = list_sessions(home.path());
        assert_eq!(list.len(), 1);
        let s = &list[0];
        assert_eq!(s.id, "h1");
        assert_eq!(s.first_prompt, "still here");
        assert_eq!(s.cwd, "?");
        assert_eq!(s.totals.tokens(), 10);
        assert_eq!(s.totals.cost, Some(Cost(11)));
        let warning = s.warning.as_deref().unwrap();
        assert!(
            warning.contains("line 1 is not a valid record"),
            "{warning}"
        );
    }
}
