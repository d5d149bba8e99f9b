import type { Redis } from 'ioredis';
import type { ServiceContext } from '../core/context';
import type { Queues } from '../workers/catalog';

/** What the app factory needs: the shared service context plus the API's Redis connection and queues. */
export interface ApiDeps extends ServiceContext {
  /** Producer connection: fails fast when Redis is down. */
  redis: Redis;
  queues: Queues;
}
