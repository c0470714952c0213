//! `.claude-plugin/plugin.json`, read in Claude Code's schema: every
//! recognised field is type-checked (a wrong type fails the plugin, naming
//! the file), unknown fields are warnings, and fields cadre reads but does
//! not apply are listed so they can be named once.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::PluginError;
use crate::small_file::read_small_text;

/// Largest manifest read; a real one is a few KB.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// Where the manifest sits inside a plugin folder.
pub const MANIFEST_PATH: &str = ".claude-plugin/plugin.json";

/// A `hooks` or `mcpServers` entry of a manifest: a path, or the config itself.
#[derive(Debug, Clone, PartialEq)]
pub enum ManifestConfig {
    /// A path relative to the plugin root.
    Path(String),
    /// An inline object.
    Inline(Value),
}

/// One `userConfig` option.
#[derive(Debug, Clone, PartialEq)]
pub struct UserConfigOption {
    /// Its key (`${user_config.KEY}`).
    pub key: String,
    /// `string`, `number`, `boolean`, `directory` or `file`.
    pub kind: String,
    /// Shown when asking for it.
    pub title: String,
    /// Kept out of settings files (a secret).
    pub sensitive: bool,
    /// The plugin needs a value.
    pub required: bool,
    /// The value when none is given, as text.
    pub default: Option<String>,
}

/// One `dependencies` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Dependency {
    /// The plugin it needs.
    pub name: String,
    /// A semver requirement (`^1.2`), when given.
    pub version: Option<String>,
}

/// What a manifest says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifest {
    /// The file read.
    pub path: PathBuf,
    /// `name`.
    pub name: String,
    /// `version`.
    pub version: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `skills`: folders added to the default `skills/`.
    pub skills: Vec<String>,
    /// `commands`: replaces the default `commands/`.
    pub commands: Option<Vec<String>>,
    /// `agents`: replaces the default `agents/`.
    pub agents: Option<Vec<String>>,
    /// `outputStyles`: replaces the default `output-styles/`.
    pub output_styles: Option<Vec<String>>,
    /// `hooks`.
    pub hooks: Vec<ManifestConfig>,
    /// `mcpServers`.
    pub mcp_servers: Vec<ManifestConfig>,
    /// `userConfig`, in file order.
    pub user_config: Vec<UserConfigOption>,
    /// `dependencies`.
    pub dependencies: Vec<Dependency>,
    /// `defaultEnabled`.
    pub default_enabled: Option<bool>,
    /// Fields read but not applied by cadre (`lspServers`, `channels`, …).
    pub unsupported: Vec<String>,
    /// Unknown fields and ignored values, each naming the file.
    pub warnings: Vec<String>,
}

fn bad(path: &Path, message: String) -> PluginError {
    PluginError::Manifest {
        path: path.to_path_buf(),
        message,
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn string(path: &Path, key: &str, v: &Value) -> Result<String, PluginError> {
    v.as_str().map(str::to_string).ok_or_else(|| {
        bad(
            path,
            format!("`{key}` must be a string, found {}", kind_of(v)),
        )
    })
}

/// A string or a list of strings (the path fields).
fn paths(path: &Path, key: &str, v: &Value) -> Result<Vec<String>, PluginError> {
    let err = || {
        bad(
            path,
            format!(
                "`{key}` must be a path or a list of paths, found {}",
                kind_of(v)
            ),
        )
    };
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string).ok_or_else(err))
            .collect(),
        _ => Err(err()),
    }
}

/// A path, a list of paths, or inline objects (`hooks`, `mcpServers`).
fn configs(path: &Path, key: &str, v: &Value) -> Result<Vec<ManifestConfig>, PluginError> {
    let one = |v: &Value| match v {
        Value::String(s) => Ok(ManifestConfig::Path(s.clone())),
        Value::Object(_) => Ok(ManifestConfig::Inline(v.clone())),
        other => Err(bad(
            path,
            format!(
                "`{key}` must be a path, a list of paths or an object, found {}",
                kind_of(other)
            ),
        )),
    };
    match v {
        Value::Array(items) => items.iter().map(one).collect(),
        other => Ok(vec![one(other)?]),
    }
}

