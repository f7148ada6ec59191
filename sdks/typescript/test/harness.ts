// A real `sundial serve` for the tests: embedded SQLite in a temp dir, port 0, the operator key
// set by the test, stopped (SIGTERM) when the tests end. Nothing here stands in for Sundial.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { SundialClient } from "../src/index.js";

/** sdks/typescript (this file is compiled to build/test/harness.js). */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const REPO = resolve(PACKAGE_DIR, "..", "..");

export function sundialBin(): string {
  const given = process.env["SUNDIAL_BIN"];
  if (given) return isAbsolute(given) ? given : resolve(REPO, given);
  for (const candidate of ["target/debug/sundial", "target/release/sundial"]) {
    if (existsSync(join(REPO, candidate))) return join(REPO, candidate);
  }
  return join(REPO, "target", "debug", "sundial");
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `probe` until it returns something truthy; fails after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => T | Promise<T>, timeoutMs = 15_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

export class Sundial {
  readonly operatorKey = `sk_${randomBytes(24).toString("hex")}`;
  base = "";
  private proc: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), "sundial-ts-sdk-"));
  private stdout: string[] = [];

  async start(): Promise<void> {
    const bin = sundialBin();
    if (!existsSync(bin)) throw new Error(`${bin} not found: build sundial or point SUNDIAL_BIN at the binary`);
    this.proc = spawn(bin, ["serve", "--data-dir", join(this.dir, "data"), "--listen", "127.0.0.1:0", "--runner", "false"], {
      env: { ...process.env, SUNDIAL_ADMIN_KEY: this.operatorKey, SUNDIAL_LOG: process.env["SUNDIAL_LOG"] ?? "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const stderr: string[] = [];
    this.proc.stderr!.on("data", (d: Buffer) => {
      stderr.push(d.toString());
      if (process.env["SUNDIAL_TEST_VERBOSE"]) process.stderr.write(d);
    });
    const lines = createInterface({ input: this.proc.stdout! });
    this.base = await new Promise<string>((resolvePromise, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening banner within 30 s; stdout: ${this.stdout.join("")}`)), 30_000);
      lines.on("line", (line) => {
        this.stdout.push(line);
        const m = /^Sundial listening on (http:\/\/\S+)/.exec(line);
        if (m) {
          clearTimeout(timer);
          resolvePromise(m[1]!.replace(/\/+$/, ""));
        }
      });
      this.proc!.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`sundial exited with ${code} before listening:\n${stderr.join("").slice(-3000)}`));
      });
    });
  }

  /** SIGTERM, then wait (SIGKILL after 20 s); removes the temp dir. Resolves to the exit code. */
  async stop(): Promise<number | null> {
    const proc = this.proc;
    if (!proc) return null;
    this.proc = undefined;
    const code = await new Promise<number | null>((resolvePromise) => {
      if (proc.exitCode !== null) return resolvePromise(proc.exitCode);
      const kill = setTimeout(() => proc.kill("SIGKILL"), 20_000);
      proc.once("exit", (c) => {
        clearTimeout(kill);
        resolvePromise(c);
      });
      proc.kill("SIGTERM");
    });
    rmSync(this.dir, { recursive: true, force: true });
    return code;
  }

  client(key: string): SundialClient {
    return new SundialClient({ baseUrl: this.base, apiKey: key });
  }

  /** A new tenant; its admin key's client. */
  async tenant(name: string): Promise<SundialClient> {
    const created = await this.client(this.operatorKey).post("/api/v1/tenants", { body: { name } });
    return this.client(created.admin_key);
  }
}

/** The shared conformance vectors: `sdks/vectors/*.json` (the same files every SDK loads). */
export function loadVector<T>(name: string): T {
  return JSON.parse(readFileSync(join(REPO, "sdks", "vectors", name), "utf8")) as T;
}

/** A logger that keeps lines (the tests stay quiet; lines are shown when a test fails). */
export function memoryLogger(prefix = "") {
  const lines: string[] = [];
  const put = (level: string) => (m: string) => {
    lines.push(`${level} ${m}`);
    if (process.env["SUNDIAL_TEST_VERBOSE"]) console.error(`${prefix}${level} ${m}`);
  };
  return { lines, debug: put("debug"), info: put("info"), warn: put("warn"), error: put("error") };
}
