/**
 * The proto-loader options. The generated types (scripts/generate.js passes
 * the same choices as flags) describe exactly what the loader produces with
 * these, so change both together.
 *
 * - keepCase: field names as in the .proto (task_id), as the other SDKs see them.
 * - longs String: uint64/int64 as decimal strings; a JS number loses precision past 2^53.
 * - enums String: enum values by name, readable in logs and errors.
 * - defaults: absent scalars read as their zero value, as in proto3 ...
 * - oneofs: ... while `optional` fields stay undefined when absent (they are
 *   synthetic oneofs, which `defaults` leaves alone), so presence survives.
 */
import type { Options } from '@grpc/proto-loader';

export const LOADER_OPTIONS: Readonly<Options> = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
