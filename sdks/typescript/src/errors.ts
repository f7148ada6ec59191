/**
 * Throw from a handler when the run cannot succeed on a retry (bad input, a missing record):
 * the attempt fails with `"retry": false`, so Sundial does not apply the job's failure policy
 * and the run fails at once. Any other error is an ordinary failure, retried by the policy.
 */
export class FailNoRetry extends Error {
  readonly output: unknown;
  constructor(message: string, options: { output?: unknown; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "FailNoRetry";
    this.output = options.output;
  }
}

/** The params of a delivery did not match the handler's schema (the run fails, not retried). */
export class ParamsMismatchError extends FailNoRetry {
  readonly issues: unknown;
  constructor(handler: string, detail: string, issues?: unknown) {
    super(`params do not match the schema of handler \`${handler}\`: ${detail}`);
    this.name = "ParamsMismatchError";
    this.issues = issues;
  }
}

/** A refusal from Sundial's API: the HTTP status and the error body's `code`, `message`, `details`. */
export class SundialApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown>;
  /** `details.field` when the server named the field it refused (e.g. `schedule.expression`). */
  readonly field: string | undefined;
  constructor(status: number, code: string, message: string, details: Record<string, unknown> = {}) {
    super(`${status} ${code}: ${message}`);
    this.name = "SundialApiError";
    this.status = status;
    this.code = code;
    this.details = details;
    this.field = typeof details["field"] === "string" ? details["field"] : undefined;
  }

  /** Builds one from a response's status and its (parsed, possibly absent) body. */
  static from(status: number, body: unknown): SundialApiError {
    if (body && typeof body === "object" && !Array.isArray(body)) {
      const b = body as Record<string, unknown>;
      const details = b["details"] && typeof b["details"] === "object" && !Array.isArray(b["details"]) ? (b["details"] as Record<string, unknown>) : {};
      return new SundialApiError(
        status,
        typeof b["code"] === "string" ? b["code"] : `http_${status}`,
        typeof b["message"] === "string" ? b["message"] : JSON.stringify(body).slice(0, 500),
        details,
      );
    }
    const text = typeof body === "string" ? body.slice(0, 500) : "";
    return new SundialApiError(status, `http_${status}`, text || `HTTP ${status}`);
  }
}
