// The benchmark's Node executor through the SDK: `listen` (node:http), registration off.
import { Executor, listen } from "@sundial/sdk";

const executor = new Executor({ secrets: process.env.SUNDIAL_SECRET, register: false });
executor.handler("hello", (params) => ({ greeted: params.to }));
await listen(executor, Number(process.env.PORT), { host: "127.0.0.1" });
