import { loadConfig, queryPoolSizeFor } from '../core/platform/config';
import { createDb } from '../db/client';
import { countOrganizations, createOrganization } from '../core/organizations/organizations';
import { operatorSignInLink } from '../core/users/users';
import { runMain, shutdownInReverse } from '../core/platform/process';
import { createService } from '../core/service/service';
import { startMetricsServer } from '../core/metrics/server';
import { startApi } from '../api/server';
import { startWorkerProcess } from '../workers/runtime';

/** Required on use, so that this file also runs where scripts/local-chain/ is left out (the image). */
function localChainTooling(): typeof import('./local-chain/local-chain') &
  typeof import('./local-chain/dev-pool') &
  typeof import('./local-chain/tron/tron-local') &
  typeof import('./local-chain/solana/solana-local-chain') &
  typeof import('./local-chain/file-chains') {
  return {
    /* eslint-disable @typescript-eslint/no-require-imports */
    ...require('./local-chain/local-chain'),
    ...require('./local-chain/dev-pool'),
    ...require('./local-chain/tron/tron-local'),
    ...require('./local-chain/solana/solana-local-chain'),
    ...require('./local-chain/file-chains'),
    /* eslint-enable @typescript-eslint/no-require-imports */
  };
}

/** `npm start`: API and workers in one process, on local defaults. */
runMain(async (main) => {
  const config = loadConfig();
  // The API's pool and bound (kind 'api'); the jobs get their own below.
  const { ctx, dbHandle } = await createService(config, { kind: 'api' });
  main.useLogger(ctx.logger);
  const shutdown = shutdownInReverse(ctx.logger, config.shutdownTimeoutMs);
  shutdown.add(() => dbHandle.close());

  // NETWORK=local: the local chain runs inside this process (`npm run chain` runs it alone). Its
  // tooling is development-only (scripts/local-chain/, not in the image): loaded only when used.
  const localChain =
    config.network === 'local' && config.startLocalChain
      ? await localChainTooling().startLocalChain(ctx, config.localChainPort ?? 0)
      : null;
  if (localChain) shutdown.add(() => localChain.anvil.stop());
  const tronLocal = config.network === 'local' && config.startLocalChain ? await localChainTooling().startTronLocal(ctx, config.tronLocal.port ?? 0) : null;
  if (tronLocal) shutdown.add(() => tronLocal.node.stop());
  if (tronLocal) process.stdout.write(`\n  Local chain tron-local on ${tronLocal.node.url} (USDT ${tronLocal.state.token})\n`);
  const solanaLocal = config.network === 'local' && config.startLocalChain ? await localChainTooling().startSolanaLocalChain(ctx, config.solanaLocal.port ?? 0) : null;
  if (solanaLocal) shutdown.add(() => solanaLocal.chain.stop());
  if (solanaLocal) process.stdout.write(`\n  Local chain solana-local on ${solanaLocal.chain.url} (USDC ${solanaLocal.state.mints.USDC}, USDT ${solanaLocal.state.mints.USDT})\n`);
  if (localChain) process.stdout.write(`\n  Local chain ethereum-local on ${localChain.anvil.url} (tokens: ${(['USDT', 'USDC', 'DAI'] as const).map((c) => `${c} ${localChain.state.tokens[c]}`).join(', ')})\n`);
  // The chains file's chains run on nodes the operator starts: asked once the built-in ones run (so
  // a file chain pointing at one of their ports is told apart), each one missing or answering as
  // another chain is named on the terminal with how to start it.
  if (config.network === 'local' && ctx.registry.chainsFile) {
    const tooling = localChainTooling();
    process.stdout.write(tooling.fileChainNodesMessage(await tooling.checkFileChainNodes(ctx.registry), ctx.registry.chainsFile.path));
  }

  if (config.network === 'local' && (await countOrganizations(ctx.db)) > 0) {
    const upgraded = await localChainTooling().upgradeLocalDevPools(ctx.db);
    if (upgraded > 0) process.stdout.write(`  Added ${upgraded} watch-only development addresses (new chain families) to the local organization's pool\n`);
  }

  // Every port is bound before anything is announced or created: a busy port fails the start
  // before an organization exists or a key is printed (a key printed by a process that then died
  // is lost). /health answers 503 "starting" until the first-start work below is done, so a script
  // that waits for 200 finds the organization, its key and its pool in place.
  const api = await startApi(ctx, { announce: false, ready: false });
  shutdown.atSignal(() => api.drain());
  shutdown.add((deadline) => api.close(deadline));
  const metrics = await startMetricsServer(ctx, Object.values(api.queues), { announce: false });
  shutdown.add(() => metrics.close());
  api.announce();
  metrics.announce();
  // The jobs run on a pool of their own with a worker's bound (DATABASE_WORKER_TIMEOUT_MS), as in a
  // worker process: on the API's pool (DATABASE_REQUEST_TIMEOUT_MS, statements cut a tenth earlier)
  // a long scan range or maintenance batch failed on every try under load, and its chain stopped.
  const jobsDb = createDb(config.databaseUrl, { max: queryPoolSizeFor(config, 'worker'), answerWithinMs: config.databaseWorkerTimeoutMs });
  shutdown.add(() => jobsDb.close());
  const workers = await startWorkerProcess({ ...ctx, db: jobsDb.db }, { recycleDatabase: (reason) => jobsDb.recycle(reason) });
  shutdown.add((deadline) => workers.close(deadline));

  // First start on an empty database: a local organization, so a newcomer can call the API at once.
  if ((await countOrganizations(ctx.db)) === 0) {
    const { organizationId, ownerKey } = await createOrganization(ctx.db, 'Local organization');
    const base = `http://localhost:${api.port}`;
    // The one exception to "no secret in output": printed once, on the terminal, never logged.
    const signIn = await operatorSignInLink(ctx.db, { organizationId, email: config.dashboard.firstOwnerEmail, role: 'owner', now: new Date() });
    process.stdout.write(
      `\n  Created organization ${organizationId}\n  Owner API key (shown once, store it now): ${ownerKey.key}\n` +
        `  Try: curl -H "X-API-Key: ${ownerKey.key}" ${base}/api/v1/organizations\n` +
        `  Dashboard: one-time sign-in link for ${signIn.user.email} (24 hours; set a password there): ${base}/dashboard/link/${signIn.token}\n`,
    );
    if (config.network === 'local') {
      const { added } = await localChainTooling().seedLocalDevPool(ctx.db, organizationId);
      process.stdout.write(`  Added ${added} watch-only development EVM, Tron and Solana addresses to its pool: pay orders with npm run pay -- <orderId> <amount>\n`);
    }
    process.stdout.write(
      `  Fill a pool: POST ${base}/api/v1/address-pool/derive {"protocol":"evm","masterPublicKey":"xpub…","count":1000}\n` +
        `               (or POST /api/v1/address-pool/import with a CSV of addresses; npm run admin -- create-org "<name>" --derive-from <xpub> does both at once)\n` +
        `  Another key: npm run admin -- create-key ${organizationId} --role admin   (roles: owner, admin, member, viewer)\n` +
        `  API reference: ${base}/api/v1/docs\n`,
    );
    if (metrics.fellBack) process.stdout.write(`  Metrics: http://127.0.0.1:${metrics.port}/metrics (the default port ${config.metrics.port} is taken by another process)\n`);
    process.stdout.write('\n');
  } else if (metrics.fellBack) {
    process.stdout.write(`\n  Metrics: http://127.0.0.1:${metrics.port}/metrics (the default port ${config.metrics.port} is taken by another process)\n\n`);
  }
  api.markReady();
  ctx.logger.info({ port: api.port }, `ready: http://localhost:${api.port}/health answers 200`);
});
