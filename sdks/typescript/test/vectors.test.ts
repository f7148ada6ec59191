// The shared conformance vectors (sdks/vectors/*.json, loaded by every SDK's tests): signing,
// verification with the exact error codes, and deliveries as Sundial sends them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Executor, FailNoRetry, sign, verify, WebhookVerificationError, type Context } from "../src/index.js";
import { loadVector, memoryLogger } from "./harness.js";

interface SigningVectors {
  version: number;
  tolerance_secs: number;
  sign: { name: string; secret: string; id: string; timestamp: number; body: string; signature: string }[];
  verify: {
    name: string;
    secrets: string[];
    headers: Record<string, string>;
    body: string;
    now: number;
    ok: boolean;
    error: string | null;
  }[];
}

interface DeliveryVectors {
  version: number;
  secret: string;
  now: number;
  deliveries: {
    name: string;
    headers: Record<string, string>;
    raw_body: string;
    body: Record<string, unknown>;
    expect: {
      run_id: string;
      job_id: string;
      job: string;
      handler: string | null;
      attempt: number;
      params: unknown;
      scheduled_at: string;
      trigger: string;
      shard: { index: number; total: number };
      parent_run_id: string | null;
      parent_output: unknown;
      parents: { job_id: string; run_id: string; state: string; output: unknown }[] | null;
      chain_params: unknown;
    };
  }[];
  answers: { name: string; status: number; body: unknown; meaning: string }[];
  replay: { delivery: string; times: number; handler_calls: number };
}

const signing = loadVector<SigningVectors>("signing.json");
const deliveries = loadVector<DeliveryVectors>("deliveries.json");

describe("signing vectors", () => {
  assert.equal(signing.version, 1);
  for (const v of signing.sign) {
    it(`sign: ${v.name}`, () => {
      assert.equal(sign(v.secret, v.id, v.timestamp, v.body), v.signature);
      assert.equal(sign(v.secret, v.id, v.timestamp, Buffer.from(v.body)), v.signature);
    });
  }
  for (const v of signing.verify) {
    it(`verify: ${v.name}`, () => {
      const run = () => verify(v.secrets, v.headers, v.body, { now: v.now, toleranceSecs: signing.tolerance_secs });
      if (v.ok) {
        assert.equal(run(), v.headers["webhook-id"]);
        // The same through a fetch `Headers` (any case).
        assert.equal(verify(v.secrets, new Headers(v.headers), v.body, { now: v.now }), v.headers["webhook-id"]);
      } else {
        assert.throws(run, (err: unknown) => err instanceof WebhookVerificationError && err.code === v.error);
      }
    });
  }
});

