// The Prompter on a real terminal, with @inquirer/prompts. Each answer is
// checked as it is typed, against the same rules as the flags.
import { checkbox, confirm, input, password, select } from '@inquirer/prompts';
import type { Context } from '../context.js';
import type { Prompter } from './prompter.js';
import { EVENT_TYPES } from '../api/spec.js';
import { destinationUrlSchema, nameSchema } from '../api/schemas.js';
import { parseExpectedVersion } from '../input/parse.js';

const firstIssue = (r: { success: boolean; error?: { issues: { message: string }[] } }) =>
  r.success ? true : (r.error?.issues[0]?.message ?? 'invalid');

export function createPrompter(ctx: Context, output: NodeJS.WritableStream): Prompter {
  const context = { signal: ctx.signal, clearPromptOnDone: false, output };
  return {
    name: () => input({ message: 'Endpoint name', validate: (v) => firstIssue(nameSchema().safeParse(v)) }, context),
    url: () => input({ message: 'Destination URL', validate: (v) => firstIssue(destinationUrlSchema().safeParse(v)) }, context),
    events: () =>
      checkbox(
        {
          message: 'Event types (space to select, enter to confirm)',
          choices: EVENT_TYPES.map((value) => ({ value })),
          required: true,
          pageSize: EVENT_TYPES.length,
        },
        context,
      ),
    expectedVersion: () =>
      input(
        {
          message: "Endpoint's current version",
          validate: (v) => {
            try {
              parseExpectedVersion(v.trim());
              return true;
            } catch (err) {
              return (err as Error).message.replace(/^invalid --expected-version "[^"]*": /, '');
            }
          },
        },
        context,
      ).then((v) => v.trim()),
    mode: () =>
      select(
        {
          message: 'Rotation mode',
          choices: [
            { value: 'overlap', name: 'overlap', description: 'new secret now; the old one keeps working for a grace period, so receivers can switch without failed deliveries' },
            { value: 'immediate', name: 'immediate', description: 'new secret now; the old one stops working at once (for a leaked secret)' },
          ],
        },
        context,
      ),
    confirmImmediate: (endpointId) =>
      confirm(
        {
          message: `Rotate ${endpointId} immediately? The current secret stops working at once and deliveries signed with it will fail verification.`,
          default: false,
        },
        context,
      ),
    token: () => password({ message: 'Bearer token', mask: '*', validate: (v) => (v.trim() ? true : 'the token is empty') }, context),
  };
}
