//! `NotebookEdit` through the binary: a real notebook file, read first, one
//! cell replaced, the rest of the file byte for byte as it was; the
//! read-before-edit rule and Edit's permission rules hold for it too.

use crate::common;

use common::{Harness, Wire, stderr, tool_results};

/// As Jupyter writes it: one-space indent, sorted keys, outputs, a final newline.
const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "a1b2c3d4",
   "metadata": {},
   "source": [
    "# Analyse — Übersicht\n",
    "Notes."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 7,
   "id": "e5f6a7b8",
   "metadata": {
    "scrolled": true
   },
   "outputs": [
    {
     "data": {
      "text/plain": [
       "42"
      ]
     },
     "execution_count": 7,
     "metadata": {},
     "output_type": "execute_result"
    }
   ],
   "source": [
    "6 * 7"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "c9d0e1f2",
   "metadata": {},
   "outputs": [],
   "source": []
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3 (ipykernel)",
   "language": "python",
   "name": "python3"
  },
  "language_info": {
   "name": "python",
   "version": "3.11.7"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

#[tokio::test]
async fn a_read_notebook_gets_one_cell_replaced_and_the_rest_stays_byte_identical() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: NotebookEdit, input: { notebook_path: "analysis.ipynb", cell_id: "c9d0e1f2", new_source: "print('unread')" } }
      - tool_calls:
          - { name: Read, input: { file_path: "analysis.ipynb" } }
      - tool_calls:
          - { name: NotebookEdit, input: { notebook_path: "analysis.ipynb", cell_id: "c9d0e1f2", new_source: "total = 6 * 7\nprint(total)" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write("analysis.ipynb", NOTEBOOK);
    let out = h
        .cadre(&["exec", "--permission-mode", "acceptEdits", "go"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let results = tool_results(&records[3].body);
    assert!(results[0].1, "unread first: {:?}", results[0]);
    assert!(results[0].0.contains("Read"), "{:?}", results[0]);
    assert_eq!(
        results[2],
        (
            format!(
                "Replaced cell 2 in {}",
                h.path("analysis.ipynb").canonicalize().unwrap().display()
            ),
            false,
        )
    );
    let want = NOTEBOOK.replace(
        "   \"outputs\": [],\n   \"source\": []",
        "   \"outputs\": [],\n   \"source\": [\n    \"total = 6 * 7\\n\",\n    \"print(total)\"\n   ]",
    );
    assert_ne!(want, NOTEBOOK);
    assert_eq!(h.read("analysis.ipynb"), want);
}

#[tokio::test]
async fn an_edit_deny_rule_covers_notebook_edits() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Read, input: { file_path: "n.ipynb" } }
      - tool_calls:
          - { name: NotebookEdit, input: { notebook_path: "n.ipynb", cell_id: "0", edit_mode: "delete" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    h.write("n.ipynb", NOTEBOOK);
    let out = h
        .cadre(&[
            "exec",
            "--permission-mode",
            "acceptEdits",
            "--deny",
            "Edit(*.ipynb)",
            "go",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&h.records()[2].body);
    assert!(
        results[1].1 && results[1].0.contains("Edit(*.ipynb)"),
        "{:?}",
        results[1]
    );
    assert_eq!(h.read("n.ipynb"), NOTEBOOK);
}
