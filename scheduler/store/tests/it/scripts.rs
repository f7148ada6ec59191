//! Scripts and their versions ([`ScriptStore`]).

use sundial_core::ids::{self, new_id};
use sundial_core::types::ScriptRuntime;
use sundial_store::*;

use crate::fixtures::*;

for_each_database!(
    scripts_are_unique_per_tenant_and_isolated,
    every_upload_is_a_new_version_and_any_version_can_be_made_current_again,
    a_script_in_use_by_a_job_is_not_deleted,
    a_run_records_the_version_it_is_given
);

fn script_of(t: &Tenant, name: &str) -> (Script, ScriptVersion) {
    let id = new_id(ids::SCRIPT);
    let script = Script {
        id: id.clone(),
        tenant_id: t.id.clone(),
        name: name.into(),
        runtime: ScriptRuntime::Python,
        current_version: 1,
        created_at_ms: NOW,
        updated_at_ms: NOW,
    };
    (script, version_of(&id, 1, "print('v1')\n"))
}

fn version_of(script_id: &str, version: i64, source: &str) -> ScriptVersion {
    ScriptVersion {
        script_id: script_id.into(),
        version,
        source: source.into(),
        encoding: "text".into(),
        sha256: format!("{:0>64}", source.len()),
        size_bytes: source.len() as i64,
        author: "key_1".into(),
        note: format!("v{version}"),
        created_at_ms: NOW + version,
    }
}

