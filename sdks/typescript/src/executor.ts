// The executor: handlers by name, every delivery verified, each webhook-id acted on once, a
// synchronous answer or 202 and a signed result callback, logs and cancellation reaching the
// handler, and the executor's life with Sundial (register, heartbeat, deregister).
import type { components } from "./generated/schema.js";
import { fetchHandler, listen, type Listening, type ListenOptions, nodeHandler } from "./adapters.js";
import { CallRefused, consoleLogger, type Logger, SignedCaller } from "./calls.js";
import { FailNoRetry, ParamsMismatchError } from "./errors.js";
import { DEFAULT_TOLERANCE_SECS, type HeaderSource, secretKey, verify, WebhookVerificationError } from "./signing.js";

/** The JSON body of a delivery, exactly as Sundial sends it (the spec's `Delivery`). */
export type Delivery = components["schemas"]["Delivery"];
/** The JSON body of a cancel (the spec's `Cancel`). */
export type CancelBody = components["schemas"]["Cancel"];
/** A synchronous answer or a result (the spec's `Answer`). */
export type Answer = components["schemas"]["Answer"];
export type RunState = components["schemas"]["RunState"];

export type LogLevel = "debug" | "info" | "warn" | "error";

/** One parent of a fan-in run. */
export interface ParentRun {
  jobId: string;
  runId: string;
  state: RunState;
  output: unknown;
}

/** What a handler knows about the run it works on. */
export interface Context<P = unknown> {
  readonly runId: string;
  /** This attempt's number, from 1 (a shard's own attempt for a sharded run). */
  readonly attempt: number;
  readonly jobId: string;
  /** The job's name. */
  readonly job: string;
  readonly handler: string;
  /** The run's params, after the handler's schema parsed them (if it has one). */
  readonly params: P;
  /** The instant the run is for. */
  readonly scheduledAt: Date;
  /** `schedule`, `manual`, `parent`, … */
  readonly trigger: string;
  readonly shard: { readonly index: number; readonly total: number };
  /** The parent run and its output, for a run fired by one parent; else null. */
  readonly parent: { readonly runId: string; readonly output: unknown } | null;
  /** The parent's output (a sharded parent's: the array of its shards' outputs); null without a parent. */
  readonly parentOutput: unknown;
  /** Every parent that had ended in the chain, for a fan-in run; else null. */
  readonly parents: readonly ParentRun[] | null;
  /** The params the chain's root was triggered with (already merged into `params`); else null. */
  readonly chainParams: unknown;
  /** The delivery's `webhook-id`. */
  readonly webhookId: string;
  /** The delivery as sent. */
  readonly delivery: Delivery;
  /** Aborted when Sundial cancels this attempt (a timeout, a cancel through the API) or the executor stops. */
  readonly signal: AbortSignal;
  /** A log line for the run (sent to Sundial in batches; shown with the run). */
  log(message: unknown, level?: LogLevel): void;
  /** Progress, as a log line sent at once: `progress(3, 10, "rows")` → `progress 3/10 (30%): rows`. */
  progress(done: number, total?: number, message?: string): void;
  /** Answer `202` now if not answered yet: the result goes to Sundial by a signed callback. */
  answerLater(): void;
}

/** Anything with zod's `safeParse` or `parse` (zod 3 and 4, valibot's wrappers, a hand-written object). */
export type ParamsSchema<P> =
  | { safeParse(input: unknown): { success: true; data: P } | { success: false; error: unknown } }
  | { parse(input: unknown): P };

export type HandlerFn<P, O> = (params: P, ctx: Context<P>) => O | Promise<O>;

/**
 * How a handler answers: `sync` (200 with the result, however long it takes), `async` (202 at
 * once, the result by callback), `auto` (200 if the handler is done within the executor's
 * `syncBudgetMs`, else 202 and the callback). The handler may also call `ctx.answerLater()`.
 */
