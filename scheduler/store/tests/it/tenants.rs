//! Tenants and API keys ([`TenantStore`]).

use sundial_core::ids::{self, new_id};
use sundial_core::types::*;
use sundial_store::*;

use crate::fixtures::*;

for_each_database!(tenants_are_unique_by_name_and_paginate, api_keys_are_found_by_hash_and_scoped_to_their_tenant);

pub async fn tenants_are_unique_by_name_and_paginate(s: S) {
    let a = tenant(&s, "alpha").await;
    let b = tenant(&s, "beta").await;
    let _c = tenant(&s, "gamma").await;
    let dup = Tenant { id: new_id(ids::TENANT), name: "alpha".into(), created_at_ms: NOW };
    assert!(matches!(s.tenant_insert(&dup).await, Err(StoreError::Conflict { what: "tenant_name", .. })));
    assert_eq!(s.tenant_get(&a.id).await.unwrap(), Some(a.clone()));
    let first = s.tenant_list(&page(2)).await.unwrap();
    assert_eq!(first.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["alpha", "beta"]);
    let rest = s.tenant_list(&Page { limit: 2, after: Some(b.id.clone()) }).await.unwrap();
    assert_eq!(rest.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["gamma"]);
}

pub async fn api_keys_are_found_by_hash_and_scoped_to_their_tenant(s: S) {
    let t1 = tenant(&s, "t1").await;
    let t2 = tenant(&s, "t2").await;
    let mk = |tenant: Option<&str>, role: Role, hash: &str| ApiKey {
        id: new_id(ids::API_KEY),
        tenant_id: tenant.map(String::from),
        name: "k".into(),
        role,
        key_hash: hash.repeat(64),
        display_prefix: "sk_abc".into(),
        created_at_ms: NOW,
    };
    let op = mk(None, Role::Operator, "a");
    let k1 = mk(Some(&t1.id), Role::Admin, "b");
    let k2 = mk(Some(&t2.id), Role::Viewer, "c");
    for k in [&op, &k1, &k2] {
        s.api_key_insert(k).await.unwrap();
    }
    assert!(matches!(s.api_key_insert(&mk(None, Role::Admin, "a")).await, Err(StoreError::Conflict { .. })));
    assert_eq!(s.api_key_by_hash(&"b".repeat(64)).await.unwrap(), Some(k1.clone()));
    assert_eq!(s.api_key_by_hash(&"z".repeat(64)).await.unwrap(), None);
    assert_eq!(s.api_key_list(None, &page(10)).await.unwrap(), vec![op.clone()]);
    assert_eq!(s.api_key_list(Some(&t1.id), &page(10)).await.unwrap(), vec![k1.clone()]);
    assert_eq!(s.api_key_count(None, Role::Operator).await.unwrap(), 1);
    assert_eq!(s.api_key_count(Some(&t1.id), Role::Admin).await.unwrap(), 1);
    assert_eq!(s.api_key_count(Some(&t2.id), Role::Admin).await.unwrap(), 0);
    assert_eq!(s.api_key_get(&t1.id, &k1.id).await.unwrap(), Some(k1.clone()));
    assert_eq!(s.api_key_get(&t2.id, &k1.id).await.unwrap(), None);
    // Another tenant cannot delete it.
    assert!(!s.api_key_delete(&t2.id, &k1.id).await.unwrap());
    assert!(s.api_key_delete(&t1.id, &k1.id).await.unwrap());
    assert_eq!(s.api_key_by_hash(&"b".repeat(64)).await.unwrap(), None);
}
