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
#[path = "catalog_tests.rs"]
mod tests;
