import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** An HTTP proxy in front of the node that can hold requests (a connection that hangs, no error) and let them go. */
export async function startHoldingProxy(target: string): Promise<{ url: string; hold(): void; release(): void; close(): Promise<void> }> {
  let holding = false;
  let waiting: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const forward = () => {
        fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) })
          .then(async (r) => {
            res.writeHead(r.status, { 'content-type': 'application/json' });
            res.end(await r.text());
          })
          .catch(() => res.destroy());
      };
      if (holding) waiting.push(forward);
      else forward();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hold: () => (holding = true),
    release: () => {
      holding = false;
      const go = waiting;
      waiting = [];
      for (const f of go) f();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
