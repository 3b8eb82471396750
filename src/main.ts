// The only adapter from a real process to execute(): it hands in the
// process's environment, streams and working folder, turns signals into an
// AbortSignal, and returns the exit status for bin/chatctl.js to set.
// Nothing else in src/ touches process.env, argv, the standard streams or
// process.exit.
import { fstatSync } from 'node:fs';
import { execute, VERSION } from './app/execute.js';
import { FullWriteStream } from './output/full-writes.js';
import { createIO } from './output/io.js';
import type { Context } from './context.js';
import { configuredProgram } from './cli.js';
import { describeCommand, type CommandNode } from './meta/tree.js';
import { renderAllHelp } from './meta/help.js';

export { VERSION };

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const EXIT_FOR_SIGNAL = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;

export async function run(argv: string[] = process.argv.slice(2)): Promise<number> {
  const controller = new AbortController();
  let received = 0;
  let lastWords: (() => number) | undefined;
  const onSignal = (signal: (typeof SIGNALS)[number]) => {
    // A second signal means "now": nothing is half-written at any await point.
    // What the command registered (a kept secret's whereabouts) is said first.
    if (++received > 1) {
      let code: number = EXIT_FOR_SIGNAL[signal];
      try {
        if (lastWords) code = lastWords();
      } catch {
        /* exiting anyway */
      }
      process.exit(code);
    }
    controller.abort(signal);
  };
  // Left in place until the process ends: a signal that arrives after the
  // command finished, while output drains, still ends it with its own code
  // rather than the default action's.
  for (const s of SIGNALS) process.on(s, onSignal);
  return execute(argv, {
    env: { ...process.env },
    io: { stdin: process.stdin, stdout: isRegularFile(1) ? new FullWriteStream(1) : process.stdout, stderr: process.stderr },
    cwd: process.cwd(),
    signal: controller.signal,
    setLastWords: (words) => {
      lastWords = words;
    },
  });
}

/** A file descriptor open on a regular file (`> out.txt`): see output/full-writes.ts. */
function isRegularFile(fd: number): boolean {
  try {
    return fstatSync(fd).isFile();
  } catch {
    return false;
  }
}

/**
 * What the build pre-computes for bin/chatctl.js's fast paths: the version,
 * every command's help text as commander renders it, aliases, and the
 * command tree for completion. Taken from the real program, never by hand.
 */
export async function buildMeta(): Promise<{ version: string; help: Record<string, string>; aliases: Record<string, string>; tree: CommandNode }> {
  let captured = '';
  const sink = Object.assign(new (await import('node:stream')).Writable({ write: (c, _e, done) => ((captured += String(c)), done()) }), { isTTY: false });
  const io = createIO({ stdin: process.stdin, stdout: sink, stderr: sink }, { env: {} });
  const ctx = { io, version: VERSION } as unknown as Context;
  const program = configuredProgram(ctx);
  const help = renderAllHelp(program, { take: () => [captured, (captured = '')][0]! });
  const aliases: Record<string, string> = {};
  for (const c of program.commands) for (const a of c.aliases()) aliases[a] = c.name();
  return { version: VERSION, help, aliases, tree: describeCommand(program) };
}
