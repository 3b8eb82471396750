// chatctl auth login|logout|status
import type { Command } from 'commander';
import { examples, type App } from '../app.js';

export function registerAuth(auth: Command, { ctx, globals, prompter }: App): void {
  const run = () => import('./auth.js');
  auth.addHelpText('after', examples('chatctl auth login --with-token < token.txt', 'chatctl auth status', 'chatctl auth logout --profile staging'));
  auth
    .command('login')
    .description('store a bearer token in the selected profile (from a hidden prompt, or stdin with --with-token)')
    .option('--with-token', 'read the token from standard input')
    .addHelpText('after', examples('chatctl auth login --with-token < token.txt', 'printenv CHAT_TOKEN | chatctl auth login --with-token --profile prod'))
    .action(async (opts) => (await run()).runAuthLogin(opts, globals(), ctx, await prompter()));
  auth
    .command('logout')
    .description('remove the stored token of the selected profile')
    .addHelpText('after', examples('chatctl auth logout --profile prod'))
    .action(async () => (await run()).runAuthLogout(globals(), ctx));
  auth
    .command('status')
    .description('show which profile and token would be used (exit 3 when there is no token)')
    .addHelpText('after', examples('chatctl auth status', 'chatctl auth status --json'))
    .action(async () => (await run()).runAuthStatus(globals(), ctx));
}
