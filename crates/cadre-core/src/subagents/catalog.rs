//! Every agent definition the session can use, from all sources, with
//! precedence applied and the problems found along the way.
//!
//! Precedence, highest first: managed → `--agents` flag → project (closest
//! directory first; `.cadre/agents/` before `.claude/agents/`) → user
//! (`<data_dir>/agents/` before `~/.claude/agents/`) → plugins → built-in.
//! Loading is cheap (only `*.md` files are read), so it runs at every spawn
//! and the next spawn sees edited files.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::builtin::builtin_definitions;
use super::definition::{
    DefinitionIssue, IssueLevel, ParseOutcome, definitions_from_json, parse_definition,
};
use super::{AgentDefinition, DefinitionSource};

/// The administrator-managed definitions directory.
pub const DEFAULT_MANAGED_DIR: &str = "/etc/cadre/agents";

/// How deep agent directories are scanned (also the guard against symlink loops).
const MAX_SCAN_DEPTH: usize = 16;

/// Larger definition files are refused unread.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// Where to look for definitions.
#[derive(Debug, Clone)]
pub struct CatalogSources {
    /// The working directory: project definitions are looked for here and in
    /// every parent up to the repository root (the first directory containing
    /// `.git`); without a repository, only here.
    pub cwd: PathBuf,
    /// `$CADRE_HOME` (`~/.cadre`): user agents in `<data_dir>/agents/`, plugins
    /// in `<data_dir>/plugins/<plugin>/agents/`.
    pub data_dir: PathBuf,
    /// The home directory, for `~/.claude/agents/`.
    pub home_dir: Option<PathBuf>,
    /// Normally [`DEFAULT_MANAGED_DIR`].
    pub managed_dir: PathBuf,
    /// The `--agents` JSON.
    pub flag_json: Option<String>,
    /// `subagents.enable_verification`: include the built-in `Verification`.
    pub enable_verification: bool,
}

/// One name: the active definition and the lower-priority ones it overrides
/// (highest first).
#[derive(Debug, Clone, Serialize)]
pub struct CatalogEntry {
    /// The definition in effect.
    pub definition: AgentDefinition,
    /// Definitions of the same name it shadows, highest priority first.
    pub shadows: Vec<AgentDefinition>,
}

/// All definitions, by name.
#[derive(Debug, Clone, Default)]
pub struct DefinitionCatalog {
    entries: BTreeMap<String, CatalogEntry>,
    issues: Vec<DefinitionIssue>,
}

/// Definitions gathered in precedence order, each tagged with its level (one
/// source directory, or the flag, or the built-ins).
#[derive(Default)]
struct Gathered {
    candidates: Vec<(usize, AgentDefinition)>,
    issues: Vec<DefinitionIssue>,
    level: usize,
}

impl Gathered {
    fn push_level(&mut self, definitions: Vec<AgentDefinition>) {
        self.level += 1;
        let level = self.level;
        self.candidates
            .extend(definitions.into_iter().map(|def| (level, def)));
    }

    /// Scans one agents directory as one level.
    fn scan(&mut self, dir: &Path, source: DefinitionSource, plugin: Option<&str>) {
        let files = collect_md_files(dir, &mut self.issues);
        let mut definitions = Vec::new();
        for file in files {
            let outcome = read_definition_file(&file, source);
            self.issues.extend(outcome.issues);
            if let Some(mut def) = outcome.definition {
                if let Some(plugin) = plugin {
                    restrict_plugin_definition(&mut def, plugin, &mut self.issues);
                }
                definitions.push(def);
            }
        }
        self.push_level(definitions);
    }

    fn finish(self) -> DefinitionCatalog {
        let mut entries: BTreeMap<String, (usize, CatalogEntry)> = BTreeMap::new();
        let mut issues = self.issues;
        for (level, def) in self.candidates {
            match entries.get_mut(&def.name) {
                None => {
                    let entry = CatalogEntry {
                        definition: def,
                        shadows: Vec::new(),
                    };
                    entries.insert(entry.definition.name.clone(), (level, entry));
                }
                Some((winner_level, entry)) => {
                    if *winner_level == level {
                        issues.push(duplicate_issue(&def, &entry.definition));
                    }
                    entry.shadows.push(def);
                }
            }
        }
        DefinitionCatalog {
            entries: entries
                .into_iter()
                .map(|(name, (_, entry))| (name, entry))
                .collect(),
            issues,
        }
    }
}

