//! Seen webhook ids ([`SeenStore`]).

use crate::fixtures::*;

for_each_database!(seen_webhook_ids_are_refused_twice);

pub async fn seen_webhook_ids_are_refused_twice(s: S) {
    assert!(s.webhook_seen("app_1", "msg_1", NOW).await.unwrap());
    assert!(!s.webhook_seen("app_1", "msg_1", NOW + 1).await.unwrap());
    assert!(s.webhook_seen("app_2", "msg_1", NOW).await.unwrap(), "per app");
    assert_eq!(s.webhook_forget(NOW + 1).await.unwrap(), 2);
    assert!(s.webhook_seen("app_1", "msg_1", NOW + 2).await.unwrap());
}
