// The management client: every operation of openapi/openapi.json through openapi-fetch, typed
// by the generated `paths` (src/generated/schema.d.ts), with errors thrown as SundialApiError
// (code, message, details.field), cursor pages as an async iterator, and Idempotency-Key on
// triggers.
import { randomUUID } from "node:crypto";
import createOpenApiClient, { type Client, type FetchResponse, type MaybeOptionalInit } from "openapi-fetch";
import type { HttpMethod, PathsWithMethod, RequiredKeysOf } from "openapi-typescript-helpers";
import { SundialApiError } from "./errors.js";
import type { components, operations, paths } from "./generated/schema.js";

export type { components, operations, paths };
export type Schemas = components["schemas"];

type Media = `${string}/${string}`;
type InitParam<Init> = RequiredKeysOf<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init & { [key: string]: unknown }];

/** A method like openapi-fetch's, resolving to the response's data and throwing {@link SundialApiError}. */
export type DataMethod<M extends HttpMethod> = <Path extends PathsWithMethod<paths, M>, Init extends MaybeOptionalInit<paths[Path], M>>(
  url: Path,
  ...init: InitParam<Init>
) => Promise<DataOf<paths[Path][M], Init>>;

type DataOf<Op, Init> = Op extends Record<string | number, any> ? NonNullable<FetchResponse<Op, Init, Media>["data"]> : never;

/** Paths answering `GET` with a page `{items, next_cursor}` and taking a `cursor` query parameter. */
export type PagedPath = {
  [P in PathsWithMethod<paths, "get">]: paths[P]["get"] extends {
    parameters: { query?: { cursor?: unknown } };
    responses: { 200: { content: { "application/json": { items: unknown[] } } } };
  }
    ? P
    : never;
}[PathsWithMethod<paths, "get">];

type PageItem<P extends PagedPath> = paths[P]["get"] extends {
  responses: { 200: { content: { "application/json": { items: (infer T)[] } } } };
}
  ? T
  : never;

type PageInit<P extends PagedPath> = MaybeOptionalInit<paths[P], "get">;

export interface ClientOptions {
  /** Sundial's base URL. Default: `SUNDIAL_URL` or `http://127.0.0.1:7700`. */
  baseUrl?: string;
  /** An API key (`sk_…`): a tenant's key, or the operator key for tenant operations. Default: `SUNDIAL_API_KEY`. */
  apiKey?: string;
  fetch?: typeof fetch;
  headers?: Record<string, string>;
}