export type AnswerMode = "sync" | "async" | "auto";

export interface HandlerOptions<P> {
  schema?: ParamsSchema<P>;
  mode?: AnswerMode;
}

export interface ExecutorOptions {
  /** The app's signing secret(s), `whsec_…`; several during a rotation. Default: `SUNDIAL_SECRET` (comma separated). */
  secrets?: string | readonly string[];
  /** The app's id (`app_…`), sent as `sundial-app-id` on calls to Sundial. Default: `SUNDIAL_APP_ID`. */
  appId?: string;
  /** Sundial's base URL(s); any live one is used. Default: `SUNDIAL_URL` (comma separated) or `http://127.0.0.1:7700`. */
  schedulerUrls?: string | readonly string[];
  /** The URL Sundial delivers to. Default: `SUNDIAL_EXECUTOR_URL`, else `listen()` uses `http://127.0.0.1:<port>/`. */
  address?: string;
  /** Register with Sundial (and heartbeat, and deregister on stop). Default true. */
  register?: boolean;
  name?: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  /** `auto` answers: how long to wait for the handler before answering 202. Default 10 000 ms. */
  syncBudgetMs?: number;
  /** The default answer mode of handlers. Default `auto`. */
  mode?: AnswerMode;
  /** Seconds a timestamp may be off. Default 300. */
  toleranceSecs?: number;
  /** How long answers are remembered per webhook-id; at least 10 minutes. Default 15 minutes. */
  rememberMs?: number;
  /** At most this many webhook-ids are remembered (the oldest go first). Default 100 000. */
  rememberMax?: number;
  /** Log lines are sent at most this long after they are written. Default 250 ms. */
  logFlushMs?: number;
  /** Timeout of one call to Sundial. Default 10 000 ms. */
  callTimeoutMs?: number;
  /** Delays between tries of a result callback (ms). Default 0.5, 1, 2, 4, 8, 16 s. */
  resultRetryDelaysMs?: readonly number[];
  /** Largest delivery body read. Default 2 MiB. */
  maxBodyBytes?: number;
  fetch?: typeof fetch;
  logger?: Logger;
  /** The current time in ms, for signature timestamps checks (tests). Default `Date.now`. */
  clock?: () => number;
}

/** What the executor answers to one HTTP request; adapters write it out. */
export interface ExecutorResponse {
  status: number;
  body: unknown;
}

/** One HTTP request as the adapters hand it over. */
export interface ExecutorRequest {
  method?: string;
  path?: string;
  headers: HeaderSource;
  body: string | Uint8Array;
}

interface Registered {
  handler: string;
  fn: HandlerFn<never, unknown>;
  schema: ParamsSchema<unknown> | undefined;
  mode: AnswerMode | undefined;
}

interface RunningAttempt {
  runId: string;
  attempt: number;
  shard: number;
  controller: AbortController;
}

const MIN_REMEMBER_MS = 10 * 60 * 1000;

function list(value: string | readonly string[] | undefined): string[] {
  if (value === undefined) return [];
  const items = typeof value === "string" ? value.split(",") : [...value];
  return items.map((s) => s.trim()).filter((s) => s.length > 0);
}

function json(status: number, body: unknown): ExecutorResponse {
  return { status, body };
}

function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return typeof err === "string" ? err : JSON.stringify(err) ?? String(err);
}

function issuesText(error: unknown): string {
  const issues = (error as { issues?: unknown } | null)?.issues;
  if (Array.isArray(issues) && issues.length > 0) {
    return issues
      .slice(0, 10)
      .map((i: { path?: unknown; message?: unknown }) => {
        const path = Array.isArray(i.path) && i.path.length > 0 ? i.path.join(".") : "(root)";
        return `${path}: ${String(i.message ?? "invalid")}`;
      })
      .join("; ");
  }
  return error instanceof Error ? error.message : String(error);
}

