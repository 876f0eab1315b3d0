//! Records fetched by id, a batch of ids a request, from an upstream that may answer a batch
//! short (fewer records than asked, with a next link or none: a short page proves nothing).

use std::collections::{HashSet, VecDeque};

/// The ids still to ask for. The ids an answer left out are asked again, first, while answers
/// bring some of their batch; an answer that brings none of its batch says they are gone.
pub struct IdBatches<'a> {
    queue: VecDeque<&'a String>,
    size: usize,
}

impl<'a> IdBatches<'a> {
    pub fn new(ids: impl IntoIterator<Item = &'a String>, size: usize) -> Self {
        IdBatches { queue: ids.into_iter().collect(), size }
    }

    /// The next batch to ask for; `None` once every id was asked for.
    pub fn next_batch(&mut self) -> Option<Vec<&'a String>> {
        let batch: Vec<&String> = self.queue.drain(..self.queue.len().min(self.size)).collect();
        (!batch.is_empty()).then_some(batch)
    }

    /// The answer to `batch` brought the records with these ids (of the batch).
    pub fn answered(&mut self, batch: Vec<&'a String>, sent: &HashSet<&str>) {
        if sent.is_empty() {
            return;
        }
        for id in batch.into_iter().rev().filter(|id| !sent.contains(id.as_str())) {
            self.queue.push_front(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ids_a_short_answer_left_out_are_asked_again_until_an_answer_brings_none() {
        let ids: Vec<String> = (1..=5).map(|n| n.to_string()).collect();
        let mut batches = IdBatches::new(&ids, 3);
        let first = batches.next_batch().unwrap();
        assert_eq!(first, [&ids[0], &ids[1], &ids[2]]);
        batches.answered(first, &HashSet::from(["1"]));
        let second = batches.next_batch().unwrap();
        assert_eq!(second, [&ids[1], &ids[2], &ids[3]], "the left-out ids first");
        batches.answered(second, &HashSet::new());
        let third = batches.next_batch().unwrap();
        assert_eq!(third, [&ids[4]], "an answer with none of its batch: they are gone");
        batches.answered(third, &HashSet::from(["5"]));
        assert_eq!(batches.next_batch(), None);
    }
}
