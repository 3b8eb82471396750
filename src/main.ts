// The entry point: builds the real context, runs the command, and turns the
// outcome into an exit status, once, here. Nothing else calls process.exit.
import { randomUUID } from './random.js';
import { setTimeout as delay } from 'node:timers/promises';
import { createProcessIO } from './output/io.js';
import { loadPalettes } from './output/colors.js';
import { configDir } from './config/paths.js';
import { reportError, toCliError } from './errors/report.js';
import { CliError } from './errors/cli-error.js';
import { EXIT } from './errors/exit-codes.js';
import type { Context } from './context.js';
import { configuredProgram, runCli } from './cli.js';
import { describeCommand, type CommandNode } from './meta/tree.js';
import { renderAllHelp } from './meta/help.js';

declare const __CHATCTL_VERSION__: string;
export const VERSION = typeof __CHATCTL_VERSION__ === 'string' ? __CHATCTL_VERSION__ : '0.0.0-dev';

function flagBeforeDoubleDash(argv: string[], flag: string): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes(flag);
}

export async function run(argv: string[] = process.argv.slice(2)): Promise<number> {
  const env = process.env;
  // Known before parsing: a parse error is reported in the mode asked for.
  const json = flagBeforeDoubleDash(argv, '--json');
  const io = createProcessIO({ noColorFlag: flagBeforeDoubleDash(argv, '--no-color'), env, quiet: json });
  io.paint = await loadPalettes(io.color);
  const controller = new AbortController();
  let interrupts = 0;
  let received: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts++;
    // A second signal means "now": nothing is half-written at any await point.
    if (interrupts > 1) process.exit(signal === 'SIGTERM' ? 143 : 130);
    received = signal;
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const ctx: Context = {
    io,
    env,
    cwd: process.cwd(),
    configDir: configDir(env),
    version: VERSION,
    now: () => Date.now(),
    sleep: (ms, signal) => delay(ms, undefined, { signal }),
    randomUUID: () => randomUUID(),
    random: () => Math.random(),
    signal: controller.signal,
    transport: async () => (await import('./http/select-transport.js')).selectTransport(env),
  };
  try {
    await runCli(argv, ctx);
    return 0;
  } catch (err) {
    // SIGTERM ends with 143 (128 + 15), as a shell would report it.
    const e = toCliError(err);
    const final = e.exitCode === EXIT.interrupted && received === 'SIGTERM' ? new CliError('interrupted', 'terminated (SIGTERM)', EXIT.terminated) : err;
    return reportError(final, io, json, flagBeforeDoubleDash(argv, '--debug'));
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * What the build pre-computes for bin/chatctl.js's fast paths: the version,
 * every command's help text as commander renders it, aliases, and the
 * command tree for completion. Taken from the real program, never by hand.
 */
export async function buildMeta(): Promise<{ version: string; help: Record<string, string>; aliases: Record<string, string>; tree: CommandNode }> {
  let captured = '';
  const io = createProcessIO({ noColorFlag: true, env: {} });
  const sink = { isTTY: false, write: (s: string) => void (captured += s) };
  const ctx = {
    io: { ...io, stdout: sink, stderr: sink },
    version: VERSION,
  } as unknown as Context;
  const program = configuredProgram(ctx);
  const help = renderAllHelp(program, { take: () => [captured, (captured = '')][0]! });
  const aliases: Record<string, string> = {};
  for (const c of program.commands) for (const a of c.aliases()) aliases[a] = c.name();
  return { version: VERSION, help, aliases, tree: describeCommand(program) };
}
