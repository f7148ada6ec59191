// The executor's signed calls to Sundial (register, heartbeat, deregister, result, logs): signed
// like a delivery with every configured secret and a fresh webhook-id, plus `sundial-app-id`,
// sent to whichever of the scheduler URLs answers (any node of a cluster will do).
import { signedHeaders } from "./signing.js";

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const consoleLogger: Logger = {
  debug: () => {},
  info: (m) => console.log(`[sundial] ${m}`),
  warn: (m) => console.warn(`[sundial] ${m}`),
  error: (m) => console.error(`[sundial] ${m}`),
};

/** Sundial answered, with a status that is not a success. */
export class CallRefused extends Error {
  readonly status: number;
  readonly body: unknown;
  readonly code: string | undefined;
  constructor(path: string, status: number, body: unknown) {
    const code = body && typeof body === "object" && typeof (body as { code?: unknown }).code === "string" ? (body as { code: string }).code : undefined;
    const message = body && typeof body === "object" && typeof (body as { message?: unknown }).message === "string" ? (body as { message: string }).message : "";
    super(`POST ${path}: HTTP ${status}${code ? ` ${code}` : ""}${message ? `: ${message}` : ""}`);
    this.name = "CallRefused";
    this.status = status;
    this.body = body;
    this.code = code;
  }
}

/** No scheduler URL could be reached (or every one answered 5xx). */
export class SchedulerUnavailable extends Error {
  constructor(path: string, reasons: string[]) {
    super(`POST ${path}: no scheduler answered (${reasons.join("; ")})`);
    this.name = "SchedulerUnavailable";
  }
}

export class SignedCaller {
  private preferred = 0;
  constructor(
    readonly urls: readonly string[],
    private readonly secrets: () => readonly string[],
    readonly appId: string,
    private readonly fetchImpl: typeof fetch,
    private readonly timeoutMs: number,
  ) {
    if (urls.length === 0) throw new TypeError("at least one scheduler URL is needed");
  }

  /**
   * POST `body` to `path` on a live scheduler: starts with the one that answered last, moves on
   * after a network error or a 5xx. Resolves to the answer's JSON; throws {@link CallRefused}
   * for a 4xx (not tried elsewhere: every node would say the same) or
   * {@link SchedulerUnavailable} when none answered.
   */
  async post(path: string, body: unknown): Promise<unknown> {
    const text = JSON.stringify(body);
    const reasons: string[] = [];
    for (let i = 0; i < this.urls.length; i++) {
      const index = (this.preferred + i) % this.urls.length;
      const base = this.urls[index]!;
      let response: Response;
      try {
        response = await this.fetchImpl(base + path, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "sundial-app-id": this.appId,
            ...signedHeaders(this.secrets(), text),
          },
          body: text,
          redirect: "manual",
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (err) {
        reasons.push(`${base}: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      const raw = await response.text().catch(() => "");
      let parsed: unknown = null;
      try {
        parsed = raw ? JSON.parse(raw) : null;
      } catch {
        parsed = raw;
      }
      if (response.status >= 500) {
        reasons.push(`${base}: HTTP ${response.status}`);
        continue;
      }
      this.preferred = index;
      if (response.status >= 200 && response.status < 300) return parsed;
      throw new CallRefused(path, response.status, parsed);
    }
    throw new SchedulerUnavailable(path, reasons);
  }
}