function parseWith<P>(schema: ParamsSchema<P>, input: unknown, handler: string): P {
  if ("safeParse" in schema && typeof schema.safeParse === "function") {
    const result = schema.safeParse(input);
    if (result.success) return result.data;
    throw new ParamsMismatchError(handler, issuesText(result.error), (result.error as { issues?: unknown } | null)?.issues);
  }
  try {
    return (schema as { parse(input: unknown): P }).parse(input);
  } catch (err) {
    throw new ParamsMismatchError(handler, issuesText(err), (err as { issues?: unknown } | null)?.issues);
  }
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The log lines of one attempt, sent in order, in batches. */
class LogBatch {
  private lines: { level: LogLevel; message: string; at: string }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  constructor(
    private readonly send: (lines: { level: LogLevel; message: string; at: string }[]) => Promise<void>,
    private readonly delayMs: number,
  ) {}

  add(level: LogLevel, message: string, now = false): void {
    this.lines.push({ level, message: truncate(message, 16_384), at: new Date().toISOString() });
    if (now || this.lines.length >= 100) {
      void this.flush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.delayMs);
    }
  }

  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.lines.length > 0) {
      const batch = this.lines;
      this.lines = [];
      this.chain = this.chain.then(() => this.send(batch));
    }
    return this.chain;
  }
}

export class Executor {
  readonly appId: string;
  readonly schedulerUrls: readonly string[];
  private secrets: string[];
  private readonly handlers = new Map<string, Registered>();
  private readonly remembered = new Map<string, { expires: number; answer: Promise<ExecutorResponse> }>();
  private readonly running = new Map<string, RunningAttempt>();
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly caller: SignedCaller;
  private readonly log: Logger;
  private readonly opts: ExecutorOptions;
  private readonly rememberMs: number;
  private draining = false;
  private executorId: string | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private heartbeatEveryMs = 3000;
  private metadataEveryMs = 30_000;
  private lastMetadataAt = 0;
  private registeredAddress: string | undefined;

  constructor(options: ExecutorOptions = {}) {
    this.opts = options;
    this.secrets = list(options.secrets ?? process.env["SUNDIAL_SECRET"]);
    if (this.secrets.length === 0) throw new TypeError("no signing secret: pass `secrets` or set SUNDIAL_SECRET (whsec_…)");
    for (const s of this.secrets) secretKey(s); // a malformed secret fails here, not on the first delivery
    this.appId = options.appId ?? process.env["SUNDIAL_APP_ID"] ?? "";
    const urls = list(options.schedulerUrls ?? process.env["SUNDIAL_URL"] ?? "http://127.0.0.1:7700");
    this.schedulerUrls = urls.map((u) => u.replace(/\/+$/, ""));
    this.log = options.logger ?? consoleLogger;
    this.rememberMs = Math.max(options.rememberMs ?? 15 * 60 * 1000, MIN_REMEMBER_MS);
    this.caller = new SignedCaller(
      this.schedulerUrls,
      () => this.secrets,
      this.appId,
      options.fetch ?? globalThis.fetch.bind(globalThis),
      options.callTimeoutMs ?? 10_000,
    );
  }

  /** Declares the handler `name`: `fn(params, ctx)` returns the run's output or throws. */
  handler<P = Record<string, unknown>, O = unknown>(name: string, fn: HandlerFn<P, O>, options: HandlerOptions<P> = {}): this {
    if (!name) throw new TypeError("a handler needs a name");
    this.handlers.set(name, {
      handler: name,
      fn: fn as unknown as HandlerFn<never, unknown>,
      schema: options.schema as ParamsSchema<unknown> | undefined,
      mode: options.mode,
    });
    return this;
  }

  /** The handler names this executor serves. */
  get handlerNames(): string[] {
    return [...this.handlers.keys()];
  }

  /** The id Sundial gave this executor when it registered (undefined before). */
  get id(): string | undefined {
    return this.executorId;
  }