/** Resolves an openapi-fetch call to its data, or throws the server's error as {@link SundialApiError}. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<NonNullable<T>> {
  const { data, error, response } = await call;
  if (!response.ok || error !== undefined) throw SundialApiError.from(response.status, error);
  return data as NonNullable<T>;
}

export class SundialClient {
  /** The openapi-fetch client itself (answers `{data, error, response}`), for anything the wrapper does not cover. */
  readonly raw: Client<paths, Media>;
  readonly get: DataMethod<"get">;
  readonly post: DataMethod<"post">;
  readonly put: DataMethod<"put">;
  readonly patch: DataMethod<"patch">;
  readonly delete: DataMethod<"delete">;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? process.env["SUNDIAL_API_KEY"];
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (apiKey) headers["authorization"] = `Bearer ${apiKey}`;
    const baseUrl = (options.baseUrl ?? process.env["SUNDIAL_URL"]?.split(",")[0] ?? "http://127.0.0.1:7700").replace(/\/+$/, "");
    this.raw = createOpenApiClient<paths, Media>({
      baseUrl,
      headers,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    const wrap = (method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE") =>
      ((url: string, ...init: unknown[]) =>
        unwrap((this.raw[method] as (u: string, ...i: unknown[]) => Promise<{ data?: unknown; error?: unknown; response: Response }>)(url, ...init))) as never;
    this.get = wrap("GET");
    this.post = wrap("POST");
    this.put = wrap("PUT");
    this.patch = wrap("PATCH");
    this.delete = wrap("DELETE");
  }

  /**
   * Every item of a listing, page after page (`next_cursor`):
   * `for await (const run of client.paginate("/api/v1/runs", {params: {query: {state: "failed"}}}))`.
   */
  async *paginate<P extends PagedPath>(url: P, init?: PageInit<P>): AsyncGenerator<PageItem<P>, void, undefined> {
    const base = (init ?? {}) as { params?: { query?: Record<string, unknown> } & Record<string, unknown> } & Record<string, unknown>;
    let cursor: string | null | undefined;
    do {
      const query = { ...(base.params?.query ?? {}), ...(cursor ? { cursor } : {}) };
      const page = (await unwrap(
        (this.raw.GET as (u: string, i: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }>)(url, {
          ...base,
          params: { ...(base.params ?? {}), query },
        }),
      )) as { items: PageItem<P>[]; next_cursor?: string | null };
      for (const item of page.items) yield item;
      cursor = page.next_cursor;
    } while (cursor);
  }

  // -- a few operations by name (every other one: get/post/put/patch/delete with its path) ----

  createApp(body: Schemas["AppCreate"]): Promise<Schemas["AppWithSecret"]> {
    return this.post("/api/v1/apps", { body });
  }

  createJob(body: Schemas["JobInput"]): Promise<Schemas["JobOut"]> {
    return this.post("/api/v1/jobs", { body });
  }

  /**
   * Creates 1 to 1,000 jobs in one call, all or none (`POST /api/v1/jobs/batch`); resolves to the
   * created jobs in the same order. If any is refused nothing is created and a
   * {@link SundialApiError} is thrown (422, or 409 when every refused item's name is taken) whose
   * `details.errors` lists each refused item as `{index, field, code, message}`, the field named
   * as {@link createJob} names it.
   */
  async createJobs(jobs: Schemas["JobInput"][]): Promise<Schemas["JobOut"][]> {
    const batch = await this.post("/api/v1/jobs/batch", { body: { jobs } });
    return batch.jobs;
  }

  getJob(id: string): Promise<Schemas["JobOut"]> {
    return this.get("/api/v1/jobs/{id}", { params: { path: { id } } });
  }

  startJob(id: string): Promise<Schemas["JobOut"]> {
    return this.post("/api/v1/jobs/{id}/start", { params: { path: { id } } });
  }

  stopJob(id: string): Promise<Schemas["JobOut"]> {
    return this.post("/api/v1/jobs/{id}/stop", { params: { path: { id } } });
  }

  /**
   * Fires a job now (or at `body.at`). An `Idempotency-Key` is always sent (a fresh one unless
   * given), and the call is tried again with the same key after a network error or a 5xx, so a
   * retried trigger never fires twice; a repeat of a key answers the first run.
   */
  async triggerJob(id: string, body: Schemas["TriggerRequest"] = {}, options: { idempotencyKey?: string; tries?: number } = {}): Promise<Schemas["RunOut"]> {
    const key = options.idempotencyKey ?? randomUUID();
    const tries = Math.max(1, options.tries ?? 3);
    for (let i = 1; ; i++) {
      try {
        return await this.post("/api/v1/jobs/{id}/trigger", {
          params: { path: { id }, header: { "Idempotency-Key": key } },
          body,
        });
      } catch (err) {
        const retriable = !(err instanceof SundialApiError) || err.status >= 500;
        if (!retriable || i >= tries) throw err;
        await new Promise((r) => setTimeout(r, 200 * i));
      }
    }
  }

  getRun(id: string): Promise<Schemas["RunDetail"]> {
    return this.get("/api/v1/runs/{id}", { params: { path: { id } } });
  }

  cancelRun(id: string): Promise<Schemas["RunOut"]> {
    return this.post("/api/v1/runs/{id}/cancel", { params: { path: { id } } });
  }

  /** Polls a run until it is in one of `states` (default: a final state). */
  async waitForRun(
    id: string,
    options: { states?: readonly string[]; timeoutMs?: number; intervalMs?: number } = {},
  ): Promise<Schemas["RunDetail"]> {
    const states = options.states ?? ["succeeded", "failed", "cancelled", "skipped", "expired"];
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const run = await this.getRun(id);
      if (states.includes(run.state)) return run;
      if (Date.now() > deadline) throw new Error(`run ${id} is still ${run.state} after ${options.timeoutMs ?? 30_000} ms`);
      await new Promise((r) => setTimeout(r, options.intervalMs ?? 100));
    }
  }
}
