//! Session archives: one file holding everything a session is on disk, so it
//! can move to another machine (`cadre sessions export` / `import`): its log,
//! its subagents' logs, its rows of the task table with their task files, and
//! the branches of the worktrees its agents kept, as a git bundle.
//!
//! The file is a gzip-compressed tar of regular files only:
//!
//! ```text
//! manifest.json                      format, version, session id, cwd, cadre version, entries
//! sessions/<id>.jsonl                the session's log
//! sessions/<id>.agents/<child>.jsonl each subagent's log
//! sessions/<id>.images/<sha256>.<ext> the images its logs name, as they are
//! tasks.jsonl                        the session's task rows, one JSON object a line
//! tasks/<task-id>/<file>             output.log, agent.json, report.txt of each task
//! branches.bundle                    `git bundle` of the kept `cadre/<name>` branches
//! ```
//!
//! Every text entry goes through [`crate::secrets::redact`] again on export,
//! so a key that somehow sits in a log never leaves. Import trusts nothing in
//! the file: every entry must be a regular file whose name has one of the
//! shapes above, sizes are capped, and everything is checked before anything
//! is put in place.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{BufReader, BufWriter, Read};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::path_segment::is_safe_segment;
use crate::session::{
    LogRecord, RecordBody, SessionError, SessionLock, is_valid_session_id, locks_dir, now_ms,
    read_log, recovery_path, session_path, sessions_dir,
};
use crate::tasks::{BlockingTaskTable, TaskError, TaskFilter, TaskRow, TaskStatus};
use crate::worktrees::{Repository, WORKTREES_DIR};

/// What the manifest's `format` says.
pub const FORMAT: &str = "cadre-session-archive";
/// The archive format version written now; import reads this and older.
pub const FORMAT_VERSION: u32 = 1;
/// The manifest's name in the archive (its first entry).
pub const MANIFEST: &str = "manifest.json";
/// The task rows' name in the archive.
pub const TASK_ROWS: &str = "tasks.jsonl";
/// The git bundle's name in the archive.
pub const BUNDLE: &str = "branches.bundle";
/// The files of a task's folder that travel; others (a worktree record
/// naming a path on the old machine) stay behind.
pub const TASK_FILES: [&str; 3] = ["output.log", "agent.json", "report.txt"];

/// Largest entry import accepts.
pub const MAX_ENTRY_BYTES: u64 = 1 << 30;
/// Largest sum of entries import accepts.
pub const MAX_TOTAL_BYTES: u64 = 2 << 30;
/// Most entries import accepts.
pub const MAX_ENTRIES: usize = 10_000;
/// Largest manifest or task-rows entry import reads into memory.
const MAX_METADATA_BYTES: u64 = 16 << 20;

