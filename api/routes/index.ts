import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { registerAddressPoolRoutes } from './address-pool.routes';
import { registerChainRoutes } from './chains.routes';
import { registerConfigRoutes } from './config.routes';
import { registerDepositRoutes } from './deposits.routes';
import { registerExportRoutes } from './exports.routes';
import { registerOrganizationRoutes } from './organizations.routes';
import { registerOrderRoutes } from './orders.routes';
import { registerPaymentLinkRoutes } from './payment-links.routes';
import { registerWebhookRoutes } from './webhooks.routes';
import { registerTransferRoutes } from './transfers.routes';
import { registerRefundRoutes } from './refunds.routes';

/** Every resource's routes, mounted under /api/v1. */
export function registerRoutes(api: ApiBuilder, deps: ApiDeps): void {
  registerOrganizationRoutes(api, deps);
  registerChainRoutes(api, deps);
  registerConfigRoutes(api, deps);
  registerDepositRoutes(api, deps);
  registerTransferRoutes(api, deps);
  registerAddressPoolRoutes(api, deps);
  registerOrderRoutes(api, deps);
  registerWebhookRoutes(api, deps);
  registerPaymentLinkRoutes(api, deps);
  registerExportRoutes(api, deps);
  registerRefundRoutes(api, deps);
}
