// The shape of config.json. Checked on every read: a file that does not fit
// is a configuration error, never silently "fixed" by overwriting it.
import * as z from 'zod/mini';
import { lazy } from '../api/schemas.js';

export const PROFILE_FIELDS = [
  'baseUrl',
  'organizationId',
  'applicationId',
  'environmentKey',
  'origin',
  'csrfToken',
] as const;

const profileSchema = () =>
  z.object({
    baseUrl: z.optional(z.string()),
    organizationId: z.optional(z.string()),
    applicationId: z.optional(z.string()),
    environmentKey: z.optional(z.string()),
    origin: z.optional(z.string()),
    csrfToken: z.optional(z.string()),
    token: z.optional(z.string()),
  });
export type Profile = z.infer<ReturnType<typeof profileSchema>>;

/** Built on first use, like the API schemas (see api/schemas.ts). */
export const configSchema = lazy(() =>
  z.object({
    version: z.optional(z.literal(1)),
    currentProfile: z.optional(z.string()),
    profiles: z.optional(z.record(z.string(), profileSchema())),
  }),
);
export type ConfigData = z.infer<ReturnType<typeof configSchema>>;

export const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
