//! App signing secrets at rest: sealed with XChaCha20-Poly1305 under the operator's key.
//!
//! A stored secret reads `enc:v1:<key id>:<base64url(nonce || ciphertext)>`: a fresh random
//! 24-byte nonce per write, the key id naming the key it was sealed with (the first 16 hex
//! digits of a SHA-256 of the key, so ids need no configuration), and as associated data
//! the row's app id and the column (`apps.secret`, `apps.previous_secret`): a ciphertext
//! copied to another app's row, or from one column to the other, does not open.
//!
//! A [`KeyRing`] seals with its current key and opens with any of its keys; rows under a
//! previous key are sealed again under the current one when a store opens
//! (`SqlStore::secrets_rekey`). Pure: no IO but the random nonce.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, Generate, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};

use crate::{Result, StoreError};

/// What a sealed value starts with (format version 1).
pub const SEALED_PREFIX: &str = "enc:v1:";
const NONCE_LEN: usize = 24;

/// The two columns holding app secrets: each is bound into its ciphertext.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretColumn {
    Secret,
    PreviousSecret,
}

impl SecretColumn {
    pub fn as_str(self) -> &'static str {
        match self {
            SecretColumn::Secret => "apps.secret",
            SecretColumn::PreviousSecret => "apps.previous_secret",
        }
    }
}

/// One 256-bit key and its id. `Debug` shows the id only.
#[derive(Clone)]
pub struct SecretKey {
    id: String,
    cipher: XChaCha20Poly1305,
    bytes: [u8; 32],
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretKey").field("id", &self.id).finish_non_exhaustive()
    }
}

impl PartialEq for SecretKey {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl SecretKey {
    pub fn from_bytes(bytes: [u8; 32]) -> SecretKey {
        let digest = Sha256::new_with_prefix(b"sundial secret key id\0").chain_update(bytes).finalize();
        let id = hex::encode(&digest[..8]);
        let cipher = XChaCha20Poly1305::new(&bytes.into());
        SecretKey { id, cipher, bytes }
    }

    /// A fresh random key.
    pub fn generate() -> SecretKey {
        let key = chacha20poly1305::Key::generate();
        SecretKey::from_bytes(key.into())
    }

    /// A key written as 64 hex digits or as base64 (standard or URL-safe, padded or not)
    /// of 32 bytes, surrounding white space ignored. The error never quotes the text.
    pub fn parse(text: &str) -> Result<SecretKey> {
        let t = text.trim();
        let bytes = if t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
            hex::decode(t).ok()
        } else {
            [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD].iter().find_map(|e| e.decode(t).ok())
        };
        match bytes.map(<[u8; 32]>::try_from) {
            Some(Ok(b)) => Ok(SecretKey::from_bytes(b)),
            Some(Err(v)) => Err(StoreError::Secret(format!(
                "a secret key must be 32 bytes (64 hex digits or 44 base64 characters); this one is {} bytes",
                v.len()
            ))),
            None => Err(StoreError::Secret(format!(
                "a secret key must be 32 bytes written as 64 hex digits or as base64; this one ({} characters) is neither",
                t.len()
            ))),
        }
    }

    /// The key id stored beside every value sealed with this key.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The key as standard base64, for a key file.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.bytes)
    }
}

/// The keys a store seals and opens secrets with: the current one (sealing, opening) and
/// previous ones (opening only, until every row is sealed again under the current one).
#[derive(Debug, Clone)]
pub struct KeyRing {
    current: SecretKey,
    previous: Vec<SecretKey>,
}

/// Where a stored value stands against a key ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sealed<'a> {
    /// Sealed under the ring's current key.
    Current,
    /// Sealed under another key, named by its id (known to the ring or not).
    OtherKey(&'a str),
    /// Written before secrets were encrypted.
    Plain,
}

impl KeyRing {
    /// Previous keys equal to the current one, or repeated, are dropped.
    pub fn new(current: SecretKey, previous: Vec<SecretKey>) -> KeyRing {
        let mut kept: Vec<SecretKey> = Vec::new();
        for k in previous {
            if k != current && !kept.contains(&k) {
                kept.push(k);
            }
        }
        KeyRing { current, previous: kept }
    }

