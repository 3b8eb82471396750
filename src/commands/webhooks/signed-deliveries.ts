// The signed-delivery commands (webhooks sign, verify, trigger) in one
// module, a bundle of its own (dist/lazy/signing.cjs): no other command
// loads them, so every other run's main bundle stays without them.
export { runSign, runVerify } from './signing.js';
export { runTrigger } from './trigger.js';
