//! The prompt's history kept per project: one JSON string per line in a
//! private file under the data directory, so ↑ finds what was typed in
//! earlier sessions in the same project. Keys are redacted before a line
//! is written; a file that cannot be read or written costs the history,
//! never the session.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Entries kept (the newest).
pub const MAX_ENTRIES: usize = 500;

/// Where the history of the project at `cwd` is kept under `data_dir`:
/// `history/<hash of the path>.jsonl`.
pub fn history_path(data_dir: &Path, cwd: &Path) -> PathBuf {
    // FNV-1a: stable across runs and builds, which std's hasher is not.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in cwd.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    data_dir.join("history").join(format!("{hash:016x}.jsonl"))
}

/// The entries in `path`, oldest first (the newest [`MAX_ENTRIES`]);
/// lines that are not a JSON string are skipped.
pub fn load(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let mut entries: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<String>(l).ok())
        .collect();
    let extra = entries.len().saturating_sub(MAX_ENTRIES);
    entries.drain(..extra);
    entries
}

/// Appends `entry` to `path` (the directory 0700, the file 0600).
pub fn append(path: &Path, entry: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    let mut opts = OpenOptions::new();
    opts.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let line = serde_json::to_string(&cadre_core::secrets::redact(entry))
        .map_err(std::io::Error::other)?;
    opts.open(path)?.write_all(format!("{line}\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_privately_and_keys_never_reach_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = history_path(dir.path(), Path::new("/some/project"));
        assert_eq!(path, history_path(dir.path(), Path::new("/some/project")));
        assert_ne!(path, history_path(dir.path(), Path::new("/other/project")));
        // The session's key, as the binary registers it at start-up.
        cadre_core::secrets::register("sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789");
        append(&path, "first\nwith two lines").unwrap();
        append(
            &path,
            "use sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789 here",
        )
        .unwrap();
        let entries = load(&path);
        assert_eq!(entries[0], "first\nwith two lines");
        assert!(
            !entries[1].contains("abcdefghijklmnopqrstuvwxyz0123456789"),
            "{}",
            entries[1]
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        std::fs::write(&path, "not json\n\"ok\"\n").unwrap();
        assert_eq!(load(&path), ["ok"]);
    }
}
