//! Apps and executors ([`AppStore`]).

use sundial_store::*;

use crate::fixtures::*;

for_each_database!(apps_are_unique_per_tenant_and_isolated, app_delete_is_refused_while_jobs_use_it);

pub async fn apps_are_unique_per_tenant_and_isolated(s: S) {
    let t1 = tenant(&s, "t1").await;
    let t2 = tenant(&s, "t2").await;
    let a = app(&s, &t1, "billing").await;
    assert!(matches!(s.app_insert(&app_of(&t1, "billing")).await, Err(StoreError::Conflict { what: "app_name", .. })));
    let other = app(&s, &t2, "billing").await; // same name, other tenant: fine
    assert_eq!(s.app_get(&t1.id, &a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(s.app_get(&t1.id, "billing").await.unwrap(), Some(a.clone()));
    assert_eq!(s.app_get(&t1.id, &other.id).await.unwrap(), None, "another tenant's app is invisible");
    let mut changed = a.clone();
    changed.endpoints = vec!["https://a.example/x".into(), "http://127.0.0.1:9/y".into()];
    changed.previous_secret = Some(a.secret.clone());
    changed.previous_expires_ms = Some(NOW + 1000);
    changed.secret = "whsec_bmV3".into();
    changed.updated_at_ms = NOW + 1;
    assert!(s.app_update(&changed).await.unwrap());
    assert_eq!(s.app_get(&t1.id, &a.id).await.unwrap(), Some(changed.clone()));
    assert_eq!(changed.valid_secrets(NOW), vec!["whsec_bmV3", "whsec_c2VjcmV0"]);
    assert_eq!(changed.valid_secrets(NOW + 1000), vec!["whsec_bmV3"]);
    let mut foreign = changed.clone();
    foreign.tenant_id = t2.id.clone();
    assert!(!s.app_update(&foreign).await.unwrap(), "update is tenant-scoped");
    assert_eq!(s.app_list(&t1.id, &page(10)).await.unwrap().len(), 1);
    assert!(!s.app_delete(&t2.id, &a.id).await.unwrap());
    assert!(s.app_delete(&t1.id, &a.id).await.unwrap());
    assert_eq!(s.app_get(&t1.id, &a.id).await.unwrap(), None);
}

pub async fn app_delete_is_refused_while_jobs_use_it(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "billing").await;
    let j = job(&s, &a, "nightly").await;
    assert!(matches!(s.app_delete(&t.id, &a.id).await, Err(StoreError::Conflict { what: "app_in_use", .. })));
    assert!(s.app_get(&t.id, &a.id).await.unwrap().is_some(), "nothing was deleted");
    assert!(s.job_delete(&t.id, &j.id, NOW).await.unwrap());
    assert!(s.app_delete(&t.id, &a.id).await.unwrap());
}
