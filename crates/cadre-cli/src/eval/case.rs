//! An eval case on disk: a folder with `case.yaml` (the task, its settings and
//! graders), a `project/` fixture and a `model.yaml` mock script. See
//! `docs/evals.md` for the format.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::graders::Grader;

/// Seconds a case may run when `case.yaml` says nothing.
pub const DEFAULT_TIMEOUT_S: u64 = 60;

/// `case.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// What the case checks, for people reading it.
    #[serde(default)]
    pub description: Option<String>,
    /// The task given to `cadre exec`.
    pub prompt: String,
    /// `--permission-mode`.
    #[serde(default)]
    pub permission_mode: Option<String>,
    /// `--allow` rules.
    #[serde(default)]
    pub allow: Vec<String>,
    /// `--ask` rules.
    #[serde(default)]
    pub ask: Vec<String>,
    /// `--deny` rules.
    #[serde(default)]
    pub deny: Vec<String>,
    /// TOML text written to the run's `$CADRE_HOME/config.toml`.
    #[serde(default)]
    pub config: Option<String>,
    /// `--agents`: JSON text, or a YAML mapping converted to JSON.
    #[serde(default)]
    pub agents: Option<Value>,
    /// `--agent`: the definition the main session runs as.
    #[serde(default)]
    pub agent: Option<String>,
    /// Whether `cadre eval --live` runs this case against a real model.
    #[serde(default)]
    pub live: bool,
    /// Time limit in seconds (default 60).
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Send SIGINT to cadre after this event type has been seen...
    #[serde(default)]
    pub interrupt_after_event: Option<String>,
    /// ...this many times (default 1)...
    #[serde(default)]
    pub interrupt_after_count: Option<usize>,
    /// ...and this many milliseconds more (default 0).
    #[serde(default)]
    pub interrupt_delay_ms: Option<u64>,
    /// Send SIGKILL to cadre's process group after this event type has been seen...
    #[serde(default)]
    pub kill_after_event: Option<String>,
    /// ...this many times (default 1)...
    #[serde(default)]
    pub kill_after_count: Option<usize>,
    /// ...and this many milliseconds more (default 0).
    #[serde(default)]
    pub kill_delay_ms: Option<u64>,
    /// After the kill, resume the session with this prompt (`--resume ID --accept-unknown`).
    #[serde(default)]
    pub resume_prompt: Option<String>,
    /// The checks; every one must pass.
    #[serde(default)]
    pub graders: Vec<Grader>,
}

/// A case found on disk. A case whose `case.yaml` cannot be read is still a
/// case: it runs nothing and fails with `error`.
#[derive(Debug, Clone)]
pub struct Case {
    /// The folder name.
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// The parsed `case.yaml`, or why it could not be read.
    pub file: Result<CaseFile, String>,
}

impl Case {
    /// Reads the case in `dir`.
    pub fn load(dir: &Path) -> Case {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string());
        let path = dir.join("case.yaml");
        let file = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
            .and_then(|text| parse_case(&text).map_err(|e| format!("{}: {e}", path.display())));
        Case {
            name,
            dir: dir.to_path_buf(),
            file,
        }
    }

    /// The fixture project (`project/`; may be missing: an empty project).
    pub fn fixture(&self) -> PathBuf {
        self.dir.join("project")
    }

    /// The mock script (`model.yaml`).
    pub fn model_script(&self) -> PathBuf {
        self.dir.join("model.yaml")
    }

    /// Whether `--live` runs it.
    pub fn is_live(&self) -> bool {
        self.file.as_ref().is_ok_and(|f| f.live)
    }
}

/// Parses `case.yaml` text and checks what serde cannot.
pub fn parse_case(text: &str) -> Result<CaseFile, String> {
    let file: CaseFile = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
    if file.prompt.trim().is_empty() {
        return Err("prompt is empty".into());
    }
    for (i, g) in file.graders.iter().enumerate() {
        g.validate().map_err(|e| format!("grader {}: {e}", i + 1))?;
    }
    if file.timeout_s == Some(0) {
        return Err("timeout_s must be at least 1".into());
    }
    if file.interrupt_after_event.is_none()
        && (file.interrupt_after_count.is_some() || file.interrupt_delay_ms.is_some())
    {
        return Err(
            "interrupt_after_count and interrupt_delay_ms need interrupt_after_event".into(),
        );
    }
    if file.kill_after_event.is_none() {
        if file.kill_after_count.is_some() || file.kill_delay_ms.is_some() {
            return Err("kill_after_count and kill_delay_ms need kill_after_event".into());
        }
        if file.resume_prompt.is_some() {
            return Err("resume_prompt needs kill_after_event".into());
        }
    } else if file.interrupt_after_event.is_some() {
        // Both would race for the same run; a case checks one ending at a time.
        return Err("kill_after_event and interrupt_after_event exclude each other".into());
    }
    if file
        .resume_prompt
        .as_ref()
        .is_some_and(|p| p.trim().is_empty())
    {
        return Err("resume_prompt is empty".into());
    }
    Ok(file)
}

