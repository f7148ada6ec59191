// Mount an executor where your app already serves HTTP: a `node:http` / Express `(req, res)`
// handler, a fetch-style `(Request) => Promise<Response>` handler (Deno, Bun, Cloudflare-style
// runtimes, Next.js route handlers), and `listen()`, a ready `node:http` server.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Executor, ExecutorResponse } from "./executor.js";

const DEFAULT_MAX_BODY = 2 * 1024 * 1024;

function serialize(answer: ExecutorResponse): string {
  return answer.body === null || answer.body === undefined ? "" : JSON.stringify(answer.body);
}

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        reject(new BodyTooLarge());
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** Express puts the parsed body on `req.body`; the signature needs the exact bytes. */
type MaybeParsed = IncomingMessage & { body?: unknown; originalUrl?: string };

/**
 * A `(req, res)` handler for `node:http`, Express, Connect, Fastify's `raw` routes…: deliveries
 * at the mount path, cancels at `<mount path>/cancel`. Mount it before any JSON body parser, or
 * behind `express.raw({type: "*\/*"})`: the signature covers the exact bytes sent.
 */
export function nodeHandler(executor: Executor, options: { maxBodyBytes?: number } = {}) {
  const max = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const write = (answer: ExecutorResponse) => {
      const text = serialize(answer);
      res.statusCode = answer.status;
      if (text) res.setHeader("content-type", "application/json");
      res.setHeader("content-length", Buffer.byteLength(text));
      res.end(text);
    };
    try {
      const parsed = (req as MaybeParsed).body;
      let body: Buffer | string;
      if (Buffer.isBuffer(parsed) || typeof parsed === "string") {
        body = parsed;
      } else if (parsed !== undefined && parsed !== null && req.readableEnded) {
        write({
          status: 500,
          body: {
            code: "body_already_parsed",
            message: "a body parser consumed the request: mount the Sundial handler before it, or use express.raw()",
          },
        });
        return;
      } else {
        body = await readBody(req, max);
      }
      const path = (req as MaybeParsed).originalUrl ?? req.url ?? "/";
      write(await executor.handle({ method: req.method ?? "POST", path, headers: req.headers, body }));
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        write({ status: 413, body: { code: "too_large", message: `the body is over ${max} bytes` } });
      } else {
        write({ status: 500, body: { code: "internal", message: err instanceof Error ? err.message : String(err) } });
      }
    }
  };
}

/**
 * A fetch-style handler, `(Request) => Promise<Response>`: Deno.serve, Bun.serve, Next.js route
 * handlers (`export const POST = fetchHandler(executor)`, a catch-all route for `/cancel`), …
 */
export function fetchHandler(executor: Executor, options: { maxBodyBytes?: number } = {}) {
  const max = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  return async (request: Request): Promise<Response> => {
    const respond = (answer: ExecutorResponse) => {
      const text = serialize(answer);
      return new Response(text || null, {
        status: answer.status,
        headers: text ? { "content-type": "application/json" } : {},
      });
    };
    const length = Number(request.headers.get("content-length") ?? "0");
    if (length > max) return respond({ status: 413, body: { code: "too_large", message: `the body is over ${max} bytes` } });
    const body = new Uint8Array(await request.arrayBuffer());
    if (body.byteLength > max) return respond({ status: 413, body: { code: "too_large", message: `the body is over ${max} bytes` } });
    return respond(await executor.handle({ method: request.method, path: new URL(request.url).pathname, headers: request.headers, body }));
  };
}

export interface ListenOptions {
  /** Interface to listen on. Default: every interface (`0.0.0.0`/`::`). */
  host?: string;
  /** The URL Sundial delivers to. Default: the executor's `address`, else `http://127.0.0.1:<port>/`. */
  address?: string;
  /** Stop gracefully (drain, deregister, close) on SIGINT and SIGTERM. Default true. */
  handleSignals?: boolean;
  /** How long runs in progress get to finish on stop. Default 30 s. */
  graceMs?: number;
  maxBodyBytes?: number;
}

export interface Listening {
  server: Server;
  port: number;
  /** The address registered with Sundial. */
  address: string;
  /** Drains, deregisters and closes the server. */
  close(): Promise<void>;
}

/** Serves `executor` on `port` (0: any free port), registers it and heartbeats until `close()` or a signal. */
export async function listen(executor: Executor, port: number, options: ListenOptions = {}): Promise<Listening> {
  const handler = nodeHandler(executor, options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes });
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    if (options.host === undefined) server.listen(port, () => resolve());
    else server.listen(port, options.host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  const address = options.address ?? executor.configuredAddress ?? `http://127.0.0.1:${bound}/`;
  try {
    await executor.start(address);
  } catch (err) {
    server.close();
    throw err;
  }
  let closing: Promise<void> | undefined;
  const onSignal = () => void close();
  const close = () => {
    closing ??= (async () => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      await executor.stop(options.graceMs === undefined ? {} : { graceMs: options.graceMs });
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    })();
    return closing;
  };
  if (options.handleSignals !== false) {
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  }
  return { server, port: bound, address, close };
}