fn duplicate_issue(loser: &AgentDefinition, winner: &AgentDefinition) -> DefinitionIssue {
    let by = winner
        .path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| winner.source.as_str().to_string());
    DefinitionIssue {
        path: loser.path.clone(),
        level: IssueLevel::Warning,
        line: None,
        message: format!("duplicate name `{}`, shadowed by {by}", loser.name),
    }
}

/// Namespaces a plugin definition (`plugin:name`) and drops the fields a
/// plugin may not set.
fn restrict_plugin_definition(
    def: &mut AgentDefinition,
    plugin: &str,
    issues: &mut Vec<DefinitionIssue>,
) {
    def.name = format!("{plugin}:{}", def.name);
    let mut ignored = Vec::new();
    if def.permission_mode.take().is_some() {
        ignored.push("permissionMode");
    }
    if def.hooks.take().is_some() {
        ignored.push("hooks");
    }
    if def.mcp_servers.take().is_some() {
        ignored.push("mcpServers");
    }
    for field in ignored {
        issues.push(DefinitionIssue {
            path: def.path.clone(),
            level: IssueLevel::Warning,
            line: None,
            message: format!("`{field}` is ignored in plugin agents"),
        });
    }
}

/// The directories searched for project definitions, closest first: `cwd` and
/// its parents up to the repository root, or `cwd` alone outside a repository.
fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let ancestors: Vec<&Path> = cwd.ancestors().collect();
    for (index, dir) in ancestors.iter().enumerate() {
        if dir.join(".git").exists() {
            return ancestors[..=index]
                .iter()
                .map(|d| d.to_path_buf())
                .collect();
        }
    }
    vec![cwd.clone()]
}

/// Reads and parses one file; read problems become an `Error` issue.
fn read_definition_file(path: &Path, source: DefinitionSource) -> ParseOutcome {
    let error = |message: String| ParseOutcome {
        definition: None,
        issues: vec![DefinitionIssue {
            path: Some(path.to_path_buf()),
            level: IssueLevel::Error,
            line: None,
            message,
        }],
    };
    let bytes = match crate::small_file::read_small(path, MAX_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(crate::small_file::SmallFileError::TooLarge { limit, .. }) => {
            return error(format!("file too large (larger than {limit} bytes)"));
        }
        Err(crate::small_file::SmallFileError::NotRegular { kind, .. }) => {
            return error(format!("not a regular file (it is {kind}); skipped"));
        }
        Err(e) => return error(e.to_string()),
    };
    match String::from_utf8(bytes) {
        Ok(text) => parse_definition(&text, path, source),
        Err(_) => error("not valid UTF-8".to_string()),
    }
}

/// Every `*.md` file under `root`, recursively (following symlinks, with a
/// depth limit and a guard against visiting a directory twice), in sorted
/// path order. A missing `root` is not a problem.
fn collect_md_files(root: &Path, issues: &mut Vec<DefinitionIssue>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut visited = HashSet::new();
    walk(root, 0, &mut visited, &mut files, issues);
    files.sort();
    files
}

fn walk(
    dir: &Path,
    depth: usize,
    visited: &mut HashSet<PathBuf>,
    files: &mut Vec<PathBuf>,
    issues: &mut Vec<DefinitionIssue>,
) {
    let issue = |level: IssueLevel, message: String| DefinitionIssue {
        path: Some(dir.to_path_buf()),
        level,
        line: None,
        message,
    };
    if depth > MAX_SCAN_DEPTH {
        issues.push(issue(
            IssueLevel::Warning,
            format!("not scanned: nested more than {MAX_SCAN_DEPTH} directories deep"),
        ));
        return;
    }
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e)
            if depth == 0 && matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) =>
        {
            return;
        }
        Err(e) => {
            issues.push(issue(
                IssueLevel::Error,
                format!("cannot read directory: {e}"),
            ));
            return;
        }
    };
    if let Ok(canonical) = fs::canonicalize(dir)
        && !visited.insert(canonical)
    {
        return; // already scanned through another path (a symlink loop or alias)
    }
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        // `metadata` follows symlinks; a dangling one is skipped.
        let Ok(meta) = fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            walk(&path, depth + 1, visited, files, issues);
        } else if is_markdown(&path) {
            // Not only regular files: a FIFO or device named `*.md` is
            // reported (and skipped) when it is read.
            files.push(path);
        }
    }
}

