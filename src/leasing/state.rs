//! States of a financing request and what waiting makes of each.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// States after which the request cannot progress any more.
const TERMINAL: &[&str] = &["Declined", "Cancelled", "Contracted", "RunningContract"];

/// Every state name the provider is known to report, request and contract states.
const KNOWN: &[&str] = &[
    "None",
    "RequestToGrenke",
    "MissingInfo",
    "ApplicationReceived",
    "GuaranteeRequired",
    "ReadyToSign",
    "StartingESignature",
    "AwaitingCustomerSignature",
    "AwaitingPartnerSignature",
    "AwaitingSigningAppSignature",
    "CancellingESignature",
    "AwaitingDeliveryConfirmation",
    "ContractPrinted",
    "ContractPrintedBeforeStatement",
    "Contracted",
    "Declined",
    "Cancelled",
    "RunningContract",
    "ApplicationSettled",
    "Paid",
    "ProlongedContract",
    "ExpiringSoon",
    "Expired",
    "Rescinded",
];

/// A state as the provider's documentation spells it: the provider (or a proxy) may send a
/// known name in another case or padded (`readyToSign`, `DECLINED `), which is still that
/// state. An unknown name is kept as sent, trimmed.
pub fn canonical(state: &str) -> &str {
    let state = state.trim();
    KNOWN.iter().find(|known| known.eq_ignore_ascii_case(state)).copied().unwrap_or(state)
}

/// The `meta` of every request-returning leasing answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StateMeta {
    /// The provider's state of the request, e.g. `ReadyToSign` ("" when the provider sent none).
    pub state: String,
    /// Whether the request can be signed now.
    pub ready_to_sign: bool,
    /// Whether the request is in a state it cannot leave (declined, cancelled, contracted, running).
    pub terminal: bool,
}

impl StateMeta {
    pub fn of(state: &str) -> StateMeta {
        let state = canonical(state);
        StateMeta {
            state: state.to_string(),
            ready_to_sign: state == "ReadyToSign",
            terminal: TERMINAL.contains(&state),
        }
    }
}

/// What one observed state means for a wait until `ReadyToSign` (the seed's table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// The wait ends successfully.
    Ready,
    /// The missing-info mail is sent, then the wait fails.
    MissingInfo,
    /// The wait fails and the process is aborted.
    Declined,
    Cancelled,
    /// The wait fails: the request is already past signing.
    PastSigning(String),
    /// Read again (if attempts are left).
    Pending(String),
}

pub fn observe(state: &str) -> Observation {
    match canonical(state) {
        "ReadyToSign" => Observation::Ready,
        "MissingInfo" => Observation::MissingInfo,
        "Declined" => Observation::Declined,
        "Cancelled" => Observation::Cancelled,
        "RunningContract" | "ContractPrinted" => Observation::PastSigning(state.to_string()),
        other => Observation::Pending(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_of_the_wait_table() {
        assert_eq!(observe("ReadyToSign"), Observation::Ready);
        assert_eq!(observe("MissingInfo"), Observation::MissingInfo);
        assert_eq!(observe("Cancelled"), Observation::Cancelled);
        assert_eq!(observe("Declined"), Observation::Declined);
        assert_eq!(observe("RunningContract"), Observation::PastSigning("RunningContract".into()));
        assert_eq!(observe("ContractPrinted"), Observation::PastSigning("ContractPrinted".into()));
        assert_eq!(observe("RequestToGrenke"), Observation::Pending("RequestToGrenke".into()));
    }

    #[test]
    fn known_states_are_read_in_any_case() {
        assert_eq!(observe("readyToSign"), Observation::Ready);
        assert_eq!(observe(" DECLINED"), Observation::Declined);
        assert_eq!(StateMeta::of("runningcontract"), StateMeta::of("RunningContract"));
        assert_eq!(canonical("SomethingNew"), "SomethingNew");
    }

    #[test]
    fn meta_flags() {
        assert_eq!(
            StateMeta::of("ReadyToSign"),
            StateMeta { state: "ReadyToSign".into(), ready_to_sign: true, terminal: false }
        );
        assert!(StateMeta::of("Declined").terminal);
        assert!(!StateMeta::of("ApplicationReceived").terminal);
    }
}
