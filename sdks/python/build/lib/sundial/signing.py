"""Standard Webhooks signing, exactly as Sundial does it (protocol 1).

``webhook-signature: v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`` where ``key``
is the base64-decoded part of the app secret after ``whsec_``; several signatures are space
separated while a secret is being rotated, and one match suffices.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
from typing import Iterable, List, Mapping, Optional, Sequence, Union

__all__ = ["SignatureError", "TOLERANCE_SECS", "sign", "signature_header", "verify", "decode_secret"]

#: Timestamps further than this from now, either way, are refused.
TOLERANCE_SECS = 300
SECRET_PREFIX = "whsec_"
_TIMESTAMP = re.compile(r"^\s*[+-]?[0-9]+\s*$")


class SignatureError(Exception):
    """A delivery or call that does not verify. ``code`` is one of ``missing_header``,
    ``bad_timestamp``, ``stale_timestamp``, ``future_timestamp``, ``bad_signature``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def decode_secret(secret: str) -> bytes:
    """The HMAC key of a ``whsec_<base64>`` secret."""
    if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX):
        raise ValueError("a signing secret is `whsec_` followed by base64")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX):], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("a signing secret is `whsec_` followed by base64") from exc
    if not key:
        raise ValueError("empty signing secret")
    return key


def _mac(key: bytes, msg_id: str, timestamp: int, body: bytes) -> bytes:
    return hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()


def _bytes(body: Union[bytes, str]) -> bytes:
    return body.encode("utf-8") if isinstance(body, str) else bytes(body)


def sign(secret: str, msg_id: str, timestamp: int, body: Union[bytes, str]) -> str:
    """``v1,<base64>``: the signature of one message with one secret."""
    return "v1," + base64.b64encode(_mac(decode_secret(secret), msg_id, int(timestamp), _bytes(body))).decode()


def signature_header(secrets: Iterable[str], msg_id: str, timestamp: int, body: Union[bytes, str]) -> str:
    """The ``webhook-signature`` value signed with every secret (space separated)."""
    return " ".join(sign(s, msg_id, timestamp, body) for s in secrets)


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    value = headers.get(name)
    if value is None:
        for k, v in headers.items():
            if k.lower() == name:
                return v
    return value


def verify(
    secrets: Sequence[str],
    headers: Mapping[str, str],
    body: Union[bytes, str],
    *,
    now: Optional[float] = None,
    tolerance: int = TOLERANCE_SECS,
) -> str:
    """Verify a signed message against any of ``secrets``; return its ``webhook-id``.

    Raises :class:`SignatureError` with the first problem found, in this order: a missing
    header (an empty ``webhook-id`` counts as missing), a timestamp that is not whole Unix
    seconds, one too old or too far ahead, no ``v1,`` signature matching any secret.
    Signatures are compared in constant time.
    """
    msg_id = _header(headers, "webhook-id")
    ts_text = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not msg_id:
        raise SignatureError("missing_header", "missing header `webhook-id`")
    if ts_text is None:
        raise SignatureError("missing_header", "missing header `webhook-timestamp`")
    if signatures is None:
        raise SignatureError("missing_header", "missing header `webhook-signature`")
    if not _TIMESTAMP.match(ts_text):
        raise SignatureError("bad_timestamp", "`webhook-timestamp` is not a Unix timestamp in seconds")
    ts = int(ts_text.strip())
    current = int(time.time()) if now is None else int(now)
    if current - ts > tolerance:
        raise SignatureError("stale_timestamp", f"`webhook-timestamp` is more than {tolerance} s old")
    if ts - current > tolerance:
        raise SignatureError("future_timestamp", f"`webhook-timestamp` is more than {tolerance} s in the future")
    data = _bytes(body)
    candidates: List[bytes] = []
    for entry in signatures.split():
        if not entry.startswith("v1,"):
            continue
        try:
            candidates.append(base64.b64decode(entry[3:], validate=True))
        except (binascii.Error, ValueError):
            continue
    matched = False
    for secret in secrets:
        expected = _mac(decode_secret(secret), msg_id, ts, data)
        for got in candidates:
            # compare_digest is constant-time for equal lengths; keep looking after a match
            # so the time taken does not tell which secret or entry matched.
            if hmac.compare_digest(expected, got):
                matched = True
    if not matched:
        raise SignatureError("bad_signature", "no signature in `webhook-signature` matches")
    return msg_id
