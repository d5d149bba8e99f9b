import net from 'node:net';

/**
 * A TCP proxy in front of a server (Postgres here) that can black-hole its connections: bytes
 * stop flowing both ways and nothing is closed (no FIN, no RST), as in a network partition, a NAT
 * that dropped an idle flow or a pooler whose backend died. Connections made while black-holed are
 * accepted and never answered; `restore` lets new connections through again (the black-holed ones
 * stay dead until `close`).
 */
export interface TcpProxy {
  port: number;
  /** A URL like `url` that goes through the proxy. */
  urlFor(url: string): string;
  blackHole(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let holed = false;
  const sockets = new Set<net.Socket>();
  const dead = (socket: net.Socket) => {
    socket.unpipe();
    socket.pause();
    socket.removeAllListeners('data');
    socket.on('data', () => {});
    socket.pause();
  };
  const pairs: [net.Socket, net.Socket][] = [];
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('error', () => {});
    client.on('close', () => sockets.delete(client));
    if (holed) {
      client.pause();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('close', () => {
      sockets.delete(upstream);
      if (!holed) client.destroy();
    });
    client.on('close', () => {
      if (!holed) upstream.destroy();
    });
    client.pipe(upstream);
    upstream.pipe(client);
    pairs.push([client, upstream]);
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
      holed = true;
      for (const [client, upstream] of pairs.splice(0)) {
        dead(client);
        dead(upstream);
      }
    },
    restore() {
      holed = false;
    },
    async close() {
      holed = true;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
