module.exports = require('./parts.cjs').configFor('ops');