/// Whether `name` can be a plugin name: one path segment made of letters,
/// digits, `-` and `_` (it becomes part of folder, skill and tool names).
pub fn valid_plugin_name(name: &str) -> bool {
    crate::path_segment::is_safe_segment(name)
        && !name.contains('.')
        && !name.contains("__")
        && name.len() <= 64
}

impl Manifest {
    /// Reads `<root>/.claude-plugin/plugin.json`; `None` when there is none.
    pub fn read(root: &Path) -> Result<Option<Manifest>, PluginError> {
        let path = root.join(MANIFEST_PATH);
        // The manifest, too, must be the plugin's own file, not a link out of it.
        if let Err(why) = resolve_under(root, MANIFEST_PATH) {
            return Err(bad(&path, why));
        }
        let text = match read_small_text(&path, MAX_MANIFEST_BYTES) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(bad(&path, e.to_string())),
        };
        Manifest::parse(&path, &text).map(Some)
    }

    /// Parses the text of the manifest at `path` (named in every message).
    pub fn parse(path: &Path, text: &str) -> Result<Manifest, PluginError> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| bad(path, format!("not valid JSON: {e}")))?;
        let Value::Object(fields) = root else {
            return Err(bad(path, "a manifest holds one JSON object".into()));
        };
        Manifest::from_fields(path, &fields)
    }

    /// Reads the fields of a manifest object (a marketplace entry uses the same schema).
    pub fn from_fields(path: &Path, fields: &Map<String, Value>) -> Result<Manifest, PluginError> {
        let mut m = Manifest {
            path: path.to_path_buf(),
            ..Manifest::default()
        };
        let shown = path.display();
        match fields.get("name") {
            None => return Err(bad(path, "`name` is required".into())),
            Some(v) => {
                let name = string(path, "name", v)?;
                if !valid_plugin_name(&name) {
                    return Err(bad(
                        path,
                        format!(
                            "`name` {name:?} is not a plugin name (letters, digits, `-` and `_`)"
                        ),
                    ));
                }
                m.name = name;
            }
        }
        for (key, v) in fields {
            match key.as_str() {
                "name" => {}
                "version" => m.version = Some(string(path, key, v)?),
                "description" => m.description = Some(string(path, key, v)?),
                "displayName" | "homepage" | "license" | "$schema" => {
                    string(path, key, v)?;
                }
                "repository" => {
                    // A string in the schema; some manifests give npm's object form.
                    if !matches!(v, Value::String(_) | Value::Object(_)) {
                        return Err(bad(
                            path,
                            format!("`repository` must be a string, found {}", kind_of(v)),
                        ));
                    }
                }
                "author" => {
                    let Value::Object(a) = v else {
                        return Err(bad(
                            path,
                            format!("`author` must be an object, found {}", kind_of(v)),
                        ));
                    };
                    if let Some(n) = a.get("name") {
                        string(path, "author.name", n)?;
                    }
                }
                "keywords" => {
                    let ok = v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
                    if !ok {
                        return Err(bad(path, "`keywords` must be a list of strings".into()));
                    }
                }
                "metadata" => {
                    if !v.is_object() {
                        m.warnings
                            .push(format!("{shown}: `metadata` is not an object; ignored"));
                    }
                }
                "defaultEnabled" => {
                    m.default_enabled = Some(v.as_bool().ok_or_else(|| {
                        bad(
                            path,
                            format!("`defaultEnabled` must be a boolean, found {}", kind_of(v)),
                        )
                    })?)
                }
                "skills" => m.skills = paths(path, key, v)?,
                "commands" => m.commands = Some(paths(path, key, v)?),
                "agents" => m.agents = Some(paths(path, key, v)?),
                "outputStyles" => m.output_styles = Some(paths(path, key, v)?),
                "workflows" => {
                    paths(path, key, v)?;
                    m.unsupported.push("workflows".into());
                }
                "hooks" => m.hooks = configs(path, key, v)?,
                "mcpServers" => m.mcp_servers = configs(path, key, v)?,
                "lspServers" => {
                    configs(path, key, v)?;
                    m.unsupported.push("LSP servers (lspServers)".into());
                }
                "channels" => {
                    if !v.is_array() {
                        return Err(bad(
                            path,
                            format!("`channels` must be a list, found {}", kind_of(v)),
                        ));
                    }
                    m.unsupported.push("channels".into());
                }
                "experimental" => {
                    if let Value::Object(x) = v {
                        for k in x.keys() {
                            m.unsupported.push(format!("experimental.{k}"));
                        }
                    } else {
                        m.warnings
                            .push(format!("{shown}: `experimental` is not an object; ignored"));
                    }
                }
                "userConfig" => m.user_config = user_config(path, v)?,
                "dependencies" => m.dependencies = dependencies(path, v)?,
                other => m
                    .warnings
                    .push(format!("{shown}: unknown field `{other}`; ignored")),
            }
        }
        Ok(m)
    }
}

