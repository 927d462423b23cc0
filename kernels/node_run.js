// codecell one-shot driver for JavaScript, run inside the sandbox as
//   /usr/bin/node -e <this file> FILENAME [ARGS...]
// The code comes on fd 3; a structured error, if any, goes to fd 4 as one
// JSON line {"error": {"name", "value", "traceback"}}.
'use strict';
(() => {
  const fs = require('fs');
  const path = require('path');
  const Module = require('module');
  const filename = process.argv[1];
  const source = fs.readFileSync(3, 'utf8');
  fs.closeSync(3);
  let reported = false;

  const report = (err) => {
    if (reported) return;
    reported = true;
    const isErr = err instanceof Error;
    const name = isErr ? err.name : 'Uncaught';
    const value = isErr ? err.message : String(err);
    let stack = isErr && err.stack ? String(err.stack) : `${name}: ${value}`;
    // keep the user's frames, drop node's internals and this driver
    stack = stack.split('\n').filter((l) => !/\(node:|at node:|\[eval\]|^\s+at Module\._compile/.test(l)).join('\n');
    try {
      fs.writeSync(2, stack + '\n');
      fs.writeSync(4, JSON.stringify({ error: { name, value, traceback: stack } }) + '\n');
    } catch (e) { /* the report channel is best effort */ }
    process.exit(1);
  };
  process.on('uncaughtException', report);
  process.on('unhandledRejection', report);

  const full = path.resolve(filename);
  const m = new Module(full, null);
  m.filename = full;
  m.paths = Module._nodeModulePaths(process.cwd());
  process.argv = [process.argv0, full, ...process.argv.slice(2)];
  require.main = m;
  try {
    m._compile(source, full);
  } catch (e) {
    report(e);
  }
})();
