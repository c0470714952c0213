//! [`TypedTool`]: a tool described by its typed arguments. One blanket
//! [`Tool`] impl derives the schema from them (built once per argument type),
//! parses a call's arguments strictly and derives whether calls may run side
//! by side from the tool's effect, so a tool writes only what is its own.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{
    Tool, ToolContext, ToolInput, ToolOutput, check_bounds_with, input_schema, parse_args,
};
use crate::model::ServerWebSearch;
use crate::permissions::ToolEffect;

/// A tool whose calls are read into a typed [`TypedTool::Input`]; every such
/// type is a [`Tool`] through the blanket impl below.
pub trait TypedTool: Send + Sync + 'static {
    /// The call's arguments (with `#[serde(deny_unknown_fields)]`); field
    /// docs are the descriptions the model is shown.
    type Input: DeserializeOwned + JsonSchema + 'static;

    /// Canonical name (Claude Code's).
    const NAME: &'static str;
    /// Description shown to the model.
    const DESCRIPTION: &'static str;
    /// What its calls do; the permission policy decides by this.
    const EFFECT: ToolEffect;
    /// Whether its calls may run beside a reply's other calls: by default
    /// when the effect changes nothing outside the session (reading,
    /// fetching); a tool that changes cadre's own state says `false`.
    const READ_ONLY: bool = matches!(
        Self::EFFECT,
        ToolEffect::ReadOnly | ToolEffect::Network | ToolEffect::McpReadOnly
    );

    /// Runs a call whose arguments parsed and passed [`TypedTool::check`].
    fn run<'a>(&'a self, ctx: &'a ToolContext, input: Self::Input) -> BoxFuture<'a, ToolOutput>;

    /// What the schema cannot say about arguments, checked before anything
    /// decides on a call and again before it runs.
    fn check(&self, _input: &Self::Input) -> Result<(), ToolOutput> {
        Ok(())
    }

    /// The schema the model is shown, from the one derived from the input
    /// (a tool whose text depends on the tools beside it changes it here).
    fn adjust_schema(&self, schema: Value) -> Value {
        schema
    }

    /// See [`Tool::first_reminder`].
    fn first_reminder(&self, _ctx: &ToolContext) -> Option<String> {
        None
    }

    /// See [`Tool::user_message`].
    fn user_message(&self, _ctx: &ToolContext, _text: &str) {}

    /// See [`Tool::among`].
    fn among(&self, _tools: &[&str]) -> Option<Arc<dyn Tool>> {
        None
    }

    /// See [`Tool::server_web_search`].
    fn server_web_search(&self) -> Option<ServerWebSearch> {
        None
    }
}

/// The schema derived from `T`, built once per type: a `static` in a generic
/// function is one for all its instances, so the cache is keyed by type.
fn cached_schema<T: JsonSchema + 'static>() -> Value {
    static SCHEMAS: OnceLock<RwLock<HashMap<TypeId, Value>>> = OnceLock::new();
    let schemas = SCHEMAS.get_or_init(RwLock::default);
    let id = TypeId::of::<T>();
    let known = match schemas.read() {
        Ok(map) => map.get(&id).cloned(),
        Err(poisoned) => poisoned.into_inner().get(&id).cloned(),
    };
    if let Some(schema) = known {
        return schema;
    }
    let schema = input_schema::<T>();
    let mut map = match schemas.write() {
        Ok(map) => map,
        Err(poisoned) => poisoned.into_inner(),
    };
    map.entry(id).or_insert(schema).clone()
}

impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &'static str {
        T::DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        self.adjust_schema(cached_schema::<T::Input>())
    }

    fn is_read_only(&self) -> bool {
        T::READ_ONLY
    }

    fn effect(&self) -> ToolEffect {
        T::EFFECT
    }

    fn validate(&self, input: &ToolInput) -> Result<(), ToolOutput> {
        check_bounds_with(|| self.input_schema(), input)?;
        self.check(&parse_args::<T::Input>(input)?)
    }

    fn execute<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a ToolInput,
    ) -> BoxFuture<'a, ToolOutput> {
        let args = parse_args::<T::Input>(input).and_then(|args| self.check(&args).map(|()| args));
        match args {
            Ok(args) => self.run(ctx, args),
            Err(out) => Box::pin(std::future::ready(out)),
        }
    }

    fn first_reminder(&self, ctx: &ToolContext) -> Option<String> {
        TypedTool::first_reminder(self, ctx)
    }

    fn user_message(&self, ctx: &ToolContext, text: &str) {
        TypedTool::user_message(self, ctx, text)
    }

    fn among(&self, tools: &[&str]) -> Option<Arc<dyn Tool>> {
        TypedTool::among(self, tools)
    }

    fn server_web_search(&self) -> Option<ServerWebSearch> {
        TypedTool::server_web_search(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::object;

    #[derive(serde::Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct EchoArgs {
        /// What to say
        text: String,
        /// How often
        #[schemars(range(min = 1, max = 3))]
        times: Option<u64>,
    }

    struct Echo;

    impl TypedTool for Echo {
        type Input = EchoArgs;
        const NAME: &'static str = "Echo";
        const DESCRIPTION: &'static str = "Say it again.";
        const EFFECT: ToolEffect = ToolEffect::ReadOnly;

        fn check(&self, input: &EchoArgs) -> Result<(), ToolOutput> {
            if input.text.is_empty() {
                return Err(ToolOutput::invalid_arguments("text is empty"));
            }
            Ok(())
        }

        fn run<'a>(&'a self, _ctx: &'a ToolContext, input: EchoArgs) -> BoxFuture<'a, ToolOutput> {
            let n = usize::try_from(input.times.unwrap_or(1)).unwrap_or(1);
            Box::pin(async move { ToolOutput::ok(input.text.repeat(n)) })
        }
    }

    struct Stateful;

    impl TypedTool for Stateful {
        type Input = EchoArgs;
        const NAME: &'static str = "Stateful";
        const DESCRIPTION: &'static str = "";
        const EFFECT: ToolEffect = ToolEffect::ReadOnly;
        const READ_ONLY: bool = false;

        fn run<'a>(&'a self, _: &'a ToolContext, _: EchoArgs) -> BoxFuture<'a, ToolOutput> {
            Box::pin(async { ToolOutput::ok("") })
        }
    }

    #[test]
    fn the_blanket_impl_reads_checks_and_runs_typed_arguments() {
        let tool: &dyn Tool = &Echo;
        assert_eq!(tool.name(), "Echo");
        assert_eq!(tool.input_schema(), input_schema::<EchoArgs>());
        assert!(tool.is_read_only());
        let ctx = ToolContext::new(std::env::temp_dir());
        let run = |v| futures::executor::block_on(tool.execute(&ctx, &object(v)));
        assert_eq!(
            run(serde_json::json!({"text": "ab", "times": 2})),
            ToolOutput::ok("abab")
        );
        let unknown = run(serde_json::json!({"text": "ab", "x": 1}));
        assert!(unknown.is_error && unknown.content.starts_with("invalid_arguments: "));
        assert_eq!(
            run(serde_json::json!({"text": ""})),
            ToolOutput::invalid_arguments("text is empty")
        );
        let out_of_range = tool.validate(&object(serde_json::json!({"text": "a", "times": 4})));
        assert_eq!(
            out_of_range,
            Err(ToolOutput::invalid_arguments(
                "times must be between 1 and 3 (got 4)"
            ))
        );
        assert!(!(&Stateful as &dyn Tool).is_read_only());
    }
}
