// chatctl webhooks: the group's help and its verbs, one file each with its
// options, help and run function (which loads what it needs when it runs).
import type { Command } from 'commander';
import { examples, type Factory, type Register } from '../app.js';
import { formHeading } from '../../meta/tree.js';
import { registerCreate } from './create.js';
import { registerRotate } from './rotate.js';
import { registerReactivate } from './reactivate.js';
import { registerFingerprint } from './fingerprint.js';
import { registerSign, registerVerify } from './signing.js';
import { registerTrigger } from './trigger.js';
import { registerListen } from './listen.js';
import { registerList, registerShow } from './inventory.js';
import { registerRecover } from './recover.js';

/** The verbs, in the order help lists them. */
const VERBS: Register[] = [
  registerCreate,
  (parent, f) => registerRotate(parent, f, { rotateFrom: () => import('./rotate-from/command.js'), formHeading }),
  registerReactivate,
  registerList,
  registerShow,
  registerFingerprint,
  registerSign,
  registerVerify,
  registerTrigger,
  registerListen,
  registerRecover,
];

export function registerWebhooks(webhooks: Command, f: Factory): void {
  webhooks.addHelpText(
    'after',
    examples(
      'chatctl webhooks create --name billing --url https://hooks.example.com/chat --event chat.message.created.v1 --secret-to file:./billing.whsec',
      'chatctl webhooks rotate we_123 --expected-version 3 --mode overlap --secret-to file:./new.whsec',
      'chatctl webhooks reactivate we_123 --expected-version 4',
      'chatctl webhooks list',
    ),
  );
  for (const register of VERBS) register(webhooks, f);
}
