// chatctl webhooks: the group's help, and each verb, which registers itself
// from its own file beside this one (its options, help and examples). Each
// action loads its command module when it runs.
import type { Command } from 'commander';
import { examples, type Factory, type Register } from '../../app.js';
import { registerCreate } from './create.js';
import { registerRotate } from './rotate.js';
import { registerReactivate } from './reactivate.js';
import { registerFingerprint } from './fingerprint.js';
import { registerSign } from './sign.js';
import { registerVerify } from './verify.js';
import { registerTrigger } from './trigger.js';
import { registerListen } from './listen.js';
import { registerList, registerShow } from './list.js';
import { registerRecover } from './recover.js';

/** The verbs, in the order help lists them. */
const VERBS: Register[] = [
  registerCreate,
  registerRotate,
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
