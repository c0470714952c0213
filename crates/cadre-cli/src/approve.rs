//! Answering the session's approval questions on the terminal. Lines come from one shared
//! reader of stdin, so the interactive prompt and the questions never compete.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use cadre_core::driver::SessionHandle;
use cadre_core::protocol::{ApprovalAnswer, ApprovalQuestion, Event, Op};
use cadre_core::tools::ask_user::AskedQuestion;
use cadre_tui::sanitize::visible_controls;
use tokio::sync::{Mutex, mpsc};

/// Lines typed on stdin, read on their own thread.
#[derive(Clone)]
pub struct StdinLines {
    rx: Arc<Mutex<mpsc::UnboundedReceiver<String>>>,
    /// Questions waiting for an answer: while there is one, the idle prompt
    /// stands back so the next line typed answers it.
    asking: Arc<tokio::sync::watch::Sender<usize>>,
}

impl StdinLines {
    /// Starts the reader thread.
    pub fn start() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdinLines {
            rx: Arc::new(Mutex::new(rx)),
            asking: Arc::new(tokio::sync::watch::channel(0).0),
        }
    }

    /// The next line for the idle prompt: lines typed while a question waits
    /// go to the question, so the prompt gives up its read whenever one is
    /// asked, and calls `reprompt` once the questions are answered.
    pub async fn next_for_prompt(&self, reprompt: impl Fn()) -> Option<String> {
        let mut asking = self.asking.subscribe();
        loop {
            if asking.wait_for(|n| *n == 0).await.is_err() {
                return self.next().await;
            }
            tokio::select! {
                // A question asked first wins even over a line already typed:
                // the user typed it after seeing the question.
                biased;
                // Dropping the pending read loses no line (`recv` is cancel-safe).
                _ = asking.wait_for(|n| *n > 0) => {}
                line = self.next() => return line,
            }
            if asking.wait_for(|n| *n == 0).await.is_ok() {
                reprompt();
            }
        }
    }

    /// Counts a question as waiting until the guard is dropped.
    fn asking(&self) -> AskingGuard {
        self.asking.send_modify(|n| *n += 1);
        AskingGuard(self.asking.clone())
    }

    /// The next line, or `None` at end of input.
    #[expect(
        clippy::await_holding_invalid_type,
        reason = "by design: stdin has one reader at a time, and a line goes to whoever holds it"
    )]
    pub async fn next(&self) -> Option<String> {
        self.rx.lock().await.recv().await
    }
}

/// A question waiting for its answer (see `StdinLines::next_for_prompt`).
struct AskingGuard(Arc<tokio::sync::watch::Sender<usize>>);

impl Drop for AskingGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// True when a person can answer on stdin.
pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// The question as shown on the terminal.
pub fn render_question(q: &ApprovalQuestion) -> String {
    let mut s = String::new();
    s.push_str(&format!("\n┌ Permission needed: {}\n", q.tool));
    if let Some(label) = &q.label {
        s.push_str(&format!("│ {label}\n"));
    }
    for line in q.input.lines() {
        s.push_str(&format!("│   {line}\n"));
    }
    if let Some(sandbox) = &q.sandbox {
        s.push_str(&format!("│ {sandbox}\n"));
    }
    s.push_str(&format!("│ why: {}\n", q.reason));
    s.push_str(&format!(
        "└ [y] yes  [a] yes, and allow {} for this session  [n] no  [n <text>] no, and tell the model what to do instead › ",
        q.session_rule
    ));
    s
}

/// Asks the session's questions on the terminal (stderr), reads the answers
/// from stdin and submits them to the session. One question at a time: a
/// question withdrawn meanwhile (an interrupt) stops being asked.
pub struct TerminalAnswers {
    lines: StdinLines,
    session: SessionHandle,
    asking: Option<tokio::task::JoinHandle<()>>,
}

impl TerminalAnswers {
    /// Answers `session`'s questions with lines from `lines`.
    pub fn new(lines: StdinLines, session: SessionHandle) -> Self {
        TerminalAnswers {
            lines,
            session,
            asking: None,
        }
    }

    /// Follows the session's events: asks each question as it comes, and
    /// stops asking one that was answered or withdrawn.
    pub fn on_event(&mut self, event: &Event) {
        match event {
            Event::ApprovalRequested { question, id } => {
                self.stop_asking();
                // Counted before anything else reads a line: the idle prompt
                // stands back from here on.
                let asking = self.lines.asking();
                let (lines, session, question, id) = (
                    self.lines.clone(),
                    self.session.clone(),
                    question.clone(),
                    *id,
                );
                self.asking = Some(tokio::spawn(async move {
                    let _asking = asking;
                    let answer = ask(&lines, &question).await;
                    session.submit(Op::ApprovalAnswer {
                        id: Some(id),
                        answer,
                    });
                }));
            }
            Event::ApprovalAnswered { .. } => self.stop_asking(),
            _ => {}
        }
    }

    fn stop_asking(&mut self) {
        if let Some(asking) = self.asking.take() {
            asking.abort();
        }
    }
}

impl Drop for TerminalAnswers {
    fn drop(&mut self) {
        self.stop_asking();
    }
}

/// A question of the agent's own (`AskUserQuestion`) as shown on the terminal.
pub fn render_asked(q: &AskedQuestion) -> String {
    let mut s = format!("\n┌ Question {}/{}", q.position.0, q.position.1);
    if !q.header.is_empty() {
        s.push_str(&format!(" · {}", q.header));
    }
    s.push_str(&format!("\n│ {}\n", q.question));
    for (i, (label, description)) in q.options.iter().enumerate() {
        if description.is_empty() {
            s.push_str(&format!("│   {}. {label}\n", i + 1));
        } else {
            s.push_str(&format!("│   {}. {label} — {description}\n", i + 1));
        }
    }
    let pick = if q.multi_select {
        "numbers (e.g. 1,3)"
    } else {
        "a number"
    };
    s.push_str(&format!(
        "└ {pick}, or your own answer; an empty line declines › "
    ));
    s
}

/// Shows `q` and reads answers until one is y, a or n (end of input is no).
async fn ask(lines: &StdinLines, q: &ApprovalQuestion) -> ApprovalAnswer {
    if let Some(asked) = AskedQuestion::from_approval(q) {
        {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{}", visible_controls(&render_asked(&asked)));
            let _ = err.flush();
        }
        return match lines.next().await {
            Some(line) => match asked.answer_for(&line) {
                Some(text) => ApprovalAnswer::Instead(text),
                None => ApprovalAnswer::No,
            },
            None => ApprovalAnswer::No,
        };
    }
    {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{}", visible_controls(&render_question(q)));
        let _ = err.flush();
    }
    loop {
        let Some(line) = lines.next().await else {
            return ApprovalAnswer::No;
        };
        let line = line.trim();
        match line.to_ascii_lowercase().as_str() {
            "y" | "yes" => return ApprovalAnswer::Once,
            "a" | "always" => return ApprovalAnswer::Session,
            "n" | "no" | "" => return ApprovalAnswer::No,
            _ => {}
        }
        if let Some(instead) = line
            .strip_prefix("n ")
            .or_else(|| line.strip_prefix("N "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            return ApprovalAnswer::Instead(instead.to_string());
        }
        eprint!("answer y, a, n, or n followed by what to do instead › ");
    }
}
