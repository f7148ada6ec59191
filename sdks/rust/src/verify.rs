//! Verifying deliveries and cancels (Standard Webhooks, as Sundial signs), with the error
//! codes of `sdks/vectors/signing.json` and `PROTOCOL.md` §2.
//!
//! The HMAC and its constant-time comparison are the server's own
//! ([`sundial_core::signing`]); this module adds the checks in the protocol's order and tells
//! a stale timestamp from a future one.

use sundial_core::signing::{self, SignatureError, SigningKey};

/// Timestamps further than this from now, either way, are refused.
pub const TOLERANCE_SECS: i64 = signing::TOLERANCE_SECS;

/// Why a delivery or cancel was refused (answered `401 {"code": code(), "message"}`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("missing header `{0}`")]
    MissingHeader(&'static str),
    #[error("`webhook-timestamp` is not whole Unix seconds")]
    BadTimestamp,
    #[error("`webhook-timestamp` is more than {TOLERANCE_SECS} s in the past")]
    StaleTimestamp,
    #[error("`webhook-timestamp` is more than {TOLERANCE_SECS} s in the future")]
    FutureTimestamp,
    #[error("no `v1` signature in `webhook-signature` matches a secret")]
    BadSignature,
}

impl VerifyError {
    /// The stable code: `missing_header`, `bad_timestamp`, `stale_timestamp`,
    /// `future_timestamp` or `bad_signature`.
    pub fn code(&self) -> &'static str {
        match self {
            VerifyError::MissingHeader(_) => "missing_header",
            VerifyError::BadTimestamp => "bad_timestamp",
            VerifyError::StaleTimestamp => "stale_timestamp",
            VerifyError::FutureTimestamp => "future_timestamp",
            VerifyError::BadSignature => "bad_signature",
        }
    }
}

/// A malformed signing secret (not `whsec_` followed by base64).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a signing secret must be `whsec_` followed by base64")]
pub struct BadSecret;

/// Parse `whsec_…` secrets.
pub fn parse_secrets<S: AsRef<str>>(secrets: &[S]) -> Result<Vec<SigningKey>, BadSecret> {
    secrets.iter().map(|s| SigningKey::parse(s.as_ref().trim()).map_err(|_| BadSecret)).collect()
}

/// `v1,<base64>` for one message signed with one secret.
pub fn sign(secret: &str, msg_id: &str, timestamp_secs: i64, body: &[u8]) -> Result<String, BadSecret> {
    Ok(SigningKey::parse(secret).map_err(|_| BadSecret)?.sign(msg_id, timestamp_secs, body))
}

/// The `webhook-signature` value signed with every key, space separated (a rotation).
pub fn signature_header(keys: &[SigningKey], msg_id: &str, timestamp_secs: i64, body: &[u8]) -> String {
    signing::signature_header(keys, msg_id, timestamp_secs, body)
}

/// Verify one message against any of `keys`: headers present (a non-empty id), a whole-second
/// timestamp within [`TOLERANCE_SECS`] of `now_secs`, and a `v1` entry matching a key
/// (constant time). `body` is the raw bytes received.
pub fn verify(
    keys: &[SigningKey],
    msg_id: Option<&str>,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now_secs: i64,
) -> Result<(), VerifyError> {
    let msg_id = msg_id.filter(|s| !s.is_empty()).ok_or(VerifyError::MissingHeader(signing::HEADER_ID))?;
    let ts_text = timestamp.ok_or(VerifyError::MissingHeader(signing::HEADER_TIMESTAMP))?;
    let signature = signature.ok_or(VerifyError::MissingHeader(signing::HEADER_SIGNATURE))?;
    let ts_text = ts_text.trim();
    if ts_text.is_empty() || !ts_text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(VerifyError::BadTimestamp);
    }
    let ts: i64 = ts_text.parse().map_err(|_| VerifyError::BadTimestamp)?;
    if now_secs - ts > TOLERANCE_SECS {
        return Err(VerifyError::StaleTimestamp);
    }
    if ts - now_secs > TOLERANCE_SECS {
        return Err(VerifyError::FutureTimestamp);
    }
    // The window is checked above; the server's verifier does the constant-time match.
    match signing::verify(keys, Some(msg_id), Some(ts_text), Some(signature), body, ts) {
        Ok(()) => Ok(()),
        Err(SignatureError::MissingHeader(h)) => Err(VerifyError::MissingHeader(h)),
        Err(SignatureError::BadTimestamp) => Err(VerifyError::BadTimestamp),
        Err(_) => Err(VerifyError::BadSignature),
    }
}

/// Unix seconds now.
pub(crate) fn now_secs() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}
