/**
 * `npm run bench:partition-migration`: migration 0014 (the webhook history partitioned by month) on
 * an installation with BENCH_ROWS (default 1,000,000) events, as many webhook deliveries and as
 * many attempts, while a writer of the previous version inserts an attempt every 5 ms: prints the
 * migration's time and the writer's longest wait (the downtime), and checks every row is still
 * there. The test suite runs the same on a small database (test/ops/history-partitions.test.ts).
 */
import postgres from 'postgres';
import { runMigrationOnPopulated } from './partition-migration-run';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const DB_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/sg_bench_partition_migration';

async function dropDatabase(): Promise<void> {
  const admin = postgres(new URL('/postgres', DB_URL).toString(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${new URL(DB_URL).pathname.slice(1)}" with (force)`);
  await admin.end();
}

async function main(): Promise<void> {
  const run = await runMigrationOnPopulated(DB_URL, ROWS, (line) => console.log(line)).finally(dropDatabase);
  const { before, after } = run;
  const ok = after.events === before.events && after.deliveries === before.deliveries && after.attempts === before.attempts + run.writerInserts;
  console.log(
    JSON.stringify({ rows: ROWS, fillSeconds: +(run.fillMs / 1000).toFixed(1), migrateMs: Math.round(run.migrateMs), writerMaxWaitMs: Math.round(run.writerMaxWaitMs), before, after, writerInserts: run.writerInserts, mbBeforePartitioning: +(run.bytes / 1e6).toFixed(1), everyRowKept: ok }),
  );
  if (!ok) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
