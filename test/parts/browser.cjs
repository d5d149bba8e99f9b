module.exports = require('./parts.cjs').configFor('browser');
