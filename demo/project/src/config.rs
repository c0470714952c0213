use std::fs;

/// Reads and parses the settings file.
pub fn load(path: &str) -> Result<String, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    if text.trim().is_empty() {
        return Err(format!("the cofniguration file {path} is empty"));
    }
    Ok(text)
}
