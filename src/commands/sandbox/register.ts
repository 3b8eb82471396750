// chatctl sandbox: the flags, parsed here; run.ts (loaded only when it runs) does the work, src/sandbox/ is the server.
import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';
import { CliError, usageError } from '../../errors/cli-error.js';
import { jsonDocumentText } from '../../output/json.js';
import type { SandboxIo } from './run.js';

type SandboxFlags = { host: string; port: string; token?: string; endpointLimit: string; rateLimit: string; latency: string };

const wholeNumber = (raw: string, flag: string, max: number) => {
  if (!/^\d+$/.test(raw) || Number(raw) > max) throw usageError(`invalid ${flag} "${raw}": a whole number from 0 to ${max}`);
  return Number(raw);
};

async function runSandbox(flags: SandboxFlags, f: Factory): Promise<void> {
  const { ctx } = f;
  const state = f.state();
  const { runSandboxCommand } = await import('./run.js');
  const stopped = new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
  const port = wholeNumber(flags.port, '--port', 65535);
  const endpointLimit = wholeNumber(flags.endpointLimit, '--endpoint-limit', 1_000_000);
  const rateLimit = wholeNumber(flags.rateLimit, '--rate-limit', 1_000_000);
  const latencyMs = wholeNumber(flags.latency, '--latency', 600_000);
  const io: SandboxIo = {
    stdout: (s) => ctx.io.stdout.write(s),
    stderr: (s) => ctx.io.stderr.write(s),
    secret: (v) => ctx.io.scrubber.announceValue(v),
    document: (v) => jsonDocumentText(ctx.io, v, 'one-line'),
  };
  const code = await runSandboxCommand({ host: flags.host, port, token: flags.token, endpointLimit, rateLimit, latencyMs, json: state.output.json }, io, stopped);
  // runSandboxCommand has already printed why; only the exit status is left.
  if (code !== 0) throw new CliError(code === 2 ? 'usage_error' : 'internal_error', 'the sandbox could not start', code === 2 ? 2 : 1, { reported: true });
}

export function registerSandbox(cmd: Command, f: Factory): void {
  cmd
    .option('--host <host>', 'loopback address to listen on', '127.0.0.1')
    .option('--port <port>', 'port (0 picks a free one)', '0')
    .option('--token <token>', 'bearer token to accept (default: a random one, printed on start)')
    .option('--endpoint-limit <n>', 'endpoints allowed per environment', '10')
    .option('--rate-limit <n>', 'answer 429 (with Retry-After) beyond N requests per second per token, bursts of N allowed (0: off)', '0')
    .option('--latency <ms>', 'wait this many milliseconds before each API answer', '0')
    .addHelpText(
      'after',
      examples('chatctl sandbox', 'chatctl sandbox --port 0 --json', 'chatctl sandbox --rate-limit 5 --endpoint-limit 3', 'chatctl sandbox --rate-limit 100 --latency 20 --endpoint-limit 1000') +
        `
Fault injection: while it runs, POST /_sandbox/faults (with its bearer token,
from loopback) makes the next API requests fail, to rehearse what a script
does on 503, 429, a dropped connection or a slow answer:
  curl -s -X POST "$CHATCTL_BASE_URL/_sandbox/faults" -H "Authorization: Bearer $CHATCTL_TOKEN" \\
       -d '{"failNext":2,"status":503,"retryAfter":1}'
  fields: failNext N, status (400 401 403 404 409 422 429 500 502 503 504),
          code, retryAfter SECONDS, dropConnection true, delayMs MS, rateLimit N
Other routes: GET /_sandbox/faults, /_sandbox/requests, /_sandbox/endpoints,
/_sandbox/stats; POST /_sandbox/clock {"advanceMs":N} (expire an overlap now);
POST /_sandbox/reset. All of it: docs/sandbox.md in the package.
`,
    )
    .action((opts: SandboxFlags) => runSandbox(opts, f));
}
