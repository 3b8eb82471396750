// chatctl doctor: its help; the checks are in doctor.ts, loaded when it runs.
import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';

export function registerDoctor(cmd: Command, f: Factory): void {
  cmd
    .addHelpText(
      'after',
      examples('chatctl doctor', 'chatctl doctor --profile prod', 'chatctl doctor --json') +
        `
Checks, in order, one line each (ok, warning or failure, with the fix): the
config folder and file, the profile and where each scope value comes from,
the token (its source, never its value), the base URL (https rule, proxy,
DNS, TCP, TLS), a round trip to the base URL with the clock skew from its
Date header, and the Node.js version. The round trip is a GET of the base URL
without the token: doctor never sends the token anywhere, so it cannot tell
whether the server accepts it.

Exit status: 0 when nothing failed, else that of the first failure: 3
configuration, 4 authentication, 12 network.
`,
    )
    .action(async () => (await import('./doctor.js')).runDoctor(f));
}
