/**
 * Task type policies: one task type's entry of the policies file (retry
 * policy, unique key, concurrency limits, retry cap, rate limits, fairness,
 * heartbeat timeout), read, set and deleted through the API
 * (PolicyService; Python: taskring.policies; docs/design/scheduling-policy.md).
 *
 *   const p = await client.policies.put('billing', 'reconcile',
 *     { concurrency: { per_type: 4 } }, 'cap reconcile at 4 during the migration');
 *   console.log(p.source, p.revision);                  // 'api', 1
 *   await client.policies.delete('billing', 'reconcile', 'migration done', p.revision);
 *
 * An entry set through the API replaces the file's entry for that type whole;
 * deleting it gives the type back to the file. Changes apply on every node
 * within TASKRING_POLICIES_RELOAD_MS.
 *
 * As in the cron client, only what the wire cannot carry is checked here (a
 * policy that is not a JSON object, a revision that is not a whole number):
 * the policy's fields and the reason are the server's to judge, and it names
 * the field in an InvalidArgumentError ("policy_json.concurrency.per_type",
 * "reason").
 */
import type * as grpc from '@grpc/grpc-js';
import { ProtocolError, ValidationError } from './errors';
import { encodePayload, instantOrNull, integer, requiredText } from './envelope';
import type { ListTypePoliciesResponse__Output } from './gen/taskring/v1/ListTypePoliciesResponse';
import type { PolicyServiceClient } from './gen/taskring/v1/PolicyService';
import type { TypePolicy__Output } from './gen/taskring/v1/TypePolicy';

/** Where the entry in effect comes from: set through the API, the policies file, or neither. */
export type PolicySource = 'api' | 'file' | 'none';

const SOURCES: ReadonlySet<string> = new Set<PolicySource>(['api', 'file', 'none']);

/** One task type's policy entry as the server answers it (Python: TypePolicy). */
export interface TypePolicy {
  namespace: string;
  taskType: string;
  /** The entry in effect, a JSON object ({} when nothing is declared). */
  policy: Record<string, unknown>;
  source: PolicySource;
  /** The API entry's revision (0 when there is none): what `ifRevision` compares with. */
  revision: number;
  /** Who set the API entry (its token's name); "" when none. */
  updatedBy: string;
  /** When the API entry was set; null when there is none. */
  updatedAt: Date | null;
  /** The policies file's entry for the type; null when the file has none. */
  filePolicy: Record<string, unknown> | null;
}

/**
 * The wire `policy_json` of a policy: compact JSON text of a JSON object.
 * Anything else (null, an array, a string, a Date, a value with NaN) is a
 * ValidationError naming `policy_json`, and nothing is sent.
 */
export function encodePolicy(policy: unknown): string {
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) {
    const got = policy === null ? 'null' : Array.isArray(policy) ? 'an array' : typeof policy;
    throw new ValidationError('policy_json', `must be a JSON object, got ${got}`);
  }
  const text = encodePayload(policy, 'policy_json');
  // An object whose toJSON makes it something else (a Date: a string).
  if (!text.startsWith('{')) throw new ValidationError('policy_json', 'must be a JSON object');
  return text;
}

/** An `if_revision` for the wire (int64 as a decimal string); undefined/null: not sent. */
export function revisionToWire(ifRevision: unknown): string | undefined {
  if (ifRevision === undefined || ifRevision === null) return undefined;
  return String(integer(ifRevision, 'if_revision', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER));
}

