//! `NotebookEdit`: replace, insert or delete one cell of a Jupyter notebook
//! (`.ipynb`) the agent has read, by the cell's id or its index. The rest of
//! the file is written back as Jupyter writes it (its own indent, keys in
//! their order, non-ASCII kept), so only the cell changes.

use std::io::Read as _;
use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::exact;
use super::util::{self, atomic_write};
use super::{ToolContext, ToolOutput, TypedTool};
use crate::permissions::ToolEffect;

/// Largest notebook edited: outputs with images make notebooks large, but
/// past this one edit would cost more memory than it is worth.
const MAX_NOTEBOOK_BYTES: u64 = 64 * 1024 * 1024;

/// Edits one cell of a notebook.
pub struct NotebookEditTool;

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum CellType {
    Code,
    Markdown,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
enum EditMode {
    #[default]
    Replace,
    Insert,
    Delete,
}

/// The arguments of a `NotebookEdit` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Path of the .ipynb file (absolute, or relative to the project directory)
    notebook_path: String,
    /// The cell's id, or its 0-based index (`3` or `cell-3`). For insert, the new
    /// cell goes after this one (at the start when omitted)
    cell_id: Option<String>,
    /// The cell's new source (ignored for delete)
    #[serde(default)]
    new_source: String,
    /// code or markdown: required for insert; for replace, changes the cell's type
    cell_type: Option<CellType>,
    /// replace (default), insert or delete
    edit_mode: Option<EditMode>,
}

impl TypedTool for NotebookEditTool {
    type Input = Args;
    const NAME: &'static str = "NotebookEdit";
    const DESCRIPTION: &'static str = "Replace, insert or delete one cell of a Jupyter notebook (.ipynb). Name the cell by \
         its id or its 0-based index (`cell_id`). `insert` adds a cell after the one named (at \
         the start when none is) and needs `cell_type`. Replacing a code cell clears its \
         outputs. The notebook must have been Read first in this session and not changed \
         since; the rest of the file is kept as it is.";
    const EFFECT: ToolEffect = ToolEffect::Edit;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Args) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let path = ctx.resolve(&args.notebook_path);
            if let Some(refused) = ctx.refusal(self, &path) {
                return refused;
            }
            let shown = path.display().to_string();
            if path.extension().and_then(|e| e.to_str()) != Some("ipynb") {
                return ToolOutput::error(format!(
                    "{shown} is not a notebook (.ipynb); use Edit for other files"
                ));
            }
            match exact::kind(&path) {
                Ok(Some(kind)) if kind.is_file() => {}
                Ok(Some(_)) => return ToolOutput::error(format!("{shown} is not a file")),
                Ok(None) => return ToolOutput::error(format!("file not found: {shown}")),
                Err(e) => return ToolOutput::error(format!("cannot read {shown}: {e}")),
            }
            if let Some(why) = ctx.file_state.check_fresh(&path) {
                return ToolOutput::error(why);
            }
            ctx.before_change(&args.notebook_path, &path);
            let p = path.clone();
            let out = util::blocking(move || edit_file(&p, &args)).await;
            if !out.is_error {
                ctx.file_state.record_write(&path);
                ctx.after_change(&path);
            }
            out
        })
    }
}

fn edit_file(path: &Path, args: &Args) -> ToolOutput {
    let shown = path.display();
    let mut text = String::new();
    let read = exact::open_read(path)
        .and_then(|f| f.take(MAX_NOTEBOOK_BYTES + 1).read_to_string(&mut text));
    match read {
        Ok(n) if n as u64 > MAX_NOTEBOOK_BYTES => {
            return ToolOutput::error(format!("{shown} is larger than 64 MiB; not edited"));
        }
        Ok(_) => {}
        Err(e) => return ToolOutput::error(format!("cannot read {shown}: {e}")),
    }
    let (new_text, summary) = match edit_text(&text, args) {
        Ok(done) => done,
        Err(why) => return ToolOutput::error(format!("{shown}: {why}")),
    };
    if let Err(e) = atomic_write(path, new_text.as_bytes()) {
        return ToolOutput::error(format!("cannot write {shown}: {e}"));
    }
    ToolOutput::ok(format!("{summary} in {shown}"))
}