fn user_config(path: &Path, v: &Value) -> Result<Vec<UserConfigOption>, PluginError> {
    let Value::Object(map) = v else {
        return Err(bad(
            path,
            format!("`userConfig` must be an object, found {}", kind_of(v)),
        ));
    };
    let mut out = Vec::new();
    for (key, spec) in map {
        let at = format!("userConfig.{key}");
        if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || key.is_empty() {
            return Err(bad(
                path,
                format!("`{at}`: a key is letters, digits and `_`"),
            ));
        }
        let Value::Object(spec) = spec else {
            return Err(bad(
                path,
                format!("`{at}` must be an object, found {}", kind_of(spec)),
            ));
        };
        let text = |field: &str| -> Result<Option<String>, PluginError> {
            spec.get(field)
                .map(|v| string(path, &format!("{at}.{field}"), v))
                .transpose()
        };
        let flag = |field: &str| -> Result<bool, PluginError> {
            match spec.get(field) {
                None => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(other) => Err(bad(
                    path,
                    format!("`{at}.{field}` must be a boolean, found {}", kind_of(other)),
                )),
            }
        };
        let kind = text("type")?.unwrap_or_else(|| "string".into());
        if !matches!(
            kind.as_str(),
            "string" | "number" | "boolean" | "directory" | "file"
        ) {
            return Err(bad(
                path,
                format!("`{at}.type` {kind:?} is not string, number, boolean, directory or file"),
            ));
        }
        let default = match spec.get("default") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Some(v.to_string()),
            Some(other) => Some(other.to_string()),
        };
        out.push(UserConfigOption {
            key: key.clone(),
            title: text("title")?.unwrap_or_else(|| key.clone()),
            sensitive: flag("sensitive")?,
            required: flag("required")?,
            kind,
            default,
        });
    }
    Ok(out)
}

fn dependencies(path: &Path, v: &Value) -> Result<Vec<Dependency>, PluginError> {
    let Value::Array(items) = v else {
        return Err(bad(
            path,
            format!("`dependencies` must be a list, found {}", kind_of(v)),
        ));
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(name) => Ok(Dependency {
                name: name.clone(),
                version: None,
            }),
            Value::Object(o) => Ok(Dependency {
                name: o
                    .get("name")
                    .map(|n| string(path, "dependencies[].name", n))
                    .transpose()?
                    .ok_or_else(|| bad(path, "a dependency has no `name`".into()))?,
                version: o
                    .get("version")
                    .map(|n| string(path, "dependencies[].version", n))
                    .transpose()?,
            }),
            other => Err(bad(
                path,
                format!(
                    "a `dependencies` entry must be a name or an object, found {}",
                    kind_of(other)
                ),
            )),
        })
        .collect()
}

