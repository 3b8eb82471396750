// Everything a command needs from the outside world, passed in so tests hand in
// fakes; main.ts is the only place that hands in the real process.
import type { IO } from './output/io.js';
import type { Transport } from './http/transport.js';
import type { Clock } from './system/clock.js';

export type Env = Record<string, string | undefined>;

/** The limits of the keyring and the token command, shortened by tests; the defaults are 3 s and 10 s. */
export type CredentialLimits = { keyringMs?: number | undefined; helperMs?: number | undefined };

export interface Context extends Clock {
  io: IO;
  /** A plain object, never process.env itself. */
  env: Env;
  cwd: string;
  configDir: string;
  version: string;
  randomUUID(): string;
  random(): number;
  /** Aborted on SIGINT/SIGTERM/SIGHUP (the reason names the signal). */
  signal: AbortSignal;
  /** What a second signal, which ends the process at once, must still say (a kept secret): writes it, returns the exit code. Absent in-process. */
  setLastWords?(words: (() => number) | undefined): void;
  /** Loaded on first use: the HTTP stack costs nothing to commands that do not send. */
  transport(): Promise<Transport>;
  credentialLimits?: CredentialLimits | undefined;
}
