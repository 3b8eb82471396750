import { writeSync as fsWriteSync } from 'node:fs';
import { Writable } from 'node:stream';
import { Scrubber } from './scrub.js';
import { inGitHubActions, jsonDocumentText, type JsonQuery, maskCommands } from './json.js';

// The streams a command writes to (ctx.io: the process's, or a test's), scrubbed, and what a command needs to know of them.

/** Colour through chalk at the level colorEnabled decided, chalk loaded only when some stream is in colour. */
export type Palette = { red(s: string): string; green(s: string): string; yellow(s: string): string; bold(s: string): string; dim(s: string): string };

const identity = (s: string) => s;
export const PLAIN: Palette = { red: identity, green: identity, yellow: identity, bold: identity, dim: identity };

export async function loadPalettes(color: { stdout: boolean; stderr: boolean }): Promise<{ stdout: Palette; stderr: Palette }> {
  if (!color.stdout && !color.stderr) return { stdout: PLAIN, stderr: PLAIN };
  const { Chalk } = await import('chalk');
  const c = new Chalk({ level: 1 });
  const p: Palette = { red: c.red, green: c.green, yellow: c.yellow, bold: c.bold, dim: c.dim };
  return { stdout: color.stdout ? p : PLAIN, stderr: color.stderr ? p : PLAIN };
}

// Stdout to a file: Node's SyncWriteStream ignores a short write (a full disk), so a secret cut short would count as delivered.

type WriteSync = (fd: number, buffer: Buffer, offset: number, length: number) => number;

export class FullWriteStream extends Writable {
  readonly isTTY = false;
  constructor(
    readonly fd: number,
    private readonly writeSync: WriteSync = fsWriteSync,
  ) {
    super({ decodeStrings: true });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    try {
      for (let at = 0; at < chunk.length; ) {
        const n = this.writeSync(this.fd, chunk, at, chunk.length - at);
        if (n <= 0) throw Object.assign(new Error(`wrote nothing of the last ${chunk.length - at} bytes`), { code: 'EIO' });
        at += n;
      }
      done();
    } catch (error) {
      done(error as Error);
    }
  }
}

export interface OutStream {
  /** Best effort: a closed or failing stream drops the text quietly. */
  write(text: string): void;
  /** For output that must not be lost (the secret): resolves once handed to the OS, rejects with the write's (or an earlier) error. */
  writeConfirmed?(text: string): Promise<void>;
  readonly isTTY: boolean;
  /** It is /dev/null (or closed, which Node opens /dev/null on): what is written is thrown away. */
  readonly discards?: boolean;
}

interface InStream {
  readonly isTTY: boolean;
  readAll(): Promise<string>;
  /** The whole of standard input as bytes, for a reader that decodes it strictly itself (`rotate --from -`). */
  readBytes(): Promise<Buffer>;
}

export interface RawStreams {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number; discards?: boolean; toFile?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number; toFile?: boolean };
}

export interface OutputMode {
  json: boolean;
  /** `--secret-to stdout`: stdout holds the secret and nothing else. */
  secretOnStdout?: boolean;
  quiet: boolean;
  debug: boolean;
  query?: JsonQuery | undefined;
}

export interface IO {
  stdout: OutStream;
  stderr: OutStream;
  stdin: InStream;
  raw: RawStreams;
  columns: number;
  scrubber: Scrubber;
  color: { stdout: boolean; stderr: boolean };
  paint: { stdout: Palette; stderr: Palette };
  /** An informational line on stderr ("chatctl: …"), muted with --quiet and --json. */
  notice(text: string): void;
  /** Stdout is data (`auth token`, `webhooks sign`), as with --json: from now on `::add-mask::` lines go to stderr. */
  stdoutIsData(): void;
  readonly query?: JsonQuery | undefined;
}

export function writeJson(io: IO, value: unknown, layout?: 'indent-on-tty' | 'one-line'): void {
  io.stdout.write(jsonDocumentText(io, value, layout));
}

