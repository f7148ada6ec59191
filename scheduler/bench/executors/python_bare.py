"""The same executor without the SDK: a bare ASGI app under uvicorn (one process) doing what
every executor must (docs/executors.md, "Verify, and act once"): verify the signature in constant time,
refuse a timestamp off by more than 5 minutes, act once per webhook-id (a bounded memory of
answers), answer the handler's output."""
import base64
import hashlib
import hmac
import json
import os
import time
from collections import OrderedDict

import uvicorn

SECRET = base64.b64decode(os.environ["SUNDIAL_SECRET"].removeprefix("whsec_"))
answers: "OrderedDict[str, bytes]" = OrderedDict()  # webhook-id -> the answer already given
REMEMBER = 10_000


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    msg_id, ts = headers.get("webhook-id", ""), headers.get("webhook-timestamp", "0")
    mac = hmac.new(SECRET, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    expected = "v1," + base64.b64encode(mac).decode()
    signatures = headers.get("webhook-signature", "").split()
    if not ts.isdigit() or abs(time.time() - int(ts)) > 300 or not any(hmac.compare_digest(expected, s) for s in signatures):
        status, answer = 401, b'{"code":"bad_signature"}'
    else:
        status = 200
        answer = answers.get(msg_id)
        if answer is None:  # act once per webhook-id
            run = json.loads(body)
            answer = json.dumps({"status": "succeeded", "output": {"greeted": run["params"]["to"]}}).encode()
            answers[msg_id] = answer
            if len(answers) > REMEMBER:
                answers.popitem(last=False)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]})
    await send({"type": "http.response.body", "body": answer})


uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning", access_log=False, lifespan="off")
