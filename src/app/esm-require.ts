// Imported first by execute.ts. When src/ is bundled as an ES module (say
// `esbuild --bundle --format=esm src/app/execute.ts`), the CommonJS libraries
// inside it (commander, cli-table3…) call require() for Node's built-ins, and
// an ES module has none: esbuild's stand-in throws "Dynamic require of
// "node:events" is not supported" as the bundle loads. Its stand-in looks for
// a global require at each call, so one is provided here, before those
// libraries load. Only built-in modules reach it (everything else is inside
// the bundle), so the base path does not matter. Our own build is CommonJS,
// where __dirname exists and this does nothing. (`typeof require` cannot tell:
// esbuild rewrites it to its stand-in.)
import { createRequire } from 'node:module';

const scope = globalThis as { require?: NodeJS.Require };
if (typeof __dirname === 'undefined' && scope.require === undefined) scope.require = createRequire('/');
