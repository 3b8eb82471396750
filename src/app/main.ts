// The only adapter from a real process to execute(): it hands in the
// process's environment, streams and working folder, turns signals into an
// AbortSignal, and returns the exit status for bin/chatctl.js to set.
// Nothing else in src/ touches process.env, argv, the standard streams or
// process.exit.
import { fstatSync, statSync } from 'node:fs';
import { execute, VERSION } from './execute.js';
import { createIO, FullWriteStream } from '../output/io.js';
import type { Context } from '../context.js';
import { configuredProgram } from './cli.js';
import { describeCommand, type CommandNode } from '../meta/tree.js';
import { renderAllHelp } from '../meta/help.js';
import { renderManPages } from '../meta/man.js';
import { HELP_HELP } from '../meta/reference.js';

export { VERSION };
/** For bin/chatctl.js, which writes its code cache with it. */
export { writeFileAtomic } from '../fs/files.js';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const EXIT_FOR_SIGNAL = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;

export async function run(argv: string[] = process.argv.slice(2)): Promise<number> {
  const controller = new AbortController();
  let received = 0;
  let lastWords: (() => number) | undefined;
  let finished: number | undefined;
  const onSignal = (signal: (typeof SIGNALS)[number]) => {
    // A second signal means "now": nothing is half-written at any await point.
    // What the command registered (a kept secret's whereabouts) is said first.
    // A run that already ended with a failure (13: the secret kept, not
    // delivered) keeps its code while its output drains: the signal only
    // cut the drain short.
    if (++received > 1) {
      let code: number = EXIT_FOR_SIGNAL[signal];
      try {
        if (lastWords) code = lastWords();
        else if (finished !== undefined && finished !== 0) code = finished;
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
  const code = await execute(argv, {
    env: { ...process.env },
    io: {
      // A getter: Node builds process.stdin when it is first touched, which
      // costs about 1 ms that a run which never reads it need not pay.
      get stdin() {
        return process.stdin;
      },
      stdout: stdoutStream(),
      stderr: isFile(2) ? Object.assign(process.stderr, { toFile: true }) : process.stderr,
    },
    cwd: process.cwd(),
    signal: controller.signal,
    setLastWords: (words) => {
      lastWords = words;
    },
  });
  finished = code;
  return code;
}

/** Devices that take every write and keep nothing. */
const DISCARDING_DEVICES = ['/dev/null', '/dev/zero', '/dev/random', '/dev/urandom'];

/**
 * Standard output as execute() gets it: on a regular file (`> out.txt`), a
 * stream that writes every byte or fails (output/io.ts); on
 * /dev/null (`> /dev/null`, or closed, which Node opens /dev/null on) or
 * another device that keeps nothing (`> /dev/zero`), marked as throwing away
 * what it is given, so that a secret whose only destination it is, is
 * refused before anything is sent.
 */
function stdoutStream(): RawStdout {
  let st;
  try {
    st = fstatSync(1);
  } catch {
    return process.stdout;
  }
  if (st.isFile()) return Object.assign(new FullWriteStream(1), { toFile: true });
  // (A terminal is a character device too; process.stdout is made below in any case.)
  if (st.isCharacterDevice() && !process.stdout.isTTY) {
    for (const device of DISCARDING_DEVICES) {
      try {
        if (statSync(device).rdev === st.rdev) return Object.assign(process.stdout, { discards: true });
      } catch {
        /* no such device here to compare with */
      }
    }
  }
  return process.stdout;
}

type RawStdout = NodeJS.WritableStream & { isTTY?: boolean; columns?: number; discards?: boolean; toFile?: boolean };

/** Whether the descriptor is a regular file (a shell's `2>file`): a runner never reads workflow commands there. */
function isFile(fd: number): boolean {
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
export async function buildMeta(): Promise<{ version: string; help: Record<string, string>; aliases: Record<string, string>; tree: CommandNode; man: Record<string, string> }> {
  let captured = '';
  const sink = Object.assign(new (await import('node:stream')).Writable({ write: (c, _e, done) => ((captured += String(c)), done()) }), { isTTY: false });
  const io = createIO({ stdin: process.stdin, stdout: sink, stderr: sink }, { env: {} });
  const ctx = { io, version: VERSION } as unknown as Context;
  const program = configuredProgram(ctx);
  const help = renderAllHelp(program, { take: () => [captured, (captured = '')][0]! });
  // `chatctl help help` and `chatctl help --help`, on the fast path too.
  help.help = HELP_HELP;
  // The reference is every entry above at once: it is rendered when asked
  // for, so that --version and --help do not read it on every run.
  delete help.reference;
  const aliases: Record<string, string> = {};
  for (const c of program.commands) for (const a of c.aliases()) aliases[a] = c.name();
  return { version: VERSION, help, aliases, tree: describeCommand(program), man: renderManPages(program, VERSION) };
}
