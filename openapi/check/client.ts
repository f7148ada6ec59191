// Compiled by scripts/spec-check with `tsc --strict --noEmit` against the types
// openapi-typescript generates from openapi/openapi.json (schema.d.ts beside it):
// a few calls through openapi-fetch, as a TypeScript user of the spec writes them.
import createClient from "openapi-fetch";
import type { components, operations, paths } from "./schema";

type Job = components["schemas"]["JobOut"];

const client = createClient<paths>({
  baseUrl: "http://127.0.0.1:7700",
  headers: { Authorization: "Bearer sk_example" },
});

export async function example(): Promise<void> {
  const created = await client.POST("/api/v1/jobs", {
    body: {
      name: "nightly-invoices",
      app: "billing",
      handler: "invoice.run",
      schedule: { kind: "cron", expression: "0 30 2 * * *", timezone: "Europe/Berlin" },
      params: { to: "world" },
    },
  });
  if (created.error) {
    const code: string = created.error.code;
    const field: unknown = created.error.details["field"];
    throw new Error(`${code} ${String(field)}`);
  }
  const job: Job = created.data;
  // A schedule is one type per kind, told apart by `kind`.
  const schedule = job.schedule;
  if (schedule.kind === "fixed_rate") {
    const every: number = schedule.every_ms;
    void every;
  }
  const params: { [key: string]: unknown } = job.params;
  void params;

  const apps = await client.GET("/api/v1/apps", { params: { query: { limit: 10 } } });
  const executors = await client.GET("/api/v1/apps/{id}/executors", { params: { path: { id: "billing" } } });
  const metadata: { [key: string]: unknown } | undefined = executors.data?.items[0]?.metadata;
  void apps;
  void metadata;

  const runs = await client.GET("/api/v1/runs", { params: { query: { state: "succeeded", limit: 3 } } });
  const output: unknown = runs.data?.items[0]?.output;
  const finishedAt: string | null | undefined = runs.data?.items[0]?.finished_at;
  void output;
  void finishedAt;

  await client.POST("/api/v1/jobs/{id}/trigger", {
    params: { path: { id: job.id } },
    body: { params: { n: 1 } },
  });
  // Trigger parameters are an object, as the server requires.
  await client.POST("/api/v1/jobs/{id}/trigger", {
    params: { path: { id: job.id } },
    // @ts-expect-error an array is not a JSON object
    body: { params: [1, 2] },
  });
}

// Operations are named by their operationId.
export type ListApps = operations["list_apps"];
export type ListAppExecutors = operations["list_app_executors"];
