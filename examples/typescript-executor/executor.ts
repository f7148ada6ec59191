// An executor on @sundial/sdk: registers with Sundial, runs `report` (on a cron job) and
// `notify` (its child, which receives report's output), logs from inside both.
//
//   SUNDIAL_URL=http://127.0.0.1:7700 SUNDIAL_APP_ID=app_… SUNDIAL_SECRET=whsec_… PORT=9000 node dist/executor.js
import { Executor, FailNoRetry } from "@sundial/sdk";

interface ReportParams {
  region?: string;
}

const executor = new Executor({ name: "typescript-example", tags: ["example"] });

executor.handler<ReportParams>("report", async (params, ctx) => {
  const region = params.region ?? "eu";
  ctx.log(`report for ${region}, scheduled at ${ctx.scheduledAt.toISOString()} (attempt ${ctx.attempt})`);
  const orders = [120, 80, 45].map((n) => n + ctx.scheduledAt.getUTCSeconds());
  ctx.progress(1, 1, `${orders.length} orders`);
  return { region, orders: orders.length, sum: orders.reduce((a, b) => a + b, 0) };
});

executor.handler("notify", async (_params, ctx) => {
  const report = ctx.parentOutput as { region: string; sum: number } | null;
  if (!report) throw new FailNoRetry("notify runs as a child of report");
  ctx.log(`notifying: ${report.region} sold ${report.sum}`);
  return { notified: report.region, sum: report.sum };
});

const served = await executor.listen(Number(process.env["PORT"] ?? 9000), { host: process.env["HOST"] ?? "127.0.0.1" });
console.log(`executor listening on ${served.address} as ${executor.id}`);