/// Why an archive could not be written or taken in.
#[derive(Debug, Error)]
pub enum ArchiveError {
    /// The session: missing, in use, unreadable.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The task table.
    #[error(transparent)]
    Tasks(#[from] TaskError),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The archive is not one import takes; nothing was written.
    #[error("{archive}: refused: {reason}; nothing was imported")]
    Refused {
        /// The archive file.
        archive: PathBuf,
        /// Why.
        reason: String,
    },
    /// A session with the archive's id is already here.
    #[error("session {0} already exists here; pass --force to replace it")]
    Exists(String),
    /// The output file is there already.
    #[error("{} already exists; choose another file with -o or remove it", .0.display())]
    OutputExists(PathBuf),
    /// Something of the session cannot be archived.
    #[error("cannot archive session {id}: {reason}")]
    Unarchivable {
        /// Session id.
        id: String,
        /// Why.
        reason: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ArchiveError + '_ {
    move |source| ArchiveError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What the archive holds, as its first entry says.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`] when written.
    pub version: u32,
    /// The session's id.
    pub session_id: String,
    /// The folder the session ran in, on the machine it was exported from.
    pub cwd: String,
    /// The cadre that wrote the archive.
    pub cadre_version: String,
    /// When it was written, ms since the Unix epoch.
    pub created_ms: u64,
    /// Every other entry, in order.
    pub entries: Vec<ManifestEntry>,
    /// The worktree names whose branches `cadre/<name>` are in the bundle.
    #[serde(default)]
    pub branches: Vec<String>,
    /// What the export left out, and why.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One entry of the archive.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ManifestEntry {
    /// Its name in the archive.
    pub path: String,
    /// Its size.
    pub bytes: u64,
}

/// An archive written by [`export`].
#[derive(Debug, Clone)]
pub struct Exported {
    /// The file.
    pub path: PathBuf,
    /// What it holds.
    pub manifest: Manifest,
}

/// A session taken in by [`import`].
#[derive(Debug, Clone)]
pub struct Imported {
    /// What the archive held.
    pub manifest: Manifest,
    /// Branches (`cadre/<name>`) fetched into the repository of the current folder.
    pub branches_fetched: Vec<String>,
    /// Where the bundle was kept instead, and why, when its branches could not be fetched.
    pub bundle_kept: Option<(PathBuf, String)>,
    /// Tasks that were active on the old machine, now recorded as lost.
    pub tasks_lost: Vec<String>,
}

/// Whether `id` could be a task id (`t-` and a safe name).
fn is_task_id(id: &str) -> bool {
    id.starts_with("t-") && id.len() <= 64 && is_safe_segment(id)
}

/// Whether `name` can be a worktree's name (as [`crate::worktrees`] allows them).
fn is_worktree_name(name: &str) -> bool {
    is_safe_segment(name)
        && !name.starts_with(['.', '-'])
        && !name.ends_with(".lock")
        && !name.contains("..")
}

/// `bytes` as text with every registered secret taken out. Logs are JSON
/// and always UTF-8; anything else is made so (a cut character at a task
/// output's cap).
fn redacted(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    crate::secrets::redact(&text).into_owned().into_bytes()
}

/// A regular file (not a link) read and redacted; `None` when absent.
fn read_text_entry(path: &Path, id: &str) -> Result<Option<Vec<u8>>, ArchiveError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => {
            if m.len() > MAX_ENTRY_BYTES {
                return Err(ArchiveError::Unarchivable {
                    id: id.to_string(),
                    reason: format!(
                        "{} is larger than an archive entry may be ({} bytes)",
                        path.display(),
                        MAX_ENTRY_BYTES
                    ),
                });
            }
            let bytes = std::fs::read(path).map_err(io(path))?;
            Ok(Some(redacted(&bytes)))
        }
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

/// The working directory of a log's first session record.
fn recorded_cwd(log: &[u8]) -> Option<String> {
    log.split(|b| *b == b'\n').find_map(|line| {
        match serde_json::from_slice::<LogRecord>(line).ok()?.body {
            RecordBody::SessionStart { cwd, .. } => Some(cwd),
            _ => None,
        }
    })
}

/// The worktree a log's agent worked in, when its folder was one.
fn worktree_of(cwd: &str) -> Option<String> {
    let path = Path::new(cwd);
    let parent = path.parent()?;
    if !parent.ends_with(WORKTREES_DIR) {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    is_worktree_name(name).then(|| name.to_string())
}

/// Writes session `id` of the data directory `home` to the archive `out`
/// (0600; refused if it exists). Kept worktree branches are looked for in
/// the repository of the session's folder, or of `here` when that folder is
/// gone. Blocking file and git work: for a one-shot command.
pub fn export(home: &Path, id: &str, out: &Path, here: &Path) -> Result<Exported, ArchiveError> {
    let log_path = session_path(home, id)?;
    if std::fs::symlink_metadata(out).is_ok() {
        return Err(ArchiveError::OutputExists(out.to_path_buf()));
    }
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    let mut notes = Vec::new();
    let parent = read_text_entry(&log_path, id)?.ok_or_else(|| ArchiveError::Unarchivable {
        id: id.to_string(),
        reason: format!("{} is not a regular file", log_path.display()),
    })?;
    let cwd = recorded_cwd(&parent).unwrap_or_default();
    let mut worktrees: BTreeSet<String> = worktree_of(&cwd).into_iter().collect();
    entries.push((format!("sessions/{id}.jsonl"), parent));

    let agents = sessions_dir(home).join(format!("{id}.agents"));
    let mut children: Vec<String> = match std::fs::read_dir(&agents) {
        Ok(dir) => dir
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_string();
                let child = name.strip_suffix(".jsonl")?;
                is_valid_session_id(child).then(|| child.to_string())
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    children.sort();
    for child in children {
        let path = agents.join(format!("{child}.jsonl"));
        let Some(log) = read_text_entry(&path, id)? else {
            continue;
        };
        // A child's worktree is named after it; its log says where it worked.
        worktrees.insert(child.clone());
        worktrees.extend(recorded_cwd(&log).as_deref().and_then(worktree_of));
        entries.push((format!("sessions/{id}.agents/{child}.jsonl"), log));
    }

    // Images travel as they are: binary, so not redacted like the logs.
    let images = sessions_dir(home).join(format!("{id}.images"));
    let mut image_names: Vec<String> = match std::fs::read_dir(&images) {
        Ok(dir) => dir
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_string();
                is_image_name(&name).then_some(name)
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    image_names.sort();
    for name in image_names {
        let path = images.join(&name);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() && m.len() <= MAX_ENTRY_BYTES => {
                let bytes = std::fs::read(&path).map_err(io(&path))?;
                entries.push((format!("sessions/{id}.images/{name}"), bytes));
            }
            _ => notes.push(format!("image {name} left out: not a regular file")),
        }
    }

    // Opening the table would create it: a data directory without one has no rows.
    let mut rows = if home.join("tasks.db").is_file() {
        BlockingTaskTable::open(home)?.list(&TaskFilter {
            session_id: Some(id.to_string()),
            ..Default::default()
        })?
    } else {
        Vec::new()
    };
    rows.reverse();
    let mut task_lines = String::new();
    let mut task_files = Vec::new();
    for mut row in rows {
        if !is_task_id(&row.id) {
            notes.push(format!("task {:?} left out: not a task id", row.id));
            continue;
        }
        let dir = home.join("tasks").join(&row.id);
        // The path on this machine means nothing elsewhere; import sets its own.
        row.output_path = PathBuf::from(format!("tasks/{}/output.log", row.id));
        let line = serde_json::to_string(&row).map_err(|e| ArchiveError::Unarchivable {
            id: id.to_string(),
            reason: format!("task {}: {e}", row.id),
        })?;
        task_lines.push_str(&line);
        task_lines.push('\n');
        for file in TASK_FILES {
            if let Some(bytes) = read_text_entry(&dir.join(file), id)? {
                task_files.push((format!("tasks/{}/{file}", row.id), bytes));
            }
        }
    }
    entries.push((TASK_ROWS.to_string(), redacted(task_lines.as_bytes())));
    entries.extend(task_files);

    let branches = bundle_into(&mut entries, &mut notes, &worktrees, &cwd, here, out);

    let manifest = Manifest {
        format: FORMAT.to_string(),
        version: FORMAT_VERSION,
        session_id: id.to_string(),
        cwd,
        cadre_version: env!("CARGO_PKG_VERSION").to_string(),
        created_ms: now_ms(),
        entries: entries
            .iter()
            .map(|(path, bytes)| ManifestEntry {
                path: path.clone(),
                bytes: bytes.len() as u64,
            })
            .collect(),
        branches,
        notes,
    };
    write_archive(out, &manifest, &entries)?;
    Ok(Exported {
        path: out.to_path_buf(),
        manifest,
    })
}

/// Adds the bundle of the kept branches among `worktrees` to `entries`, and
/// returns the names bundled; what could not be bundled goes to `notes`.
fn bundle_into(
    entries: &mut Vec<(String, Vec<u8>)>,
    notes: &mut Vec<String>,
    worktrees: &BTreeSet<String>,
    cwd: &str,
    here: &Path,
    out: &Path,
) -> Vec<String> {
    if worktrees.is_empty() {
        return Vec::new();
    }
    let recorded = Path::new(cwd);
    let from = if !cwd.is_empty() && recorded.is_dir() {
        recorded
    } else {
        here
    };
    let repo = match Repository::discover(from) {
        Ok(r) => r,
        Err(e) => {
            notes.push(format!("worktree branches not bundled: {e}"));
            return Vec::new();
        }
    };
    let kept: Vec<String> = worktrees
        .iter()
        .filter(|n| repo.has_branch(n))
        .cloned()
        .collect();
    if kept.is_empty() {
        return Vec::new();
    }
    // Beside the output (same disk, same owner), gone before this returns.
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = out.with_file_name(format!(".{name}.{}.bundle", std::process::id()));
    let bundled = repo
        .bundle_branches(&kept, &tmp)
        .map_err(|e| e.to_string())
        .and_then(|()| std::fs::read(&tmp).map_err(|e| e.to_string()));
    let _ = std::fs::remove_file(&tmp);
    match bundled {
        Ok(bytes) => {
            entries.push((BUNDLE.to_string(), bytes));
            kept
        }
        Err(e) => {
            notes.push(format!("worktree branches not bundled: {e}"));
            Vec::new()
        }
    }
}

/// A file removed when dropped unless kept.
struct Partial(Option<PathBuf>);

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Writes the tar.gz: the manifest first, then `entries`, each a regular
/// 0600 file; written aside and renamed, so a failed export leaves nothing.
fn write_archive(
    out: &Path,
    manifest: &Manifest,
    entries: &[(String, Vec<u8>)],
) -> Result<(), ArchiveError> {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = out.with_file_name(format!(".{name}.{}.partial", std::process::id()));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io(&tmp))?;
    let mut partial = Partial(Some(tmp.clone()));
    let gz = flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    let manifest_bytes = serde_json::to_vec_pretty(manifest).map_err(|e| io(&tmp)(e.into()))?;
    let mtime = manifest.created_ms / 1000;
    let mut append = |path: &str, data: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(data.len() as u64);
        header.set_mode(0o600);
        header.set_mtime(mtime);
        builder.append_data(&mut header, path, data)
    };
    append(MANIFEST, &manifest_bytes).map_err(io(&tmp))?;
    for (path, data) in entries {
        append(path, data).map_err(io(&tmp))?;
    }
    let gz = builder.into_inner().map_err(io(&tmp))?;
    let file = gz
        .finish()
        .map_err(io(&tmp))?
        .into_inner()
        .map_err(|e| io(&tmp)(e.into_error()))?;
    file.sync_all().map_err(io(&tmp))?;
    // A link, not `rename`, which would replace a file made at `out`
    // meanwhile; `rename` only where links are not to be had.
    match std::fs::hard_link(&tmp, out) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(ArchiveError::OutputExists(out.to_path_buf()))
        }
        Err(_) => {
            std::fs::rename(&tmp, out).map_err(io(out))?;
            partial.0 = None;
            Ok(())
        }
    }
}

/// What an entry name of an archive stands for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Entry {
    Manifest,
    Log(String),
    ChildLog(String, String),
    /// An image beside the logs: session id, file name.
    Image(String, String),
    TaskRows,
    TaskFile(String, String),
    Bundle,
}

/// True for the name of a stored image: `<64 hex digits>.<known extension>`.
fn is_image_name(name: &str) -> bool {
    let Some((hash, ext)) = name.split_once('.') else {
        return false;
    };
    hash.len() == 64
        && hash.bytes().all(|b| b.is_ascii_hexdigit())
        && ["png", "jpg", "gif", "webp", "pdf"].contains(&ext)
}

/// The entry a name stands for, or why the name is refused: every part of
/// it must be a safe segment (no `..`, no root, no backslash) and the whole
/// one of the known shapes.
fn classify(name: &str) -> Result<Entry, String> {
    let parts: Vec<&str> = name.split('/').collect();
    if parts.iter().any(|p| !is_safe_segment(p)) {
        return Err(format!(
            "entry {name:?} is not a plain relative path inside the archive"
        ));
    }
    let unknown = || format!("entry {name:?} is not part of a session archive");
    Ok(match parts.as_slice() {
        [MANIFEST] => Entry::Manifest,
        [TASK_ROWS] => Entry::TaskRows,
        [BUNDLE] => Entry::Bundle,
        ["sessions", log] => {
            let id = log.strip_suffix(".jsonl").ok_or_else(unknown)?;
            if !is_valid_session_id(id) {
                return Err(unknown());
            }
            Entry::Log(id.to_string())
        }
        ["sessions", folder, log] if folder.ends_with(".agents") => {
            let id = folder.strip_suffix(".agents").ok_or_else(unknown)?;
            let child = log.strip_suffix(".jsonl").ok_or_else(unknown)?;
            if !is_valid_session_id(id) || !is_valid_session_id(child) {
                return Err(unknown());
            }
            Entry::ChildLog(id.to_string(), child.to_string())
        }
        ["sessions", folder, file] if folder.ends_with(".images") => {
            let id = folder.strip_suffix(".images").ok_or_else(unknown)?;
            if !is_valid_session_id(id) || !is_image_name(file) {
                return Err(unknown());
            }
            Entry::Image(id.to_string(), file.to_string())
        }
        ["tasks", task, file] if is_task_id(task) && TASK_FILES.contains(file) => {
            Entry::TaskFile(task.to_string(), file.to_string())
        }
        _ => return Err(unknown()),
    })
}

/// A folder removed with what it holds when dropped.
struct Staging(PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The archive's entries copied to files in a staging folder, by what they are.
struct Staged {
    _dir: Staging,
    files: BTreeMap<Entry, (PathBuf, u64)>,
}

/// Reads every entry of `archive` into `staging` (0600 files named by
/// number), refusing anything that is not a regular file of a known name,
/// a second entry of one name, and sizes past the caps.
fn stage(archive: &Path, staging: Staging) -> Result<Staged, ArchiveError> {
    let refused = |reason: String| ArchiveError::Refused {
        archive: archive.to_path_buf(),
        reason,
    };
    let mut file = File::open(archive).map_err(io(archive))?;
    let mut magic = [0u8; 2];
    let got = file.read(&mut magic).map_err(io(archive))?;
    let file = File::open(archive).map_err(io(archive))?;
    let raw: Box<dyn Read> = if got == 2 && magic == [0x1f, 0x8b] {
        Box::new(flate2::read::GzDecoder::new(BufReader::new(file)))
    } else {
        Box::new(BufReader::new(file))
    };
    // A bomb stops at the caps: headers and padding take at most 3 blocks an entry.
    let limit = MAX_TOTAL_BYTES + (MAX_ENTRIES as u64 + 2) * 1536;
    let mut reader = tar::Archive::new(raw.take(limit));
    let entries = reader
        .entries()
        .map_err(|e| refused(format!("not a readable tar archive ({e})")))?;
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    for (n, entry) in entries.enumerate() {
        let mut entry = entry.map_err(|e| refused(format!("not a readable tar archive ({e})")))?;
        if n >= MAX_ENTRIES {
            return Err(refused(format!("more than {MAX_ENTRIES} entries")));
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        if !kind.is_file() {
            let what = match kind {
                tar::EntryType::Symlink => "a symbolic link",
                tar::EntryType::Link => "a hard link",
                tar::EntryType::Directory => "a directory",
                _ => "not a regular file",
            };
            return Err(refused(format!("entry {name:?} is {what}")));
        }
        let what = classify(&name).map_err(refused)?;
        if n == 0 && what != Entry::Manifest {
            return Err(refused(format!("its first entry is not {MANIFEST}")));
        }
        let size = entry.size();
        if size > MAX_ENTRY_BYTES {
            return Err(refused(format!(
                "entry {name:?} is larger than {MAX_ENTRY_BYTES} bytes"
            )));
        }
        total = total.saturating_add(size);
        if total > MAX_TOTAL_BYTES {
            return Err(refused(format!(
                "its entries add up to more than {MAX_TOTAL_BYTES} bytes"
            )));
        }
        if files.contains_key(&what) {
            return Err(refused(format!("entry {name:?} appears twice")));
        }
        let path = staging.0.join(n.to_string());
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io(&path))?;
        let copied = std::io::copy(&mut (&mut entry).take(size), &mut out)
            .map_err(|e| refused(format!("entry {name:?} cannot be read ({e})")))?;
        if copied != size {
            return Err(refused(format!("entry {name:?} is cut off")));
        }
        files.insert(what, (path, size));
    }
    Ok(Staged {
        _dir: staging,
        files,
    })
}

/// Reads a small staged entry whole.
fn read_small(path: &Path, size: u64, what: &str) -> Result<Vec<u8>, String> {
    if size > MAX_METADATA_BYTES {
        return Err(format!("{what} is larger than {MAX_METADATA_BYTES} bytes"));
    }
    std::fs::read(path).map_err(|e| format!("{what} cannot be read ({e})"))
}

/// Checks the staged archive as a whole and returns its manifest and task rows.
fn check(staged: &Staged) -> Result<(Manifest, Vec<TaskRow>), String> {
    let (path, size) = staged
        .files
        .get(&Entry::Manifest)
        .ok_or_else(|| format!("it has no {MANIFEST}"))?;
    let manifest: Manifest = serde_json::from_slice(&read_small(path, *size, MANIFEST)?)
        .map_err(|e| format!("{MANIFEST} is not valid ({e})"))?;
    if manifest.format != FORMAT {
        return Err(format!("{MANIFEST} does not name the format {FORMAT:?}"));
    }
    if manifest.version > FORMAT_VERSION {
        return Err(format!(
            "it has format version {}, newer than this cadre's {FORMAT_VERSION}; upgrade cadre",
            manifest.version
        ));
    }
    let id = &manifest.session_id;
    if !is_valid_session_id(id) {
        return Err(format!("{id:?} is not a session id"));
    }
    // The manifest lists exactly what the archive holds.
    let listed: BTreeMap<&str, u64> = manifest
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e.bytes))
        .collect();
    if listed.len() != manifest.entries.len() || listed.len() + 1 != staged.files.len() {
        return Err(format!("{MANIFEST} does not list the archive's entries"));
    }
    for (name, bytes) in &listed {
        let what = classify(name)?;
        match staged.files.get(&what) {
            Some((_, size)) if size == bytes => {}
            _ => {
                return Err(format!(
                    "{MANIFEST} lists {name:?}, which the archive does not hold as listed"
                ));
            }
        }
    }
    let mut tasks_with_files = BTreeSet::new();
    for what in staged.files.keys() {
        match what {
            Entry::Log(other) | Entry::ChildLog(other, _) | Entry::Image(other, _)
                if other != id =>
            {
                return Err(format!("it holds a log of another session ({other})"));
            }
            Entry::TaskFile(task, _) => {
                tasks_with_files.insert(task.clone());
            }
            _ => {}
        }
    }
    let (log, _) = staged
        .files
        .get(&Entry::Log(id.clone()))
        .ok_or_else(|| format!("it has no log of session {id}"))?;
    let loaded = read_log(log).map_err(|e| e.to_string())?;
    let recorded = loaded.records.iter().find_map(|r| match &r.body {
        RecordBody::SessionStart { session_id, .. } => Some(session_id.clone()),
        _ => None,
    });
    if recorded.as_deref() != Some(id.as_str()) {
        return Err(format!("its log does not start session {id}"));
    }
    for name in &manifest.branches {
        if !is_worktree_name(name) {
            return Err(format!("{name:?} cannot name a worktree branch"));
        }
    }
    if manifest.branches.is_empty() == staged.files.contains_key(&Entry::Bundle) {
        return Err(format!("{MANIFEST}'s branches and {BUNDLE} disagree"));
    }
    let mut rows = Vec::new();
    if let Some((path, size)) = staged.files.get(&Entry::TaskRows) {
        let text = read_small(path, *size, TASK_ROWS)?;
        for (n, line) in text.split(|b| *b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let row: TaskRow = serde_json::from_slice(line)
                .map_err(|e| format!("{TASK_ROWS} line {} is not a task row ({e})", n + 1))?;
            if !is_task_id(&row.id) {
                return Err(format!("{:?} is not a task id", row.id));
            }
            if &row.session_id != id {
                return Err(format!("task {} is of another session", row.id));
            }
            rows.push(row);
        }
    }
    let ids: BTreeSet<&String> = rows.iter().map(|r| &r.id).collect();
    if ids.len() != rows.len() {
        return Err(format!("{TASK_ROWS} lists a task twice"));
    }
    if let Some(stray) = tasks_with_files.iter().find(|t| !ids.contains(t)) {
        return Err(format!(
            "it holds files of task {stray}, which it does not list"
        ));
    }
    Ok((manifest, rows))
}

/// Creates `dir` (0700) if missing.
fn private_dir(dir: &Path) -> Result<(), ArchiveError> {
    crate::config::ensure_private_dir(dir).map_err(|e| ArchiveError::Io {
        path: dir.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })
}

/// Moves a staged file to `to`.
fn place(from: &Path, to: &Path) -> Result<(), ArchiveError> {
    std::fs::rename(from, to).map_err(io(to))
}

/// Takes in the session archive `archive` into the data directory `home`.
/// Everything is checked before anything is written (see the module doc);
/// a session with the same id is refused unless `force`, which replaces it
/// (refused while a run uses it). The branches in the bundle are fetched into
/// the repository of `here` when it is in one; otherwise the bundle is kept
/// beside the session's log. Tasks that were active are recorded as lost:
/// their processes were on the other machine. Blocking: for a one-shot command.
pub fn import(
    home: &Path,
    archive: &Path,
    here: &Path,
    force: bool,
) -> Result<Imported, ArchiveError> {
    let refused = |reason: String| ArchiveError::Refused {
        archive: archive.to_path_buf(),
        reason,
    };
    private_dir(home)?;
    let staging = home.join(format!(".import-{}", uuid::Uuid::now_v7().simple()));
    DirBuilder::new()
        .mode(0o700)
        .create(&staging)
        .map_err(io(&staging))?;
    let staged = stage(archive, Staging(staging))?;
    let (manifest, rows) = check(&staged).map_err(refused)?;
    let id = manifest.session_id.clone();

    let sessions = sessions_dir(home);
    private_dir(&sessions)?;
    let locks = locks_dir(home);
    private_dir(&locks)?;
    // Held while the session's files change: no run can use it meanwhile.
    let _lock = SessionLock::acquire(&locks, &id)?;
    match session_path(home, &id) {
        Ok(_) if !force => return Err(ArchiveError::Exists(id)),
        Ok(_) | Err(SessionError::NotFound(_)) => {}
        Err(SessionError::Internal) => {
            return Err(refused(format!(
                "{id} is a subagent's id in a session here"
            )));
        }
        Err(e) => return Err(e.into()),
    }

    // The rows first: the one step that can refuse (a task id taken by
    // another session) is all-or-nothing, before any file moves.
    let now = now_ms();
    let mut tasks_lost = Vec::new();
    let rows: Vec<TaskRow> = rows
        .into_iter()
        .map(|mut row| {
            row.output_path = home.join("tasks").join(&row.id).join("output.log");
            // Its processes were on the other machine: none of them is here.
            row.owner_pid = 0;
            row.owner_start = None;
            row.owner_boot = None;
            row.pgid = None;
            row.pgid_start = None;
            if row.status.is_active() {
                row.status = TaskStatus::Lost;
                row.error = Some(
                    "imported while active: its cadre process was on the machine the session was exported from"
                        .to_string(),
                );
                row.ended_ms.get_or_insert(now);
                tasks_lost.push(row.id.clone());
            }
            row
        })
        .collect();
    if !rows.is_empty() {
        BlockingTaskTable::open(home)?.import_rows(rows.clone(), force)?;
    }

    // Replacing: the old session's files go (the lock is ours already).
    let log_path = sessions.join(format!("{id}.jsonl"));
    let agents = sessions.join(format!("{id}.agents"));
    let images = sessions.join(format!("{id}.images"));
    let kept_bundle = sessions.join(format!("{id}.branches.bundle"));
    if force {
        if agents.is_dir() {
            std::fs::remove_dir_all(&agents).map_err(io(&agents))?;
        }
        if images.is_dir() {
            std::fs::remove_dir_all(&images).map_err(io(&images))?;
        }
        let _ = std::fs::remove_file(recovery_path(&log_path));
        let _ = std::fs::remove_file(&kept_bundle);
    }
    let mut bundle = None;
    for (what, (path, _)) in &staged.files {
        match what {
            Entry::Log(_) => place(path, &log_path)?,
            Entry::ChildLog(_, child) => {
                private_dir(&agents)?;
                place(path, &agents.join(format!("{child}.jsonl")))?;
            }
            Entry::Image(_, file) => {
                private_dir(&images)?;
                place(path, &images.join(file))?;
            }
            Entry::TaskFile(task, file) => {
                let dir = home.join("tasks").join(task);
                private_dir(&dir)?;
                place(path, &dir.join(file))?;
            }
            Entry::Bundle => bundle = Some(path.clone()),
            Entry::Manifest | Entry::TaskRows => {}
        }
    }
    // A task without its output file still reads as empty.
    for row in &rows {
        if !row.output_path.exists() {
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&row.output_path)
                .map_err(io(&row.output_path))?;
        }
    }

    let mut branches_fetched = Vec::new();
    let mut bundle_kept = None;
    if let Some(staged_bundle) = bundle {
        let fetched = Repository::discover(here)
            .map_err(|e| e.to_string())
            .and_then(|repo| {
                repo.fetch_bundle(&staged_bundle, &manifest.branches)
                    .map_err(|e| e.to_string())
            });
        match fetched {
            Ok(()) => {
                branches_fetched = manifest
                    .branches
                    .iter()
                    .map(|n| format!("{}{n}", crate::worktrees::BRANCH_PREFIX))
                    .collect();
            }
            Err(why) => {
                place(&staged_bundle, &kept_bundle)?;
                bundle_kept = Some((kept_bundle, why));
            }
        }
    }
    drop(staged);
    Ok(Imported {
        manifest,
        branches_fetched,
        bundle_kept,
        tasks_lost,
    })
}

#[cfg(test)]
mod tests;
