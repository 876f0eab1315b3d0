//! Who asks for something a user owns (a subscription, a job): its owner may see and change
//! it; an operator (`user create --operator`) may also act on what has no owner, and on jobs of
//! others. Anyone else is told it does not exist, or, for jobs, that it is not theirs.

/// The user behind a request, as far as ownership goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewer {
    pub user_id: i64,
    pub operator: bool,
}