pub async fn scripts_are_unique_per_tenant_and_isolated(s: S) {
    let t1 = tenant(&s, "t1").await;
    let t2 = tenant(&s, "t2").await;
    let (a, a1) = script_of(&t1, "report");
    s.script_create(&a, &a1).await.unwrap();
    let (mut dup, dup1) = script_of(&t1, "report");
    dup.id = new_id(ids::SCRIPT);
    let dup1 = ScriptVersion { script_id: dup.id.clone(), ..dup1 };
    assert!(matches!(s.script_create(&dup, &dup1).await, Err(StoreError::Conflict { what: "script_name", .. })));
    assert_eq!(s.script_version_get(&t1.id, &dup.id, 1).await.unwrap(), None, "nothing of a refused create is kept");
    let (b, b1) = script_of(&t2, "report"); // same name, other tenant: fine
    s.script_create(&b, &b1).await.unwrap();
    assert_eq!(s.script_get(&t1.id, &a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(s.script_get(&t1.id, "report").await.unwrap(), Some(a.clone()));
    assert_eq!(s.script_get(&t1.id, &b.id).await.unwrap(), None, "another tenant's script is invisible");
    assert_eq!(s.script_version_get(&t1.id, &b.id, 1).await.unwrap(), None);
    assert!(s.script_versions(&t1.id, &b.id, &page(10)).await.unwrap().is_empty());
    assert_eq!(s.script_add_version(&t1.id, &b.id, &version_of(&b.id, 0, "x")).await.unwrap(), None);
    assert_eq!(s.script_set_current(&t1.id, &b.id, 1, NOW).await.unwrap(), None);
    assert!(!s.script_delete(&t1.id, &b.id).await.unwrap());
    assert_eq!(s.script_get(&t2.id, &b.id).await.unwrap(), Some(b.clone()), "untouched by the other tenant");
    let listed = s.script_list(&t1.id, &page(10)).await.unwrap();
    assert_eq!(listed, vec![a.clone()]);
}

pub async fn every_upload_is_a_new_version_and_any_version_can_be_made_current_again(s: S) {
    let t = tenant(&s, "t").await;
    let (a, a1) = script_of(&t, "etl");
    s.script_create(&a, &a1).await.unwrap();
    // The number is the store's to choose: whatever the caller put in.
    let (after, v2) =
        s.script_add_version(&t.id, &a.id, &version_of(&a.id, 99, "print('v2')\n")).await.unwrap().unwrap();
    assert_eq!((after.current_version, v2.version), (2, 2));
    let (_, v3) = s.script_add_version(&t.id, &a.id, &version_of(&a.id, 0, "print('v3')\n")).await.unwrap().unwrap();
    assert_eq!(v3.version, 3);
    assert_eq!(s.script_get(&t.id, &a.id).await.unwrap().unwrap().current_version, 3);
    let got = s.script_version_get(&t.id, &a.id, 2).await.unwrap().unwrap();
    assert_eq!((got.source.as_str(), got.size_bytes, got.note.as_str()), ("print('v2')\n", 12, "v99"));
    let meta = s.script_version_meta(&t.id, &a.id, 2).await.unwrap().unwrap();
    assert_eq!(meta, ScriptVersion { source: String::new(), ..got }, "the same, without the source");
    assert_eq!(s.script_version_meta(&t.id, &a.id, 9).await.unwrap(), None);
    // Listed newest first, without the source, a page at a time.
    let first = s.script_versions(&t.id, &a.id, &page(2)).await.unwrap();
    assert_eq!(first.iter().map(|v| v.version).collect::<Vec<_>>(), [3, 2]);
    assert!(first.iter().all(|v| v.source.is_empty()));
    let rest = s.script_versions(&t.id, &a.id, &Page { limit: 2, after: Some("2".into()) }).await.unwrap();
    assert_eq!(rest.iter().map(|v| v.version).collect::<Vec<_>>(), [1]);
    // Roll back to 1, then forward to 3; a version it does not have is refused and changes nothing.
    assert_eq!(s.script_set_current(&t.id, &a.id, 1, NOW + 50).await.unwrap().unwrap().current_version, 1);
    assert!(matches!(
        s.script_set_current(&t.id, &a.id, 4, NOW + 51).await,
        Err(StoreError::Refused { field, .. }) if field == "version"
    ));
    let now = s.script_get(&t.id, &a.id).await.unwrap().unwrap();
    assert_eq!((now.current_version, now.updated_at_ms), (1, NOW + 50));
    // The next upload after a rollback is 4, and current again.
    let (after, v4) =
        s.script_add_version(&t.id, &a.id, &version_of(&a.id, 0, "print('v4')\n")).await.unwrap().unwrap();
    assert_eq!((after.current_version, v4.version), (4, 4));
    assert_eq!(s.script_versions(&t.id, &a.id, &page(10)).await.unwrap().len(), 4);
}

pub async fn a_script_in_use_by_a_job_is_not_deleted(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "runner").await;
    let (sc, v1) = script_of(&t, "nightly");
    s.script_create(&sc, &v1).await.unwrap();
    let mut j = job_of(&a, "uses-it");
    j.handler = None;
    j.script_id = Some(sc.id.clone());
    s.job_insert(&j, &[]).await.unwrap();
    assert!(matches!(s.script_delete(&t.id, &sc.id).await, Err(StoreError::Conflict { what: "script_in_use", .. })));
    assert!(s.script_get(&t.id, &sc.id).await.unwrap().is_some());
    assert!(s.job_delete(&t.id, &j.id, NOW).await.unwrap());
    assert!(s.script_delete(&t.id, &sc.id).await.unwrap());
    assert_eq!(s.script_get(&t.id, &sc.id).await.unwrap(), None);
    assert_eq!(s.script_version_get(&t.id, &sc.id, 1).await.unwrap(), None, "its versions went with it");
}

pub async fn a_run_records_the_version_it_is_given(s: S) {
    let t = tenant(&s, "t").await;
    let a = app(&s, &t, "runner").await;
    let (sc, v1) = script_of(&t, "nightly");
    s.script_create(&sc, &v1).await.unwrap();
    s.script_add_version(&t.id, &sc.id, &version_of(&sc.id, 0, "print('v2')\n")).await.unwrap().unwrap();
    let mut j = job_of(&a, "uses-it");
    j.handler = None;
    j.script_id = Some(sc.id.clone());
    s.job_insert(&j, &[]).await.unwrap();
    let r = run_of(&j, "f1", NOW);
    s.run_insert(&r).await.unwrap();
    assert_eq!(s.run_get(&t.id, &r.id).await.unwrap().unwrap().script_version, None, "none before its delivery");
    // Following the script: its current version, recorded on the run; the source stays out.
    let pick = s.script_pick_for_run(&r.id, &sc.id, None).await.unwrap().unwrap();
    assert_eq!((pick.script.name.as_str(), pick.version.version, pick.version.source.as_str()), ("nightly", 2, ""));
    assert_eq!(s.run_get(&t.id, &r.id).await.unwrap().unwrap().script_version, Some(2));
    // Pinned: that version, even after a rollback moves the current one.
    let pick = s.script_pick_for_run(&r.id, &sc.id, Some(1)).await.unwrap().unwrap();
    assert_eq!((pick.version.version, pick.version.sha256), (1, v1.sha256.clone()));
    assert_eq!(s.run_get(&t.id, &r.id).await.unwrap().unwrap().script_version, Some(1));
    // A version or script that is not there: nothing picked, nothing written.
    assert_eq!(s.script_pick_for_run(&r.id, &sc.id, Some(7)).await.unwrap(), None);
    assert_eq!(s.script_pick_for_run(&r.id, "scr_gone", None).await.unwrap(), None);
    assert_eq!(s.run_get(&t.id, &r.id).await.unwrap().unwrap().script_version, Some(1));
}
