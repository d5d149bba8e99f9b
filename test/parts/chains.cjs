module.exports = require('./parts.cjs').configFor('chains');
