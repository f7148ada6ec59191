// The same executor without the SDK, on node:http and node:crypto: verify the signature in
// constant time, refuse a timestamp off by more than 5 minutes, act once per webhook-id (a
// bounded memory of answers), answer the handler's output.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const SECRET = Buffer.from(process.env.SUNDIAL_SECRET.replace(/^whsec_/, ""), "base64");
const answers = new Map(); // webhook-id -> the answer already given (insertion order: oldest first)
const REMEMBER = 10_000;

function verified(headers, body) {
  const id = headers["webhook-id"] ?? "";
  const ts = headers["webhook-timestamp"] ?? "";
  if (!/^\d+$/.test(ts) || Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const expected = createHmac("sha256", SECRET).update(`${id}.${ts}.`).update(body).digest();
  return (headers["webhook-signature"] ?? "").split(" ").some((s) => {
    if (!s.startsWith("v1,")) return false;
    const got = Buffer.from(s.slice(3), "base64");
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}

createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    let status = 401;
    let answer = '{"code":"bad_signature"}';
    if (verified(req.headers, body)) {
      const id = req.headers["webhook-id"];
      status = 200;
      answer = answers.get(id);
      if (answer === undefined) { // act once per webhook-id
        const run = JSON.parse(body);
        answer = JSON.stringify({ status: "succeeded", output: { greeted: run.params.to } });
        answers.set(id, answer);
        if (answers.size > REMEMBER) answers.delete(answers.keys().next().value);
      }
    }
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) });
    res.end(answer);
  });
}).listen(Number(process.env.PORT), "127.0.0.1");
