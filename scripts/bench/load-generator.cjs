'use strict';
// The HTTP benchmarks' load generator as a child process of its own (scripts/bench/bench-kit.ts
// startLoadGenerator): it runs autocannon in its main thread, one run per message from the bench
// and one at a time, and answers the run's result. It lives for the whole bench, so its warm-up
// run also warms the code that measures the next runs: a load generator started cold for every
// run (a fresh worker thread each time) spent the run's first second in the interpreter, and the
// slowest answers it recorded were its own start, not the service's.
const autocannon = require('autocannon');

process.on('message', (message) => {
  autocannon(message.options, (err, result) => {
    if (err) process.send({ id: message.id, error: String(err && err.stack ? err.stack : err) });
    else process.send({ id: message.id, result: JSON.parse(JSON.stringify(result)) });
  });
});
process.on('disconnect', () => process.exit(0));
