// The SDK against a real `sundial serve` (embedded SQLite, port 0) that these tests start and stop:
// executors register, get fired, answer synchronously and by callback, log, are cancelled,
// retried, drained; shards, a child run, a do-not-retry failure, and the management client.
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import {
  Executor,
  FailNoRetry,
  signedHeaders,
  SundialApiError,
  SundialClient,
  type Context,
  type ExecutorOptions,
  type Listening,
  type Schemas,
} from "../src/index.js";
import { memoryLogger, sleep, Sundial, waitFor } from "./harness.js";

const sundial = new Sundial();
let api: SundialClient;
const stops: (() => Promise<unknown>)[] = [];
/** A URL nothing listens on: the executor must move on to the live scheduler URL. */
const DEAD_URL = "http://127.0.0.1:9";

before(async () => {
  await sundial.start();
  api = await sundial.tenant("ts-sdk");
});

after(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  const code = await sundial.stop();
  assert.equal(code, 0, "sundial exits 0 after SIGTERM");
});

interface Running {
  ex: Executor;
  app: Schemas["AppWithSecret"];
  served: Listening;
  logger: ReturnType<typeof memoryLogger>;
}

/** An app with no static endpoint, and an executor that registers for it (several scheduler URLs, the first dead). */
async function executorFor(appName: string, setup: (ex: Executor) => void, options: Partial<ExecutorOptions> = {}, app?: Schemas["AppWithSecret"]): Promise<Running> {
  app ??= await api.createApp({ name: appName });
  const logger = memoryLogger(`[${appName}] `);
  const ex = new Executor({
    secrets: [app.secret],
    appId: app.id,
    schedulerUrls: [DEAD_URL, sundial.base],
    logger,
    logFlushMs: 50,
    ...options,
  });
  setup(ex);
  const served = await ex.listen(0, { host: "127.0.0.1", handleSignals: false, graceMs: 5000 });
  stops.push(() => served.close());
  return { ex, app, served, logger };
}

async function manualJob(name: string, app: string, handler: string, extra: Partial<Schemas["JobInput"]> = {}) {
  return api.createJob({ name, app, handler, schedule: { kind: "manual" }, ...extra });
}

const FINAL = ["succeeded", "failed", "cancelled", "skipped", "expired"];

async function finished(runId: string, timeoutMs = 15_000) {
  return api.waitForRun(runId, { states: FINAL, timeoutMs });
}