describe("delivery vectors", () => {
  const answers = new Map(deliveries.answers.map((a) => [a.name, a]));

  function executor(calls: Context<unknown>[], clock = deliveries.now * 1000) {
    const ex = new Executor({
      secrets: deliveries.secret,
      appId: "app_01KAV0VECT0RS",
      schedulerUrls: "http://127.0.0.1:9",
      register: false,
      clock: () => clock,
      logger: memoryLogger(),
    });
    for (const d of deliveries.deliveries) {
      if (d.expect.handler) {
        ex.handler(d.expect.handler, (_params, ctx) => {
          calls.push(ctx);
          return { seen: ctx.runId };
        });
      }
    }
    return ex;
  }

  for (const d of deliveries.deliveries) {
    it(`delivery: ${d.name}`, async () => {
      assert.equal(JSON.stringify(JSON.parse(d.raw_body)), JSON.stringify(d.body), "raw_body is the compact body");
      const calls: Context<unknown>[] = [];
      const ex = executor(calls);
      const answer = await ex.handle({ method: "POST", path: "/", headers: d.headers, body: d.raw_body });
      const e = d.expect;
      if (e.handler === null) {
        // A delivery without a handler: this executor serves none such (410 handler_retired).
        assert.equal(answer.status, answers.get("handler_retired")!.status);
        assert.equal((answer.body as { code: string }).code, "handler_retired");
        assert.equal(calls.length, 0);
        return;
      }
      assert.equal(answer.status, 200, JSON.stringify(answer));
      assert.deepEqual(answer.body, { status: "succeeded", output: { seen: e.run_id } });
      assert.equal(calls.length, 1);
      const ctx = calls[0]!;
      assert.equal(ctx.runId, e.run_id);
      assert.equal(ctx.jobId, e.job_id);
      assert.equal(ctx.job, e.job);
      assert.equal(ctx.handler, e.handler);
      assert.equal(ctx.attempt, e.attempt);
      assert.deepEqual(ctx.params, e.params);
      assert.equal(ctx.scheduledAt.toISOString(), e.scheduled_at);
      assert.equal(ctx.trigger, e.trigger);
      assert.deepEqual(ctx.shard, e.shard);
      assert.equal(ctx.parent?.runId ?? null, e.parent_run_id);
      assert.deepEqual(ctx.parentOutput, e.parent_output);
      assert.deepEqual(
        ctx.parents?.map((p) => ({ job_id: p.jobId, run_id: p.runId, state: p.state, output: p.output })) ?? null,
        e.parents,
      );
      assert.deepEqual(ctx.chainParams, e.chain_params);
      assert.equal(ctx.webhookId, d.headers["webhook-id"]);
    });
  }

  it("a delivery signed more than 5 minutes ago is refused 401 stale_timestamp", async () => {
    const d = deliveries.deliveries[0]!;
    const calls: Context<unknown>[] = [];
    const ex = executor(calls, (deliveries.now + 301) * 1000);
    const answer = await ex.handle({ path: "/", headers: d.headers, body: d.raw_body });
    assert.equal(answer.status, 401);
    assert.equal((answer.body as { code: string }).code, "stale_timestamp");
    const altered = await executor(calls).handle({ path: "/", headers: d.headers, body: d.raw_body.replace("1", "2") });
    assert.equal(altered.status, 401);
    assert.equal((altered.body as { code: string }).code, "bad_signature");
    assert.equal(calls.length, 0);
  });

  it(`replay: ${deliveries.replay.delivery} ${deliveries.replay.times} times, the handler runs ${deliveries.replay.handler_calls}`, async () => {
    const d = deliveries.deliveries.find((x) => x.name === deliveries.replay.delivery)!;
    const calls: Context<unknown>[] = [];
    const ex = executor(calls);
    const got = [];
    for (let i = 0; i < deliveries.replay.times; i++) got.push(await ex.handle({ path: "/", headers: d.headers, body: d.raw_body }));
    assert.equal(calls.length, deliveries.replay.handler_calls);
    for (const g of got) assert.deepEqual(g, got[0]);
  });

  it("the answers this SDK gives are the shapes Sundial understands", async () => {
    const d = deliveries.deliveries.find((x) => x.name === "plain")!;
    const ex = new Executor({ secrets: deliveries.secret, register: false, clock: () => deliveries.now * 1000, logger: memoryLogger() });
    ex.handler(d.expect.handler!, () => {
      throw new FailNoRetry("invalid params: day is required");
    });
    const failed = await ex.handle({ path: "/", headers: d.headers, body: d.raw_body });
    const want = answers.get("failed_do_not_retry")!;
    assert.equal(failed.status, want.status);
    assert.deepEqual(failed.body, want.body);

    const draining = new Executor({ secrets: deliveries.secret, register: false, clock: () => deliveries.now * 1000, logger: memoryLogger() });
    await draining.stop();
    const offline = await draining.handle({ path: "/", headers: d.headers, body: d.raw_body });
    assert.equal(offline.status, answers.get("executor_offline")!.status);
    assert.equal((offline.body as { code: string }).code, "executor_offline");
  });
});
