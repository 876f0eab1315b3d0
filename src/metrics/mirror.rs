//! The mirrors' metrics: the field-report mirror's size and freshness per set, read from the
//! database at every scrape (the record counts the triggers of migration 0010 keep, and each
//! set's last completed sync: one row per set, so the scrape's cost does not grow with the
//! mirror); and the repairs of the reconciling syncs, each a divergence found between a mirror
//! and its upstream (a record missing here, a stale version, a record the upstream no longer
//! has).

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::exposition::Exposition;

/// What the scrape read of the mirror.
#[derive(Debug, Clone, Default)]
pub struct MirrorGauges {
    /// Records per set (sets without any are left out).
    pub records: Vec<(String, i64)>,
    /// When each set's last sync completed, epoch ms (sets never synced are left out).
    pub last_syncs: Vec<(String, i64)>,
}

impl MirrorGauges {
    pub fn render(&self, out: &mut Exposition) {
        let name = "integration_service_fieldreport_mirror_records";
        out.family(name, "gauge", "Records in the field-report mirror, by entity set.");
        let count_of = |entity: &str| self.records.iter().find(|(e, _)| e == entity).map_or(0, |(_, n)| *n);
        for entity in generated::fieldreport::entity_names() {
            out.sample(name, &[("entity", entity)], count_of(entity));
        }
        let name = "integration_service_fieldreport_last_sync_timestamp_seconds";
        out.family(
            name,
            "gauge",
            "When the last sync of a field-report entity set completed (by a job, the tool route or the command line), since the Unix epoch in seconds.",
        );
        for (entity, at) in &self.last_syncs {
            out.sample(name, &[("entity", entity)], *at as f64 / 1000.0);
        }
    }
}

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
