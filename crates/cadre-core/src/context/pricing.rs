//! Prices of known models and the cost of a request, in exact integers
//! (billionths of a dollar per token), so sums match the price table to the cent.

use serde::{Deserialize, Serialize};

use super::window::model_family;
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

/// The prices of a known model id (dated ids match their family), in US
/// dollars per million tokens as the providers' price pages give them
/// (Anthropic's cache write is the 5-minute one cadre's requests use; OpenAI
/// has no cache-write price). A model whose prices could not be confirmed is
/// left out: its cost is unknown unless `[models.<provider>.<id>]` sets it.
pub fn builtin_prices(provider: Provider, model: &str) -> Option<Prices> {
    let family = model_family(model);
    let p = Prices::per_million;
    let prices = match provider {
        Provider::Anthropic => match family.as_str() {
            // Opus 4.5 and later cost a third of Opus 4 and 4.1.
            "claude-opus-4-8" | "claude-opus-4-7" | "claude-opus-4-6" | "claude-opus-4-5" => {
                p(5.0, 25.0, 0.5, 6.25)
            }
            "claude-opus-4-1" | "claude-opus-4" | "claude-opus-4-0" => p(15.0, 75.0, 1.5, 18.75),
            "claude-sonnet-4-6" | "claude-sonnet-4-5" | "claude-sonnet-4" | "claude-sonnet-4-0"
            | "claude-3-7-sonnet" | "claude-3-5-sonnet" => p(3.0, 15.0, 0.3, 3.75),
            "claude-haiku-4-5" => p(1.0, 5.0, 0.1, 1.25),
            "claude-3-5-haiku" => p(0.8, 4.0, 0.08, 1.0),
            _ => return None,
        },
        Provider::OpenAI => {
            // The first gpt-4o snapshot had other prices than the family.
            if model.eq_ignore_ascii_case("gpt-4o-2024-05-13") {
                return None;
            }
            match family.as_str() {
                "gpt-4.1" => p(2.0, 8.0, 0.5, 0.0),
                "gpt-4.1-mini" => p(0.4, 1.6, 0.1, 0.0),
                "gpt-4.1-nano" => p(0.1, 0.4, 0.025, 0.0),
                "gpt-4o" => p(2.5, 10.0, 1.25, 0.0),
                "gpt-4o-mini" => p(0.15, 0.6, 0.075, 0.0),
                "o3" => p(2.0, 8.0, 0.5, 0.0),
                "o4-mini" => p(1.1, 4.4, 0.275, 0.0),
                "gpt-5" => p(1.25, 10.0, 0.125, 0.0),
                "gpt-5-mini" => p(0.25, 2.0, 0.025, 0.0),
                "gpt-5-nano" => p(0.05, 0.4, 0.005, 0.0),
                _ => return None,
            }
        }
    };
    Some(prices)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: cache_read,
            cache_write_tokens: cache_write,
        }
    }

    #[test]
    fn dated_ids_take_their_familys_prices() {
        let a = |m| builtin_prices(Provider::Anthropic, m);
        let sonnet = Prices::per_million(3.0, 15.0, 0.3, 3.75);
        assert_eq!(a("claude-sonnet-4-5-20250929"), Some(sonnet));
        assert_eq!(a("claude-sonnet-4-5"), Some(sonnet));
        assert_eq!(a("claude-3-7-sonnet-latest"), Some(sonnet));
        assert_eq!(
            a("claude-haiku-4-5-20251001"),
            Some(Prices::per_million(1.0, 5.0, 0.1, 1.25))
        );
        let o = |m| builtin_prices(Provider::OpenAI, m);
        assert_eq!(o("gpt-4o-2024-08-06"), o("gpt-4o"));
        assert_eq!(
            o("gpt-4.1-mini-2025-04-14"),
            Some(Prices::per_million(0.4, 1.6, 0.1, 0.0))
        );
        assert_eq!(
            o("gpt-5-nano-2025-08-07"),
            Some(Prices::per_million(0.05, 0.4, 0.005, 0.0))
        );
    }

    #[test]
    fn opus_4_5_and_later_are_priced_apart_from_opus_4_and_4_1() {
        let a = |m| builtin_prices(Provider::Anthropic, m);
        let new = Prices::per_million(5.0, 25.0, 0.5, 6.25);
        let old = Prices::per_million(15.0, 75.0, 1.5, 18.75);
        assert_eq!(a("claude-opus-4-5-20251101"), Some(new));
        assert_eq!(a("claude-opus-4-6"), Some(new));
        assert_eq!(a("claude-opus-4-1-20250805"), Some(old));
        assert_eq!(a("claude-opus-4-20250514"), Some(old));
    }

    #[test]
    fn unknown_ids_have_no_prices() {
        assert_eq!(builtin_prices(Provider::Anthropic, "claude-next-1"), None);
        assert_eq!(builtin_prices(Provider::Anthropic, "gpt-4.1"), None);
        assert_eq!(builtin_prices(Provider::OpenAI, "o3-pro"), None);
        assert_eq!(builtin_prices(Provider::OpenAI, "gpt-5-pro"), None);
        assert_eq!(builtin_prices(Provider::OpenAI, "gpt-4o-2024-05-13"), None);
        assert_eq!(builtin_prices(Provider::OpenAI, "qwen2.5-coder"), None);
        assert_eq!(builtin_prices(Provider::OpenAI, "mock-model"), None);
    }

    #[test]
    fn cost_is_exact_to_the_billionth() {
        // 1M uncached input + 200k output + 3M cache reads + 400k cache writes on Sonnet:
        // $3 + $3 + $0.90 + $1.50.
        let prices = builtin_prices(Provider::Anthropic, "claude-sonnet-4-5").unwrap();
        let cost = prices.cost(&usage(1_000_000, 200_000, 3_000_000, 400_000));
        assert_eq!(cost, Cost(8_400_000_000));
        assert_eq!(cost.to_string(), "$8.40");
        // One token of gpt-5-nano input is five billionths of a dollar.
        let nano = builtin_prices(Provider::OpenAI, "gpt-5-nano").unwrap();
        assert_eq!(nano.cost(&usage(1, 0, 0, 0)), Cost(50));
        assert_eq!(nano.cost(&usage(0, 0, 1, 0)), Cost(5));
    }
}
