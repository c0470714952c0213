//! The core's modules form one order; an import may only go down it. A new
//! circle (or a new module nobody placed) fails here, not in review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module of cadre-core and its level: a module may use only
/// modules of a lower level (never a peer, never one above).
const LEVELS: &[(&str, u8)] = &[
    ("secrets", 0),
    ("small_file", 0),
    ("tool_names", 0),
    ("project_root", 0),
    ("frontmatter", 0),
    ("path_segment", 0),
    ("structured", 0),
    ("worktrees", 1),
    ("model", 1),
    ("protocol", 2),
    ("media", 2),
    ("context", 3),
    ("tasks", 4),
    ("permissions", 4),
    ("session", 4),
    ("sandbox", 4),
    ("config", 4),
    ("instructions", 4),
    ("teams", 5),
    ("plugins", 5),
    ("output_styles", 6),
    ("archive", 5),
    ("checkpoints", 5),
    ("tools", 6),
    ("background", 7),
    ("hooks", 7),
    ("mcp", 7),
    ("skills", 7),
    ("agent", 8),
    ("subagents", 9),
    ("driver", 10),
];

/// Upward imports that issue 10 is removing; each must still exist (so the
/// list only shrinks) and none may be added.
const KNOWN_UPWARD: &[(&str, &str)] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Module names referenced as `crate::name` or inside `crate::{a, b::c}`.
fn referenced(line: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(inner) = rest.strip_prefix('{') {
            // Only the first segment of each item in the group counts.
            let end = inner.find('}').unwrap_or(inner.len());
            for item in inner[..end].split(',') {
                let head: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !head.is_empty() {
                    names.push(head);
                }
            }
        } else {
            let head: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !head.is_empty() {
                names.push(head);
            }
        }
    }
    names
}

#[test]
fn imports_only_go_down_the_module_order() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let levels: BTreeMap<&str, u8> = LEVELS.iter().copied().collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no sources under {}", src.display());

    let mut problems = Vec::new();
    let mut upward_seen = BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap_or(file);
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" {
            continue;
        }
        let Some(&level) = levels.get(module.as_str()) else {
            problems.push(format!(
                "module `{module}` ({}) has no place in LEVELS",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for used in referenced(line) {
                if used == module {
                    continue;
                }
                let Some(&used_level) = levels.get(used.as_str()) else {
                    problems.push(format!(
                        "{}:{}: `crate::{used}` is not a placed module",
                        rel.display(),
                        n + 1
                    ));
                    continue;
                };
                if used_level < level {
                    continue;
                }
                if KNOWN_UPWARD.contains(&(module.as_str(), used.as_str())) {
                    upward_seen.insert((module.clone(), used.clone()));
                    continue;
                }
                problems.push(format!(
                    "{}:{}: `{module}` (level {level}) uses `{used}` (level {used_level})",
                    rel.display(),
                    n + 1
                ));
            }
        }
    }
    for (from, to) in KNOWN_UPWARD {
        if !upward_seen.contains(&(from.to_string(), to.to_string())) {
            problems.push(format!(
                "`{from}` no longer uses `{to}`: remove the pair from KNOWN_UPWARD"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "module order broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn grouped_and_nested_references_are_seen() {
    assert_eq!(
        referenced("use crate::{agent::Event, tasks, model::Usage};"),
        vec!["agent", "tasks", "model"]
    );
    assert_eq!(
        referenced("let x = crate::background::f(crate::secrets::redact(y));"),
        vec!["background", "secrets"]
    );
}
