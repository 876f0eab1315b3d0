//! The stages of the field-report mirror and setup (a staged initial pull): 1 reference data,
//! 2 companies and what hangs on them, 3 service requests and the rest, as
//! `spec/upstream/fieldreport/mirror.toml` lists them (`generated::fieldreport::STAGES`).
//! `post` pushes in the same order ([`super::push`]).

use generated::fieldreport::{EntityInfo, STAGES};

use super::service::{FieldReportError, FieldReportService};
use super::sync::SyncReport;
use crate::vocabulary::field_errors::FieldErrors;

/// The entity sets of a stage (1 to 3), or of every stage in order.
pub fn stage_entities(stage: Option<&str>) -> Result<Vec<&'static EntityInfo>, FieldReportError> {
    let routes: Vec<&str> = match stage {
        None => STAGES.iter().flat_map(|s| s.iter().copied()).collect(),
        Some(raw) => match raw.parse::<usize>() {
            Ok(n) if (1..=STAGES.len()).contains(&n) => STAGES[n - 1].to_vec(),
            _ => {
                return Err(FieldReportError::Invalid(FieldErrors::from([(
                    "stage".to_string(),
                    vec!["The stage is 1 (reference data), 2 (companies, contacts, products, service objects) or 3 (service requests and the rest).".to_string()],
                )])));
            }
        },
    };
    Ok(routes.into_iter().filter_map(generated::fieldreport::by_route).collect())
}

impl FieldReportService {
    /// Runs the syncs of a stage (or all stages) in order.
    pub async fn setup(&self, stage: Option<&str>) -> Result<Vec<SyncReport>, FieldReportError> {
        let mut reports = Vec::new();
        for info in stage_entities(stage)? {
            reports.push(self.sync(info, &|_| {}).await?);
        }
        Ok(reports)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_cover_every_entity_once() {
        let all: Vec<&str> = stage_entities(None).unwrap().iter().map(|e| e.route).collect();
        assert_eq!(all.len(), 15);
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 15);
        assert_eq!(stage_entities(Some("1")).unwrap().len(), 6);
        assert!(stage_entities(Some("4")).is_err());
    }
}
