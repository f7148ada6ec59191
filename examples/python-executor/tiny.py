"""A complete Sundial executor in ~30 lines of standard-library Python.

It verifies each delivery's signature (Standard Webhooks), acts once per
`webhook-id` (a redelivery after a scheduler crash carries the same id), runs
the work, and answers synchronously. Run it with the app's secret:

    SUNDIAL_SECRET=whsec_... PORT=9000 python3 tiny.py
"""
import base64, hashlib, hmac, json, os, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = base64.b64decode(os.environ["SUNDIAL_SECRET"].removeprefix("whsec_"))
answers = {}  # webhook-id -> the answer already given


class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        msg_id, ts = self.headers.get("webhook-id", ""), self.headers.get("webhook-timestamp", "0")
        mac = hmac.new(SECRET, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
        expected = "v1," + base64.b64encode(mac).decode()
        signatures = self.headers.get("webhook-signature", "").split()
        if abs(time.time() - int(ts)) > 300 or not any(hmac.compare_digest(expected, s) for s in signatures):
            return self.reply(401, {"code": "bad_signature"})
        if msg_id not in answers:  # act once per webhook-id
            run = json.loads(body)
            print(f"run {run['run_id']} attempt {run['attempt']}: {run['handler']}({run['params']})", flush=True)
            answers[msg_id] = {"status": "succeeded", "output": {"echo": run["params"]}}
        self.reply(200, answers[msg_id])

    def reply(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "9000"))), Hook).serve_forever()
