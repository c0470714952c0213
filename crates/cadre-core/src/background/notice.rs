//! The `<task-notification>` message that tells an agent its background tasks ended.

use super::Finished;

/// Tasks per notice: a burst of completions is split so one message stays readable.
pub const NOTICE_MAX_TASKS: usize = 32;
/// A report longer than this is not inlined; the notice points to `TaskOutput`
/// instead, so 32 verbose tasks cannot flood the parent's context.
pub const NOTICE_REPORT_MAX: usize = 8 * 1024;

/// The hidden user message announcing `items`.
pub fn notification_text(items: &[Finished]) -> String {
    let mut s = String::from("<task-notification>\n");
    for f in items {
        s.push_str(&format!(
            "<task id=\"{}\" status=\"{}\" kind=\"{}\">\n<description>{}</description>\n",
            f.task_id,
            f.status.as_str(),
            f.kind_label,
            f.description
        ));
        if f.report.len() <= NOTICE_REPORT_MAX {
            s.push_str("<report>\n");
            s.push_str(f.report.trim_end());
            s.push_str("\n</report>\n");
        } else {
            s.push_str(&format!(
                "<report-omitted bytes=\"{}\">The report is longer than 8 KiB; read it with TaskOutput(task_id: \"{}\").</report-omitted>\n",
                f.report.len(),
                f.task_id
            ));
        }
        s.push_str("</task>\n");
    }
    s.push_str("</task-notification>");
    s
}

/// The task ids a notice built by [`notification_text`] announces: the ids
/// of its `<task id="...">` lines.
pub(super) fn announced_ids(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("<task id=\""))
        .filter_map(|rest| rest.split_once('"').map(|(id, _)| id.to_string()))
        .collect()
}

/// Notice-started turns allowed per window: a burst of completions is batched
/// instead of waking the model for each one.
pub(super) const NOTICE_TURNS_PER_WINDOW: usize = 3;
/// The window for `NOTICE_TURNS_PER_WINDOW`.
pub(super) const NOTICE_WINDOW: std::time::Duration = std::time::Duration::from_secs(60);
/// Quiet time after a task ends before its notice goes out, so a burst of
/// completions becomes one notice (32 tasks at most each).
pub const NOTICE_SETTLE: std::time::Duration = std::time::Duration::from_millis(25);
/// Longest a notice is held back waiting for a burst to settle.
pub const NOTICE_SETTLE_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// At most `NOTICE_TURNS_PER_WINDOW` notice-started turns per `NOTICE_WINDOW`
/// for one parent; later notices wait, and pile up into one.
#[derive(Debug, Default)]
pub struct NoticeThrottle {
    recent: std::collections::VecDeque<tokio::time::Instant>,
}

impl NoticeThrottle {
    /// Waits until another notice-started turn is allowed, and counts it.
    pub async fn wait(&mut self) {
        let now = tokio::time::Instant::now();
        while self
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= NOTICE_WINDOW)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= NOTICE_TURNS_PER_WINDOW
            && let Some(oldest) = self.recent.front()
        {
            tokio::time::sleep_until(*oldest + NOTICE_WINDOW).await;
            self.recent.pop_front();
        }
        self.recent.push_back(tokio::time::Instant::now());
    }
}