  /** The `address` option, else `SUNDIAL_EXECUTOR_URL`. */
  get configuredAddress(): string | undefined {
    return this.opts.address ?? process.env["SUNDIAL_EXECUTOR_URL"];
  }

  /** Serves on `port` with `node:http`, registers, heartbeats; stops gracefully on SIGINT/SIGTERM. */
  listen(port: number, options: ListenOptions = {}): Promise<Listening> {
    return listen(this, port, options);
  }

  /** A `node:http` / Express `(req, res)` handler (see {@link nodeHandler}). */
  nodeHandler(options: { maxBodyBytes?: number } = {}) {
    return nodeHandler(this, options);
  }

  /** A fetch-style `(Request) => Promise<Response>` handler (see {@link fetchHandler}). */
  fetchHandler(options: { maxBodyBytes?: number } = {}) {
    return fetchHandler(this, options);
  }

  /** The ids of the runs being worked on now. */
  get runningRuns(): string[] {
    return [...new Set([...this.running.values()].map((r) => r.runId))];
  }

  /** Replaces the secrets (after `rotate-secret`: keep the old one too until its grace period ends). */
  setSecrets(secrets: string | readonly string[]): void {
    const next = list(secrets);
    if (next.length === 0) throw new TypeError("no signing secret");
    for (const s of next) secretKey(s);
    this.secrets = next;
  }

  // -- one HTTP request, independent of any framework ------------------------------------------

  /** Answers one request: a cancel if the path ends in `/cancel`, else a delivery. */
  async handle(request: ExecutorRequest): Promise<ExecutorResponse> {
    if (request.method && request.method.toUpperCase() !== "POST") {
      return json(405, { code: "method_not_allowed", message: "Sundial POSTs deliveries and cancels" });
    }
    const path = (request.path ?? "/").split("?")[0]!.replace(/\/+$/, "");
    if (path.endsWith("/cancel")) return this.handleCancel(request.headers, request.body);
    return this.handleDelivery(request.headers, request.body);
  }

  /** Verifies and answers one delivery. */
  async handleDelivery(headers: HeaderSource, body: string | Uint8Array): Promise<ExecutorResponse> {
    let webhookId: string;
    try {
      webhookId = verify(this.secrets, headers, body, this.verifyOptions());
    } catch (err) {
      if (err instanceof WebhookVerificationError) return json(401, { code: err.code, message: err.message });
      throw err;
    }
    this.forgetExpired();
    const seen = this.remembered.get(webhookId);
    if (seen) return seen.answer; // a redelivery: the first answer, the handler ran once
    if (this.draining) return json(503, { code: "executor_offline", message: "this executor is shutting down" });
    const answer = this.accept(webhookId, headers, body);
    this.remembered.set(webhookId, { expires: Date.now() + this.rememberMs, answer });
    const max = this.opts.rememberMax ?? 100_000;
    while (this.remembered.size > max) {
      const oldest = this.remembered.keys().next().value as string;
      this.remembered.delete(oldest);
    }
    return answer;
  }

  /** Verifies a cancel and aborts the attempt's `ctx.signal`. */
  async handleCancel(headers: HeaderSource, body: string | Uint8Array): Promise<ExecutorResponse> {
    try {
      verify(this.secrets, headers, body, this.verifyOptions());
    } catch (err) {
      if (err instanceof WebhookVerificationError) return json(401, { code: err.code, message: err.message });
      throw err;
    }
    let cancel: CancelBody;
    try {
      cancel = JSON.parse(typeof body === "string" ? body : Buffer.from(body).toString("utf8")) as CancelBody;
      if (typeof cancel.run_id !== "string" || typeof cancel.attempt !== "number") throw new Error("shape");
    } catch {
      return json(400, { code: "bad_cancel", message: "expected {run_id, attempt, shard?}" });
    }
    const key = `${cancel.run_id}/${cancel.shard ?? 0}/${cancel.attempt}`;
    const running = this.running.get(key);
    if (running) {
      this.log.info(`run ${cancel.run_id} attempt ${cancel.attempt}: cancelled by Sundial`);
      running.controller.abort(new DOMException(`run ${cancel.run_id} attempt ${cancel.attempt} was cancelled by Sundial`, "AbortError"));
    }
    return json(200, { cancelled: running !== undefined });
  }