    pub fn current_id(&self) -> &str {
        self.current.id()
    }

    /// Every key id, the current one first.
    pub fn ids(&self) -> Vec<&str> {
        std::iter::once(&self.current).chain(&self.previous).map(SecretKey::id).collect()
    }

    fn key(&self, id: &str) -> Option<&SecretKey> {
        std::iter::once(&self.current).chain(&self.previous).find(|k| k.id == id)
    }

    /// Seal `plain` for `app_id`'s `column` under the current key.
    pub fn seal(&self, app_id: &str, column: SecretColumn, plain: &str) -> String {
        let nonce = XNonce::generate();
        let aad = associated_data(app_id, column);
        let ct = self
            .current
            .cipher
            .encrypt(&nonce, Payload { msg: plain.as_bytes(), aad: &aad })
            .expect("XChaCha20-Poly1305 seals any message of this size");
        let mut raw = Vec::with_capacity(NONCE_LEN + ct.len());
        raw.extend_from_slice(&nonce);
        raw.extend_from_slice(&ct);
        format!("{SEALED_PREFIX}{}:{}", self.current.id, URL_SAFE_NO_PAD.encode(raw))
    }

    /// Which key a stored value is sealed under (by its form alone: nothing is opened).
    pub fn sealed_by<'a>(&self, stored: &'a str) -> Sealed<'a> {
        match stored.strip_prefix(SEALED_PREFIX).and_then(|rest| rest.split_once(':')) {
            Some((id, _)) if id == self.current.id => Sealed::Current,
            Some((id, _)) => Sealed::OtherKey(id),
            None => Sealed::Plain,
        }
    }

    /// Open a value sealed for `app_id`'s `column` under any key of the ring. A value in
    /// plain text is refused (the store seals every row when it opens): the errors name the
    /// app, the column and the key id, never a byte of the secret.
    pub fn open(&self, app_id: &str, column: SecretColumn, stored: &str) -> Result<String> {
        let col = column.as_str();
        let Some(rest) = stored.strip_prefix(SEALED_PREFIX) else {
            return Err(StoreError::Secret(format!(
                "app {app_id}: {col} is stored unencrypted; restart a node or run `sundial rekey` to encrypt it"
            )));
        };
        let Some((id, body)) = rest.split_once(':') else {
            return Err(StoreError::Secret(format!("app {app_id}: {col} is not a sealed value (no key id)")));
        };
        let Some(key) = self.key(id) else {
            return Err(StoreError::Secret(format!(
                "app {app_id}: {col} is encrypted under key id {id}, which is not configured (this node has {}); \
                 add that key to `secret_key` as a previous key",
                self.ids().join(", ")
            )));
        };
        let refused = || {
            StoreError::Secret(format!(
                "app {app_id}: {col} does not decrypt under key id {id}: the value was altered or copied from \
                 another row; rotate the app's secret"
            ))
        };
        let raw = URL_SAFE_NO_PAD.decode(body).map_err(|_| refused())?;
        if raw.len() < NONCE_LEN {
            return Err(refused());
        }
        let (nonce, ct) = raw.split_at(NONCE_LEN);
        let nonce = XNonce::try_from(nonce).map_err(|_| refused())?;
        let aad = associated_data(app_id, column);
        let plain = key.cipher.decrypt(&nonce, Payload { msg: ct, aad: &aad }).map_err(|_| refused())?;
        String::from_utf8(plain).map_err(|_| refused())
    }
}