fn is_markdown(path: &Path) -> bool {
    path.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("md"))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

impl DefinitionCatalog {
    /// Loads every source. Only a bad `--agents` JSON (a usage error) is an
    /// `Err`; file problems become [`issues`](Self::issues).
    pub fn load(sources: &CatalogSources) -> Result<DefinitionCatalog, String> {
        let mut gathered = Gathered::default();

        gathered.scan(&sources.managed_dir, DefinitionSource::Managed, None);

        if let Some(json) = &sources.flag_json {
            gathered.push_level(definitions_from_json(json)?);
        }

        let user_dirs: Vec<PathBuf> = std::iter::once(sources.data_dir.join("agents"))
            .chain(
                sources
                    .home_dir
                    .iter()
                    .map(|h| h.join(".claude").join("agents")),
            )
            .collect();
        for dir in project_dirs(&sources.cwd) {
            for sub in [".cadre", ".claude"] {
                let agents = dir.join(sub).join("agents");
                // In the home directory, `~/.claude/agents` is the user's, not a project's.
                if user_dirs.iter().any(|u| same_dir(u, &agents)) {
                    continue;
                }
                gathered.scan(&agents, DefinitionSource::Project, None);
            }
        }

        for dir in &user_dirs {
            gathered.scan(dir, DefinitionSource::User, None);
        }

        let plugins_dir = sources.data_dir.join("plugins");
        if let Ok(entries) = fs::read_dir(&plugins_dir) {
            let mut plugins: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect();
            plugins.sort();
            for plugin in plugins {
                let Some(name) = plugin.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                gathered.scan(&plugin.join("agents"), DefinitionSource::Plugin, Some(name));
            }
        }

        gathered.push_level(builtin_definitions(sources.enable_verification));
        Ok(gathered.finish())
    }

    /// The active definition of this exact name.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.entries.get(name).map(|entry| &entry.definition)
    }

    /// Every name with its active definition and what it shadows, sorted by name.
    pub fn entries(&self) -> Vec<&CatalogEntry> {
        self.entries.values().collect()
    }

    /// `(name, description)` of the active definitions, sorted by name.
    pub fn roster(&self) -> Vec<(String, String)> {
        self.entries
            .values()
            .map(|e| (e.definition.name.clone(), e.definition.description.clone()))
            .collect()
    }

    /// The names of the active definitions, sorted.
    pub fn names(&self) -> Vec<String> {
        self.entries.keys().cloned().collect()
    }

    /// Every problem found while loading, in load order. `Info` issues
    /// (documentation files) are meant to be silent at start-up.
    pub fn issues(&self) -> &[DefinitionIssue] {
        &self.issues
    }
}

