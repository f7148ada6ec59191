// Standard Webhooks signing, as Sundial signs its deliveries and cancels and as an executor signs
// its calls to Sundial: `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`, the key being
// the base64-decoded secret after `whsec_`. Several signatures (a secret rotation) are separated
// by spaces; one that matches any of the verifier's secrets is enough.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** Seconds a `webhook-timestamp` may be off, either way (the protocol's 5 minutes). */
export const DEFAULT_TOLERANCE_SECS = 300;

/** Why a signed message was refused; the code is the body of the executor's `401` answer. */
export type VerifyErrorCode =
  | "missing_header"
  | "bad_timestamp"
  | "stale_timestamp"
  | "future_timestamp"
  | "bad_signature";

export class WebhookVerificationError extends Error {
  readonly code: VerifyErrorCode;
  constructor(code: VerifyErrorCode, message: string) {
    super(message);
    this.name = "WebhookVerificationError";
    this.code = code;
  }
}

/** The secret's HMAC key: the base64 after `whsec_` (a secret without the prefix is accepted). */
export function secretKey(secret: string): Buffer {
  const b64 = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) {
    throw new TypeError("a signing secret is `whsec_` followed by base64");
  }
  const key = Buffer.from(b64, "base64");
  if (key.length === 0) throw new TypeError("empty signing secret");
  return key;
}

function toBytes(body: string | Uint8Array): Buffer {
  return typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/** One signature, `v1,<base64>`, of `body` sent as message `id` at `timestamp` (Unix seconds). */
export function sign(secret: string, id: string, timestamp: number | string, body: string | Uint8Array): string {
  const mac = createHmac("sha256", secretKey(secret));
  mac.update(`${id}.${timestamp}.`, "utf8");
  mac.update(toBytes(body));
  return `v1,${mac.digest("base64")}`;
}

/** The `webhook-signature` header for several secrets (one signature each, space separated). */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number | string, body: string | Uint8Array): string {
  return secrets.map((s) => sign(s, id, timestamp, body)).join(" ");
}

/** A fresh message id for a call to Sundial (every node refuses a repeated one as a replay). */
export function newMessageId(): string {
  return `msg_${randomBytes(16).toString("hex")}`;
}

/** The three headers of a signed message, ready to send. */
export function signedHeaders(secrets: readonly string[], body: string | Uint8Array, now: Date = new Date()): Record<string, string> {
  const id = newMessageId();
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signatureHeader(secrets, id, timestamp, body),
  };
}

/** Header lookup that works on a plain object (any case), a `Headers`, or node's `IncomingHttpHeaders`. */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

export function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function" && typeof (headers as Headers).has === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  let value = record[name];
  if (value === undefined) {
    const lower = name.toLowerCase();
    for (const key of Object.keys(record)) {
      if (key.toLowerCase() === lower) {
        value = record[key];
        break;
      }
    }
  }
  return Array.isArray(value) ? value.join(" ") : value;
}

export interface VerifyOptions {
  /** Seconds a timestamp may be off, either way (default 300). */
  toleranceSecs?: number;
  /** The current time, for tests (default: now). */
  now?: Date | number;
}

/**
 * Checks a signed message: the three headers present, the timestamp a whole number of seconds
 * within the tolerance of now, and one of its `v1` signatures made with one of `secrets`
 * (compared in constant time). Returns the message id; throws {@link WebhookVerificationError}.
 */
export function verify(
  secrets: readonly string[],
  headers: HeaderSource,
  body: string | Uint8Array,
  options: VerifyOptions = {},
): string {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id) throw new WebhookVerificationError("missing_header", "missing header webhook-id");
  if (timestamp === undefined) throw new WebhookVerificationError("missing_header", "missing header webhook-timestamp");
  if (signatures === undefined) throw new WebhookVerificationError("missing_header", "missing header webhook-signature");
  if (!/^\d{1,15}$/.test(timestamp.trim())) {
    throw new WebhookVerificationError("bad_timestamp", `webhook-timestamp is not Unix seconds: ${JSON.stringify(timestamp.slice(0, 40))}`);
  }
  const ts = Number(timestamp.trim());
  const nowMs = options.now === undefined ? Date.now() : typeof options.now === "number" ? options.now * 1000 : options.now.getTime();
  const now = Math.floor(nowMs / 1000);
  const tolerance = options.toleranceSecs ?? DEFAULT_TOLERANCE_SECS;
  if (now - ts > tolerance) {
    throw new WebhookVerificationError("stale_timestamp", `webhook-timestamp is ${now - ts} s old (at most ${tolerance})`);
  }
  if (ts - now > tolerance) {
    throw new WebhookVerificationError("future_timestamp", `webhook-timestamp is ${ts - now} s in the future (at most ${tolerance})`);
  }
  const bytes = toBytes(body);
  const offered = signatures
    .split(" ")
    .filter((s) => s.startsWith("v1,"))
    .map((s) => Buffer.from(s.slice(3), "base64"));
  for (const secret of secrets) {
    const mac = createHmac("sha256", secretKey(secret));
    mac.update(`${id}.${timestamp}.`, "utf8");
    mac.update(bytes);
    const expected = mac.digest();
    for (const candidate of offered) {
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) return id;
    }
  }
  throw new WebhookVerificationError("bad_signature", "no signature matches the app's secret(s)");
}
