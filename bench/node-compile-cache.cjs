// Bench scenario 9's other side: chatctl's program run as bin/chatctl.js
// runs it, but with Node's own compile cache (module.enableCompileCache,
// Node 22.1 and later) in place of the launcher's V8 code cache. The lazy
// bundles are then plain require()s, which Node's cache covers too.
'use strict';
const path = require('node:path');
require('node:module').enableCompileCache(path.join(process.env.HOME, 'node-compile-cache'));
const program = require(path.join(__dirname, '..', 'dist', 'main.cjs'));
program.run(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
