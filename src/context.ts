// Everything a command needs from the outside world, passed in rather than
// imported, so tests hand in fakes (streams, clock, random, transport).
import type { IO } from './output/io.js';
import type { Transport } from './http/transport.js';

export interface Context {
  io: IO;
  env: NodeJS.ProcessEnv;
  /** The working directory relative paths are taken from. */
  cwd: string;
  configDir: string;
  version: string;
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  randomUUID(): string;
  random(): number;
  /** Aborted on SIGINT/SIGTERM. */
  signal: AbortSignal;
  /** Loaded on first use: the HTTP stack costs nothing to commands that do not send. */
  transport(): Promise<Transport>;
}

/** The options every API command takes (contract section 2). */
export interface GlobalOptions {
  profile?: string;
  baseUrl?: string;
  org?: string;
  app?: string;
  env?: string;
  json?: boolean;
  input?: boolean; // commander's --no-input
  dryRun?: boolean;
  debug?: boolean;
  maxRetries?: string;
  timeout?: string;
  color?: boolean; // commander's --no-color
}