describe("an executor against a real sundial serve", () => {
  it("registers, gets fired and answers synchronously; a callback after the time budget", async () => {
    const seen: Context<unknown>[] = [];
    const statuses: number[] = [];
    const { ex, app } = await executorFor(
      "ts-basic",
      (ex) => {
        ex.handler<{ to: string }>("hello", (params, ctx) => {
          seen.push(ctx);
          return { greeted: params.to, attempt: ctx.attempt };
        });
        ex.handler<{ ms: number }>("slow", async (params, ctx) => {
          await sleep(params.ms);
          return { slept: params.ms, run: ctx.runId };
        });
        ex.handler("later", (_params, ctx) => {
          ctx.answerLater();
          return { chosen: "by the handler" };
        });
      },
      { syncBudgetMs: 300 },
    );
    // Record the HTTP statuses the executor answers with.
    const handle = ex.handleDelivery.bind(ex);
    ex.handleDelivery = async (h, b) => {
      const answer = await handle(h, b);
      statuses.push(answer.status);
      return answer;
    };
    assert.ok(ex.id, "registered: Sundial gave it an id");
    const executors = await api.get("/api/v1/apps/{id}/executors", { params: { path: { id: app.id } } });
    const mine = executors.items.find((e) => e.id === ex.id);
    assert.ok(mine, JSON.stringify(executors));
    assert.equal(mine.state, "online");
    assert.deepEqual([...mine.handlers].sort(), ["hello", "later", "slow"]);

    const job = await manualJob("ts-hello", "ts-basic", "hello");
    const run = await api.triggerJob(job.id, { params: { to: "world" } });
    const done = await finished(run.id);
    assert.equal(done.state, "succeeded", JSON.stringify(done));
    assert.deepEqual(done.output, { greeted: "world", attempt: 1 });
    assert.equal(done.attempts[0]!.executor_id, ex.id);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.runId, run.id);
    assert.equal(seen[0]!.jobId, job.id);
    assert.equal(seen[0]!.job, "ts-hello");
    assert.deepEqual(seen[0]!.shard, { index: 0, total: 1 });
    assert.equal(seen[0]!.parent, null);
    assert.equal(seen[0]!.webhookId, `msg_${run.id}_0_1`);
    assert.equal(statuses.shift(), 200);

    // Past the 300 ms budget: 202 at once, then the signed result callback.
    const slowJob = await manualJob("ts-slow", "ts-basic", "slow");
    const slow = await finished((await api.triggerJob(slowJob.id, { params: { ms: 900 } })).id);
    assert.equal(slow.state, "succeeded", JSON.stringify(slow));
    assert.deepEqual(slow.output, { slept: 900, run: slow.id });
    assert.equal(statuses.shift(), 202);

    const laterJob = await manualJob("ts-later", "ts-basic", "later");
    const later = await finished((await api.triggerJob(laterJob.id)).id);
    assert.equal(later.state, "succeeded", JSON.stringify(later));
    assert.deepEqual(later.output, { chosen: "by the handler" });
    assert.equal(statuses.shift(), 202);
  });

  it("sends log lines and progress to the run", async () => {
    await executorFor("ts-logs", (ex) =>
      ex.handler("logs", async (_p, ctx) => {
        ctx.log("starting");
        ctx.log({ rows: 3 }, "debug");
        ctx.progress(1, 4, "first quarter");
        ctx.log("careful", "warn");
        return "done";
      }),
    );
    const job = await manualJob("ts-logs", "ts-logs", "logs");
    const run = await finished((await api.triggerJob(job.id)).id);
    assert.equal(run.state, "succeeded");
    const lines = (await waitFor("the four log lines", async () => {
      const r = await api.getRun(run.id);
      return r.logs.length >= 4 ? r.logs : null;
    })).map((l) => [l.level, l.message, l.attempt]);
    assert.deepEqual(lines, [
      ["info", "starting", 1],
      ["debug", '{"rows":3}', 1],
      ["info", "progress 1/4 (25%): first quarter", 1],
      ["warn", "careful", 1],
    ]);
  });

  it("a failed attempt is retried as the next attempt; FailNoRetry and a schema mismatch are not", async () => {
    const attempts: number[] = [];
    let schemaCalls = 0;
    await executorFor("ts-fail", (ex) => {
      ex.handler("flaky", (_p, ctx) => {
        attempts.push(ctx.attempt);
        if (ctx.attempt === 1) throw new Error("the upstream said 500");
        return { attempt: ctx.attempt };
      });
      ex.handler("hopeless", () => {
        throw new FailNoRetry("invalid params: day is required");
      });
      ex.handler(
        "typed",
        (params) => {
          schemaCalls++;
          const n: number = params.n; // typed by the schema
          return { doubled: n * 2 };
        },
        { schema: z.object({ n: z.number().int() }) },
      );
    });
    const failure = { policy: "retry" as const, max_retries: 3, backoff: { kind: "fixed" as const, base_ms: 200, jitter: false } };

    const flaky = await manualJob("ts-flaky", "ts-fail", "flaky", { failure });
    const retried = await finished((await api.triggerJob(flaky.id)).id);
    assert.equal(retried.state, "succeeded", JSON.stringify(retried));
    assert.equal(retried.attempt, 2);
    assert.deepEqual(retried.output, { attempt: 2 });
    assert.deepEqual(attempts, [1, 2]);
    assert.equal(retried.attempts[0]!.state, "failed");
    assert.match(retried.attempts[0]!.message ?? "", /the upstream said 500/);

    const hopeless = await manualJob("ts-hopeless", "ts-fail", "hopeless", { failure });
    const failed = await finished((await api.triggerJob(hopeless.id)).id);
    assert.equal(failed.state, "failed", JSON.stringify(failed));
    assert.equal(failed.attempts.length, 1, "not retried");
    assert.match(failed.message ?? "", /invalid params: day is required/);

    const typed = await manualJob("ts-typed", "ts-fail", "typed", { failure });
    const good = await finished((await api.triggerJob(typed.id, { params: { n: 21 } })).id);
    assert.deepEqual(good.output, { doubled: 42 });
    const bad = await finished((await api.triggerJob(typed.id, { params: { n: "x" } })).id);
    assert.equal(bad.state, "failed");
    assert.equal(bad.attempts.length, 1, "a payload that does not match is not retried");
    assert.match(bad.message ?? "", /params do not match the schema of handler `typed`: n: Expected number, received string/);
    assert.equal(schemaCalls, 1, "the handler never saw the bad payload");
  });

  it("answers a repeated webhook-id from memory: the handler runs once", async () => {
    // The executor mounted in our own server (the node adapter), which keeps each request's bytes.
    const app = await api.createApp({ name: "ts-replay" });
    let calls = 0;
    const ex = new Executor({ secrets: app.secret, appId: app.id, schedulerUrls: sundial.base, logger: memoryLogger() });
    ex.handler("once", () => ({ call: ++calls }));
    const handler = ex.nodeHandler();
    const seen: { headers: IncomingHttpHeaders; body: Buffer; url: string }[] = [];
    const server: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        seen.push({ headers: req.headers, body, url: req.url ?? "/" });
        (req as { body?: Buffer }).body = body; // as express.raw() leaves it
        void handler(req, res);
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/sundial`;
    await ex.start(url);
    stops.push(async () => {
      await ex.stop();
      server.close();
      server.closeAllConnections();
    });
    const job = await manualJob("ts-once", "ts-replay", "once");
    const run = await finished((await api.triggerJob(job.id)).id);
    assert.deepEqual(run.output, { call: 1 });
    const first = seen.find((s) => s.url === "/sundial")!;
    // Sundial's exact request again (as a node that died mid-delivery would redeliver it).
    const again = await fetch(url, {
      method: "POST",
      headers: Object.fromEntries(Object.entries(first.headers).filter(([k]) => k.startsWith("webhook-") || k.startsWith("sundial-") || k === "content-type")) as Record<string, string>,
      body: new Uint8Array(first.body),
    });
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), { status: "succeeded", output: { call: 1 } });
    assert.equal(calls, 1);
    // The same bytes with a signature that does not match: 401, with the reason.
    const forged = await fetch(url, { method: "POST", headers: { ...(first.headers as Record<string, string>), "webhook-signature": "v1,AAAA" }, body: new Uint8Array(first.body) });
    assert.equal(forged.status, 401);
    assert.deepEqual(await forged.json(), { code: "bad_signature", message: "no signature matches the app's secret(s)" });
  });

  it("a cancel through the API reaches the handler's ctx.signal", async () => {
    let aborted: unknown;
    let started = false;
    await executorFor("ts-cancel", (ex) =>
      ex.handler("wait", async (_p, ctx) => {
        ctx.answerLater();
        started = true;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 20_000);
          ctx.signal.addEventListener("abort", () => {
            aborted = ctx.signal.reason;
            clearTimeout(timer);
            resolve();
          });
        });
        return "not cancelled";
      }),
    );
    const job = await manualJob("ts-wait", "ts-cancel", "wait");
    const run = await api.triggerJob(job.id);
    await waitFor("the handler to start", () => started);
    await waitFor("the run to be running", async () => (await api.getRun(run.id)).state === "running");
    await api.cancelRun(run.id);
    await waitFor("the cancel to reach the handler", () => aborted !== undefined, 10_000);
    assert.ok(aborted instanceof DOMException && aborted.name === "AbortError", String(aborted));
    assert.match((aborted as DOMException).message, new RegExp(`run ${run.id} attempt 1 was cancelled`));
    assert.equal((await api.getRun(run.id)).state, "cancelled");
  });

  it("a sharded run: one shard per executor, the output in index order", async () => {
    const a = await executorFor("ts-shards", (ex) => ex.handler("part", (_p, ctx) => ({ shard: ctx.shard.index, of: ctx.shard.total })));
    await executorFor("ts-shards-2", (ex) => ex.handler("part", (_p, ctx) => ({ shard: ctx.shard.index, of: ctx.shard.total })), {}, a.app);
    const job = await manualJob("ts-sharded", "ts-shards", "part", { route: "sharding" });
    const run = await finished((await api.triggerJob(job.id)).id);
    assert.equal(run.state, "succeeded", JSON.stringify(run));
    assert.deepEqual(run.output, [
      { shard: 0, of: 2 },
      { shard: 1, of: 2 },
    ]);
    assert.equal(run.shards.length, 2);
  });

  it("a child run receives its parent's output and the chain's params", async () => {
    let childCtx: Context<Record<string, unknown>> | undefined;
    await executorFor("ts-chain", (ex) => {
      ex.handler("extract", (params) => ({ orders: 3, day: params["day"] }));
      ex.handler("load", (_p, ctx) => {
        childCtx = ctx;
        return { loaded: ctx.parentOutput };
      });
    });
    const child = await manualJob("ts-load", "ts-chain", "load", { params: { dry_run: false } });
    const parent = await manualJob("ts-extract", "ts-chain", "extract", { children: [child.id] });
    const root = await finished((await api.triggerJob(parent.id, { params: { day: "2026-11-25" } })).id);
    assert.equal(root.state, "succeeded");
    const runs = await waitFor("the child run to finish", async () => {
      const page = await api.get("/api/v1/runs", { params: { query: { chain_id: root.id } } });
      return page.items.length === 2 && page.items.every((r) => FINAL.includes(r.state)) ? page.items : null;
    });
    const childRun = runs.find((r) => r.job_id === child.id)!;
    assert.equal(childRun.state, "succeeded");
    assert.deepEqual(childRun.output, { loaded: { orders: 3, day: "2026-11-25" } });
    assert.ok(childCtx);
    assert.equal(childCtx.trigger, "parent");
    assert.deepEqual(childCtx.parent, { runId: root.id, output: { orders: 3, day: "2026-11-25" } });
    assert.deepEqual(childCtx.chainParams, { day: "2026-11-25" });
    assert.deepEqual(childCtx.params, { dry_run: false, day: "2026-11-25" });
  });

  it("stops gracefully: 503 while draining, the run in progress finishes, then it deregisters", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = false;
    const { ex, app, served } = await executorFor("ts-drain", (ex) =>
      ex.handler("long", async () => {
        started = true;
        await gate;
        return { finished: true };
      }),
    );
    const job = await manualJob("ts-long", "ts-drain", "long");
    const run = await api.triggerJob(job.id);
    await waitFor("the handler to start", () => started);
    // Heartbeats list the run in progress (every 3 s).
    await waitFor("a heartbeat with the run in progress", async () => {
      const list = await api.get("/api/v1/apps/{id}/executors", { params: { path: { id: app.id } } });
      return list.items[0]?.running === 1;
    }, 8000);
    assert.deepEqual(ex.runningRuns, [run.id]);
    const closing = served.close();
    assert.ok(ex.isDraining);
    // A new delivery now, signed with the app's secret: 503 executor_offline.
    const body = JSON.stringify({ run_id: "run_new", job_id: job.id, job: "ts-long", handler: "long", params: {}, attempt: 1, scheduled_at: new Date().toISOString(), trigger: "api", shard: { index: 0, total: 1 } });
    const offline = await fetch(served.address, { method: "POST", headers: { "content-type": "application/json", ...signedHeaders([app.secret], body) }, body });
    assert.equal(offline.status, 503);
    assert.equal(((await offline.json()) as { code: string }).code, "executor_offline");
    release();
    await closing;
    const done = await finished(run.id);
    assert.equal(done.state, "succeeded", JSON.stringify(done));
    assert.deepEqual(done.output, { finished: true });
    const executors = await api.get("/api/v1/apps/{id}/executors", { params: { path: { id: app.id } } });
    assert.equal(executors.items.length, 1);
    assert.equal(executors.items[0]!.state, "offline", JSON.stringify(executors.items[0]));
  });

  it("the fetch-style adapter: a delivery and a cancel through (Request) => Promise<Response>", async () => {
    const app = await api.createApp({ name: "ts-fetch" });
    let aborted = false;
    const ex = new Executor({ secrets: app.secret, appId: app.id, schedulerUrls: sundial.base, logger: memoryLogger() });
    ex.handler("fetch.echo", (params) => ({ via: "fetch", params }));
    ex.handler("fetch.wait", async (_p, ctx) => {
      ctx.answerLater();
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
      aborted = true;
      return null;
    });
    const handler = ex.fetchHandler();
    // A minimal bridge from node:http to the fetch API, as Deno.serve or Bun.serve would call it.
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const request = new Request(`http://127.0.0.1${req.url}`, {
          method: req.method ?? "POST",
          headers: Object.entries(req.headers).map(([k, v]) => [k, String(v)] as [string, string]),
          body: new Uint8Array(Buffer.concat(chunks)),
        });
        const response = await handler(request);
        const headers: Record<string, string> = {};
        response.headers.forEach((value, key) => (headers[key] = value));
        res.writeHead(response.status, headers);
        res.end(Buffer.from(await response.arrayBuffer()));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    await ex.start(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/sundial`);
    stops.push(async () => {
      await ex.stop({ graceMs: 1000 });
      server.close();
      server.closeAllConnections();
    });
    const echo = await manualJob("ts-fetch-echo", "ts-fetch", "fetch.echo");
    const done = await finished((await api.triggerJob(echo.id, { params: { k: "v" } })).id);
    assert.deepEqual(done.output, { via: "fetch", params: { k: "v" } });
    const wait = await manualJob("ts-fetch-wait", "ts-fetch", "fetch.wait");
    const run = await api.triggerJob(wait.id);
    await waitFor("the run to be running", async () => (await api.getRun(run.id)).state === "running");
    await api.cancelRun(run.id);
    await waitFor("the cancel at /api/sundial/cancel to reach the handler", () => aborted, 10_000);
  });

  it("a secret rotation: deliveries (signed with both) verify with the new secret alone, and so do the callbacks", async () => {
    const { ex, app } = await executorFor("ts-rotate", (ex) => ex.handler("rot", (_p, ctx) => ({ attempt: ctx.attempt })), { mode: "async" });
    const rotated = await api.post("/api/v1/apps/{id}/rotate-secret", { params: { path: { id: app.id } } });
    assert.notEqual(rotated.secret, app.secret);
    ex.setSecrets([rotated.secret]); // Sundial signs with both during the grace period: the new one suffices
    const job = await manualJob("ts-rot", "ts-rotate", "rot");
    const run = await finished((await api.triggerJob(job.id)).id);
    assert.equal(run.state, "succeeded", JSON.stringify(run));
    assert.deepEqual(run.output, { attempt: 1 });
  });

  it("answers 410 handler_retired for a handler it does not serve", async () => {
    const { app, served } = await executorFor("ts-retired", (ex) => ex.handler("current", () => null));
    const body = JSON.stringify({ run_id: "run_x", job_id: "job_x", job: "old", handler: "old", params: {}, attempt: 1, scheduled_at: new Date().toISOString(), trigger: "api", shard: { index: 0, total: 1 } });
    const answer = await fetch(served.address, { method: "POST", headers: { "content-type": "application/json", ...signedHeaders([app.secret], body) }, body });
    assert.equal(answer.status, 410);
    assert.equal(((await answer.json()) as { code: string }).code, "handler_retired");
  });
});

describe("the management client against a real sundial serve", () => {
  it("creates an app and a job, triggers (idempotently), reads the run; a bad request is a typed error", async () => {
    const app = await api.createApp({ name: "ts-mgmt", endpoints: [] });
    assert.match(app.secret, /^whsec_/);
    await executorFor("ts-mgmt", (ex) => ex.handler("echo", (params) => ({ echo: params })), {}, app);
    const job = await api.createJob({ name: "ts-echo", app: "ts-mgmt", handler: "echo", schedule: { kind: "manual" }, params: { a: 1 } });
    assert.equal(job.state, "active");

    const first = await api.triggerJob(job.id, { params: { n: 1 } }, { idempotencyKey: "ts-key-1" });
    const repeat = await api.triggerJob(job.id, { params: { n: 1 } }, { idempotencyKey: "ts-key-1" });
    assert.equal(repeat.id, first.id, "the same Idempotency-Key answers the first run");
    const other = await api.triggerJob(job.id, { params: { n: 2 } });
    assert.notEqual(other.id, first.id);
    const run = await finished(first.id);
    assert.deepEqual(run.output, { echo: { n: 1 } });
    await finished(other.id);

    // Pages: two runs of this job, one per page, through the iterator.
    const ids: string[] = [];
    for await (const r of api.paginate("/api/v1/runs", { params: { query: { job_id: job.id, limit: 1 } } })) ids.push(r.id);
    assert.deepEqual([...ids].sort(), [first.id, other.id].sort());

    // A bad cron expression: 422 invalid_cron naming the field.
    await assert.rejects(
      api.createJob({ name: "ts-bad", app: "ts-mgmt", handler: "echo", schedule: { kind: "cron", expression: "0 61 * * * *" } }),
      (err: unknown) => {
        assert.ok(err instanceof SundialApiError, String(err));
        assert.equal(err.status, 422);
        assert.equal(err.code, "invalid_cron");
        assert.equal(err.field, "schedule.expression");
        assert.match(err.message, /minute field/);
        return true;
      },
    );
    await assert.rejects(api.getRun("run_does_not_exist"), (err: unknown) => err instanceof SundialApiError && err.status === 404 && err.code === "not_found");
    // Typed requests: the compiler refuses what the spec refuses.
    // @ts-expect-error a job needs a schedule
    await api.createJob({ name: "ts-x", app: "ts-mgmt", handler: "echo" }).catch(() => undefined);
    // @ts-expect-error no such path
    await api.get("/api/v1/nothing").catch(() => undefined);
  });

  it("creates jobs in one batch, all or none, naming each refused item", async () => {
    await api.createApp({ name: "ts-batch", endpoints: [] });
    const item = (name: string, expression = "0 0 3 * * *") =>
      ({ name, app: "ts-batch", handler: "h", schedule: { kind: "cron" as const, expression } });
    const jobs = await api.createJobs([item("ts-b1"), item("ts-b2"), item("ts-b3")]);
    assert.deepEqual(jobs.map((j) => j.name), ["ts-b1", "ts-b2", "ts-b3"], "in the request's order");
    assert.equal((await api.getJob(jobs[1]!.id)).name, "ts-b2");

    await assert.rejects(api.createJobs([item("ts-b4"), item("ts-b5", "0 61 * * * *"), item("ts-b1")]), (err: unknown) => {
      assert.ok(err instanceof SundialApiError, String(err));
      assert.equal(err.status, 422);
      assert.equal(err.field, "jobs");
      const errors = (err.details as { errors: { index: number; field: string; code: string }[] }).errors;
      assert.deepEqual(
        errors.map((e) => [e.index, e.field, e.code]),
        [[1, "schedule.expression", "invalid_cron"], [2, "name", "conflict"]],
      );
      return true;
    });
    const names: string[] = [];
    for await (const j of api.paginate("/api/v1/jobs", { params: { query: { app: "ts-batch" } } })) names.push(j.name);
    assert.deepEqual(names.sort(), ["ts-b1", "ts-b2", "ts-b3"], "nothing of the refused batch was created");
  });
});
