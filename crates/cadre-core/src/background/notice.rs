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
