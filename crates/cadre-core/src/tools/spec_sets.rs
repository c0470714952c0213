//! Spec sets shared between registries made of the same tool objects: a
//! batch's children each get a registry of their parent's own tools, and
//! without this each child made (and encoded) the same specs again.

use super::Tool;
use crate::model::ToolSpecs;
use std::sync::{Arc, Mutex, Weak};

/// Most spec sets kept; the oldest goes first.
const KEPT: usize = 32;

/// A set made before, with the tools it was made from. They are held
/// weakly: a tool is dropped as usual, but its allocation, and so its
/// address, stays reserved while its entry lives, so no later tool can be
/// taken for it.
struct SpecSet {
    tools: Vec<Weak<dyn Tool>>,
    compact: bool,
    specs: ToolSpecs,
}

static SETS: Mutex<Vec<SpecSet>> = Mutex::new(Vec::new());

/// The specs of `tools` (short ones when `compact`): the set made for the
/// same tool objects before, or the one `make` makes, kept for later.
pub(super) fn shared(
    tools: &[Arc<dyn Tool>],
    compact: bool,
    make: impl FnOnce() -> ToolSpecs,
) -> ToolSpecs {
    let same = |set: &SpecSet| {
        set.compact == compact
            && set.tools.len() == tools.len()
            && set
                .tools
                .iter()
                .zip(tools)
                .all(|(kept, tool)| std::ptr::addr_eq(kept.as_ptr(), Arc::as_ptr(tool)))
    };
    if let Some(set) = lock().iter().find(|s| same(s)) {
        return set.specs.clone();
    }
    let specs = make();
    let mut sets = lock();
    if !sets.iter().any(same) {
        if sets.len() >= KEPT {
            sets.remove(0);
        }
        sets.push(SpecSet {
            tools: tools.iter().map(Arc::downgrade).collect(),
            compact,
            specs: specs.clone(),
        });
    }
    specs
}

fn lock() -> std::sync::MutexGuard<'static, Vec<SpecSet>> {
    SETS.lock().unwrap_or_else(|e| e.into_inner())
}
