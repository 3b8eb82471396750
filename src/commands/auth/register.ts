import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';

export function registerAuth(auth: Command, f: Factory): void {
  auth.addHelpText(
    'after',
    examples('chatctl auth login --with-token < token.txt', 'chatctl auth status', 'chatctl auth logout --profile staging', 'curl -H "Authorization: Bearer $(chatctl auth token)" …'),
  );
  auth
    .command('login')
    .description('store a bearer token for the selected profile in the system keyring (from a hidden prompt, or stdin with --with-token); without a keyring, in config.json (0600), which it says')
    .option('--with-token', 'read the token from standard input')
    .option('--insecure-storage', 'store the token in plain text in config.json (mode 0600) without trying the system keyring')
    .addHelpText(
      'after',
      examples(
        'chatctl auth login --with-token < token.txt',
        'printenv CHAT_TOKEN | chatctl auth login --with-token --profile prod',
        'chatctl auth login --with-token --insecure-storage --profile ci < token.txt',
      ),
    )
    .action(async (opts) => (await import('./auth.js')).runAuthLogin(opts, f));
  auth
    .command('logout')
    .description('remove the stored token of the selected profile (its config.json copy and its system keyring entry)')
    .addHelpText('after', examples('chatctl auth logout --profile prod'))
    .action(async () => (await import('./auth.js')).runAuthLogout(f));
  auth
    .command('status')
    .description(
      'show which profile and token would be used, and where each profile keeps its token (env, command, keyring, file), never a value; the token is read as a command would read it (exit 3, with the cause, when there is none or it cannot be read)',
    )
    .addHelpText('after', examples('chatctl auth status', 'chatctl auth status --json'))
    .action(async () => (await import('./auth.js')).runAuthStatus(f));
  auth
    .command('token')
    .description('print the token in effect on stdout, for $(…) in scripts (asks first when stdout is a terminal, unless --yes)')
    .option('--yes', 'print it on a terminal without asking')
    .addHelpText('after', examples('chatctl auth token --yes', 'export CHAT_TOKEN="$(chatctl auth token --profile prod)"'))
    .action(async (opts) => (await import('./auth.js')).runAuthToken(opts, f));
}
