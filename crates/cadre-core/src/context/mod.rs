//! Long sessions: how much of a model's context window a conversation uses,
//! when and how it is compacted into a summary, and what its requests cost.
//!
//! `window`: context windows of known models; `pricing`: their prices and
//! the cost of a request; `estimate`: token counts before the provider has
//! given any; `compaction`: the summary prompt, the compacted conversation
//! (one function, used live and on resume) and inputs too long to send.

mod compaction;
mod estimate;
mod pricing;
mod rewind;
mod window;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use compaction::{
    COMPACTION_INSTRUCTIONS, CONTINUE_AFTER_CUT, SUMMARY_TAG, compacted_conversation,
    cut_to_tokens, is_context_length_error, kept_tail, message_cut_to, push_alternating,
    recent_cut_to, summary_request_messages, window_from_length_error,
};
pub use estimate::{estimate_message_tokens, estimate_messages_tokens, estimate_text_tokens};
pub use pricing::{Cost, Prices, builtin_prices};
pub use rewind::{Cut, apply_cut, find_prompt};
pub use window::{DEFAULT_CONTEXT_WINDOW, builtin_context_window};

use crate::model::Provider;
use crate::protocol::CompactTrigger;

/// The default threshold of automatic compaction, in percent of the window.
pub const DEFAULT_AUTO_COMPACT_PERCENT: u8 = 85;

/// What cadre knows of one model: its context window and, when known, its prices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelProfile {
    /// Tokens the model takes in one request, input and output together.
    pub context_window: u64,
    /// Prices, when known (not for local models, unless configured).
    pub prices: Option<Prices>,
    /// Whether it takes images (true unless configured otherwise).
    pub images: bool,
}

impl ModelProfile {
    /// The built-in profile of `model` (a default window, no prices, when unknown).
    pub fn builtin(provider: Provider, model: &str) -> ModelProfile {
        ModelProfile {
            context_window: builtin_context_window(provider, model)
                .unwrap_or(DEFAULT_CONTEXT_WINDOW),
            prices: builtin_prices(provider, model),
            images: true,
        }
    }
}

/// What the configuration says of one model (`[models.<provider>.<id>]`);
/// what it leaves out comes from the built-in tables.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelOverride {
    /// `context_window`.
    pub context_window: Option<u64>,
    /// The prices, when any price key is given.
    pub prices: Option<Prices>,
    /// `images`.
    pub images: Option<bool>,
}

/// The built-in model tables with the configuration's overrides on top.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelTable {
    configured: BTreeMap<(Provider, String), ModelOverride>,
    /// Built-in prices are left out: only configured ones hold.
    no_builtin_prices: bool,
}

impl ModelTable {
    /// The same table with only configured prices (for an endpoint other
    /// than the provider's own API, whose bill cadre cannot know).
    pub fn without_builtin_prices(mut self) -> ModelTable {
        self.no_builtin_prices = true;
        self
    }

    /// Sets what the configuration says of `model`.
    pub fn set(&mut self, provider: Provider, model: &str, entry: ModelOverride) {
        self.configured.insert((provider, model.to_string()), entry);
    }

    /// True when the configuration gives `model`'s window.
    pub fn window_configured(&self, provider: Provider, model: &str) -> bool {
        self.configured
            .get(&(provider, model.to_string()))
            .is_some_and(|o| o.context_window.is_some())
    }

    /// Sets `model`'s window to what its server said, unless configured.
    pub fn set_served_window(&mut self, provider: Provider, model: &str, window: u64) {
        let entry = self
            .configured
            .entry((provider, model.to_string()))
            .or_default();
        entry.context_window.get_or_insert(window);
    }

    /// The profile of `model`: configured values first, then built-in ones.
    pub fn profile(&self, provider: Provider, model: &str) -> ModelProfile {
        let mut builtin = ModelProfile::builtin(provider, model);
        if self.no_builtin_prices {
            builtin.prices = None;
        }
        match self.configured.get(&(provider, model.to_string())) {
            Some(o) => ModelProfile {
                context_window: o.context_window.unwrap_or(builtin.context_window),
                prices: o.prices.or(builtin.prices),
                images: o.images.unwrap_or(builtin.images),
            },
            None => builtin,
        }
    }
}

/// How an agent keeps its conversation inside its model's window.
#[derive(Clone)]
pub struct ContextPolicy {
    /// The model's context window and prices.
    pub profile: ModelProfile,
    /// Every model's profile, to make a child's policy for its own model.
    pub models: Arc<ModelTable>,
    /// Compact automatically once this percentage of the window is in use
    /// (100 or more: only when the provider refuses a request as too long).
    pub auto_compact_percent: u8,
    /// Called before every compaction (where hooks attach).
    pub pre_compact: Option<Arc<dyn PreCompactHook>>,
}

impl std::fmt::Debug for ContextPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextPolicy")
            .field("profile", &self.profile)
            .field("auto_compact_percent", &self.auto_compact_percent)
            .field("pre_compact", &self.pre_compact.is_some())
            .finish()
    }
}

impl ContextPolicy {
    /// The policy for `model` with the default threshold and no hook.
    pub fn new(models: Arc<ModelTable>, provider: Provider, model: &str) -> ContextPolicy {
        ContextPolicy {
            profile: models.profile(provider, model),
            models,
            auto_compact_percent: DEFAULT_AUTO_COMPACT_PERCENT,
            pre_compact: None,
        }
    }

    /// The policy of `model` from the built-in tables alone.
    pub fn builtin(provider: Provider, model: &str) -> ContextPolicy {
        ContextPolicy::new(Arc::default(), provider, model)
    }

    /// The same policy for another model (a child's).
    pub fn for_model(&self, provider: Provider, model: &str) -> ContextPolicy {
        ContextPolicy {
            profile: self.models.profile(provider, model),
            ..self.clone()
        }
    }

    /// Tokens in use at which automatic compaction starts.
    pub fn threshold_tokens(&self) -> u64 {
        self.profile.context_window * u64::from(self.auto_compact_percent) / 100
    }

    /// The most tokens one input (a user message, a tool result) may take:
    /// half the window, so the summary request can still hold it.
    pub fn single_input_tokens(&self) -> u64 {
        (self.profile.context_window / 2).max(256)
    }

    /// Tokens of recent messages kept verbatim after a summary.
    pub fn keep_recent_tokens(&self) -> u64 {
        (self.profile.context_window / 5).min(20_000)
    }

    /// `tokens` as a whole percentage of the window.
    pub fn percent(&self, tokens: u64) -> u64 {
        if self.profile.context_window == 0 {
            return 0;
        }
        tokens * 100 / self.profile.context_window
    }
}

/// What a [`PreCompactHook`] is told.
#[derive(Debug, Clone, PartialEq)]
pub struct PreCompactInput {
    /// The agent whose conversation is compacted.
    pub agent_id: String,
    /// Why.
    pub trigger: CompactTrigger,
    /// What the user asked the summary to keep (`/compact <focus>`).
    pub custom_instructions: Option<String>,
}

/// A hook's answer before a compaction.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PreCompactDecision {
    /// Set to stop this compaction, with the reason shown to the user.
    pub block: Option<String>,
    /// More instructions for the summary.
    pub extra_instructions: Option<String>,
}

/// Called before every compaction; the hooks of a settings file attach here.
pub trait PreCompactHook: Send + Sync {
    /// Decides whether the compaction goes ahead, and may add instructions.
    fn pre_compact(
        &self,
        input: PreCompactInput,
    ) -> futures::future::BoxFuture<'static, PreCompactDecision>;
}
