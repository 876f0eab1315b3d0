//! The repairs of the mirrors: each a divergence a reconciling found between a mirror and its
//! upstream (a record missing here, a stale version, a record the upstream no longer has).

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::exposition::Exposition;

/// The kinds of repair, in the order they are written out.
pub const REPAIR_KINDS: [&str; 4] = ["fetched_missing", "refreshed", "removed", "kept_pending"];

/// Repairs made at this instance, by system, set (or model) and kind. Labels are bounded: two
/// systems, their mirrored sets and models, four kinds.
#[derive(Default)]
pub struct Repairs(Mutex<BTreeMap<(String, String, &'static str), u64>>);

impl Repairs {
    pub fn add(&self, system: &str, set: &str, kind: &'static str, count: u64) {
        if count == 0 {
            return;
        }
        let mut repairs = self.0.lock().expect("repair metrics");
        *repairs.entry((system.to_string(), set.to_string(), kind)).or_default() += count;
    }

    pub fn render(&self, out: &mut Exposition) {
        let repairs = self.0.lock().expect("repair metrics");
        let name = "integration_mirror_repairs_total";
        out.family(
            name,
            "counter",
            "Divergences a reconciling found and repaired at this instance, by system (fieldreport, erp), set or model, and kind (fetched_missing, refreshed, removed, kept_pending).",
        );
        for ((system, set, kind), count) in repairs.iter() {
            out.sample(name, &[("system", system), ("set", set), ("kind", kind)], *count);
        }
    }
}