/** A JSON object the server sent as text in `field`; "" is `empty`. */
function objectFromWire<E>(text: string, field: string, empty: E): Record<string, unknown> | E {
  if (!text) return empty;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ProtocolError(`server sent ${field} that is not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ProtocolError(`server sent ${field} that is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

/** A wire TypePolicy (as the server returns it) -> TypePolicy. */
export function typePolicyFromWire(msg: TypePolicy__Output): TypePolicy {
  if (!SOURCES.has(msg.source)) {
    throw new ProtocolError(`server sent unknown policy source ${JSON.stringify(msg.source)}; upgrade the taskring SDK`);
  }
  // int64 arrives as a decimal string (src/wire/options.ts); a revision is a counter, far below 2^53.
  const revision = Number(msg.revision || '0');
  if (!Number.isSafeInteger(revision)) throw new ProtocolError(`server sent a revision this SDK cannot hold: ${msg.revision}`);
  return {
    namespace: msg.namespace,
    taskType: msg.task_type,
    policy: objectFromWire(msg.policy_json, 'policy_json', {}),
    source: msg.source as PolicySource,
    revision,
    updatedBy: msg.updated_by,
    updatedAt: instantOrNull(msg.updated_at, 'updated_at'),
    filePolicy: objectFromWire(msg.file_policy_json, 'file_policy_json', null),
  };
}

/** One unary call on a node's PolicyService stub; `done` is grpc-js's callback. */
export type PolicyInvoke<Res> = (
  stub: PolicyServiceClient,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  done: (err: grpc.ServiceError | null, value?: Res) => void,
) => void;

/** How the Client runs a policy call: its nodes, token, deadline and error mapping. */
export type PolicyCaller = <Res>(idempotent: boolean, invoke: PolicyInvoke<Res>) => Promise<Res>;

function ref(namespace: string, taskType: string): { namespace: string; task_type: string } {
  return { namespace: requiredText(namespace, 'namespace'), task_type: requiredText(taskType, 'task_type') };
}

/**
 * The PolicyService over the client's channels, token and deadline:
 * `client.policies`. Failures are the client's `RpcError` subclasses. get,
 * list, and a put without `ifRevision` are retried once on the next node after
 * UNAVAILABLE (the put sets the same entry again); a put with `ifRevision` and
 * delete are not, since a retry of one that was applied would answer
 * FAILED_PRECONDITION / NOT_FOUND for a call that worked.
 *
 * Get and list need the token's `read` call; put and delete `policy_write`
 * (per namespace), else PermissionDeniedError.
 */
export class Policies {
  /** @internal Made by `Client`; use `client.policies`. */
  constructor(private readonly call: PolicyCaller) {}

  /**
   * The type's entry in effect. Never NotFoundError for a valid reference: a
   * type with no entry answers source "none" and policy {}.
   */
  async get(namespace: string, taskType: string): Promise<TypePolicy> {
    const r = ref(namespace, taskType);
    return typePolicyFromWire(await this.call<TypePolicy__Output>(true, (s, m, o, done) => s.GetTypePolicy(r, m, o, done)));
  }

  /** Every type with an entry (file or API) in `namespace` ("" = all), by namespace then type. */
  async list(namespace = ''): Promise<TypePolicy[]> {
    const request = { namespace: requiredText(namespace, 'namespace') };
    const resp = await this.call<ListTypePoliciesResponse__Output>(true, (s, m, o, done) => s.ListTypePolicies(request, m, o, done));
    return resp.policies.map(typePolicyFromWire);
  }

  /**
   * Set the type's API entry, replacing the file's entry whole. `policy` is a
   * plain JSON object, validated whole by the server (InvalidArgumentError
   * naming the field, e.g. "policy_json.concurrency.per_type"); `reason` is
   * required (it goes in the audit trail). With `ifRevision` (0: no API entry
   * yet) the server refuses with FailedPreconditionError unless the API entry
   * is at that revision. Resolves to the entry now in effect (source "api").
   */
  async put(namespace: string, taskType: string, policy: Record<string, unknown>, reason: string,
    ifRevision?: number | null): Promise<TypePolicy> {
    const request = {
      ...ref(namespace, taskType),
      policy_json: encodePolicy(policy),
      reason: requiredText(reason, 'reason'),
    };
    const rev = revisionToWire(ifRevision);
    const req = rev === undefined ? request : { ...request, if_revision: rev };
    return typePolicyFromWire(await this.call<TypePolicy__Output>(rev === undefined,
      (s, m, o, done) => s.PutTypePolicy(req, m, o, done)));
  }

  /**
   * Delete the type's API entry, giving the type back to the file's entry (if
   * any). NotFoundError when the type has no API entry; `ifRevision` as for
   * put. Resolves to the TypePolicy the server answers (the proto leaves its
   * content to the server: read `source` rather than assume it).
   */
  async delete(namespace: string, taskType: string, reason: string, ifRevision?: number | null): Promise<TypePolicy> {
    const request = { ...ref(namespace, taskType), reason: requiredText(reason, 'reason') };
    const rev = revisionToWire(ifRevision);
    const req = rev === undefined ? request : { ...request, if_revision: rev };
    return typePolicyFromWire(await this.call<TypePolicy__Output>(false, (s, m, o, done) => s.DeleteTypePolicy(req, m, o, done)));
  }
}