/// `rel` (a manifest path) resolved under the plugin root `root`: `Ok(None)`
/// when nothing is there, `Err` naming why when it would leave the root (an
/// absolute path, `..`, or a symlink pointing out).
pub fn resolve_under(root: &Path, rel: &str) -> Result<Option<PathBuf>, String> {
    let rel_path = Path::new(rel);
    if rel_path.is_absolute() {
        return Err(format!(
            "`{rel}` is absolute; paths are relative to the plugin root"
        ));
    }
    if rel_path
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!("`{rel}` leaves the plugin root (`..`)"));
    }
    let joined = root.join(rel_path);
    if std::fs::symlink_metadata(&joined).is_err() {
        return Ok(None);
    }
    let real_root = root
        .canonicalize()
        .map_err(|e| format!("cannot read the plugin root: {e}"))?;
    match joined.canonicalize() {
        Ok(real) if real.starts_with(&real_root) => Ok(Some(real)),
        Ok(real) => Err(format!(
            "`{rel}` leads outside the plugin root (to {})",
            real.display()
        )),
        // A dangling link: nothing to load.
        Err(_) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest, PluginError> {
        Manifest::parse(Path::new("p/.claude-plugin/plugin.json"), text)
    }

    #[test]
    fn reads_fields_and_warns_on_unknown_ones() {
        let m = parse(
            r#"{"name": "fmt", "version": "1.2.0", "skills": "./extra", "commands": ["./c.md"],
                "hooks": {"SessionStart": []}, "mcpServers": ["./a.json", {"x": {}}],
                "lspServers": "./.lsp.json", "userConfig": {"TOKEN": {"type": "string", "sensitive": true}},
                "dependencies": ["base", {"name": "lib", "version": "^1"}], "defaultEnabled": false,
                "colour": "red"}"#,
        )
        .unwrap();
        assert_eq!(m.name, "fmt");
        assert_eq!(m.skills, ["./extra"]);
        assert_eq!(m.commands.as_deref(), Some(&["./c.md".to_string()][..]));
        assert_eq!(m.hooks.len(), 1);
        assert_eq!(m.mcp_servers.len(), 2);
        assert!(m.user_config[0].sensitive);
        assert_eq!(m.dependencies[1].version.as_deref(), Some("^1"));
        assert_eq!(m.default_enabled, Some(false));
        assert_eq!(m.unsupported, ["LSP servers (lspServers)"]);
        assert!(
            m.warnings[0].contains("unknown field `colour`"),
            "{:?}",
            m.warnings
        );
    }

    #[test]
    fn a_recognised_field_of_the_wrong_type_fails_naming_the_file() {
        for (text, key) in [
            (r#"{"name": "x", "keywords": "a"}"#, "keywords"),
            (r#"{"name": "x", "skills": 3}"#, "skills"),
            (
                r#"{"name": "x", "defaultEnabled": "yes"}"#,
                "defaultEnabled",
            ),
            (r#"{"name": "x", "hooks": 1}"#, "hooks"),
            (r#"{"name": 1}"#, "name"),
            (r#"{"name": "../x"}"#, "name"),
            (r#"{"version": "1"}"#, "name"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(
                err.contains("p/.claude-plugin/plugin.json") && err.contains(key),
                "{err}"
            );
        }
    }

    #[test]
    fn paths_stay_under_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("plug");
        std::fs::create_dir_all(root.join("skills")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        assert!(resolve_under(&root, "./skills").unwrap().is_some());
        assert!(resolve_under(&root, "./missing").unwrap().is_none());
        assert!(resolve_under(&root, "../x").is_err());
        assert!(resolve_under(&root, "/etc").is_err());
        assert!(resolve_under(&root, "./out").is_err());
        assert!(
            !valid_plugin_name("a/b") && !valid_plugin_name("..") && valid_plugin_name("fmt-2")
        );
    }
}