  private verifyOptions() {
    return { toleranceSecs: this.opts.toleranceSecs ?? DEFAULT_TOLERANCE_SECS, now: new Date((this.opts.clock ?? Date.now)()) };
  }

  private forgetExpired(): void {
    const now = Date.now();
    for (const [id, entry] of this.remembered) {
      if (entry.expires > now) break; // insertion order = expiry order
      this.remembered.delete(id);
    }
  }

  private async accept(webhookId: string, headers: HeaderSource, body: string | Uint8Array): Promise<ExecutorResponse> {
    let delivery: Delivery;
    try {
      delivery = JSON.parse(typeof body === "string" ? body : Buffer.from(body).toString("utf8")) as Delivery;
      if (typeof delivery !== "object" || delivery === null || typeof delivery.run_id !== "string" || typeof delivery.attempt !== "number") {
        throw new Error("shape");
      }
    } catch {
      return json(400, { code: "bad_delivery", message: "expected a JSON delivery with run_id and attempt" });
    }
    const name = delivery.handler ?? "";
    const entry = this.handlers.get(name);
    if (!entry) {
      this.log.warn(`run ${delivery.run_id}: no handler \`${name}\` here (answered 410 handler_retired)`);
      return json(410, { code: "handler_retired", message: `this executor does not serve handler \`${name}\`` });
    }
    const shard = delivery.shard ?? { index: 0, total: 1 };
    const key = `${delivery.run_id}/${shard.index}/${delivery.attempt}`;
    const controller = new AbortController();
    const running: RunningAttempt = { runId: delivery.run_id, attempt: delivery.attempt, shard: shard.index, controller };
    this.running.set(key, running);

    const logs = new LogBatch(
      (lines) =>
        this.caller
          .post(`/api/v1/runs/${encodeURIComponent(delivery.run_id)}/logs`, { attempt: delivery.attempt, shard: shard.index, lines })
          .then(
            () => undefined,
            (err: unknown) => this.log.warn(`run ${delivery.run_id}: ${lines.length} log line(s) not sent: ${describe(err)}`),
          ),
      this.opts.logFlushMs ?? 250,
    );

    return new Promise<ExecutorResponse>((resolve) => {
      let answered = false;
      const answerLater = () => {
        if (answered) return;
        answered = true;
        resolve(json(202, { status: "accepted" }));
      };
      const mode = entry.mode ?? this.opts.mode ?? "auto";
      const ctx: Context<unknown> = {
        runId: delivery.run_id,
        attempt: delivery.attempt,
        jobId: delivery.job_id,
        job: delivery.job,
        handler: name,
        params: delivery.params,
        scheduledAt: new Date(delivery.scheduled_at),
        trigger: delivery.trigger,
        shard: { index: shard.index, total: shard.total },
        parent: delivery.parent ? { runId: delivery.parent.run_id, output: delivery.parent.output ?? null } : null,
        parentOutput: delivery.parent ? (delivery.parent.output ?? null) : null,
        parents: delivery.parents
          ? delivery.parents.map((p) => ({ jobId: p.job_id, runId: p.run_id, state: p.state, output: p.output ?? null }))
          : null,
        chainParams: delivery.chain_params ?? null,
        webhookId,
        delivery,
        signal: controller.signal,
        log: (message, level = "info") => logs.add(level, typeof message === "string" ? message : JSON.stringify(message) ?? String(message)),
        progress: (done, total, message) => {
          const pct = total ? ` (${Math.round((done / total) * 100)}%)` : "";
          logs.add("info", `progress ${done}${total ? `/${total}` : ""}${pct}${message ? `: ${message}` : ""}`, true);
        },
        answerLater,
      };
      if (mode === "async") answerLater();
      const budget = mode === "auto" ? setTimeout(answerLater, this.opts.syncBudgetMs ?? 10_000) : undefined;

      const work = this.execute(entry, ctx).then(async (result) => {
        if (budget) clearTimeout(budget);
        await logs.flush();
        this.running.delete(key);
        if (!answered) {
          answered = true;
          resolve(json(200, result));
        } else {
          await this.reportResult(delivery.run_id, delivery.attempt, shard.index, result);
        }
      });
      const tracked = work.catch((err: unknown) => this.log.error(`run ${delivery.run_id}: ${describe(err)}`)).finally(() => {
        this.running.delete(key);
        this.inflight.delete(tracked);
      });
      this.inflight.add(tracked);
    });
  }

