//! Prices of known models and the cost of a request, in exact integers
//! (billionths of a dollar per token), so sums match the price table to the cent.

use serde::{Deserialize, Serialize};

use crate::model::{Provider, Usage};

/// A model's prices, in billionths of a US dollar per token (a price of
/// $3 per million tokens is 3000).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prices {
    /// Uncached input.
    pub input: u64,
    /// Output.
    pub output: u64,
    /// Input read from the prompt cache.
    pub cache_read: u64,
    /// Input written to the prompt cache.
    pub cache_write: u64,
}

impl Prices {
    /// Prices given in US dollars per million tokens, as price tables give them.
    pub fn per_million(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Prices {
        let n = |usd: f64| (usd * 1000.0).round().max(0.0) as u64;
        Prices {
            input: n(input),
            output: n(output),
            cache_read: n(cache_read),
            cache_write: n(cache_write),
        }
    }

    /// What `usage` costs at these prices.
    pub fn cost(&self, usage: &Usage) -> Cost {
        Cost(
            usage.input_tokens * self.input
                + usage.output_tokens * self.output
                + usage.cache_read_tokens * self.cache_read
                + usage.cache_write_tokens * self.cache_write,
        )
    }
}

/// An amount of money, in billionths of a US dollar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Cost(pub u64);

impl Cost {
    /// In US dollars.
    pub fn usd(&self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// Adds another amount.
    pub fn add(&mut self, other: Cost) {
        self.0 += other.0;
    }
}

impl std::fmt::Display for Cost {
    /// `$0.0123` (four decimals below a dollar, two above).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 >= 1_000_000_000 {
            write!(f, "${:.2}", self.usd())
        } else {
            write!(f, "${:.4}", self.usd())
        }
    }
}

/// The prices of a known model id (dated ids match their family).
pub fn builtin_prices(provider: Provider, model: &str) -> Option<Prices> {
    let m = model.to_ascii_lowercase();
    let p = Prices::per_million;
    match provider {
        Provider::Anthropic => {
            if m.contains("opus") {
                Some(p(15.0, 75.0, 1.5, 18.75))
            } else if m.contains("sonnet") {
                Some(p(3.0, 15.0, 0.3, 3.75))
            } else if m.contains("haiku") {
                Some(p(1.0, 5.0, 0.1, 1.25))
            } else {
                None
            }
        }
        Provider::OpenAI => {
            if m.starts_with("gpt-4.1-mini") {
                Some(p(0.4, 1.6, 0.1, 0.0))
            } else if m.starts_with("gpt-4.1") {
                Some(p(2.0, 8.0, 0.5, 0.0))
            } else {
                None
            }
        }
    }
}
