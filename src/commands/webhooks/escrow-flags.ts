// --escrow, --escrow-file and --escrow-dir of create, rotate and rotate
// --from, read before anything is sent (exit 2 on a bad recipient). The
// escrow itself (secret/escrow.ts, with age) is loaded only when a flag is
// given.
import { type CustodyRun, destinationFlags, type GivenDestinations } from '../../secret/custody.js';
import type { EscrowFlags } from '../../secret/escrow.js';

export type { EscrowFlags };

/** custody's escrow hook for these flags, checked; undefined when none was given. */
export async function escrowOf(flags: EscrowFlags, ctx: { cwd: string; now: () => number }, given?: GivenDestinations): Promise<CustodyRun['escrow']> {
  if (!((flags.escrow?.length ?? 0) > 0 || flags.escrowFile !== undefined || flags.escrowDir !== undefined)) return undefined;
  const { parseEscrow, escrowHook } = await import('../../secret/escrow.js');
  const opts = parseEscrow(flags, ctx.cwd);
  // The recover command in the hint delivers where this job would have.
  return opts ? escrowHook(opts, ctx.now, given ? (id) => destinationFlags(given, id) : undefined) : undefined;
}

/** The flags as a re-run repeats them. */
export const escrowRerunFlags = (flags: EscrowFlags): string[][] => [
  ...(flags.escrow ?? []).map((r) => ['--escrow', r]),
  ...(flags.escrowFile !== undefined ? [['--escrow-file', flags.escrowFile]] : []),
  ...(flags.escrowDir !== undefined ? [['--escrow-dir', flags.escrowDir]] : []),
];
