// The streams a command writes to, with the facts it needs about them. Tests
// pass fakes (see test/helpers/fake-io.ts) with a TTY switch for each stream.
import { isatty } from 'node:tty';
import { Redactor } from './redact.js';
import { PLAIN, type Palette } from './colors.js';

export interface OutStream {
  write(text: string): void;
  readonly isTTY: boolean;
}

export interface InStream {
  readonly isTTY: boolean;
  /** Reads the whole of standard input (for `auth login --with-token`). */
  readAll(): Promise<string>;
}

export interface IO {
  stdout: OutStream;
  stderr: OutStream;
  stdin: InStream;
  redactor: Redactor;
  /** Colour allowed on this stream (TTY, no NO_COLOR, no --no-color; FORCE_COLOR forces). */
  color: { stdout: boolean; stderr: boolean };
  /** chalk for the streams in colour, plain functions for the others (main.ts loads it). */
  paint: { stdout: Palette; stderr: Palette };
  /**
   * An informational line on stderr ("chatctl: …"). Muted with --json, where
   * stderr holds nothing but the one error line a script parses.
   */
  notice(text: string): void;
  /** --json: stderr carries only the one error line. */
  readonly quiet: boolean;
}

/** The --json document on stdout: indented on a terminal, one line otherwise. */
export function writeJson(io: IO, value: unknown): void {
  io.stdout.write(JSON.stringify(value, null, io.stdout.isTTY ? 2 : undefined) + '\n');
}

export interface ColorSettings {
  noColorFlag: boolean;
  env: NodeJS.ProcessEnv;
  /** --json: no notices on stderr. */
  quiet?: boolean;
}

export function colorEnabled(isTTY: boolean, { noColorFlag, env }: ColorSettings): boolean {
  if (noColorFlag) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false') return true;
  if (env.TERM === 'dumb') return false;
  return isTTY;
}

type Writable = NodeJS.WriteStream;

/** Wraps a real stream: scrubs, and treats a closed pipe as the end of output. */
export function processOutStream(stream: Writable, scrub: (s: string) => string): OutStream {
  let closed = false;
  stream.on('error', (err: NodeJS.ErrnoException) => {
    // `chatctl … | head -1`: the reader went away; stop writing, quietly.
    if (err.code === 'EPIPE') closed = true;
    else throw err;
  });
  return {
    isTTY: Boolean(stream.isTTY),
    write(text: string) {
      if (!closed) stream.write(scrub(text));
    },
  };
}

/** process.stdin is created only if read: most runs never touch it. */
export function processStdin(isTTY: boolean): InStream {
  return {
    isTTY,
    async readAll() {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
  };
}

export function createProcessIO(settings: ColorSettings): IO {
  const redactor = new Redactor();
  const stderr = processOutStream(process.stderr, (s) => redactor.scrubAll(s));
  return {
    stdout: processOutStream(process.stdout, (s) => redactor.scrubCredentials(s)),
    stderr,
    notice: (text) => {
      if (!settings.quiet) stderr.write(`chatctl: ${text}\n`);
    },
    quiet: Boolean(settings.quiet),
    stdin: processStdin(isatty(0)),
    redactor,
    color: {
      stdout: colorEnabled(Boolean(process.stdout.isTTY), settings),
      stderr: colorEnabled(Boolean(process.stderr.isTTY), settings),
    },
    paint: { stdout: PLAIN, stderr: PLAIN },
  };
}
