// Identifiers and secrets, all drawn from one injectable source of random
// bytes so that tests can make them predictable.
import type { Buffer } from 'node:buffer';

export type RandomBytes = (n: number) => Buffer;

// 64 and 32 symbols: a byte modulo either is unbiased.
const URL_SAFE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const LOWER = '0123456789abcdefghjkmnpqrstvwxyz';

function draw(random: RandomBytes, alphabet: string, length: number): string {
  const bytes = random(length);
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[(bytes[i] ?? 0) % alphabet.length];
  return out;
}

export const newToken = (random: RandomBytes): string => 'sbx_' + draw(random, URL_SAFE, 24);
export const newEndpointId = (random: RandomBytes): string => 'we_' + draw(random, LOWER, 20);
export const newRequestId = (random: RandomBytes): string => 'req_' + draw(random, LOWER, 20);
export const newMessageId = (random: RandomBytes): string => 'msg_' + draw(random, URL_SAFE, 24);
export const newSecret = (random: RandomBytes): string => 'whsec_' + random(32).toString('base64');