/// The notebook `text` with the edit made, and what was done.
fn edit_text(text: &str, args: &Args) -> Result<(String, String), String> {
    let mut notebook: Value =
        serde_json::from_str(text).map_err(|e| format!("not valid notebook JSON: {e}"))?;
    let layout = Layout::of(text);
    // Written the way it was read? Then only the edited cell will differ.
    let faithful = layout.write(&notebook).is_ok_and(|w| w == text);
    let with_ids = has_cell_ids(&notebook);
    let cells = notebook
        .get_mut("cells")
        .and_then(Value::as_array_mut)
        .ok_or("the notebook has no `cells` list")?;
    let mode = args.edit_mode.unwrap_or_default();
    let index = match &args.cell_id {
        Some(id) => Some(find_cell(cells, id)?),
        None => None,
    };
    let summary = match mode {
        EditMode::Replace => {
            let i = index.ok_or("replace needs the cell_id of the cell to replace")?;
            let cell = cells[i]
                .as_object_mut()
                .ok_or_else(|| format!("cell {i} is not an object"))?;
            if let Some(kind) = args.cell_type {
                set_cell_type(cell, kind);
            }
            cell.insert("source".into(), source_lines(&args.new_source));
            // A code cell's old outputs describe code that is gone.
            if cell.get("cell_type").and_then(Value::as_str) == Some("code") {
                cell.insert("execution_count".into(), Value::Null);
                cell.insert("outputs".into(), json!([]));
            }
            format!("Replaced cell {i}")
        }
        EditMode::Insert => {
            let kind = args
                .cell_type
                .ok_or("insert needs cell_type (code or markdown)")?;
            let at = index.map_or(0, |i| i + 1);
            cells.insert(at, new_cell(kind, &args.new_source, with_ids));
            format!("Inserted a {} cell at index {at}", kind_name(kind))
        }
        EditMode::Delete => {
            let i = index.ok_or("delete needs the cell_id of the cell to delete")?;
            cells.remove(i);
            format!("Deleted cell {i}")
        }
    };
    let written = layout
        .write(&notebook)
        .map_err(|e| format!("cannot encode the notebook: {e}"))?;
    let note = if faithful {
        ""
    } else {
        " (its JSON layout was not Jupyter's, so the file was rewritten in that layout)"
    };
    Ok((written, format!("{summary}{note}")))
}

/// How the file was laid out: its indent and whether it ends in a newline.
struct Layout {
    indent: Vec<u8>,
    newline_at_end: bool,
}

impl Layout {
    fn of(text: &str) -> Layout {
        let indent = text
            .split_once('\n')
            .map(|(_, rest)| {
                rest.bytes()
                    .take_while(|b| *b == b' ' || *b == b'\t')
                    .collect()
            })
            .filter(|i: &Vec<u8>| !i.is_empty())
            .unwrap_or_else(|| b" ".to_vec());
        Layout {
            indent,
            newline_at_end: text.ends_with('\n'),
        }
    }

