module.exports = require('./parts.cjs').configFor('api');
