-- App signing secrets are stored sealed (`enc:v1:<key id>:<base64url(nonce || ciphertext)>`);
-- SQLite's TEXT columns already hold them, so nothing changes here (MySQL widens its columns).
SELECT 1;
