// The streams a command writes to, with the facts it needs about them. Tests
// pass fakes (see test/helpers/fake-io.ts) with a TTY switch for each stream.
import { isatty } from 'node:tty';
import { Redactor } from './redact.js';
import { PLAIN, type Palette } from './colors.js';

export interface OutStream {
  /** Best effort: a closed or failing stream drops the text quietly. */
  write(text: string): void;
  /**
   * For output that must not be lost (the one-time secret): resolves once the
   * text is handed to the operating system, rejects with the write's error
   * (EPIPE, ENOSPC, EIO), or at once if the stream has already failed.
   * Streams without it are taken to accept every write.
   */
  writeConfirmed?(text: string): Promise<void>;
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

/**
 * Wraps a real stream: scrubs, and treats a failed stream (a closed pipe, a
 * full disk, a terminal gone) as the end of output. The failure is kept for
 * writeConfirmed, never thrown: an error thrown from here would be a stack trace.
 */
export function processOutStream(stream: Writable, scrub: (s: string) => string): OutStream {
  let failed: Error | undefined;
  stream.on('error', (err: Error) => {
    // `chatctl … | head -1`: the reader went away; stop writing, quietly.
    failed ??= err;
  });
  return {
    isTTY: Boolean(stream.isTTY),
    write(text: string) {
      if (!failed) stream.write(scrub(text));
    },
    writeConfirmed(text: string) {
      return new Promise<void>((resolve, reject) => {
        if (failed) return reject(failed);
        try {
          stream.write(scrub(text), (err) => (err ? reject(err) : resolve()));
        } catch (err) {
          reject(err as Error);
        }
      });
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
