//! Images for the prompt from outside the terminal: a pasted or dropped
//! file path, and the clipboard's image (Ctrl+V) through the desktop's
//! clipboard tools (`wl-paste` on Wayland, `xclip` on X11), which a
//! terminal does not pass on as a paste.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a clipboard tool may take before it is given up on (the screen
/// waits for it).
const TOOL_TIMEOUT: Duration = Duration::from_secs(3);
/// Largest clipboard image taken.
const MAX_CLIPBOARD_BYTES: usize = 64 * 1024 * 1024;

/// What Ctrl+V says when no clipboard tool is there.
pub const NO_CLIPBOARD_TOOL: &str = "Ctrl+V pastes an image through wl-paste (Wayland) or xclip (X11), and neither is installed here; paste or drop the image file's path instead";

/// The image file a paste names, when the whole paste is one path to an
/// existing PNG, JPEG, GIF or WebP file (as a terminal pastes a dropped
/// file: maybe quoted, maybe `file://`, spaces maybe escaped).
pub fn pasted_image_path(pasted: &str, cwd: &Path) -> Option<PathBuf> {
    let mut text = pasted.trim();
    if text.is_empty() || text.contains('\n') {
        return None;
    }
    for quote in ['\'', '"'] {
        if let Some(inner) = text.strip_prefix(quote).and_then(|t| t.strip_suffix(quote)) {
            text = inner;
        }
    }
    let text = match text.strip_prefix("file://") {
        Some(rest) => percent_decoded(rest),
        None => text.replace("\\ ", " "),
    };
    if !cadre_core::media::has_image_extension(&text) {
        return None;
    }
    let path = match text.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map(PathBuf::from)?.join(rest),
        None => cwd.join(&text),
    };
    path.is_file().then_some(path)
}

/// `%20` and the like decoded (a `file://` URL's path).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// True if `program` is on `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| {
            let candidate = dir.join(program);
            candidate.is_file()
        })
    })
}

/// Runs `program args` and returns what it printed, or `None` when it
/// failed or took longer than [`TOOL_TIMEOUT`] (it is killed then).
fn run(program: &str, args: &[&str]) -> Option<Vec<u8>> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    // Read on another thread so a full pipe cannot stall the wait below.
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = (&mut stdout)
            .take(MAX_CLIPBOARD_BYTES as u64 + 1)
            .read_to_end(&mut out);
        out
    });
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let out = reader.join().ok()?;
                return (status.success() && out.len() <= MAX_CLIPBOARD_BYTES).then_some(out);
            }
            Ok(None) if started.elapsed() < TOOL_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// The image types a clipboard tool lists, best first.
const TYPES: [(&str, &str); 4] = [
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
];

/// Reads the clipboard's contents of one type.
type Fetch = fn(&str) -> Option<Vec<u8>>;

/// The clipboard's image saved to a private file, or what to tell the user.
pub fn paste_image() -> Result<PathBuf, String> {
    let wayland = std::env::var_os("WAYLAND_DISPLAY").is_some() && on_path("wl-paste");
    let x11 = std::env::var_os("DISPLAY").is_some() && on_path("xclip");
    let (listed, fetch): (Option<Vec<u8>>, Fetch) = if wayland {
        (run("wl-paste", &["--list-types"]), |t| {
            run("wl-paste", &["--no-newline", "--type", t])
        })
    } else if x11 {
        (
            run("xclip", &["-selection", "clipboard", "-t", "TARGETS", "-o"]),
            |t| run("xclip", &["-selection", "clipboard", "-t", t, "-o"]),
        )
    } else if on_path("wl-paste") || on_path("xclip") {
        return Err(
            "Ctrl+V found a clipboard tool but no display to read the clipboard of; paste or drop the image file's path instead"
                .into(),
        );
    } else {
        return Err(NO_CLIPBOARD_TOOL.into());
    };
    let listed = String::from_utf8_lossy(&listed.unwrap_or_default()).into_owned();
    let Some((media_type, ext)) = TYPES
        .iter()
        .find(|(t, _)| listed.lines().any(|l| l.trim() == *t))
    else {
        return Err("the clipboard holds no image".into());
    };
    let bytes = fetch(media_type)
        .filter(|b| !b.is_empty())
        .ok_or_else(|| "the clipboard image could not be read".to_string())?;
    save(&bytes, ext).map_err(|e| format!("the clipboard image could not be saved: {e}"))
}

/// Writes `bytes` to a new private folder (0700) under the temporary
/// directory, as a 0600 file.
fn save(bytes: &[u8], ext: &str) -> std::io::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // A new folder each time (create fails on one that exists), so no one
    // else's file or link can stand in for it.
    let dir = std::env::temp_dir().join(format!("cadre-paste-{}-{nanos}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    let path = dir.join(format!("clipboard.{ext}"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    file.write_all(bytes)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasted_or_dropped_image_path_is_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let shot = dir.path().join("my shot.png");
        std::fs::write(&shot, b"\x89PNG\r\n\x1a\n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let cwd = dir.path();
        assert_eq!(pasted_image_path("'my shot.png'", cwd), Some(shot.clone()));
        assert_eq!(
            pasted_image_path("my\\ shot.png\n", cwd),
            Some(shot.clone())
        );
        let url = format!("file://{}", shot.display()).replace(' ', "%20");
        assert_eq!(pasted_image_path(&url, cwd), Some(shot.clone()));
        assert_eq!(pasted_image_path("notes.txt", cwd), None);
        assert_eq!(pasted_image_path("missing.png", cwd), None);
        assert_eq!(pasted_image_path("a.png\nb.png", cwd), None);
    }
}
