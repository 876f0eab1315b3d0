//! Fetching a sync's pages ahead of storing them, and reading each page's keys.

use generated::fieldreport::EntityInfo;
use tokio::sync::mpsc;

use super::query::{Forms, From, Literal, query};
use crate::fieldreport::page::{
    Key, ReadPage, last_in_id_order, last_key, last_stamp_in_id_order, last_unmodified_key, read_page,
};
use crate::fieldreport::service::FieldReportError;
use crate::upstream::fieldreport::{FieldReportClient, ODataPage};
use crate::upstream::{System, UpstreamError};

/// Every page of a sync, sent to `pages` with its last key: first the records never modified
/// (no `DateModified`) in Id order, then the others in key order. Each query starts after the
/// greatest key read so far, until one answers no record. The upstream's next links
/// are not followed from a page with records: they continue by position (`$skip`), which skips
/// the records that move back when one read before them is changed meanwhile; an empty page's
/// link is, as it has no key to go on from (see [`FieldReportClient::page_with_records`];
/// docs/architecture.md, "Convergence").
/// Only the last keyed record of a page is read here, so that the next query is on its way
/// while [`read_pages`] reads the page (which checks that the key was the page's greatest).
/// Stops at the first failure (sent as the last item) or when nobody takes pages any more.
/// Returns the form of each stamped field's literals the server took (see [`Literal`]).
pub(super) async fn fetch_pages(
    client: FieldReportClient,
    info: &'static EntityInfo,
    mut from: From,
    pages: mpsc::Sender<Result<(ODataPage, Option<Key>), UpstreamError>>,
) -> Forms {
    // The form of each stamped field's literals, and whether another was tried for it.
    let mut forms = [(Literal::DESCRIBED, false); 2];
    let taken = |forms: &[(Literal, bool); 2]| -> Forms { [forms[0].0, forms[1].0] };
    let floor = from.floor();
    loop {
        let (literal, tried) = &mut forms[from.stamped_field() as usize];
        let mut answer = client.page_with_records(info.set, &query(info, &from, *literal)).await;
        // A server of the other OData version than its description, or typing its stamps
        // otherwise, refuses the described form of a stamp (400): the first such query of
        // each stamped field (a server may type `DateOfCreation` and `DateModified`
        // differently) is asked again in each other form until one is answered, which the
        // rest of the sync keeps for that field.
        if !*tried && from.has_stamp() && is_bad_request(&answer) {
            *tried = true;
            for other in literal.others() {
                let again = client.page_with_records(info.set, &query(info, &from, other)).await;
                if again.is_ok() {
                    crate::telemetry::report_literal_form(info.set, &literal.name(), &other.name());
                    (*literal, answer) = (other, again);
                    break;
                }
            }
        }
        let literal = *literal;
        let unmodified = matches!(from, From::Unmodified { .. });
        let by_id = from.by_id();
        // Records stamped as the query's own key, none after it: see `From::past_tie`.
        let tied = |key: &Key| matches!(&from, From::After(at, _) if *at == key.0);
        let page = answer.and_then(|page| {
            let last = match &from {
                From::Unmodified { .. } => last_unmodified_key(&page),
                From::Tie { .. } => last_in_id_order(&page, true),
                _ => last_key(&page),
            };
            match &last {
                _ if page.records.is_empty() => Ok((page, last)),
                Some(key) if from.precedes(key) || (!by_id && tied(key)) => Ok((page, last)),
                _ if by_id => Err(UpstreamError::Malformed {
                    system: System::FieldReport,
                    detail: format!(
                        "{} answered `{}` with records {}not in ascending Id order after it",
                        info.set,
                        from.filter(literal),
                        if unmodified { "stamped, or " } else { "" }
                    ),
                }),
                _ => Err(malformed(info, format!("answered `{}` with no record after it", from.filter(literal)))),
            }
        });
        let next = match &page {
            // A query that answers no record ends its part of the sync (the records never
            // modified, those of a tie, then the others); the empty page is not one of its
            // pages.
            Ok((page, _)) if page.records.is_empty() => match &from {
                From::Unmodified { .. } => Some(from.modified()),
                From::Tie { until, .. } => Some(From::Since(until.clone())),
                _ => return taken(&forms),
            },
            // The records of the page's last stamp that are still to come may have any Id.
            Ok((page, Some(key))) if !by_id && (!from.precedes(key) || !last_stamp_in_id_order(page, key)) => {
                Some(From::past_tie(&key.0, floor.as_ref()))
            }
            Ok((_, last)) => last.clone().map(|key| from.next(key)),
            Err(_) => None,
        };
        // The records read in Id order have no key of the (`DateModified`, `Id`) order that
        // `read_pages` checks: their order was checked here.
        let page = page.map(|(page, last)| (page, if by_id { None } else { last }));
        if !page.as_ref().is_ok_and(|(page, _)| page.records.is_empty()) && pages.send(page).await.is_err() {
            return taken(&forms);
        }
        match next {
            Some(next) => from = next,
            None => return taken(&forms),
        }
    }
}

fn is_bad_request(answer: &Result<ODataPage, UpstreamError>) -> bool {
    matches!(answer, Err(UpstreamError::Refused { status: 400, .. }))
}

/// Reads each page [`fetch_pages`] sent (see [`read_page`]) and sends it on to `pages`; a page
/// of keyed records out of key order (a server that ignored `$orderby`: going on from its
/// greatest key would skip the records before it that the page did not hold), or whose last
/// key is not the one its query goes on from, is a failure, and the last item sent. A page
/// read in Id order (sent without a key) was checked by [`fetch_pages`].
pub(super) async fn read_pages(
    info: &'static EntityInfo,
    mut fetched: mpsc::Receiver<Result<(ODataPage, Option<Key>), UpstreamError>>,
    pages: mpsc::Sender<Result<ReadPage, UpstreamError>>,
) {
    while let Some(page) = fetched.recv().await {
        let page = page.and_then(|(page, last)| {
            let read = read_page(page);
            if last.is_none() || (read.in_key_order && read.last_key == last) {
                Ok(read)
            } else {
                Err(malformed(info, "answered records out of (DateModified, Id) order".to_string()))
            }
        });
        let failed = page.is_err();
        if pages.send(page).await.is_err() || failed {
            return;
        }
    }
}

pub(super) fn malformed(info: &EntityInfo, what: String) -> UpstreamError {
    UpstreamError::Malformed {
        system: System::FieldReport,
        detail: format!("{} {what} in (DateModified, Id) order", info.set),
    }
}

/// The tasks that fetch and read a sync's pages; stopped when dropped (with the sync).
pub(super) struct Fetching {
    pub(super) fetch: tokio::task::JoinHandle<Forms>,
    pub(super) read: tokio::task::JoinHandle<()>,
}

impl Fetching {
    /// Whether the tasks ended as they should, after their last page or failure: a task that
    /// panicked sent neither, and its pages would look like the whole of them. The form of
    /// each stamped field's literals the server took.
    pub(super) async fn ended(mut self) -> Result<Forms, FieldReportError> {
        let abnormal = |e: tokio::task::JoinError| {
            FieldReportError::Internal(format!("fetching the pages of a sync ended abnormally: {e}"))
        };
        let forms = (&mut self.fetch).await.map_err(abnormal)?;
        (&mut self.read).await.map_err(abnormal)?;
        Ok(forms)
    }
}

impl Drop for Fetching {
    fn drop(&mut self) {
        self.fetch.abort();
        self.read.abort();
    }
}
