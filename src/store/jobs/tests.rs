use super::*;

#[tokio::test]
async fn one_job_of_a_kind_and_target_is_active_and_a_lost_lease_is_taken_over() {
    crate::store::testing::on_both_databases(async |store| {
        let first = store.job_enqueue("fieldreport.sync", "tags", false, Some(1)).await.unwrap().unwrap();
        assert_eq!(first.status, "queued");
        let refused = store.job_enqueue("fieldreport.sync", "tags", false, Some(1)).await.unwrap().unwrap_err();
        assert_eq!(refused.id, first.id);
        let other = store.job_enqueue("fieldreport.sync", "users", false, Some(1)).await.unwrap().unwrap();

        // The oldest first; a claimed job is not claimed again while its lease holds.
        let claimed = store.job_claim("a", now_ms() + 60_000).await.unwrap().unwrap();
        assert_eq!((claimed.id, claimed.status.as_str(), claimed.attempts), (first.id, "running", 1));
        let next = store.job_claim("b", now_ms() + 60_000).await.unwrap().unwrap();
        assert_eq!(next.id, other.id);
        assert!(store.job_claim("b", now_ms() + 60_000).await.unwrap().is_none());

        // A cancel is a flag for a running job; the heartbeat reports it.
        let progress = JobProgress { done: 5, total: Some(10), current: Some("tags".into()) };
        assert_eq!(store.job_heartbeat(first.id, "a", now_ms() + 60_000, &progress).await.unwrap(), Some(false));
        store.job_cancel(first.id).await.unwrap();
        assert_eq!(store.job_heartbeat(first.id, "a", now_ms() + 60_000, &progress).await.unwrap(), Some(true));
        assert_eq!(store.job(first.id).await.unwrap().unwrap().progress, progress);

        // A lease that ran out is taken over, and the old owner can no longer record.
        assert_eq!(
            store.job_heartbeat(other.id, "b", now_ms() - 1, &JobProgress::default()).await.unwrap(),
            Some(false)
        );
        let taken = store.job_claim("c", now_ms() + 60_000).await.unwrap().unwrap();
        assert_eq!((taken.id, taken.attempts), (other.id, 2));
        assert_eq!(store.job_heartbeat(other.id, "b", now_ms(), &JobProgress::default()).await.unwrap(), None);
        assert!(!store.job_finish(other.id, "b", "failed", None, Some("x"), &JobProgress::default()).await.unwrap());
        assert!(store.job_finish(other.id, "c", "succeeded", Some("[]"), None, &JobProgress::default()).await.unwrap());

        // Once ended, the kind and target are free again.
        assert!(store.job_enqueue("fieldreport.sync", "users", true, None).await.unwrap().is_ok());
        let successes = store.job_last_successes().await.unwrap();
        assert_eq!(successes.len(), 1);
        assert_eq!((successes[0].0.as_str(), successes[0].1.as_str()), ("fieldreport.sync", "users"));

        let (page, total) = store
            .jobs_page(&JobFilter { kind: Some("fieldreport.sync"), status: Some("queued") }, 1, 10)
            .await
            .unwrap();
        assert_eq!((page.len(), total), (1, 1));
        let (all, total) = store.jobs_page(&JobFilter::default(), 2, 2).await.unwrap();
        assert_eq!((all.len(), total), (1, 3));
    })
    .await;
}

#[tokio::test]
async fn a_schedule_tick_is_taken_once() {
    crate::store::testing::on_both_databases(async |store| {
        store.schedule_entry("erp.pull", "", 3_600_000, now_ms()).await.unwrap();
        assert!(store.schedule_take_tick("erp.pull", "").await.unwrap());
        assert!(!store.schedule_take_tick("erp.pull", "").await.unwrap());
        // A shorter interval brings the next tick forward, not later than one new interval.
        store.schedule_entry("erp.pull", "", 1, now_ms()).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        assert!(store.schedule_take_tick("erp.pull", "").await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn creators_take_turns_and_active_jobs_are_counted_per_user() {
    crate::store::testing::on_both_databases(async |store| {
        let mut first_users = Vec::new();
        for target in ["tags", "users", "items", "products", "contacts"] {
            first_users.push(store.job_enqueue("fieldreport.sync", target, false, Some(1)).await.unwrap().unwrap());
        }
        let second_users = store.job_enqueue("fieldreport.sync", "companies", false, Some(2)).await.unwrap().unwrap();
        assert_eq!(store.jobs_active_of(1).await.unwrap(), 5);
        assert_eq!(store.jobs_active_of(2).await.unwrap(), 1);
        // User 1's oldest, then user 2's only job, not user 1's second: the queue takes turns.
        let claimed: Vec<i64> = [
            store.job_claim("a", now_ms() + 60_000).await.unwrap().unwrap().id,
            store.job_claim("a", now_ms() + 60_000).await.unwrap().unwrap().id,
            store.job_claim("a", now_ms() + 60_000).await.unwrap().unwrap().id,
        ]
        .into();
        assert_eq!(claimed, [first_users[0].id, second_users.id, first_users[1].id]);
        store.job_cancel(first_users[4].id).await.unwrap();
        assert_eq!(store.jobs_active_of(1).await.unwrap(), 4);
    })
    .await;
}