/// Validates a file or a directory (scanned recursively for `*.md`), for
/// `cadre agents validate PATH`: every definition that loads, in path order,
/// and every issue, including `Info` ones and duplicate names.
pub fn validate_path(path: &Path) -> (Vec<AgentDefinition>, Vec<DefinitionIssue>) {
    let mut issues = Vec::new();
    let files = match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => collect_md_files(path, &mut issues),
        Ok(_) => vec![path.to_path_buf()],
        Err(e) => {
            issues.push(DefinitionIssue {
                path: Some(path.to_path_buf()),
                level: IssueLevel::Error,
                line: None,
                message: format!("cannot read: {e}"),
            });
            return (Vec::new(), issues);
        }
    };
    let mut definitions: Vec<AgentDefinition> = Vec::new();
    for file in files {
        let outcome = read_definition_file(&file, DefinitionSource::Project);
        issues.extend(outcome.issues);
        if let Some(def) = outcome.definition {
            if let Some(winner) = definitions.iter().find(|d| d.name == def.name) {
                issues.push(duplicate_issue(&def, winner));
            }
            definitions.push(def);
        }
    }
    (definitions, issues)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn agent(name: &str, description: &str) -> String {
        format!("---\nname: {name}\ndescription: {description}\n---\nPrompt of {name}.\n")
    }

    struct Env {
        _tmp: tempfile::TempDir,
        root: PathBuf,
        sources: CatalogSources,
    }

    /// `root/repo` (a repository, with `sub/`), `root/data`, `root/home`, `root/managed`.
    fn env() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        fs::create_dir_all(root.join("repo/.git")).unwrap();
        fs::create_dir_all(root.join("repo/sub")).unwrap();
        let sources = CatalogSources {
            cwd: root.join("repo/sub"),
            data_dir: root.join("data"),
            home_dir: Some(root.join("home")),
            managed_dir: root.join("managed"),
            flag_json: None,
            enable_verification: false,
        };
        Env {
            _tmp: tmp,
            root,
            sources,
        }
    }

    fn sources_of(entry: &CatalogEntry) -> Vec<DefinitionSource> {
        std::iter::once(&entry.definition)
            .chain(&entry.shadows)
            .map(|d| d.source)
            .collect()
    }

    #[test]
    fn precedence_across_all_sources() {
        let mut e = env();
        let r = &e.root;
        write(&r.join("managed/x.md"), &agent("a", "managed"));
        write(&r.join("repo/.claude/agents/x.md"), &agent("a", "repo"));
        write(&r.join("repo/.claude/agents/b.md"), &agent("b", "repo"));
        write(
            &r.join("repo/sub/.cadre/agents/deep/x.md"),
            &agent("b", "sub"),
        );
        write(&r.join("data/agents/x.md"), &agent("b", "user-cadre"));
        write(
            &r.join("home/.claude/agents/x.md"),
            &agent("b", "user-claude"),
        );
        write(
            &r.join("home/.claude/agents/c.md"),
            &agent("c", "user-claude"),
        );
        write(
            &r.join("home/.claude/agents/d.md"),
            &agent("general-purpose", "mine"),
        );
        e.sources.flag_json = Some(r#"{"a": {"description": "flag", "prompt": "p"}}"#.into());
        let cat = DefinitionCatalog::load(&e.sources).unwrap();
        assert!(cat.issues().is_empty(), "{:?}", cat.issues());

        assert_eq!(cat.get("a").unwrap().description, "managed");
        let b = cat
            .entries()
            .into_iter()
            .find(|e| e.definition.name == "b")
            .unwrap();
        assert_eq!(b.definition.description, "sub");
        assert_eq!(
            b.definition.path.as_deref(),
            Some(r.join("repo/sub/.cadre/agents/deep/x.md").as_path())
        );
        let shadowed: Vec<_> = b.shadows.iter().map(|d| d.description.as_str()).collect();
        assert_eq!(shadowed, vec!["repo", "user-cadre", "user-claude"]);
        assert_eq!(
            sources_of(b),
            vec![
                DefinitionSource::Project,
                DefinitionSource::Project,
                DefinitionSource::User,
                DefinitionSource::User
            ]
        );
        let a = cat
            .entries()
            .into_iter()
            .find(|e| e.definition.name == "a")
            .unwrap();
        assert_eq!(
            sources_of(a),
            vec![
                DefinitionSource::Managed,
                DefinitionSource::Flag,
                DefinitionSource::Project
            ]
        );
        assert_eq!(cat.get("c").unwrap().source, DefinitionSource::User);
        let gp = cat
            .entries()
            .into_iter()
            .find(|e| e.definition.name == "general-purpose")
            .unwrap();
        assert_eq!(gp.definition.description, "mine");
        assert_eq!(
            sources_of(gp),
            vec![DefinitionSource::User, DefinitionSource::Builtin]
        );

        assert_eq!(
            cat.names(),
            vec!["Explore", "Plan", "a", "b", "c", "general-purpose"]
        );
        let roster = cat.roster();
        assert_eq!(roster[2], ("a".to_string(), "managed".to_string()));
        assert!(cat.get("A").is_none());
    }

    #[test]
    fn cadre_beats_claude_in_the_same_dir() {
        let e = env();
        let r = &e.root;
        write(
            &r.join("repo/sub/.claude/agents/x.md"),
            &agent("x", "claude"),
        );
        write(&r.join("repo/sub/.cadre/agents/x.md"), &agent("x", "cadre"));
        let cat = DefinitionCatalog::load(&e.sources).unwrap();
        assert_eq!(cat.get("x").unwrap().description, "cadre");
        assert!(cat.issues().is_empty(), "{:?}", cat.issues());
    }

    #[test]
    fn walking_stops_at_the_repository_root() {
        let e = env();
        let r = &e.root;
        write(
            &r.join(".claude/agents/above.md"),
            &agent("above", "outside"),
        );
        write(&r.join("repo/.claude/agents/in.md"), &agent("in", "inside"));
        let cat = DefinitionCatalog::load(&e.sources).unwrap();
        assert!(cat.get("above").is_none());
        assert!(cat.get("in").is_some());

        // Without a repository: only the working directory itself.
        let mut sources = e.sources.clone();
        fs::create_dir_all(r.join("norepo/sub")).unwrap();
        write(&r.join("norepo/.claude/agents/p.md"), &agent("parent", "p"));
        write(
            &r.join("norepo/sub/.claude/agents/s.md"),
            &agent("self", "s"),
        );
        sources.cwd = r.join("norepo/sub");
        let cat = DefinitionCatalog::load(&sources).unwrap();
        assert!(cat.get("parent").is_none());
        assert!(cat.get("self").is_some());

        // A `.git` file (worktree / submodule) also marks the root.
        fs::remove_dir_all(r.join("repo/.git")).unwrap();
        write(&r.join("repo/.git"), "gitdir: elsewhere\n");
        let cat = DefinitionCatalog::load(&e.sources).unwrap();
        assert!(cat.get("above").is_none());
        assert!(cat.get("in").is_some());
    }

    #[test]
    fn home_claude_dir_is_user_not_project() {
        let mut e = env();
        let r = &e.root;
        write(&r.join("home/.claude/agents/x.md"), &agent("x", "d"));
        e.sources.cwd = r.join("home");
        let cat = DefinitionCatalog::load(&e.sources).unwrap();
        let entry = cat
            .entries()
            .into_iter()
            .find(|e| e.definition.name == "x")
            .unwrap();
        assert_eq!(entry.definition.source, DefinitionSource::User);
        assert!(entry.shadows.is_empty());
    }

    #[test]
    fn plugins_are_namespaced_and_restricted() {
        let e = env();
        let r = &e.root;
        write(
            &r.join("data/plugins/tools-pack/agents/x.md"),
            "---\nname: linter\ndescription: d\npermissionMode: bypassPermissions\nhooks:\n  Stop: []\nmcpServers: [gh]\nmodel: haiku\n---\nb",
        );
        let cat = DefinitionCatalog::load(&e.sources).unwrap();
        let def = cat.get("tools-pack:linter").unwrap();
        assert_eq!(def.source, DefinitionSource::Plugin);
        assert!(def.permission_mode.is_none() && def.hooks.is_none() && def.mcp_servers.is_none());
        assert_eq!(def.model.as_deref(), Some("haiku"));
        assert!(cat.get("linter").is_none());
        let messages: Vec<_> = cat.issues().iter().map(|i| i.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "`permissionMode` is ignored in plugin agents",
                "`hooks` is ignored in plugin agents",
                "`mcpServers` is ignored in plugin agents"
            ]
        );
        assert!(cat.issues().iter().all(|i| i.level == IssueLevel::Warning));
    }

    #[test]
    fn builtins_present_and_overridable() {
        let mut e = env();
        let cat = DefinitionCatalog::load(&e.sources).unwrap();
        assert_eq!(cat.names(), vec!["Explore", "Plan", "general-purpose"]);
        e.sources.enable_verification = true;
        write(
            &e.root.join("repo/.claude/agents/explore.md"),
            &agent("Explore", "my explore"),
        );
        let cat = DefinitionCatalog::load(&e.sources).unwrap();
        assert_eq!(
            cat.names(),
            vec!["Explore", "Plan", "Verification", "general-purpose"]
        );
        let explore = cat.entries()[0];
        assert_eq!(explore.definition.description, "my explore");
        assert_eq!(explore.definition.source, DefinitionSource::Project);
        assert!(!explore.definition.read_only);
        assert_eq!(explore.shadows.len(), 1);
        assert_eq!(explore.shadows[0].source, DefinitionSource::Builtin);
    }

    #[test]
    fn duplicates_bad_files_and_docs() {
        let e = env();
        let dir = e.root.join("repo/.claude/agents");
        write(&dir.join("a.md"), &agent("dup", "first"));
        write(&dir.join("z/b.md"), &agent("dup", "second"));
        write(&dir.join("README.md"), "# Our agents\n");
        write(
            &dir.join("notes.txt"),
            "---\nname: txt\ndescription: d\n---\n",
        );
        write(
            &dir.join("broken.md"),
            "---\nname: broken\ndescription: d\ntools: [a\n---\n",
        );
        write(&dir.join("noname.md"), "---\ndescription: d\n---\nb");
        write(&dir.join("good.md"), &agent("good", "fine"));
        fs::write(dir.join("bin.md"), [0xff, 0xfe, 0x00]).unwrap();
        let cat = DefinitionCatalog::load(&e.sources).unwrap();
        assert_eq!(cat.get("dup").unwrap().description, "first");
        assert!(cat.get("good").is_some());
        assert!(cat.get("txt").is_none() && cat.get("broken").is_none());
        let summary: Vec<_> = cat
            .issues()
            .iter()
            .map(|i| {
                let name = i.path.as_ref().unwrap().strip_prefix(&dir).unwrap();
                (name.display().to_string(), i.level)
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("README.md".to_string(), IssueLevel::Info),
                ("bin.md".to_string(), IssueLevel::Error),
                ("broken.md".to_string(), IssueLevel::Error),
                ("noname.md".to_string(), IssueLevel::Info),
                ("z/b.md".to_string(), IssueLevel::Warning),
            ]
        );
        let dup = cat.issues().last().unwrap();
        assert_eq!(
            dup.message,
            format!(
                "duplicate name `dup`, shadowed by {}",
                dir.join("a.md").display()
            )
        );
        let entry = cat
            .entries()
            .into_iter()
            .find(|e| e.definition.name == "dup")
            .unwrap();
        assert_eq!(entry.shadows.len(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_dirs_followed_without_looping() {
        let e = env();
        let dir = e.root.join("repo/.claude/agents");
        write(&e.root.join("shared/s.md"), &agent("shared", "d"));
        fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(e.root.join("shared"), dir.join("linked")).unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("loop")).unwrap();
        let cat = DefinitionCatalog::load(&e.sources).unwrap();
        assert!(cat.get("shared").is_some());
        assert!(cat.issues().is_empty(), "{:?}", cat.issues());
    }

    #[test]
    fn bad_flag_json_is_an_error() {
        let mut e = env();
        e.sources.flag_json = Some("{".into());
        assert!(DefinitionCatalog::load(&e.sources).is_err());
        e.sources.flag_json = Some(r#"{"x": {"description": "d"}}"#.into());
        let err = DefinitionCatalog::load(&e.sources).unwrap_err();
        assert!(err.contains("`x`") && err.contains("`prompt`"), "{err}");
    }

    #[test]
    fn validate_file_and_dir() {
        let e = env();
        let dir = e.root.join("v");
        write(&dir.join("a.md"), &agent("a", "d"));
        write(&dir.join("sub/b.md"), "---\nname: b\n---\n");
        write(&dir.join("sub/c.md"), &agent("a", "again"));
        let (defs, issues) = validate_path(&dir);
        assert_eq!(defs.len(), 2);
        let levels: Vec<_> = issues.iter().map(|i| i.level).collect();
        assert_eq!(levels, vec![IssueLevel::Error, IssueLevel::Warning]);
        assert!(issues[0].message.contains("no `description`"));
        assert!(issues[1].message.starts_with("duplicate name `a`"));

        let (defs, issues) = validate_path(&dir.join("a.md"));
        assert_eq!(defs.len(), 1);
        assert!(issues.is_empty());

        let (defs, issues) = validate_path(&dir.join("missing.md"));
        assert!(defs.is_empty());
        assert_eq!(issues[0].level, IssueLevel::Error);
    }
}
