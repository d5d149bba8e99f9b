'use strict';
// autocannon's setupRequest for bench:pages (a file: the load generator runs in a process of its
// own): each request asks for the next of the run's orders, round robin, so every order is read
// again and again as pages polling their status would. The run's path suffix ('/status' or '' for
// the page) comes in its initialContext: the module is loaded once for all the runs.
const { readFileSync } = require('node:fs');

const tokens = readFileSync(process.env.BENCH_PAGES_TOKENS_FILE, 'utf8').trim().split('\n');
let next = Math.floor(Math.random() * tokens.length);

module.exports = (req, context) => {
  next = (next + 1) % tokens.length;
  return { ...req, path: `/pay/${tokens[next]}${context.suffix}` };
};
