// chatctl sandbox: wires the command line to src/sandbox/command.ts.
import type { Context, GlobalOptions } from '../context.js';
import { CliError, usageError } from '../errors/cli-error.js';

export interface SandboxFlags {
  host: string;
  port: string;
  token?: string;
  endpointLimit: string;
  rateLimit: string;
  latency: string;
}

const wholeNumber = (raw: string, flag: string, max: number) => {
  if (!/^\d+$/.test(raw) || Number(raw) > max) throw usageError(`invalid ${flag} "${raw}": a whole number from 0 to ${max}`);
  return Number(raw);
};

export async function runSandbox(flags: SandboxFlags, g: GlobalOptions, ctx: Context): Promise<void> {
  const { runSandboxCommand } = await import('../sandbox/command.js');
  const stopped = new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
  const code = await runSandboxCommand(
    {
      host: flags.host,
      port: wholeNumber(flags.port, '--port', 65535),
      token: flags.token,
      endpointLimit: wholeNumber(flags.endpointLimit, '--endpoint-limit', 1_000_000),
      rateLimit: wholeNumber(flags.rateLimit, '--rate-limit', 1_000_000),
      latencyMs: wholeNumber(flags.latency, '--latency', 600_000),
      json: Boolean(g.json),
    },
    { stdout: (s) => ctx.io.stdout.write(s), stderr: (s) => ctx.io.stderr.write(s) },
    stopped,
  );
  // runSandboxCommand has already printed why; only the exit status is left.
  if (code !== 0) throw new CliError(code === 2 ? 'usage_error' : 'internal_error', 'the sandbox could not start', code === 2 ? 2 : 1, { reported: true });
}
