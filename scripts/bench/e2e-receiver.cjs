// The merchant's webhook receiver of bench:e2e, in its own process: prints its port, then one
// line per POST: "<receipt time ms> <order id> <event id>".
const http = require('node:http');
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const at = Date.now();
    const orderId = /"(ord_[A-Za-z0-9_-]+)"/.exec(Buffer.concat(chunks).toString())?.[1] ?? '-';
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"received":true}');
    process.stdout.write(`${at} ${orderId} ${req.headers['x-service-event-id']}\n`);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`port ${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
