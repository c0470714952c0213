//! Where session logs live, and listing and removing them. Child logs live in
//! `<id>.agents/` beside their parent's log and are never listed.

use std::path::{Path, PathBuf};

use super::{RecordBody, SessionError, read_log};

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
    /// Why the listing is incomplete (its first record is unreadable).
    pub warning: Option<String>,
}

/// Top-level sessions, newest first. Unreadable logs are skipped.
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
        let Ok(log) = read_log(&path) else { continue };
        // A torn first line loses the session record, not the session: it is
        // listed by its file name from the records that remain.
        let stem = path.file_stem().and_then(|x| x.to_str()).unwrap_or("");
        let headless = is_valid_session_id(stem)
            && !log
                .records
                .iter()
                .any(|r| matches!(r.body, RecordBody::SessionStart { .. }));
        let mut summary = match log.records.first() {
            Some(first) if headless => Some(SessionSummary {
                id: stem.to_string(),
                started_ms: first.time_ms,
                first_prompt: String::new(),
                cwd: "?".into(),
                warning: Some(format!(
                    "its session record is unreadable ({}); listed from the records that remain",
                    log.warnings.first().map_or("missing", String::as_str)
                )),
            }),
            _ => None,
        };
        for r in &log.records {
            match &r.body {
                RecordBody::SessionStart {
                    session_id, cwd, ..
                } if summary.is_none() => {
                    summary = Some(SessionSummary {
                        id: session_id.clone(),
                        started_ms: r.time_ms,
                        first_prompt: String::new(),
                        cwd: cwd.clone(),
                        warning: None,
                    });
                }
                // Harness reminders (the agent roster) are not what the user typed.
                RecordBody::User { text } if text.starts_with("<system-reminder>") => {}
                RecordBody::User { text } => {
                    if let Some(s) = summary.as_mut() {
                        s.first_prompt = text.clone();
                    }
                    break;
                }
                _ => {}
            }
        }
        out.extend(summary);
    }
    out.sort_by(|a, b| b.started_ms.cmp(&a.started_ms).then(b.id.cmp(&a.id)));
    out
}

/// Deletes session `id`'s log and its `.agents/` folder; returns how many child logs went with it.
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
    std::fs::remove_file(&path).map_err(|source| SessionError::Write {
        path: path.clone(),
        source,
    })?;
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
    use super::super::SessionLog;
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
}
