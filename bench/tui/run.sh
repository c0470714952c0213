#!/usr/bin/env bash
# bench/tui: one redraw of a 10,000-row transcript on ratatui's TestBackend.
# Figures go to bench/results/tui.json (or the path given). Not a test.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-bench/results/tui.json}"
cargo run --locked -q -p cadre-tui --example redraw -- "$out"
