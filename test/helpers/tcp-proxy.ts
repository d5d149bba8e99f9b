import net from 'node:net';

/**
 * A TCP proxy in front of a server (Postgres here) that can black-hole its connections: bytes
 * stop flowing both ways and nothing is closed (no FIN, no RST), as in a network partition, a NAT
 * that dropped an idle flow or a pooler whose backend died.
 * - `blackHole`/`restore`: the connections open at `blackHole` are dead for good (their bytes are
 *   discarded); connections made while black-holed are accepted and never answered; `restore` lets
 *   new connections through again.
 * - `partition`/`heal`: a partition that heals, as a failover, a NAT flush or a network blip is
 *   seen from the client: every connection, open or opened meanwhile, stops forwarding; what either
 *   side sends (bytes, a close) is held, as TCP keeps retransmitting it, and delivered at `heal`,
 *   after which all flows again.
 */
export interface TcpProxy {
  port: number;
  /** A URL like `url` that goes through the proxy. */
  urlFor(url: string): string;
  blackHole(): void;
  restore(): void;
  partition(): void;
  heal(): void;
  close(): Promise<void>;
}

type Mode = 'open' | 'black-hole' | 'partition';

/** One direction of a proxied connection: forwards `from`'s bytes and its end to `to`, or holds them while partitioned. */
interface Direction {
  held: Buffer[];
  ended: boolean;
  flush(): void;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: Mode = 'open';
  const sockets = new Set<net.Socket>();
  /** Live links: heal() flushes what they hold; blackHole() kills them. */
  const links = new Set<{ kill(): void; flush(): void }>();

  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  };

  const direction = (from: net.Socket, to: () => net.Socket | null): Direction => {
    const d: Direction = {
      held: [],
      ended: false,
      flush() {
        const target = to();
        if (!target || mode !== 'open') return;
        for (const chunk of d.held.splice(0)) target.write(chunk);
        if (d.ended) target.end();
      },
    };
    from.on('data', (chunk: Buffer) => {
      d.held.push(chunk);
      d.flush();
    });
    from.on('end', () => {
      d.ended = true;
      d.flush();
    });
    return d;
  };

  const server = net.createServer((client) => {
    track(client);
    if (mode === 'black-hole') {
      client.pause();
      return;
    }
    let upstream: net.Socket | null = null;
    let dead = false;
    const up = direction(client, () => upstream);
    let down: Direction | null = null;
    const connectUpstream = () => {
      if (upstream || dead || client.destroyed) return;
      upstream = net.connect(target.port, target.host);
      track(upstream);
      down = direction(upstream, () => client);
      // A reset on one side reaches the other only while the network lets it through.
      upstream.on('close', () => {
        if (!dead) whenOpen(() => client.destroy());
      });
      up.flush();
    };
    let onOpen: (() => void)[] = [];
    const whenOpen = (f: () => void) => (mode === 'open' ? f() : onOpen.push(f));
    client.on('close', () => {
      if (!dead) whenOpen(() => upstream?.destroy());
    });
    const link = {
      kill() {
        dead = true;
        links.delete(link);
        for (const s of [client, upstream]) {
          if (!s) continue;
          s.removeAllListeners('data');
          s.removeAllListeners('end');
          s.on('data', () => {});
          s.on('error', () => {});
        }
      },
      flush() {
        connectUpstream();
        up.flush();
        down?.flush();
        const pending = onOpen;
        onOpen = [];
        for (const f of pending) f();
      },
    };
    links.add(link);
    if (mode === 'open') connectUpstream();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    urlFor(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    blackHole() {
      mode = 'black-hole';
      for (const link of [...links]) link.kill();
    },
    restore() {
      mode = 'open';
    },
    partition() {
      mode = 'partition';
    },
    heal() {
      mode = 'open';
      for (const link of [...links]) link.flush();
    },
    async close() {
      mode = 'black-hole';
      for (const link of [...links]) link.kill();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
