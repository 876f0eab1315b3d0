use crate::store::DatabaseUrl;
use crate::store::Store;

fn idle_count(store: &Store) -> usize {
    store.engine.request_connections().expect("a file database has request connections").idle.lock().unwrap().len()
}

#[tokio::test]
async fn only_settled_connections_are_reused() {
    let dir = std::env::temp_dir().join(format!("lease-{}", uuid::Uuid::new_v4()));
    let store = Store::connect(&DatabaseUrl::new(format!("sqlite://{}/db.sqlite", dir.display()))).await.unwrap();

    let mut lease = store.lease().await.unwrap();
    let answer = sqlx::query_scalar::<_, i64>("SELECT 41 + 1").fetch_one(lease.connection()).await;
    assert_eq!(lease.settle(answer).unwrap(), 42);
    drop(lease);
    assert_eq!(idle_count(&store), 1, "a settled connection is kept");

    let mut lease = store.lease().await.unwrap();
    let failed = sqlx::query("SELECT * FROM no_such_table").execute(lease.connection()).await;
    assert!(lease.settle(failed).is_err());
    drop(lease);
    assert_eq!(idle_count(&store), 1, "an error of the database itself leaves the connection fit");

    let mut lease = store.lease().await.unwrap();
    let _started = lease.connection();
    drop(lease);
    assert_eq!(idle_count(&store), 0, "a statement that never settled closes its connection");

    store.close().await;
    let _ = std::fs::remove_dir_all(dir);
}
