//! The SDKs' shared conformance vectors (`sdks/vectors/*.json`), checked against the server's
//! own signing and wire types: what every SDK's tests load is what Sundial does.

use serde_json::Value;
use sundial_core::protocol::{Answer, Delivery};
use sundial_core::signing::{SignatureError, SigningKey, verify};

fn load(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdks/vectors").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap()
}

#[test]
fn signing_vectors_sign_and_verify_as_sundial_does() {
    let v = load("signing.json");
    let sign = v["sign"].as_array().unwrap();
    assert!(!sign.is_empty());
    for c in sign {
        let key = SigningKey::parse(s(&c["secret"])).unwrap();
        let got = key.sign(s(&c["id"]), c["timestamp"].as_i64().unwrap(), s(&c["body"]).as_bytes());
        assert_eq!(got, s(&c["signature"]), "sign case {}", c["name"]);
    }
    let cases = v["verify"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for c in cases {
        let keys: Vec<SigningKey> =
            c["secrets"].as_array().unwrap().iter().map(|k| SigningKey::parse(s(k)).unwrap()).collect();
        let h = |n: &str| c["headers"].get(n).and_then(Value::as_str);
        let got = verify(
            &keys,
            h("webhook-id"),
            h("webhook-timestamp"),
            h("webhook-signature"),
            s(&c["body"]).as_bytes(),
            c["now"].as_i64().unwrap(),
        );
        let want = c["error"].as_str();
        let matches = matches!(
            (&got, want),
            (Ok(()), None)
                | (Err(SignatureError::MissingHeader(_)), Some("missing_header"))
                | (Err(SignatureError::BadTimestamp), Some("bad_timestamp"))
                | (Err(SignatureError::Stale), Some("stale_timestamp" | "future_timestamp"))
                | (Err(SignatureError::NoMatch), Some("bad_signature"))
        );
        assert!(matches, "verify case {}: Sundial says {got:?}, the vector {want:?}", c["name"]);
        assert_eq!(got.is_ok(), c["ok"].as_bool().unwrap(), "verify case {}", c["name"]);
    }
}

#[test]
fn delivery_vectors_are_the_bytes_sundial_sends_and_signs() {
    let v = load("deliveries.json");
    let key = SigningKey::parse(s(&v["secret"])).unwrap();
    let deliveries = v["deliveries"].as_array().unwrap();
    assert!(deliveries.len() >= 4);
    for c in deliveries {
        let d: Delivery = serde_json::from_value(c["body"].clone()).unwrap_or_else(|e| panic!("{}: {e}", c["name"]));
        assert_eq!(serde_json::to_string(&d).unwrap(), s(&c["raw_body"]), "{}: the bytes Sundial sends", c["name"]);
        let h = |n: &str| s(&c["headers"][n]);
        let ts: i64 = h("webhook-timestamp").parse().unwrap();
        assert_eq!(
            key.sign(h("webhook-id"), ts, s(&c["raw_body"]).as_bytes()),
            h("webhook-signature"),
            "{}",
            c["name"]
        );
        assert_eq!(h("sundial-run-id"), d.run_id, "{}", c["name"]);
    }
    for a in v["answers"].as_array().unwrap() {
        if a["status"] == 200 && a["body"].is_object() {
            // Read as an answer exactly when its status (if any) is one Sundial knows; an
            // unknown one (`"ok"`) fails the attempt.
            let parsed = serde_json::from_value::<Answer>(a["body"].clone());
            let known = a["body"].get("status").is_none_or(|st| st == "succeeded" || st == "failed");
            assert_eq!(parsed.is_ok(), known, "answer {}: {parsed:?}", a["name"]);
        }
    }
}
