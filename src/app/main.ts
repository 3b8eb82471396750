// The only adapter from a real process to execute() (signals as an AbortSignal): nothing else in
// src/ touches process.env, argv, the streams or exit.
import { fstatSync, statSync } from 'node:fs';
import { execute, VERSION } from './execute.js';
import { SIGNAL_EXIT } from '../errors/cli-error.js';
import { createIO, FullWriteStream } from '../output/io.js';
import type { Context } from '../context.js';
import { configuredProgram } from './cli.js';
import type { Command } from 'commander';
import { describeCommand, type CommandNode } from '../meta/tree.js';
import { HELP_HELP, renderManPages } from '../meta/reference.js';

/** For bin/chatctl.js, which writes its code cache with it. */
export { writeFileAtomic } from '../system/files.js';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export async function run(argv: string[] = process.argv.slice(2)): Promise<number> {
  const controller = new AbortController();
  let received = 0;
  let lastWords: (() => number) | undefined;
  let finished: number | undefined;
  const onSignal = (signal: (typeof SIGNALS)[number]) => {
    // A second signal means "now": what the command registered (a kept secret's whereabouts) is said first;
    // a run that already failed (13) keeps its code while its output drains.
    if (++received > 1) {
      let code: number = SIGNAL_EXIT[signal]!;
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
  // Left in place: a signal while output drains still ends the run with its own code.
  for (const s of SIGNALS) process.on(s, onSignal);
  const code = await execute(argv, {
    env: { ...process.env },
    io: {
      // A getter: building process.stdin costs about 1 ms that a run which never reads it need not pay.
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

const DISCARDING_DEVICES = ['/dev/null', '/dev/zero', '/dev/random', '/dev/urandom'];

/** Stdout on a regular file writes every byte or fails; on a device that keeps nothing it is marked so: a secret bound only there is refused before anything is sent. */
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

/** What the build pre-computes for bin/chatctl.js's fast paths, from the real program: version, help, aliases, tree, man pages. */
export async function buildMeta(): Promise<{ version: string; help: Record<string, string>; aliases: Record<string, string>; tree: CommandNode; man: Record<string, string> }> {
  let captured = '';
  const sink = Object.assign(new (await import('node:stream')).Writable({ write: (c, _e, done) => ((captured += String(c)), done()) }), { isTTY: false });
  const io = createIO({ stdin: process.stdin, stdout: sink, stderr: sink }, { env: {} });
  const ctx = { io, version: VERSION } as unknown as Context;
  const program = configuredProgram(ctx);
  // Every command's --help as commander renders it; a test compares each with the live program's.
  const help: Record<string, string> = {};
  const walk = (cmd: Command, path: string[]) => {
    cmd.outputHelp();
    help[path.join(' ')] = captured;
    captured = '';
    for (const sub of cmd.commands) if (sub.name() !== 'help') walk(sub, [...path, sub.name()]);
  };
  walk(program, []);
  help.help = HELP_HELP; // `chatctl help help`, on the fast path too
  delete help.reference; // rendered when asked for, so that --help does not read it on every run
  const aliases: Record<string, string> = {};
  for (const c of program.commands) for (const a of c.aliases()) aliases[a] = c.name();
  return { version: VERSION, help, aliases, tree: describeCommand(program), man: renderManPages(program, VERSION) };
}