impl CaseFile {
    /// The time limit.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S))
    }

    /// The `--agents` argument, as JSON text.
    pub fn agents_json(&self) -> Option<String> {
        match &self.agents {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => Some(v.to_string()),
        }
    }

    /// Arguments for `cadre`, ending with the prompt.
    pub fn cadre_args(&self) -> Vec<String> {
        let mut args = self.flag_args();
        args.push("--".into());
        args.push(self.prompt.clone());
        args
    }

    /// Arguments for the second run of a crash-and-resume case: the same
    /// flags, resuming `session_id`, ending with `resume_prompt`.
    pub fn resume_args(&self, session_id: &str) -> Option<Vec<String>> {
        let prompt = self.resume_prompt.as_ref()?;
        let mut args = self.flag_args();
        args.extend([
            "--resume".into(),
            session_id.to_string(),
            // The killed run left calls without results; the resume must accept them.
            "--accept-unknown".into(),
            "--".into(),
            prompt.clone(),
        ]);
        Some(args)
    }

    /// `exec --json` and the case's flags, without the prompt.
    fn flag_args(&self) -> Vec<String> {
        let mut args: Vec<String> = vec!["exec".into(), "--json".into()];
        if let Some(m) = &self.permission_mode {
            args.push("--permission-mode".into());
            args.push(m.clone());
        }
        for (flag, rules) in [
            ("--allow", &self.allow),
            ("--ask", &self.ask),
            ("--deny", &self.deny),
        ] {
            for r in rules {
                args.push(flag.into());
                args.push(r.clone());
            }
        }
        if let Some(json) = self.agents_json() {
            args.push("--agents".into());
            args.push(json);
        }
        if let Some(a) = &self.agent {
            args.push("--agent".into());
            args.push(a.clone());
        }
        args
    }
}

/// The cases under `path`: the folder itself if it holds `case.yaml`, else
/// every sub-folder that does, sorted by name.
pub fn discover(path: &Path) -> Result<Vec<Case>, String> {
    if path.join("case.yaml").is_file() {
        return Ok(vec![Case::load(path)]);
    }
    let entries =
        std::fs::read_dir(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("case.yaml").is_file())
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(format!(
            "{}: no case.yaml there nor in any folder inside it",
            path.display()
        ));
    }
    Ok(dirs.iter().map(|d| Case::load(d)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_case_parses_with_defaults() {
        let f = parse_case("prompt: hello\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.prompt, "hello");
        assert!(!f.live);
        assert!(f.graders.is_empty());
        assert_eq!(f.timeout().as_secs(), DEFAULT_TIMEOUT_S);
        assert_eq!(f.cadre_args(), ["exec", "--json", "--", "hello"]);
    }

    #[test]
    fn unknown_keys_and_empty_prompts_are_errors() {
        assert!(parse_case("prompt: hi\nlive: true\nbogus: 1\n").is_err());
        assert!(parse_case("prompt: '  '\n").is_err());
        assert!(parse_case("prompt: hi\ninterrupt_after_count: 2\n").is_err());
        let e =
            parse_case("prompt: hi\ngraders:\n  - exit_code: 0\n  - final_text_matches: \"(\"\n")
                .err()
                .unwrap_or_default();
        assert!(e.starts_with("grader 2: bad regex"), "{e}");
    }

    #[test]
    fn kill_and_resume_keys_parse_and_are_validated() {
        let f = parse_case(
            "prompt: go\nallow: [Bash]\nkill_after_event: tool_call_started\nkill_after_count: 2\nkill_delay_ms: 50\nresume_prompt: carry on\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.kill_after_event.as_deref(), Some("tool_call_started"));
        assert_eq!(f.kill_after_count, Some(2));
        assert_eq!(f.kill_delay_ms, Some(50));
        assert_eq!(
            f.resume_args("s-1"),
            Some(
                [
                    "exec",
                    "--json",
                    "--allow",
                    "Bash",
                    "--resume",
                    "s-1",
                    "--accept-unknown",
                    "--",
                    "carry on"
                ]
                .map(String::from)
                .to_vec()
            )
        );
        // A kill without a resume is a case too: it grades the killed run.
        let f = parse_case("prompt: go\nkill_after_event: session_started\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.resume_args("s-1"), None);
        for (bad, why) in [
            ("kill_after_count: 2\n", "need kill_after_event"),
            ("kill_delay_ms: 10\n", "need kill_after_event"),
            (
                "resume_prompt: again\n",
                "resume_prompt needs kill_after_event",
            ),
            (
                "kill_after_event: a\ninterrupt_after_event: b\n",
                "exclude each other",
            ),
            (
                "kill_after_event: a\nresume_prompt: ' '\n",
                "resume_prompt is empty",
            ),
        ] {
            let e = parse_case(&format!("prompt: go\n{bad}"))
                .err()
                .unwrap_or_default();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn agents_may_be_json_text_or_a_mapping() {
        let f = parse_case("prompt: x\nagents: '{\"a\": {\"description\": \"d\"}}'\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            f.agents_json().as_deref(),
            Some("{\"a\": {\"description\": \"d\"}}")
        );
        let f = parse_case("prompt: x\nagents:\n  a:\n    description: d\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            f.agents_json().as_deref(),
            Some("{\"a\":{\"description\":\"d\"}}")
        );
    }
}
