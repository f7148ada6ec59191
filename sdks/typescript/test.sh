#!/usr/bin/env bash
# The TypeScript SDK's whole check, run from the repository root (what ./scripts/test runs):
#   1. npm ci (exactly package-lock.json);
#   2. the drift check: src/generated/schema.d.ts is what openapi-typescript makes of openapi/openapi.json;
#   3. tsc --strict over the package (and its tests);
#   4. npm pack, and the tarball installed into a fresh temp project, as a user installs it:
#      imported from plain JavaScript and type-checked from TypeScript there;
#   5. the tests (node --test) against a real `sundial serve` they start: the shared vectors,
#      the executor, the management client, and examples/typescript-executor built on the tarball.
#
#   SUNDIAL_BIN=target/debug/sundial sdks/typescript/test.sh
#
# SUNDIAL_BIN: the sundial binary (default: target/debug/sundial, else target/release/sundial).
# Needs node >= 20 and npm, and the npm registry (or a warm npm cache).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
pkg="$repo/sdks/typescript"
say() { printf '\n==> %s\n' "$*"; }

if [ -n "${SUNDIAL_BIN:-}" ]; then
    case "$SUNDIAL_BIN" in /*) ;; *) SUNDIAL_BIN="$repo/$SUNDIAL_BIN" ;; esac
    export SUNDIAL_BIN
fi
node -e 'if (+process.versions.node.split(".")[0] < 20) { console.error("node >= 20 needed, found " + process.version); process.exit(1) }'

say "npm ci (sdks/typescript/package-lock.json)"
(cd "$pkg" && npm ci --no-audit --no-fund --loglevel=error)

say "drift check: src/generated/schema.d.ts against openapi/openapi.json"
(cd "$pkg" && node scripts/check-generated.mjs)

say "tsc --strict: the package, then the tests"
(cd "$pkg" && npx tsc -p tsconfig.json --strict && node scripts/copy-generated.mjs && npx tsc -p tsconfig.test.json --strict)

say "npm pack, installed into a temp project"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sundial-ts-sdk.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$pkg" && npm pack --pack-destination "$tmp" --loglevel=error >/dev/null)
tarball=$(ls "$tmp"/sundial-sdk-*.tgz)
echo "packed $(basename "$tarball"): $(tar -tzf "$tarball" | wc -l) files"
project="$tmp/project"
mkdir -p "$project"
cat > "$project/package.json" <<'JSON'
{ "name": "sundial-sdk-install-check", "private": true, "type": "module" }
JSON
(cd "$project" && npm install --no-audit --no-fund --loglevel=error --prefer-offline "$tarball")
cat > "$project/smoke.mjs" <<'JS'
import { Executor, SundialClient, sign, verify, FailNoRetry } from "@sundial/sdk";
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const sig = sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}');
if (sig !== "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") throw new Error(`signature ${sig}`);
verify([secret], { "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330", "webhook-signature": sig },
  '{"test": 2432232314}', { now: 1614265330 });
const ex = new Executor({ secrets: secret, register: false }).handler("x", () => 1);
new SundialClient({ baseUrl: "http://127.0.0.1:7700", apiKey: "sk_x" });
if (!(new FailNoRetry("no") instanceof Error) || ex.handlerNames[0] !== "x") throw new Error("exports");
console.log("the installed tarball imports and signs");
JS
(cd "$project" && node smoke.mjs)
cat > "$project/smoke.ts" <<'TS'
import { Executor, SundialClient, type Context, type Schemas } from "@sundial/sdk";
const ex = new Executor({ secrets: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", register: false });
ex.handler<{ to: string }>("hello", (params, ctx: Context<{ to: string }>) => ({ hi: params.to, run: ctx.runId }));
export async function use(client: SundialClient): Promise<Schemas["RunDetail"]> {
  const job = await client.createJob({ name: "j", app: "a", handler: "hello", schedule: { kind: "manual" } });
  const run = await client.triggerJob(job.id, { params: { to: "world" } });
  return client.get("/api/v1/runs/{id}", { params: { path: { id: run.id } } });
}
TS
cat > "$project/tsconfig.json" <<'JSON'
{ "compilerOptions": { "strict": true, "noEmit": true, "target": "ES2022", "lib": ["ES2022", "DOM"],
  "module": "NodeNext", "moduleResolution": "NodeNext", "types": ["node"], "skipLibCheck": false },
  "files": ["smoke.ts"] }
JSON
(cd "$project" && node "$pkg/node_modules/typescript/bin/tsc" -p tsconfig.json --typeRoots "$pkg/node_modules/@types")
echo "the installed tarball's types pass tsc --strict"

say "tests: node --test against a real sundial serve"
(cd "$pkg" && SUNDIAL_SDK_PROJECT="$project" node --test --test-concurrency=1 build/test/*.test.js)
say "the TypeScript SDK passes"
