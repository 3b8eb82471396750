#!/usr/bin/env node
// chatctl's launcher. It stays tiny: the real work is in dist/, loaded only
// when a command needs it.
import { run } from '../dist/main.js';

process.exitCode = await run(process.argv.slice(2));
