'use strict';
// autocannon's setupRequest for bench:pages (the load runs in a worker thread; a file can cross,
// a function cannot): each request asks for the next of the run's orders, round robin, so every
// order is read again and again as pages polling their status would.
const { readFileSync } = require('node:fs');

const tokens = readFileSync(process.env.BENCH_PAGES_TOKENS_FILE, 'utf8').trim().split('\n');
const suffix = process.env.BENCH_PAGES_SUFFIX || '';
let next = Math.floor(Math.random() * tokens.length);

module.exports = (req) => {
  next = (next + 1) % tokens.length;
  return { ...req, path: `/pay/${tokens[next]}${suffix}` };
};
