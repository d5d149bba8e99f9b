import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { requiredConfirmationsFor } from '../../core/chains/confirmation-policy';
import { chainSchema, presentChain } from '../../core/views/chain';
import { pageQuerySchema } from '../validation';
import { pageOf } from '../../core/platform/sql-fragments';

export function registerChainRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route(
    {
      method: 'get',
      path: '/chains',
      summary: 'Enabled chains: family, currencies (token and decimals), required confirmations, finality',
      description:
        'What orders and deposit references may use on this deployment, from its chain registry: a chainId and currency not listed here answer 400 INVALID_CHAIN or INVALID_CURRENCY. requiredConfirmations are those of the calling organization (its confirmations.* settings raise the chain\'s values). A list in the API\'s list shape (style A: data.chains).',
      tag: 'Chains',
      minRole: 'viewer',
      query: pageQuerySchema(),
      listOf: 'chains',
      response: chainSchema,
    },
    async ({ caller, query, reply }) => {
      const chains = deps.registry.list().filter((c) => c.enabled);
      const page = await Promise.all(
        pageOf(chains, query).map(async (chain) =>
          presentChain(deps.registry, chain, {
            orders: await requiredConfirmationsFor(deps.db, caller.organizationId, chain, 'order'),
            deposits: await requiredConfirmationsFor(deps.db, caller.organizationId, chain, 'deposit'),
          }),
        ),
      );
      return reply.list('chains', page, { page: query.page, limit: query.limit, total: chains.length });
    },
  );
}
