'use strict';
// CRC-32 of ZIP entries by carry-less multiplication (src/crc32.c, built at install by
// build.cjs). Plain CommonJS so that the service bundles can leave it, and the addon next to
// it, outside (scripts/services.ts). On a CPU without carry-less multiply (method 0), zlib's
// table CRC is faster than the addon's bytewise one, so that is used instead.
const zlib = require('node:zlib');
const addon = require('./build/Release/crc32.node');

const METHODS = ['zlib', 'pclmul', 'vpclmul-avx2', 'vpclmul-avx512'];

exports.addon = addon;
exports.method = METHODS[addon.method];
exports.crc32 = addon.method === 0 ? (data, previous = 0) => zlib.crc32(data, previous) >>> 0 : addon.crc32;
