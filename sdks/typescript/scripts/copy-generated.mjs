// tsc does not copy .d.ts inputs: put the generated schema beside the compiled client.
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
mkdirSync(join(root, "dist", "generated"), { recursive: true });
copyFileSync(join(root, "src", "generated", "schema.d.ts"), join(root, "dist", "generated", "schema.d.ts"));
