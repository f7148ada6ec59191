-- App signing secrets are stored sealed (`enc:v1:<key id>:<base64url(nonce || ciphertext)>`,
-- about 145 characters for a `whsec_` secret of 50), no longer in plain text: room for them.
ALTER TABLE apps
    MODIFY secret VARCHAR(255) NOT NULL,
    MODIFY previous_secret VARCHAR(255) NULL;
