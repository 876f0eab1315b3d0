//! The field-report mirror's size and freshness per set, read from the database at every
//! scrape: the record counts the triggers of migration 0010 keep, and each set's last
//! completed sync (one row per set, so the scrape's cost does not grow with the mirror).

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