    fn write(&self, notebook: &Value) -> Result<String, serde_json::Error> {
        use serde::Serialize;
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(&self.indent);
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        notebook.serialize(&mut ser)?;
        if self.newline_at_end {
            out.push(b'\n');
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// The index of the cell `id` names: its `id`, else `N` or `cell-N`.
fn find_cell(cells: &[Value], id: &str) -> Result<usize, String> {
    if let Some(i) = cells
        .iter()
        .position(|c| c.get("id").and_then(Value::as_str) == Some(id))
    {
        return Ok(i);
    }
    let index = id.strip_prefix("cell-").unwrap_or(id).parse::<usize>().ok();
    match index {
        Some(i) if i < cells.len() => Ok(i),
        Some(i) => Err(format!(
            "there is no cell {i}: the notebook has {} cells",
            cells.len()
        )),
        None => Err(format!("no cell has the id {id:?}")),
    }
}

/// Whether the notebook's cells carry ids (nbformat 4.5 and later).
fn has_cell_ids(notebook: &Value) -> bool {
    let version = |k: &str| notebook.get(k).and_then(Value::as_u64).unwrap_or(0);
    version("nbformat") > 4 || (version("nbformat") == 4 && version("nbformat_minor") >= 5)
}

/// Source as Jupyter stores it: lines, each but the last ending in `\n`.
fn source_lines(source: &str) -> Value {
    let lines: Vec<Value> = source
        .split_inclusive('\n')
        .map(|l| Value::String(l.to_string()))
        .collect();
    Value::Array(lines)
}

fn kind_name(kind: CellType) -> &'static str {
    match kind {
        CellType::Code => "code",
        CellType::Markdown => "markdown",
    }
}

fn set_cell_type(cell: &mut Map<String, Value>, kind: CellType) {
    cell.insert("cell_type".into(), json!(kind_name(kind)));
    match kind {
        CellType::Code => {
            cell.entry("execution_count").or_insert(Value::Null);
            cell.entry("outputs").or_insert_with(|| json!([]));
        }
        CellType::Markdown => {
            cell.remove("execution_count");
            cell.remove("outputs");
        }
    }
}

/// A new cell, its keys in Jupyter's (sorted) order.
fn new_cell(kind: CellType, source: &str, with_id: bool) -> Value {
    let mut cell = Map::new();
    cell.insert("cell_type".into(), json!(kind_name(kind)));
    if kind == CellType::Code {
        cell.insert("execution_count".into(), Value::Null);
    }
    if with_id {
        let id = uuid::Uuid::now_v7().simple().to_string();
        cell.insert("id".into(), json!(&id[id.len() - 8..]));
    }
    cell.insert("metadata".into(), json!({}));
    if kind == CellType::Code {
        cell.insert("outputs".into(), json!([]));
    }
    cell.insert("source".into(), source_lines(source));
    Value::Object(cell)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A notebook as Jupyter writes it: one-space indent, sorted keys, a final newline.
    const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Titel — ünïcode\n",
    "text"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 3,
   "id": "calc",
   "metadata": {
    "tags": [
     "keep"
    ]
   },
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "2\n"
     ]
    }
   ],
   "source": [
    "print(1 + 1)"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

    fn args(cell_id: Option<&str>, source: &str, kind: Option<CellType>, mode: EditMode) -> Args {
        Args {
            notebook_path: "n.ipynb".into(),
            cell_id: cell_id.map(str::to_string),
            new_source: source.into(),
            cell_type: kind,
            edit_mode: Some(mode),
        }
    }

    #[test]
    fn replacing_a_cell_changes_only_that_cell_and_clears_its_outputs() {
        let (out, summary) = edit_text(
            NOTEBOOK,
            &args(Some("calc"), "x = 2\nprint(x)", None, EditMode::Replace),
        )
        .unwrap();
        assert_eq!(summary, "Replaced cell 1");
        let want = NOTEBOOK.replace(
            "   \"execution_count\": 3,",
            "   \"execution_count\": null,",
        );
        let want = want.replace(
            "   \"outputs\": [\n    {\n     \"name\": \"stdout\",\n     \"output_type\": \"stream\",\n     \"text\": [\n      \"2\\n\"\n     ]\n    }\n   ],",
            "   \"outputs\": [],",
        );
        let want = want.replace(
            "    \"print(1 + 1)\"",
            "    \"x = 2\\n\",\n    \"print(x)\"",
        );
        assert_eq!(out, want);
    }

    #[test]
    fn cells_are_found_by_index_and_insert_and_delete_keep_the_rest() {
        let (out, _) = edit_text(
            NOTEBOOK,
            &args(
                Some("cell-0"),
                "more",
                Some(CellType::Markdown),
                EditMode::Insert,
            ),
        )
        .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["cells"].as_array().unwrap().len(), 3);
        assert_eq!(v["cells"][1]["cell_type"], "markdown");
        assert_eq!(v["cells"][1]["source"], json!(["more"]));
        assert_eq!(v["cells"][1]["id"].as_str().unwrap().len(), 8);
        // Deleting the inserted cell gives the notebook back byte for byte.
        let (back, summary) =
            edit_text(&out, &args(Some("1"), "", None, EditMode::Delete)).unwrap();
        assert_eq!(summary, "Deleted cell 1");
        assert_eq!(back, NOTEBOOK);
    }

    #[test]
    fn mistakes_are_named() {
        let err = |a: Args| edit_text(NOTEBOOK, &a).unwrap_err();
        assert!(
            err(args(Some("nope"), "", None, EditMode::Replace)).contains("no cell has the id")
        );
        assert!(err(args(Some("7"), "", None, EditMode::Delete)).contains("has 2 cells"));
        assert!(err(args(None, "x", None, EditMode::Insert)).contains("needs cell_type"));
        assert!(err(args(None, "x", None, EditMode::Replace)).contains("needs the cell_id"));
        assert!(
            edit_text("{not json", &args(None, "", None, EditMode::Delete))
                .unwrap_err()
                .contains("not valid notebook JSON")
        );
    }
}