  private async execute(entry: Registered, ctx: Context<unknown>): Promise<Answer> {
    const mutable = ctx as { params: unknown };
    try {
      if (entry.schema) mutable.params = parseWith(entry.schema, ctx.params, entry.handler);
      const output = await (entry.fn as HandlerFn<unknown, unknown>)(ctx.params, ctx);
      let serialized: unknown = null;
      if (output !== undefined) {
        try {
          serialized = JSON.parse(JSON.stringify(output) ?? "null");
        } catch (err) {
          return { status: "failed", message: `the handler's output is not JSON: ${describe(err)}` };
        }
      }
      return { status: "succeeded", output: serialized };
    } catch (err) {
      if (err instanceof FailNoRetry) {
        this.log.warn(`run ${ctx.runId} attempt ${ctx.attempt}: failed, not to be retried: ${err.message}`);
        const answer: Answer = { status: "failed", message: truncate(err.message, 16_384), retry: false };
        if (err.output !== undefined) answer.output = err.output;
        return answer;
      }
      this.log.warn(`run ${ctx.runId} attempt ${ctx.attempt}: failed: ${describe(err)}`);
      return { status: "failed", message: truncate(describe(err), 16_384) };
    }
  }

  /** Sends a result by signed callback, trying again while Sundial cannot be reached. */
  private async reportResult(runId: string, attempt: number, shard: number, answer: Answer): Promise<void> {
    const path = `/api/v1/runs/${encodeURIComponent(runId)}/result`;
    let body: Record<string, unknown> = { ...answer, attempt, shard };
    const delays = [0, ...(this.opts.resultRetryDelaysMs ?? [500, 1000, 2000, 4000, 8000, 16000])];
    for (const delay of delays) {
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      try {
        await this.caller.post(path, body);
        return;
      } catch (err) {
        if (err instanceof CallRefused) {
          if (err.status === 413 && body["status"] === "succeeded") {
            body = { status: "failed", message: `output refused: ${err.message}`, attempt, shard };
            continue;
          }
          // 409: the attempt is no longer current (timed out, cancelled, already reported).
          this.log.warn(`run ${runId} attempt ${attempt}: result refused: ${err.message}`);
          return;
        }
        this.log.warn(`run ${runId} attempt ${attempt}: result not sent yet: ${describe(err)}`);
      }
    }
    this.log.error(`run ${runId} attempt ${attempt}: result could not be sent; the run's deadline decides it`);
  }

  // -- life with Sundial -------------------------------------------------------------------------

  /**
   * Registers with Sundial at `address` (the URL it delivers to), then heartbeats with the runs in
   * progress. Called by `listen()`; call it yourself when you mount an adapter in your own server.
   */
  async start(address?: string): Promise<void> {
    this.draining = false;
    const where = address ?? this.opts.address ?? process.env["SUNDIAL_EXECUTOR_URL"];
    if (this.opts.register === false) return;
    if (!where) throw new TypeError("start() needs the URL Sundial delivers to (`address`)");
    if (!this.appId) throw new TypeError("registering needs the app id: pass `appId` or set SUNDIAL_APP_ID");
    this.registeredAddress = where;
    await this.register();
    this.scheduleHeartbeat();
  }

