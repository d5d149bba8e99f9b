import { SocketSubscriber, WebSocketProvider, type SocketProvider, type Subscriber, type Subscription } from 'ethers';
import type { HeadSubscription, HeadSubscriptionState } from '../adapter-contract';
import type { Chain } from '../chain';

const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

type OnHead = (height: number, hash: string | null) => void;

/**
 * ethers' `block` subscription without dropping what newHeads carries: the block's hash comes in
 * the same message as its number (the head observation records it, head-observations.ts), at no
 * extra call.
 */
class NewHeadsSubscriber extends SocketSubscriber {
  constructor(
    provider: SocketProvider,
    private readonly onHead: OnHead,
  ) {
    super(provider, ['newHeads']);
  }

  override async _emit(_provider: SocketProvider, message: { number?: unknown; hash?: unknown }): Promise<void> {
    const height = parseInt(String(message.number));
    if (Number.isSafeInteger(height)) this.onHead(height, typeof message.hash === 'string' ? message.hash : null);
  }
}

class HeadsProvider extends WebSocketProvider {
  onHead: OnHead = () => {};

  override _getSubscriber(sub: Subscription): Subscriber {
    return sub.type === 'block' ? new NewHeadsSubscriber(this, this.onHead) : super._getSubscriber(sub);
  }
}

/**
 * New heads over WebSocket (`eth_subscribe newHeads`, through ethers' WebSocketProvider), one
 * socket per chain and process, each with its block hash. When the socket closes or cannot
 * connect, it reconnects after 0.5 s, doubling up to 30 s, and back to 0.5 s once connected;
 * several URLs are tried in turn.
 */
export function subscribeEvmHeads(chain: Pick<Chain, 'chainId' | 'wsUrls' | 'evmChainId'>, onHead: OnHead, state: HeadSubscriptionState): HeadSubscription {
  let closed = false;
  let provider: WebSocketProvider | null = null;
  let timer: NodeJS.Timeout | null = null;
  let retryMs = FIRST_RETRY_MS;
  let urlIndex = 0;

  const connect = () => {
    if (closed) return;
    const url = chain.wsUrls[urlIndex % chain.wsUrls.length];
    let down = false;
    const p = new HeadsProvider(url, chain.evmChainId, { staticNetwork: true });
    p.onHead = onHead;
    provider = p;
    const socket = p.websocket as unknown as { addEventListener(type: string, fn: (e: { message?: string }) => void): void };
    const drop = (reason: string) => {
      if (down || closed) return;
      down = true;
      provider = null;
      p.destroy();
      urlIndex++;
      state.dropped(url, reason, retryMs);
      timer = setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
    };
    socket.addEventListener('error', (e) => drop(e.message ?? 'socket error'));
    socket.addEventListener('close', () => drop('socket closed'));
    socket.addEventListener('open', () => {
      retryMs = FIRST_RETRY_MS;
      state.connected(url);
    });
    // The listener only starts the subscription: heads reach onHead through NewHeadsSubscriber.
    p.on('block', () => {}).catch((err: Error) => drop(err.message));
  };
  connect();

  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await provider?.destroy();
    },
  };
}
