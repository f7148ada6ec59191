#!/usr/bin/env python3
"""Write the shared conformance vectors: sdks/vectors/signing.json and deliveries.json.

Standard library only, deterministic (no clock, no randomness): running it again must
leave both files unchanged (`python3 sdks/vectors/generate.py --check` exits 1 if not).

Signatures are computed exactly as Sundial computes them (scheduler/core/src/signing.rs):
  key = base64-decode(secret without its `whsec_` prefix)
  webhook-signature = "v1," + base64(HMAC-SHA256(key, f"{id}.{timestamp}.{body}"))
with the body's exact bytes (UTF-8), several signatures space separated during a rotation.
Delivery bodies are what the server serialises (serde_json, compact, struct fields in the
`Delivery` order, JSON object keys inside values sorted).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
TOLERANCE = 300
NOW = 1764028800  # 2025-11-25T00:00:00Z


def secret(seed: str) -> str:
    """A deterministic `whsec_` secret (24 bytes, like Sundial's)."""
    return "whsec_" + base64.b64encode(hashlib.sha256(seed.encode()).digest()[:24]).decode()


def sign(sec: str, msg_id: str, ts: int, body: str) -> str:
    key = base64.b64decode(sec[len("whsec_"):])
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body.encode("utf-8"), hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def compact(value: Any) -> str:
    """serde_json's compact form (ensure_ascii off: serde_json writes UTF-8 as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# The Standard Webhooks reference example (also Sundial's own signing test).
REF_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SECRET_A = secret("sundial-vectors-A")
SECRET_B = secret("sundial-vectors-B")  # the "new" secret of a rotation
SECRET_WRONG = secret("sundial-vectors-wrong")


def signing() -> Dict[str, Any]:
    body = '{"run_id":"run_01","job_id":"job_01","job":"nightly","handler":"report","params":{"day":"2025-11-25"},"attempt":1,"scheduled_at":"2025-11-25T00:00:00.000Z","trigger":"schedule","shard":{"index":0,"total":1}}'
    mid = "msg_run_01_0_1"
    sign_cases = [
        {"name": "standard_webhooks_reference", "secret": REF_SECRET, "id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
         "timestamp": 1614265330, "body": '{"test": 2432232314}'},
        {"name": "delivery", "secret": SECRET_A, "id": mid, "timestamp": NOW, "body": body},
        {"name": "utf8_body", "secret": SECRET_A, "id": "msg_run_02_0_1", "timestamp": NOW,
         "body": compact({"params": {"city": "Zürich", "note": "日時 ✓"}})},
        {"name": "empty_body", "secret": SECRET_B, "id": "msg_run_03_2_4", "timestamp": NOW + 1, "body": ""},
        {"name": "result_callback", "secret": SECRET_B, "id": "cb_0000000000000001", "timestamp": NOW,
         "body": compact({"attempt": 1, "status": "succeeded", "output": {"rows": 3}})},
    ]
    for c in sign_cases:
        c["signature"] = sign(c["secret"], c["id"], c["timestamp"], c["body"])

    good = sign(SECRET_A, mid, NOW, body)
    new = sign(SECRET_B, mid, NOW, body)

    def hdrs(sig: Optional[str] = good, ts: Optional[str] = str(NOW), id_: Optional[str] = mid) -> Dict[str, str]:
        h: Dict[str, str] = {}
        if id_ is not None:
            h["webhook-id"] = id_
        if ts is not None:
            h["webhook-timestamp"] = ts
        if sig is not None:
            h["webhook-signature"] = sig
        return h

    def case(name: str, secrets: List[str], headers: Dict[str, str], *, b: str = body, now: int = NOW,
             error: Optional[str] = None, description: str = "") -> Dict[str, Any]:
        return {"name": name, "description": description, "secrets": secrets, "headers": headers, "body": b,
                "now": now, "ok": error is None, "error": error}

    old_ts = NOW - 301
    fut_ts = NOW + 301
    verify = [
        case("good", [SECRET_A], hdrs(), description="signed with the app secret, now == timestamp"),
        case("good_at_tolerance_past", [SECRET_A], hdrs(), now=NOW + TOLERANCE,
             description="exactly 300 s old is still accepted"),
        case("good_at_tolerance_future", [SECRET_A], hdrs(), now=NOW - TOLERANCE,
             description="exactly 300 s ahead is still accepted"),
        case("wrong_secret", [SECRET_WRONG], hdrs(), error="bad_signature"),
        case("stale_timestamp", [SECRET_A],
             hdrs(sig=sign(SECRET_A, mid, old_ts, body), ts=str(old_ts)), error="stale_timestamp",
             description="correctly signed but 301 s old"),
        case("future_timestamp", [SECRET_A],
             hdrs(sig=sign(SECRET_A, mid, fut_ts, body), ts=str(fut_ts)), error="future_timestamp",
             description="correctly signed but 301 s in the future"),
        case("altered_body", [SECRET_A], hdrs(), b=body.replace('"day":"2025-11-25"', '"day":"2025-11-26"'),
             error="bad_signature"),
        case("altered_id", [SECRET_A], hdrs(id_="msg_run_01_0_2"), error="bad_signature",
             description="the signature covers the webhook-id"),
        case("altered_timestamp", [SECRET_A], hdrs(ts=str(NOW + 1)), error="bad_signature",
             description="the signature covers the timestamp"),
        case("rotation_old_secret", [SECRET_A], hdrs(sig=f"{new} {good}"),
             description="during a rotation Sundial sends two signatures (new first); the old secret verifies"),
        case("rotation_new_secret", [SECRET_B], hdrs(sig=f"{new} {good}"),
             description="during a rotation the new secret verifies too"),
        case("several_secrets_second_matches", [SECRET_WRONG, SECRET_A], hdrs(),
             description="the verifier holds several secrets; any one matching suffices"),
        case("several_secrets_none_match", [SECRET_WRONG, SECRET_B], hdrs(), error="bad_signature"),
        case("missing_webhook_id", [SECRET_A], hdrs(id_=None), error="missing_header"),
        case("empty_webhook_id", [SECRET_A], hdrs(id_=""), error="missing_header",
             description="an empty webhook-id counts as missing"),
        case("missing_webhook_timestamp", [SECRET_A], hdrs(ts=None), error="missing_header"),
        case("missing_webhook_signature", [SECRET_A], hdrs(sig=None), error="missing_header"),
        case("non_numeric_timestamp", [SECRET_A], hdrs(ts="yesterday"), error="bad_timestamp"),
        case("fractional_timestamp", [SECRET_A], hdrs(ts=f"{NOW}.5"), error="bad_timestamp",
             description="whole Unix seconds only"),
        case("non_v1_entry_then_good", [SECRET_A], hdrs(sig=f"v2,{good[3:]} v1a,{good[3:]} {good}"),
             description="entries that are not `v1,` are skipped; a later v1 match suffices"),
        case("only_non_v1_entries", [SECRET_A], hdrs(sig=f"v2,{good[3:]} v1a,{good[3:]}"), error="bad_signature",
             description="the right MAC under another version tag does not count"),
        case("garbage_signature", [SECRET_A], hdrs(sig="v1,not-base64!!"), error="bad_signature"),
        case("truncated_signature", [SECRET_A], hdrs(sig=good[:-8]), error="bad_signature"),
        case("empty_signature", [SECRET_A], hdrs(sig=""), error="bad_signature",
             description="present but empty: no signature matches"),
    ]
    return {"version": 1, "tolerance_secs": TOLERANCE,
            "description": "Standard Webhooks signing as Sundial does it. Check order: a missing (or empty "
                           "webhook-id) header -> missing_header; a timestamp that is not an integer -> "
                           "bad_timestamp; now - ts > tolerance -> stale_timestamp; ts - now > tolerance -> "
                           "future_timestamp; no `v1,` entry matching any secret (constant-time) -> bad_signature.",
            "sign": sign_cases, "verify": verify}


def delivery(name: str, body: Dict[str, Any], expect: Dict[str, Any], sec: str, description: str,
             node: str = "node_01") -> Dict[str, Any]:
    raw = compact(body)
    shard = body["shard"]
    msg_id = f"msg_{body['run_id']}_{shard['index']}_{body['attempt']}"
    headers = {
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(NOW),
        "webhook-signature": sign(sec, msg_id, NOW, raw),
        "sundial-app-id": "app_01KAV0VECT0RS",
        "sundial-node": node,
        "sundial-run-id": body["run_id"],
        "sundial-attempt": str(body["attempt"]),
        "sundial-scheduled-at": body["scheduled_at"],
        "sundial-shard": f"{shard['index']}/{shard['total']}",
    }
    return {"name": name, "description": description, "headers": headers, "raw_body": raw, "body": body,
            "expect": expect}


def deliveries() -> Dict[str, Any]:
    sec = SECRET_A
    plain = {"run_id": "run_01KAV1PLAIN", "job_id": "job_01KAV1NIGHTLY", "job": "nightly", "handler": "report",
             "params": {"day": "2025-11-25", "regions": ["eu", "us"]}, "attempt": 1,
             "scheduled_at": "2025-11-25T00:00:00.000Z", "trigger": "schedule", "shard": {"index": 0, "total": 1}}
    sharded = {"run_id": "run_01KAV1SHARD", "job_id": "job_01KAV1REINDEX", "job": "reindex", "handler": "reindex",
               "params": {"table": "orders"}, "attempt": 2, "scheduled_at": "2025-11-25T00:05:00.000Z",
               "trigger": "manual", "shard": {"index": 2, "total": 4}}
    child = {"run_id": "run_01KAV1CHILD", "job_id": "job_01KAV1LOAD", "job": "load", "handler": "load",
             "params": {"day": "2025-11-26", "dry_run": False}, "attempt": 1,
             "scheduled_at": "2025-11-25T00:10:00.000Z", "trigger": "parent", "shard": {"index": 0, "total": 1},
             "parent": {"run_id": "run_01KAV1EXTRACT", "output": {"orders": 3, "sum": 800}},
             "chain_params": {"day": "2025-11-26"}}
    fan_in = {"run_id": "run_01KAV1FANIN", "job_id": "job_01KAV1MERGE", "job": "merge", "handler": "merge",
              "params": {"target": "warehouse"}, "attempt": 1, "scheduled_at": "2025-11-25T00:20:00.000Z",
              "trigger": "parent", "shard": {"index": 0, "total": 1},
              "parents": [
                  {"job_id": "job_01KAV1TEU", "run_id": "run_01KAV1TEU", "state": "succeeded",
                   "output": {"region": "eu", "total": 264.6}},
                  {"job_id": "job_01KAV1TUS", "run_id": "run_01KAV1TUS", "state": "failed", "output": None},
              ]}
    chained = {"run_id": "run_01KAV1CHAIN", "job_id": "job_01KAV1XFORM", "job": "transform", "handler": "transform",
               "params": {"day": "2025-11-27", "rate": 0.9, "region": "eu"}, "attempt": 3,
               "scheduled_at": "2025-11-25T00:30:00.000Z", "trigger": "parent", "shard": {"index": 0, "total": 1},
               "parent": {"run_id": "run_01KAV1ROOT", "output": None},
               "chain_params": {"day": "2025-11-27"}}
    no_handler = {"run_id": "run_01KAV1NOHANDLER", "job_id": "job_01KAV1LEGACY", "job": "legacy", "handler": None,
                  "params": None, "attempt": 1, "scheduled_at": "2025-11-25T00:40:00.000Z", "trigger": "api",
                  "shard": {"index": 0, "total": 1}}

    def expect(b: Dict[str, Any]) -> Dict[str, Any]:
        parent = b.get("parent")
        return {"run_id": b["run_id"], "job_id": b["job_id"], "job": b["job"], "handler": b["handler"],
                "attempt": b["attempt"], "params": b["params"], "scheduled_at": b["scheduled_at"],
                "trigger": b["trigger"], "shard": dict(b["shard"]),
                "parent_run_id": parent["run_id"] if parent else None,
                "parent_output": parent["output"] if parent else None,
                "parents": b.get("parents"), "chain_params": b.get("chain_params")}

    items = [
        delivery("plain", plain, expect(plain), sec, "a scheduled run of an unsharded job"),
        delivery("sharded", sharded, expect(sharded), sec,
                 "shard 2 of 4, its own second attempt: webhook-id msg_<run>_<index>_<attempt>"),
        delivery("child", child, expect(child), sec,
                 "a run fired by one parent: `parent` carries its run and output; `chain_params` what the "
                 "chain's root was triggered with, already merged over the job's params"),
        delivery("fan_in", fan_in, expect(fan_in), sec,
                 "a fan-in run (several parents in the chain): no `parent`, every parent in `parents` "
                 "(sorted by job_id) with how it ended; no chain_params when the root had none"),
        delivery("chain_params", chained, expect(chained), sec,
                 "a third attempt of a chained run whose parent had no output (`output`: null)"),
        delivery("no_handler", no_handler, expect(no_handler), sec,
                 "a job without a handler (`handler`: null) and null params, triggered through the API"),
    ]
    answers = [
        {"name": "succeeded_with_output", "status": 200, "body": {"status": "succeeded", "output": {"rows": 3}},
         "meaning": "succeeded"},
        {"name": "succeeded_default_status", "status": 200, "body": {"output": [1, 2]}, "meaning": "succeeded"},
        {"name": "empty_2xx", "status": 204, "body": None, "meaning": "succeeded",
         "description": "any 2xx but 202 with an empty body: success with no output"},
        {"name": "failed", "status": 200, "body": {"status": "failed", "message": "the upstream said 500"},
         "meaning": "failed"},
        {"name": "failed_do_not_retry", "status": 200,
         "body": {"status": "failed", "message": "invalid params: day is required", "retry": False},
         "meaning": "failed",
         "description": "`retry`: false -- the job's failure policy is not applied, the run fails at once"},
        {"name": "accepted", "status": 202, "body": None, "meaning": "async",
         "description": "the result comes later: signed POST /api/v1/runs/{id}/result"},
        {"name": "handler_retired", "status": 410, "body": {"code": "handler_retired"}, "meaning": "handler_retired"},
        {"name": "executor_offline", "status": 503, "body": {"code": "executor_offline"},
         "meaning": "executor_offline"},
        {"name": "bad_status_value", "status": 200, "body": {"status": "ok"}, "meaning": "failed",
         "description": "a 2xx body that is not the Answer shape fails the attempt"},
        {"name": "server_error", "status": 500, "body": {"error": "boom"}, "meaning": "failed"},
    ]
    return {"version": 1, "secret": sec, "now": NOW,
            "description": "Delivery bodies exactly as Sundial sends them. `raw_body` is the exact byte string "
                           "signed (compact JSON); `headers` are signed with `secret` at `now`. `expect` is what "
                           "an SDK's context must expose.",
            "deliveries": items, "answers": answers,
            "replay": {"description": "the same webhook-id twice: the second gets the first answer, the handler runs once",
                       "delivery": "plain", "times": 2, "handler_calls": 1}}


def main() -> int:
    out = {"signing.json": signing(), "deliveries.json": deliveries()}
    check = "--check" in sys.argv[1:]
    stale = []
    for name, data in out.items():
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        path = HERE / name
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print("stale vectors (run python3 sdks/vectors/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
