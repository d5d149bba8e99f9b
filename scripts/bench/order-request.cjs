'use strict';
// autocannon's setupRequest for bench:orders when the load runs in a worker thread (functions
// cannot cross to a thread; a file can). Every request gets a new orderReference: the run's tag,
// this thread's random part and a counter.
const { randomBytes } = require('node:crypto');

const thread = randomBytes(3).toString('hex');
let seq = 0;

module.exports = (req) => {
  const tag = req.headers['x-bench-tag'];
  const body = JSON.stringify({
    orderReference: `${tag}-${thread}-${++seq}`,
    amount: '10.5',
    currency: 'USDT',
    chainId: req.headers['x-bench-chain'] || 'ethereum-local',
    metadata: { bench: true },
  });
  return { ...req, body };
};