function colorEnabled(isTTY: boolean, env: Record<string, string | undefined>): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false') return true;
  if (env.TERM === 'dumb') return false;
  return isTTY;
}

/** Scrubs, and takes a failed stream (a closed pipe, a full disk) as the end of output: kept for writeConfirmed, never thrown. */
export function wrapOutStream(stream: NodeJS.WritableStream & { isTTY?: boolean; discards?: boolean }, scrub: (s: string) => string): OutStream {
  let failed: Error | undefined;
  stream.on('error', (err: Error) => void (failed ??= err));
  return {
    isTTY: Boolean(stream.isTTY),
    discards: Boolean(stream.discards),
    write(text: string) {
      if (!failed) stream.write(scrub(text));
    },
    writeConfirmed(text: string) {
      return new Promise<void>((resolve, reject) => {
        if (failed) return reject(failed);
        // (A write that throws rejects too: the executor's throw.)
        stream.write(scrub(text), (err) => (err ? reject(err) : resolve()));
      });
    },
  };
}

/** Standard input, taken from `raw` on first use: a process's stdin is built when first touched, and most runs never read it. */
function wrapInStream(raw: Pick<RawStreams, 'stdin'>): InStream {
  const readBytes = async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of raw.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
    return Buffer.concat(chunks);
  };
  return {
    get isTTY() {
      return Boolean(raw.stdin.isTTY);
    },
    readAll: async () => (await readBytes()).toString('utf8'),
    readBytes,
  };
}

type IOSettings = { env: Record<string, string | undefined>; columns?: number | undefined };

/** The IO of one run; colour and quietness are settled by setOutputMode once the flags are parsed. */
export function createIO(raw: RawStreams, settings: IOSettings): IO & { setOutputMode(mode: OutputMode & { noColor: boolean }): void } {
  // In GitHub Actions each secret and the token get `::add-mask::` when first known, on stdout (stderr when stdout is
  // data), written raw and at once: scrubbing would blank the value to mask, and nothing later may overtake it.
  let maskOn: 'stdout' | 'stderr' = 'stdout';
  const announce = inGitHubActions(settings.env)
    ? (value: string) => {
        try {
          // A stdout sent to /dev/null would take the mask with it, out of the runner's sight.
          const on = maskOn === 'stdout' && (raw.stdout.discards || raw.stdout.toFile) ? 'stderr' : maskOn;
          // A regular file (`2>error.json`) is no log the runner reads: the mask would only put the value in that file.
          if (!raw[on].toFile) raw[on].write(maskCommands(value));
        } catch {
          // a failed stream: nothing will be shown on it either
        }
      }
    : undefined;
  const scrubber = new Scrubber(announce);
  const stderr = wrapOutStream(raw.stderr, (s) => scrubber.scrub(s));
  let quiet = false;
  let query: JsonQuery | undefined;
  const io = {
    stdout: wrapOutStream(raw.stdout, (s) => scrubber.scrubCredentials(s)),
    stderr,
    stdin: wrapInStream(raw),
    raw,
    columns: settings.columns || raw.stdout.columns || 100,
    notice: (text: string) => {
      if (!quiet) stderr.write(`chatctl: ${text}\n`);
    },
    get query() {
      return query;
    },
    scrubber,
    color: { stdout: colorEnabled(Boolean(raw.stdout.isTTY), settings.env), stderr: colorEnabled(Boolean(raw.stderr.isTTY), settings.env) },
    paint: { stdout: PLAIN, stderr: PLAIN },
    stdoutIsData() {
      maskOn = 'stderr';
    },
    setOutputMode(mode: OutputMode & { noColor: boolean }) {
      quiet = mode.quiet || mode.json;
      query = mode.query;
      if (mode.json || mode.secretOnStdout) maskOn = 'stderr';
      if (mode.noColor) io.color = { stdout: false, stderr: false };
    },
  };
  return io;
}