fn associated_data(app_id: &str, column: SecretColumn) -> Vec<u8> {
    format!("sundial {}\0{app_id}", column.as_str()).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/dF7HqZ8b8E=";

    #[test]
    fn a_sealed_secret_opens_for_its_row_and_column_only() {
        let ring = KeyRing::new(SecretKey::generate(), vec![]);
        let sealed = ring.seal("app_1", SecretColumn::Secret, PLAIN);
        assert!(sealed.starts_with(&format!("enc:v1:{}:", ring.current_id())), "{sealed}");
        assert!(!sealed.contains("whsec_"));
        assert_eq!(ring.open("app_1", SecretColumn::Secret, &sealed).unwrap(), PLAIN);
        // Fresh nonce every time.
        assert_ne!(sealed, ring.seal("app_1", SecretColumn::Secret, PLAIN));
        for (app, column) in [("app_2", SecretColumn::Secret), ("app_1", SecretColumn::PreviousSecret)] {
            let err = ring.open(app, column, &sealed).unwrap_err().to_string();
            assert!(err.contains("does not decrypt") && err.contains(app), "{err}");
            assert!(!err.contains("whsec_"), "{err}");
        }
    }

    #[test]
    fn tampered_truncated_and_plain_values_are_refused_with_a_clear_error() {
        let ring = KeyRing::new(SecretKey::generate(), vec![]);
        let sealed = ring.seal("app_1", SecretColumn::Secret, PLAIN);
        let (head, body) = sealed.rsplit_once(':').unwrap();
        // Flip one character of the ciphertext (not the last, whose low bits base64 may ignore).
        let mut chars: Vec<char> = body.chars().collect();
        chars[30] = if chars[30] == 'A' { 'B' } else { 'A' };
        let tampered = format!("{head}:{}", chars.into_iter().collect::<String>());
        let short = format!("{head}:{}", &body[..10]);
        for bad in [tampered.as_str(), short.as_str(), &format!("{head}:!!!")] {
            let err = ring.open("app_1", SecretColumn::Secret, bad).unwrap_err().to_string();
            assert!(err.contains("does not decrypt"), "{err}");
        }
        let err = ring.open("app_1", SecretColumn::Secret, PLAIN).unwrap_err().to_string();
        assert!(err.contains("unencrypted") && !err.contains("whsec_"), "{err}");
        assert_eq!(ring.sealed_by(PLAIN), Sealed::Plain);
        assert_eq!(ring.sealed_by(&sealed), Sealed::Current);
    }

    #[test]
    fn a_ring_opens_with_previous_keys_seals_with_the_current_and_names_an_unknown_key() {
        let (old, new) = (SecretKey::generate(), SecretKey::generate());
        let before = KeyRing::new(old.clone(), vec![]);
        let sealed_old = before.seal("app_1", SecretColumn::Secret, PLAIN);
        let after = KeyRing::new(new.clone(), vec![old.clone(), new.clone(), old.clone()]);
        assert_eq!(after.ids(), vec![new.id(), old.id()], "duplicates and the current key dropped");
        assert_eq!(after.sealed_by(&sealed_old), Sealed::OtherKey(old.id()));
        assert_eq!(after.open("app_1", SecretColumn::Secret, &sealed_old).unwrap(), PLAIN);
        let resealed = after.seal("app_1", SecretColumn::Secret, PLAIN);
        assert_eq!(after.sealed_by(&resealed), Sealed::Current);
        // The new key alone does not know the old one: the error names the missing key id.
        let only_new = KeyRing::new(new, vec![]);
        let err = only_new.open("app_1", SecretColumn::Secret, &sealed_old).unwrap_err().to_string();
        assert!(err.contains(old.id()) && err.contains("not configured") && err.contains("secret_key"), "{err}");
    }

    #[test]
    fn keys_parse_from_hex_or_base64_of_32_bytes_and_their_id_depends_on_the_key_alone() {
        let k = SecretKey::generate();
        let b64 = k.to_base64();
        let hex_form = hex::encode(STANDARD.decode(&b64).unwrap());
        for text in [b64.clone(), format!("  {b64}\n"), b64.trim_end_matches('=').to_string(), hex_form] {
            assert_eq!(SecretKey::parse(&text).unwrap().id(), k.id(), "{text}");
        }
        assert_eq!(k.id().len(), 16);
        assert_ne!(k.id(), SecretKey::generate().id());
        for bad in ["", "short", &STANDARD.encode([7u8; 16]), &"z".repeat(64)] {
            let err = SecretKey::parse(bad).unwrap_err().to_string();
            assert!(err.contains("32 bytes"), "{bad}: {err}");
        }
        assert!(!format!("{k:?}").contains(&b64), "Debug shows the id only");
    }
}
