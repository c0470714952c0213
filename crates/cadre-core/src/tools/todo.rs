//! `TodoWrite`: the agent's own task list, replaced whole on every call.

use std::fmt;
use std::sync::Mutex;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ToolContext, ToolOutput, TypedTool};
use crate::permissions::ToolEffect;

/// Where a todo stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

impl TodoStatus {
    /// The wire name: `pending`, `in_progress` or `completed`.
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }
}

impl fmt::Display for TodoStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of the todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What to do, imperative ("Run the tests").
    #[schemars(length(min = 1))]
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// Present-continuous form shown while in progress ("Running the tests").
    #[serde(
        rename = "activeForm",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub active_form: Option<String>,
    /// Optional identifier chosen by the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// One agent's todo list.
#[derive(Debug, Default)]
pub struct TodoList {
    items: Mutex<Vec<TodoItem>>,
}

impl TodoList {
    /// The current items, in order.
    pub fn items(&self) -> Vec<TodoItem> {
        self.items.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Replaces the whole list.
    pub fn set(&self, items: Vec<TodoItem>) {
        match self.items.lock() {
            Ok(mut v) => *v = items,
            Err(poisoned) => *poisoned.into_inner() = items,
        }
    }
}

/// Replaces the agent's todo list.
pub struct TodoWriteTool;

/// The arguments of a `TodoWrite` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The complete, updated todo list
    todos: Vec<TodoItem>,
}

impl TypedTool for TodoWriteTool {
    type Input = Args;
    const NAME: &'static str = "TodoWrite";
    const DESCRIPTION: &'static str = "Create or update your todo list for the current task; each call replaces the whole \
         list. Use it for multi-step work: keep exactly one item `in_progress`, mark items \
         `completed` as soon as they are done, and add items as you discover them.\n\
         Each item: `content` (imperative, e.g. \"Run tests\"), `status` (pending | \
         in_progress | completed), optional `activeForm` (e.g. \"Running tests\") and `id`.";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;
    // It replaces the agent's list: two calls at once would race.
    const READ_ONLY: bool = false;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Args) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            if let Some(i) = args.todos.iter().position(|t| t.content.trim().is_empty()) {
                return ToolOutput::invalid_arguments(format!("todos[{i}].content is empty"));
            }
            let text = render(&args.todos);
            ctx.todos.set(args.todos);
            ToolOutput::ok(text)
        })
    }
}

/// A short rendering of the list for the model.
fn render(items: &[TodoItem]) -> String {
    if items.is_empty() {
        return "Todo list cleared.".to_string();
    }
    let done = items
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    let mut out = format!("Todo list updated ({done}/{} completed):\n", items.len());
    for item in items {
        let mark = match item.status {
            TodoStatus::Completed => "[x]",
            TodoStatus::InProgress => "[~]",
            TodoStatus::Pending => "[ ]",
        };
        out.push_str(&format!("{mark} {}\n", item.content));
    }
    out.pop();
    out
}

#[cfg(test)]
mod tests {
    use super::super::util::test_support;
    use super::*;
    use crate::tools::Tool;
    use serde_json::json;

    async fn run(ctx: &ToolContext, input: serde_json::Value) -> ToolOutput {
        TodoWriteTool
            .execute(ctx, &crate::tools::object(input))
            .await
    }

    #[tokio::test]
    async fn replaces_list_and_renders() {
        let (_d, ctx) = test_support::ctx();
        let out = run(
            &ctx,
            json!({"todos": [
                {"content": "Read code", "status": "completed"},
                {"content": "Fix bug", "status": "in_progress", "activeForm": "Fixing bug", "id": "2"},
                {"content": "Run tests", "status": "pending"}
            ]}),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            "Todo list updated (1/3 completed):\n[x] Read code\n[~] Fix bug\n[ ] Run tests"
        );
        let items = ctx.todos.items();
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].active_form.as_deref(), Some("Fixing bug"));
        assert_eq!(items[1].status, TodoStatus::InProgress);
        assert_eq!(items[1].id.as_deref(), Some("2"));

        let out = run(&ctx, json!({"todos": []})).await;
        assert_eq!(out.content, "Todo list cleared.");
        assert!(ctx.todos.items().is_empty());
    }

    #[tokio::test]
    async fn strict_items() {
        let (_d, ctx) = test_support::ctx();
        for bad in [
            json!({"todos": [{"content": "a", "status": "done"}]}),
            json!({"todos": [{"content": "a", "status": "pending", "priority": "high"}]}),
            json!({"todos": [{"status": "pending"}]}),
            json!({"todos": [{"content": " ", "status": "pending"}]}),
            json!({"todos": "a"}),
            json!({"todos": [], "extra": 1}),
            json!({}),
        ] {
            let out = run(&ctx, bad.clone()).await;
            assert!(out.is_error, "{bad}");
            assert!(
                out.content.starts_with("invalid_arguments: "),
                "{}",
                out.content
            );
        }
        assert!(ctx.todos.items().is_empty());
    }
}
