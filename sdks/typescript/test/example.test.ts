// examples/typescript-executor, compiled against the SDK as a user installs it (the tarball
// test.sh installed into SUNDIAL_SDK_PROJECT, else a link to this package), run as its own
// process: it registers, a cron job fires its handler every second, it logs, and the child job
// receives its output; SIGTERM stops it gracefully (deregistered, exit 0).
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, it } from "node:test";
import { PACKAGE_DIR, REPO, Sundial, waitFor } from "./harness.js";

const sundial = new Sundial();
let project: string;
let ownProject = false;

before(async () => {
  project = process.env["SUNDIAL_SDK_PROJECT"] ?? "";
  if (!project) {
    project = mkdtempSync(join(tmpdir(), "sundial-ts-example-"));
    ownProject = true;
    mkdirSync(join(project, "node_modules", "@sundial"), { recursive: true });
    symlinkSync(PACKAGE_DIR, join(project, "node_modules", "@sundial", "sdk"), "dir");
  }
  const example = join(REPO, "examples", "typescript-executor");
  const dir = join(project, "example");
  mkdirSync(dir, { recursive: true });
  copyFileSync(join(example, "executor.ts"), join(dir, "executor.ts"));
  copyFileSync(join(example, "tsconfig.json"), join(dir, "tsconfig.json"));
  copyFileSync(join(example, "package.json"), join(dir, "package.json")); // "type": "module"
  execFileSync(process.execPath, [join(PACKAGE_DIR, "node_modules", "typescript", "bin", "tsc"), "-p", join(dir, "tsconfig.json"), "--typeRoots", join(PACKAGE_DIR, "node_modules", "@types")], {
    stdio: "inherit",
  });
  await sundial.start();
});

after(async () => {
  if (sundial.base) assert.equal(await sundial.stop(), 0);
  if (ownProject) rmSync(project, { recursive: true, force: true });
});

it("examples/typescript-executor runs a cron job's handler, logs, and its child receives the output", async () => {
  const api = await sundial.tenant("ts-example");
  const app = await api.createApp({ name: "example" });
  const proc = spawn(process.execPath, [join(project, "example", "dist", "executor.js")], {
    env: { ...process.env, SUNDIAL_URL: sundial.base, SUNDIAL_APP_ID: app.id, SUNDIAL_SECRET: app.secret, PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  proc.stderr.on("data", (d: Buffer) => output.push(d.toString()));
  const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the example did not start: ${output.join("")}`)), 15_000);
      createInterface({ input: proc.stdout }).on("line", (line) => {
        output.push(line);
        if (line.startsWith("executor listening on")) {
          clearTimeout(timer);
          resolve();
        }
      });
      void exited.then((code) => reject(new Error(`the example exited with ${code}: ${output.join("\n")}`)));
    });
    const notify = await api.createJob({ name: "notify-on-report", app: "example", handler: "notify", schedule: { kind: "manual" } });
    const report = await api.createJob({
      name: "report-every-second",
      app: "example",
      handler: "report",
      params: { region: "eu" },
      schedule: { kind: "cron", expression: "* * * * * *", timezone: "UTC" },
      children: [notify.id],
    });
    const child = await waitFor(
      "a notify run fired by a report run",
      async () => (await api.get("/api/v1/runs", { params: { query: { job_id: notify.id, state: "succeeded", limit: 1 } } })).items[0],
      20_000,
    );
    await api.stopJob(report.id);
    const childDetail = await api.getRun(child.id);
    const parentId = childDetail.parent_run_id ?? childDetail.parent_run_ids?.[0] ?? "";
    assert.ok(parentId, JSON.stringify(childDetail));
    const parent = await api.getRun(parentId);
    assert.equal(parent.state, "succeeded");
    assert.equal(parent.trigger, "schedule");
    const out = parent.output as { region: string; orders: number; sum: number };
    assert.equal(out.region, "eu");
    assert.equal(out.orders, 3);
    assert.deepEqual(childDetail.output, { notified: "eu", sum: out.sum });
    const logs = await waitFor("the report's log lines", async () => {
      const lines = (await api.getRun(parent.id)).logs.map((l) => l.message);
      return lines.length >= 2 ? lines : null;
    });
    assert.match(logs[0]!, /^report for eu, scheduled at /);
    assert.equal(logs[1], "progress 1/1 (100%): 3 orders");
    const childLogs = await waitFor("the child's log line", async () => (await api.getRun(child.id)).logs[0]?.message);
    assert.equal(childLogs, `notifying: eu sold ${out.sum}`);
  } finally {
    proc.kill("SIGTERM");
  }
  assert.equal(await exited, 0, output.join("\n"));
  const executors = await api.get("/api/v1/apps/{id}/executors", { params: { path: { id: app.id } } });
  assert.equal(executors.items[0]?.state, "offline", "deregistered on SIGTERM");
});

it("the README's five-minute executor, as written, runs a job", async () => {
  const readme = readFileSync(join(PACKAGE_DIR, "README.md"), "utf8");
  const block = /`executor\.mjs` — the whole executor:\n\n```js\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, "the README has the executor.mjs block");
  const code = block[1]!;
  assert.ok(code.trim().split("\n").filter((l) => l.trim()).length <= 10, "ten lines or fewer");
  const file = join(project, "readme-executor.mjs");
  writeFileSync(file, code.replace("listen(9000", "listen(0"));
  const api = await sundial.tenant("ts-readme");
  const app = await api.createApp({ name: "hello-app" });
  const proc = spawn(process.execPath, [file], {
    env: { ...process.env, SUNDIAL_URL: sundial.base, SUNDIAL_APP_ID: app.id, SUNDIAL_SECRET: app.secret },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number | null>((r) => proc.once("exit", (c) => r(c)));
  const output: string[] = [];
  proc.stderr.on("data", (d: Buffer) => output.push(d.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no registration: ${output.join("")}`)), 15_000);
      createInterface({ input: proc.stdout }).on("line", (line) => {
        output.push(line);
        if (line.includes("registered as")) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const job = await api.createJob({ name: "hello-now", app: "hello-app", handler: "hello", params: { to: "world" }, schedule: { kind: "manual" } });
    const run = await api.waitForRun((await api.triggerJob(job.id)).id, { timeoutMs: 15_000 });
    assert.equal(run.state, "succeeded", JSON.stringify(run));
    assert.deepEqual(run.output, { greeted: "world" });
    const line = await waitFor("the log line", async () => (await api.getRun(run.id)).logs[0]?.message);
    assert.equal(line, "hello world, attempt 1");
  } finally {
    proc.kill("SIGTERM");
  }
  assert.equal(await exited, 0, output.join("\n"));
});