  private async register(): Promise<void> {
    const body: Record<string, unknown> = { address: this.registeredAddress, handlers: this.handlerNames };
    if (this.opts.name !== undefined) body["name"] = this.opts.name;
    if (this.opts.tags !== undefined) body["tags"] = this.opts.tags;
    if (this.opts.metadata !== undefined) body["metadata"] = this.opts.metadata;
    const registered = (await this.caller.post("/api/v1/executors/register", body)) as components["schemas"]["Registered"];
    this.executorId = registered.executor_id;
    this.heartbeatEveryMs = registered.heartbeat_interval_ms || 3000;
    this.metadataEveryMs = registered.metadata_interval_ms || 30_000;
    this.lastMetadataAt = Date.now();
    this.log.info(`registered as ${registered.executor_id} at ${this.registeredAddress} (handlers: ${this.handlerNames.join(", ")})`);
  }

  private scheduleHeartbeat(): void {
    if (this.heartbeatTimer) clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = setTimeout(() => {
      this.heartbeat().finally(() => {
        if (this.heartbeatTimer) this.scheduleHeartbeat();
      });
    }, this.heartbeatEveryMs);
    this.heartbeatTimer.unref();
  }

  /** One heartbeat now (also sent every `heartbeat_interval_ms` after `start()`). */
  async heartbeat(): Promise<void> {
    if (!this.executorId) return;
    const runs = this.runningRuns;
    const body: Record<string, unknown> = { executor_id: this.executorId, running: this.running.size, running_runs: runs };
    if (this.opts.metadata !== undefined && Date.now() - this.lastMetadataAt >= this.metadataEveryMs) {
      body["metadata"] = this.opts.metadata;
      this.lastMetadataAt = Date.now();
    }
    try {
      await this.caller.post("/api/v1/executors/heartbeat", body);
    } catch (err) {
      if (err instanceof CallRefused && err.status === 404 && !this.draining) {
        this.log.warn("Sundial does not know this executor any more: registering again");
        await this.register().catch((e: unknown) => this.log.warn(`registering again failed: ${describe(e)}`));
        return;
      }
      this.log.warn(`heartbeat failed: ${describe(err)}`);
    }
  }

  /** True between `stop()` and the end of the drain: new deliveries are answered `503 executor_offline`. */
  get isDraining(): boolean {
    return this.draining;
  }

  /**
   * Stops gracefully: new deliveries get `503 executor_offline`, runs in progress get `graceMs`
   * to finish (heartbeats keep listing them), then the rest are aborted through `ctx.signal`, and
   * the executor deregisters.
   */
  async stop(options: { graceMs?: number } = {}): Promise<void> {
    this.draining = true;
    const grace = options.graceMs ?? 30_000;
    if (this.inflight.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((r) => (timer = setTimeout(r, grace)));
      await Promise.race([Promise.allSettled([...this.inflight]), timeout]);
      clearTimeout(timer);
      for (const r of this.running.values()) r.controller.abort(new DOMException("the executor is stopping", "AbortError"));
      await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, 1000).unref())]);
    }
    if (this.heartbeatTimer) {
      clearTimeout(this.heartbeatTimer);
      this.heartbeatTimer = undefined;
    }
    if (this.executorId) {
      const id = this.executorId;
      try {
        await this.caller.post("/api/v1/executors/deregister", { executor_id: id });
        this.log.info(`deregistered ${id}`);
      } catch (err) {
        this.log.warn(`deregister failed: ${describe(err)}`);
      }
      this.executorId = undefined;
    }
  }
}

