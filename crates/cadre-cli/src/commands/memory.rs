//! `/memory`: the instruction files the session's prompt is built from
//! (user files, the project's from the repository root down, their
//! imports), each with its size, and what went wrong reading them.

use cadre_core::instructions::{
    InstructionKind, InstructionSources, LoadedInstructions, MAX_FILE_BYTES, MAX_TOTAL_BYTES, load,
};

use super::CommandContext;

/// The files as they are read now for the session's directory.
pub fn describe(ctx: &CommandContext<'_>) -> String {
    let runtime = ctx.runtime;
    let sources = InstructionSources::for_session(&runtime.cwd, Some(runtime.home.clone()));
    render(&load(&sources))
}

/// The listing of `loaded`: one line a file, in prompt order, then the total
/// and any warnings.
fn render(loaded: &LoadedInstructions) -> String {
    if loaded.files.is_empty() && loaded.warnings.is_empty() {
        return "no instruction files: cadre reads AGENTS.md, CLAUDE.md and CLAUDE.local.md from \
                here up to the repository root, ~/.claude/CLAUDE.md and $CADRE_HOME/AGENTS.md"
            .into();
    }
    let mut lines = vec![
        "instruction files in the prompt, in order (files in subdirectories are added when the agent first reads there):"
            .to_string(),
    ];
    for file in &loaded.files {
        let what = match &file.kind {
            InstructionKind::User => "user".to_string(),
            InstructionKind::Project => "project".to_string(),
            InstructionKind::Local => "local".to_string(),
            InstructionKind::Nested => "subdirectory".to_string(),
            InstructionKind::ImportedBy(by) => format!("imported by {}", by.display()),
        };
        let cut = if file.cut {
            format!(", cut to {}", size(file.text.len()))
        } else {
            String::new()
        };
        lines.push(format!(
            "  {}  {}  ({what}{cut})",
            file.path.display(),
            size(file.size)
        ));
    }
    let used: usize = loaded.files.iter().map(|f| f.text.len()).sum();
    lines.push(format!(
        "{} in the prompt (at most {} a file, {} in all)",
        size(used),
        size(MAX_FILE_BYTES),
        size(MAX_TOTAL_BYTES)
    ));
    for warning in &loaded.warnings {
        lines.push(format!("warning: {warning}"));
    }
    lines.join("\n")
}

/// A byte count as people read it.
fn size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{:.1} kB", bytes as f64 / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_files_with_sizes_origins_and_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join(".git")).unwrap();
        std::fs::write(r.join("CLAUDE.md"), "rules @more.md @gone.md").unwrap();
        std::fs::write(r.join("more.md"), "x".repeat(2048)).unwrap();
        let loaded = load(&InstructionSources {
            cwd: r.to_path_buf(),
            home_dir: None,
            data_dir: None,
            outside: Default::default(),
        });
        let text = render(&loaded);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            format!("  {}  23 B  (project)", r.join("CLAUDE.md").display())
        );
        assert_eq!(
            lines[2],
            format!(
                "  {}  2.0 kB  (imported by {})",
                r.join("more.md").display(),
                r.join("CLAUDE.md").display()
            )
        );
        assert!(lines[3].starts_with("2.0 kB in the prompt"), "{text}");
        assert!(lines[4].starts_with("warning: ") && lines[4].contains("gone.md"));
    }

    #[test]
    fn says_where_it_looks_when_there_is_nothing() {
        let text = render(&LoadedInstructions::default());
        assert!(text.starts_with("no instruction files"), "{text}");
    }
}
