// Exit 4 (the server refused the token): where the token of the run came
// from, and what to do next. The run attaches these lines to the error
// (src/app/execute.ts); the error reporter prints them.
import { helperLabel, type TokenSource } from './source.js';

/** Where the token of a run came from, and whether its profile keeps one of its own (which CHATCTL_TOKEN hides). */
export interface TokenOrigin {
  source: TokenSource;
  profile: string;
  /** The profile's own source, when CHATCTL_TOKEN overrides it. */
  shadowed?: Exclude<TokenSource, 'env'> | undefined;
  /** The profile's token command, for the message. */
  command?: string | undefined;
}

const STORED_WORDS = { command: 'token command', keyring: 'keyring entry', file: 'file token' } as const;

/** Exit 4: where the token that was refused came from, and what to do next. */
export function explainCredential(o: TokenOrigin): string[] {
  const p = `profile "${o.profile}"`;
  switch (o.source) {
    case 'env':
      return [
        'the token came from CHATCTL_TOKEN (the environment), which overrides any stored token',
        o.shadowed
          ? `next: unset CHATCTL_TOKEN to use ${p}'s ${STORED_WORDS[o.shadowed]}, or set it to a valid token`
          : `next: set CHATCTL_TOKEN to a valid token, or unset it and run: chatctl auth login --profile ${o.profile}`,
      ];
    case 'command':
      return [
        `the token came from the token command of ${p}${o.command ? ` (${helperLabel(o.command)})` : ''}`,
        `next: renew the token where the command gets it, or change it: chatctl profile set ${o.profile} --token-command 'CMD'`,
      ];
    case 'keyring':
      return [`the token came from ${p}'s entry in the system keyring`, `next: chatctl auth login --profile ${o.profile}`];
    case 'file':
      return [`the token came from ${p}'s file token (config.json)`, `next: chatctl auth login --profile ${o.profile}`];
  }
}
