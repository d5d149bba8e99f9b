import express from 'express';
import type { Config } from '../core/platform/config';
import { ChainRegistry } from '../core/chains/registry';
import { SCANNED_FAMILIES } from '../core/chains/adapters';
import { SERVICE_VERSION } from '../core/platform/version';
import type { ApiDeps } from './deps';
import { WireFormat } from './format';
import { buildOpenApi, type OpenApiDocument } from './openapi';
import { ApiBuilder } from './route-kit';
import { registerRoutes } from './routes';

/**
 * The OpenAPI document of a deployment with this configuration, without a running service: the
 * routes are declared on a throwaway Express app whose handlers never run (nothing connects to
 * Postgres or Redis). The typed client is generated from it (scripts/generate-client.ts), and a
 * test compares the committed client with it.
 */
export function openApiDocumentFor(config: Config): OpenApiDocument {
  const declaring = {
    config: { ...config, rateLimit: { ...config.rateLimit, enabled: false } },
    // Descriptions that depend on what is enabled are written from the registry.
    registry: ChainRegistry.forConfig(config, SCANNED_FAMILIES),
  } as unknown as ApiDeps;
  const api = new ApiBuilder(declaring, new WireFormat(config.apiStyle), express(), '/api/v1');
  registerRoutes(api, declaring);
  return buildOpenApi(api.routes, { version: SERVICE_VERSION, style: config.apiStyle, publicBaseUrl: config.publicBaseUrl });
}
