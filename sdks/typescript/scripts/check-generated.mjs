// The drift check: regenerate src/generated/schema.d.ts from ../../openapi/openapi.json into a
// temp file and compare. A spec change not regenerated here (`npm run generate`) fails.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "sundial-schema-"));
const fresh = join(dir, "schema.d.ts");
try {
  execFileSync(
    process.execPath,
    [join(root, "node_modules", "openapi-typescript", "bin", "cli.js"), join(root, "..", "..", "openapi", "openapi.json"), "-o", fresh, "--silent"],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  const checked = readFileSync(join(root, "src", "generated", "schema.d.ts"), "utf8");
  if (readFileSync(fresh, "utf8") !== checked) {
    const a = checked.split("\n");
    const b = readFileSync(fresh, "utf8").split("\n");
    let i = 0;
    while (i < a.length && a[i] === b[i]) i++;
    console.error(`src/generated/schema.d.ts is not what openapi/openapi.json generates (first difference at line ${i + 1}):`);
    console.error(`  checked in: ${a[i] ?? "<end of file>"}`);
    console.error(`  generated:  ${b[i] ?? "<end of file>"}`);
    console.error("run `npm run generate` in sdks/typescript and commit the result");
    process.exit(1);
  }
  console.log("src/generated/schema.d.ts matches openapi/openapi.json");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
