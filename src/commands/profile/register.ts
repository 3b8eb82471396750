import type { Command } from 'commander';
import { examples, type Factory } from '../app.js';

/** The scope flags `profile set` stores: global options, which commander lists under `chatctl --help` only. */
const PROFILE_SET_SCOPE = `
Scope to store (global options, given before or after the command; an empty
value such as --env '' clears the field):
  --base-url <url>  the API's base URL (https:, or http: on loopback only)
  --org <id>        organizationId
  --app <id>        applicationId
  --env <key>       environmentKey
`;

export function registerProfile(profile: Command, f: Factory): void {
  profile.addHelpText('after', examples('chatctl profile set prod --base-url https://api.example.com --org org_1 --app app_1 --env production', 'chatctl profile use prod', 'chatctl profile list'));
  profile
    .command('list')
    .description('list profiles; * marks the one in use')
    .addHelpText('after', examples('chatctl profile list', 'chatctl profile list --json'))
    .action(async () => (await import('./profile.js')).runProfileList(f));
  profile
    .command('show')
    .description('show a profile (the one in use by default); tokens are never shown')
    .argument('[name]', 'profile name')
    .addHelpText('after', examples('chatctl profile show', 'chatctl profile show prod --json'))
    .action(async (name: string | undefined) => (await import('./profile.js')).runProfileShow(name, f));
  profile
    .command('set')
    .description('create or update a profile from --base-url, --org, --app, --env, --origin, --csrf-token and --token-command (an empty value clears a field)')
    .argument('<name>', 'profile name')
    .option('--origin <origin>', "Origin header to send (default: the base URL's origin)")
    .option('--csrf-token <value>', 'x-service-csrf value to send (default: 1)')
    .option('--token-command <cmd>', 'a credential helper: run by /bin/sh -c when a command needs the token, it prints the token on stdout within 10 s')
    .addHelpText(
      'after',
      PROFILE_SET_SCOPE +
        examples(
          'chatctl profile set prod --base-url https://api.example.com --org org_1 --app app_1 --env production',
          'chatctl profile set prod --env staging',
          "chatctl profile set prod --token-command 'op read op://ops/chatctl/token'",
          "chatctl profile set prod --token-command 'vault kv get -field=token secret/chatctl'",
          "chatctl profile set prod --token-command ''   # back to the stored token",
        ),
    )
    .action(async (name: string, opts) => (await import('./profile.js')).runProfileSet(name, opts, f));
  profile
    .command('use')
    .description('make a profile the one in use')
    .argument('<name>', 'profile name')
    .addHelpText('after', examples('chatctl profile use prod'))
    .action(async (name: string) => (await import('./profile.js')).runProfileUse(name, f));
  profile
    .command('remove')
    .description('remove a profile and its stored token')
    .argument('<name>', 'profile name')
    .addHelpText('after', examples('chatctl profile remove staging'))
    .action(async (name: string) => (await import('./profile.js')).runProfileRemove(name, f));
}
