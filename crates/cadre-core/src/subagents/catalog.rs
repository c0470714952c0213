//! Every agent definition the session can use, from all sources, with
//! precedence applied and the problems found along the way.
//!
//! Precedence, highest first: managed → `--agents` flag → project (closest
//! directory first; `.cadre/agents/` before `.claude/agents/`) → user
//! (`<data_dir>/agents/` before `~/.claude/agents/`) → plugins → built-in.
//! A session keeps a [`CatalogCache`]: each batch of spawns checks, with one
//! `stat` per directory and file the last load looked at, whether anything
//! changed, and re-reads the files only then, so the next spawn sees edited
//! files without every spawn re-reading and re-parsing every definition.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

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
    /// `$CADRE_HOME` (`~/.cadre`): user agents in `<data_dir>/agents/`.
    pub data_dir: PathBuf,
    /// The enabled plugins' agent folders or files, each with its plugin's
    /// name (see [`crate::plugins::PluginSet::agent_paths`]).
    pub plugin_agents: Vec<(String, PathBuf)>,
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
    probes: Probes,
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
        let files = collect_md_files(dir, &mut self.issues, &mut self.probes);
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

    fn finish(self) -> (DefinitionCatalog, Probes) {
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
        let catalog = DefinitionCatalog {
            entries: entries
                .into_iter()
                .map(|(name, (_, entry))| (name, entry))
                .collect(),
            issues,
        };
        (catalog, self.probes)
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

/// A name lower-cased without separators (space, `-`, `_`), for loose matching.
fn loose_name(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, ' ' | '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect()
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
fn project_dirs(cwd: &Path, probes: &mut Probes) -> Vec<PathBuf> {
    let found = crate::project_root::project_dirs(cwd);
    // Every `.git` looked for: absent in each directory but a found root's.
    let last = found.closest_first.len().saturating_sub(1);
    for (index, dir) in found.closest_first.iter().enumerate() {
        let exists = found.in_repository && index == last;
        probes.list.push(Probe::Exists(dir.join(".git"), exists));
    }
    if !found.in_repository {
        // Outside a repository every parent was looked in too.
        for dir in found.closest_first[last].ancestors().skip(1) {
            probes.list.push(Probe::Exists(dir.join(".git"), false));
        }
    }
    found.closest_first
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
fn collect_md_files(
    root: &Path,
    issues: &mut Vec<DefinitionIssue>,
    probes: &mut Probes,
) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut visited = HashSet::new();
    walk(root, 0, &mut visited, &mut files, issues, probes);
    files.sort();
    files
}

fn walk(
    dir: &Path,
    depth: usize,
    visited: &mut HashSet<PathBuf>,
    files: &mut Vec<PathBuf>,
    issues: &mut Vec<DefinitionIssue>,
    probes: &mut Probes,
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
    // Stamped before it is read: a change after this is seen by the next check.
    probes.stamp(dir, fs::metadata(dir).ok().as_ref());
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
            // A dangling link: its target may appear without its directory changing.
            probes.stamp(&path, None);
            continue;
        };
        if meta.is_dir() {
            walk(&path, depth + 1, visited, files, issues, probes);
        } else if is_markdown(&path) {
            probes.stamp(&path, Some(&meta));
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
        Self::load_probed(sources).map(|(catalog, _)| catalog)
    }

    /// Loads every source, recording every directory and file it looked at.
    fn load_probed(sources: &CatalogSources) -> Result<(DefinitionCatalog, Probes), String> {
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
        for dir in project_dirs(&sources.cwd, &mut gathered.probes) {
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

        // The enabled plugins' agent folders (or files), named `plugin:agent`.
        for (plugin, path) in &sources.plugin_agents {
            let meta = fs::metadata(path).ok();
            if meta.as_ref().is_some_and(|m| m.is_file()) {
                gathered.probes.stamp(path, meta.as_ref());
                let outcome = read_definition_file(path, DefinitionSource::Plugin);
                gathered.issues.extend(outcome.issues);
                if let Some(mut def) = outcome.definition {
                    restrict_plugin_definition(&mut def, plugin, &mut gathered.issues);
                    gathered.push_level(vec![def]);
                }
            } else {
                gathered.scan(path, DefinitionSource::Plugin, Some(plugin));
            }
        }

        gathered.push_level(builtin_definitions(sources.enable_verification));
        Ok(gathered.finish())
    }

    /// The active definition of this exact name.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        if let Some(entry) = self.entries.get(name) {
            return Some(&entry.definition);
        }
        // As Claude Code matches `subagent_type`: ignoring case and
        // separators (`"Code Reviewer"` → `code-reviewer`), when one name fits.
        let wanted = loose_name(name);
        let mut fits = self
            .entries
            .values()
            .filter(|entry| loose_name(&entry.definition.name) == wanted);
        match (fits.next(), fits.next()) {
            (Some(entry), None) if !wanted.is_empty() => Some(&entry.definition),
            _ => None,
        }
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
        Ok(meta) if meta.is_dir() => collect_md_files(path, &mut issues, &mut Probes::default()),
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

/// A file changed this shortly before a load may change again within the
/// same timestamp tick without its stamp changing (coarse or 2-second file
/// system clocks), so such a load is not trusted and the next check re-reads.
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// The same window where every stamp has a sub-second part: such a file
/// system's tick is the kernel's clock tick (a few milliseconds at most), so
/// a definition written just before a run is trusted after this, not re-read
/// by every check for two seconds.
const FINE_RACY_WINDOW: Duration = Duration::from_millis(50);

/// What a directory or file looked like: enough to see an edit, a rename or a
/// replacement (a change of any kind moves `ctime`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// One thing a load looked at, and what it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Probe {
    /// A scanned directory or a definition file (`None`: absent or dangling).
    Stamp(PathBuf, Option<Stamp>),
    /// A path whose existence only matters (a `.git` marking the repository root).
    Exists(PathBuf, bool),
}

impl Probe {
    /// Whether the path still looks as it did (one `stat`).
    fn still_holds(&self) -> bool {
        match self {
            Probe::Stamp(path, stamp) => fs::metadata(path).ok().map(|m| Stamp::of(&m)) == *stamp,
            Probe::Exists(path, exists) => path.exists() == *exists,
        }
    }
}

/// Everything one load looked at.
#[derive(Debug, Default)]
struct Probes {
    list: Vec<Probe>,
    /// The latest modification time among the stamps.
    newest: Option<SystemTime>,
    /// A stamp without a sub-second part was seen: its file system's clock
    /// may be coarse.
    coarse: bool,
}

impl Probes {
    fn stamp(&mut self, path: &Path, meta: Option<&fs::Metadata>) {
        if let Some(modified) = meta.and_then(|m| m.modified().ok()) {
            self.newest = self.newest.max(Some(modified));
        }
        if let Some(m) = meta {
            self.coarse |= m.mtime_nsec() == 0 || m.ctime_nsec() == 0;
        }
        self.list
            .push(Probe::Stamp(path.to_path_buf(), meta.map(Stamp::of)));
    }

    /// Whether every stamp was older than the racy window when the load began.
    fn settled_before(&self, started: SystemTime) -> bool {
        let window = if self.coarse {
            RACY_WINDOW
        } else {
            FINE_RACY_WINDOW
        };
        self.newest.is_none_or(|newest| newest + window <= started)
    }
}

/// The catalog of one set of sources, re-read only when a directory or file
/// the last load looked at has changed. Checking costs one `stat` per
/// directory and definition file; a batch of spawns then shares one parse.
#[derive(Debug)]
pub struct CatalogCache {
    sources: CatalogSources,
    loaded: Mutex<Option<Loaded>>,
    loads: AtomicUsize,
}

#[derive(Debug)]
struct Loaded {
    catalog: Arc<DefinitionCatalog>,
    probes: Vec<Probe>,
    /// False when a file was changed just before the load (see [`RACY_WINDOW`]).
    settled: bool,
}

impl CatalogCache {
    /// A cache over `sources`; nothing is read until the first [`get`](Self::get).
    pub fn new(sources: CatalogSources) -> Self {
        CatalogCache {
            sources,
            loaded: Mutex::new(None),
            loads: AtomicUsize::new(0),
        }
    }

    /// Where definitions are loaded from.
    pub fn sources(&self) -> &CatalogSources {
        &self.sources
    }

    /// The definitions as the files are now: the cached catalog when nothing
    /// it was read from has changed, else a fresh load. Only a bad
    /// `--agents` JSON is an `Err` (never cached).
    pub fn get(&self) -> Result<Arc<DefinitionCatalog>, String> {
        // Held while loading so that concurrent callers share one load; never across an await.
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(current) = loaded.as_ref()
            && current.settled
            && current.probes.iter().all(Probe::still_holds)
        {
            return Ok(Arc::clone(&current.catalog));
        }
        let started = SystemTime::now();
        let (catalog, probes) = DefinitionCatalog::load_probed(&self.sources)?;
        self.loads.fetch_add(1, Ordering::Relaxed);
        let catalog = Arc::new(catalog);
        *loaded = Some(Loaded {
            catalog: Arc::clone(&catalog),
            settled: probes.settled_before(started),
            probes: probes.list,
        });
        Ok(catalog)
    }

    /// How many times the files have been read so far.
    pub fn loads(&self) -> usize {
        self.loads.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::small_file::write_with_dirs as write;

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
            // Plugin folders as the plugin loader would name them.
            plugin_agents: ["p", "tools-pack"]
                .iter()
                .map(|p| (p.to_string(), root.join(format!("data/plugins/{p}/agents"))))
                .collect(),
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
        // Case and separators are ignored when one name fits, as in Claude Code.
        assert_eq!(cat.get("A").map(|d| d.name.as_str()), Some("a"));
        assert_eq!(
            cat.get("general purpose").map(|d| d.name.as_str()),
            Some("general-purpose")
        );
        assert_eq!(
            cat.get("GENERAL_PURPOSE").map(|d| d.name.as_str()),
            Some("general-purpose")
        );
        assert!(cat.get("d").is_none() && cat.get(" ").is_none());
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
            "---\nname: broken\ndescription: d\n  bad: indent\n---\n",
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

    /// Sets the modification time of everything under `dir` a minute back, as
    /// files look when they were not just edited.
    fn age(dir: &Path) {
        let past = SystemTime::now() - Duration::from_secs(60);
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                age(&path);
            }
            fs::File::open(&path).unwrap().set_modified(past).unwrap();
        }
        fs::File::open(dir).unwrap().set_modified(past).unwrap();
    }

    #[test]
    fn cache_rereads_only_when_a_file_changed() {
        let e = env();
        let r = &e.root;
        let file = r.join("repo/.claude/agents/a.md");
        write(&file, &agent("a", "first"));
        write(&r.join("data/agents/u.md"), &agent("u", "user"));
        age(r);
        let cache = CatalogCache::new(e.sources.clone());
        assert_eq!(cache.loads(), 0);
        let first = cache.get().unwrap();
        assert_eq!(first.get("a").unwrap().description, "first");
        let again = cache.get().unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(cache.loads(), 1, "unchanged: not re-read");

        // An edit in place, same length, is seen.
        write(&file, &agent("a", "again"));
        assert_eq!(cache.get().unwrap().get("a").unwrap().description, "again");
        assert_eq!(cache.loads(), 2);
        // Just written: a second edit could keep the same stamp, so the next
        // check re-reads too, until the file is older than the racy window.
        cache.get().unwrap();
        assert_eq!(cache.loads(), 3);
        age(r);
        cache.get().unwrap();
        cache.get().unwrap();
        assert_eq!(cache.loads(), 4);

        // A file in a directory that did not exist, and a removed file.
        write(&r.join("repo/sub/.cadre/agents/x/b.md"), &agent("b", "new"));
        fs::remove_file(r.join("data/agents/u.md")).unwrap();
        age(r);
        let changed = cache.get().unwrap();
        assert_eq!(changed.get("b").unwrap().description, "new");
        assert!(changed.get("u").is_none());
        assert_eq!(cache.loads(), 5);

        // A plugin appears, then the repository root moves up: both seen.
        write(&r.join("data/plugins/p/agents/c.md"), &agent("c", "plugin"));
        age(r);
        assert!(cache.get().unwrap().get("p:c").is_some());
        write(&r.join(".claude/agents/top.md"), &agent("top", "root"));
        age(r);
        assert!(cache.get().unwrap().get("top").is_none(), "above the root");
        fs::create_dir(r.join(".git")).unwrap();
        fs::remove_dir(r.join("repo/.git")).unwrap();
        assert!(cache.get().unwrap().get("top").is_some());
        assert_eq!(cache.loads(), 8);
        cache.get().unwrap();
        assert_eq!(cache.loads(), 8, "unchanged again");
    }

    #[test]
    fn a_file_just_written_is_trusted_after_its_clock_tick() {
        let e = env();
        let file = e.root.join("repo/.claude/agents/a.md");
        write(&file, &agent("a", "fresh"));
        let cache = CatalogCache::new(e.sources.clone());
        cache.get().unwrap();
        cache.get().unwrap();
        assert_eq!(cache.loads(), 2, "just written: re-read");
        // A stamp with nanoseconds: its file system's tick is short, so a
        // load begun past the fine window is trusted.
        std::thread::sleep(FINE_RACY_WINDOW + Duration::from_millis(20));
        cache.get().unwrap();
        cache.get().unwrap();
        cache.get().unwrap();
        assert_eq!(cache.loads(), 3, "settled once past the fine window");

        // A whole-second stamp may come from a coarse clock: two seconds.
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap();
        let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(now.as_secs());
        fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(whole)
            .unwrap();
        cache.get().unwrap();
        assert_eq!(cache.loads(), 4, "the stamp changed");
        std::thread::sleep(FINE_RACY_WINDOW + Duration::from_millis(20));
        cache.get().unwrap();
        assert_eq!(
            cache.loads(),
            5,
            "a coarse stamp stays racy past the fine window"
        );
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
