//! The kinds of job and what each one's target is: an entity set, a stage, or an ERP model,
//! named as the tool routes name them; no target means every target of the kind.

use super::error::{JobError, invalid};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// `GET /api/v1/fieldreport/sync[/{entity}]`.
    FieldReportSync,
    /// `GET /api/v1/fieldreport/sync[/{entity}]?reconcile=true`.
    FieldReportReconcile,
    /// `GET /api/v1/fieldreport/setup[/{stage}]`.
    FieldReportSetup,
    /// `GET /api/v1/fieldreport/post`, of every type, for one entity set or every stage.
    FieldReportPost,
    /// `GET /api/v1/erp/setup[/{model}]`.
    ErpSetup,
    /// `GET /api/v1/erp/get` (an incremental pull), or of one model.
    ErpPull,
    /// `GET /api/v1/erp/update[/{model}]`: a reconciling of one model, or of every mirrored one.
    ErpReconcile,
}

impl JobKind {
    pub const ALL: [JobKind; 7] = [
        JobKind::FieldReportSync,
        JobKind::FieldReportReconcile,
        JobKind::FieldReportSetup,
        JobKind::FieldReportPost,
        JobKind::ErpSetup,
        JobKind::ErpPull,
        JobKind::ErpReconcile,
    ];

    pub fn name(self) -> &'static str {
        match self {
            JobKind::FieldReportSync => "fieldreport.sync",
            JobKind::FieldReportReconcile => "fieldreport.reconcile",
            JobKind::FieldReportSetup => "fieldreport.setup",
            JobKind::FieldReportPost => "fieldreport.post",
            JobKind::ErpSetup => "erp.setup",
            JobKind::ErpPull => "erp.pull",
            JobKind::ErpReconcile => "erp.reconcile",
        }
    }

    /// The kind called `name`, or 422 on `kind` listing the known ones.
    pub fn parse(name: &str) -> Result<JobKind, JobError> {
        JobKind::ALL.into_iter().find(|kind| kind.name() == name).ok_or_else(|| {
            let known: Vec<&str> = JobKind::ALL.iter().map(|k| k.name()).collect();
            invalid("kind", format!("unknown kind {name:?}; known: {}", known.join(", ")))
        })
    }

    /// The target as stored: the entity set's route name, the stage, the model's name, or
    /// `''` for every target; 422 on `target` when this kind has no such target.
    pub fn target(self, target: Option<&str>) -> Result<String, JobError> {
        let Some(name) = target.filter(|t| !t.is_empty()) else { return Ok(String::new()) };
        let found = match self {
            JobKind::FieldReportSync | JobKind::FieldReportReconcile | JobKind::FieldReportPost => {
                generated::fieldreport::entity(name).map(|e| e.route.to_string()).ok_or_else(|| {
                    let known: Vec<&str> = generated::fieldreport::entity_names().collect();
                    format!("unknown entity {name:?}; known: {}", known.join(", "))
                })
            }
            JobKind::FieldReportSetup => match name {
                "1" | "2" | "3" => Ok(name.to_string()),
                _ => Err(format!("unknown stage {name:?}; the stages are 1, 2 and 3")),
            },
            JobKind::ErpSetup | JobKind::ErpPull | JobKind::ErpReconcile => generated::erp::model(name)
                .map(|m| m.name.to_string())
                .ok_or_else(|| format!("unknown ERP model {name:?} (the ERP's name, e.g. customer)")),
        };
        found.map_err(|message| invalid("target", message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_targets_are_checked_and_named_as_stored() {
        assert_eq!(JobKind::parse("erp.pull").unwrap(), JobKind::ErpPull);
        assert!(matches!(JobKind::parse("erp.push"), Err(JobError::Invalid(e)) if e.contains_key("kind")));
        assert_eq!(JobKind::FieldReportSync.target(Some("CostCenters")).unwrap(), "costCenters");
        assert_eq!(JobKind::FieldReportSync.target(None).unwrap(), "");
        assert!(
            matches!(JobKind::FieldReportSync.target(Some("nope")), Err(JobError::Invalid(e)) if e.contains_key("target"))
        );
        assert!(JobKind::FieldReportSetup.target(Some("4")).is_err());
        assert_eq!(JobKind::ErpSetup.target(Some("customer")).unwrap(), "customer");
    }
}
