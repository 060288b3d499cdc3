/**
 * Cron rules: a task created once per fire time, cluster-wide, in the rule's
 * time zone (Python: taskring/cron.py, the reference; docs/cron.md).
 *
 *   const rule = await client.cron.create({
 *     namespace: 'billing', name: 'daily-reconcile', taskType: 'reconcile',
 *     schedule: '0 0 * * *', timeZone: 'Asia/Singapore', payload: { scope: 'all' },
 *   });
 *   console.log(rule.nextFireTime, rule.lastFireTaskId);
 *
 * `schedule` has 5 fields (minute hour day-of-month month day-of-week) or 6
 * with SECONDS FIRST; it may start with `CRON_TZ=<zone>` instead of giving
 * `timeZone`. A rule without a zone is refused. Every fire's task is an
 * ordinary task: `client.get(rule.lastFireTaskId)` shows it.
 *
 * As in Python, only what the wire cannot carry is checked here (a payload
 * that is not a JSON object, a number that does not fit its field); the
 * schedule, zone, policies and names are the server's to judge, and it names
 * the field in an InvalidArgumentError ("rule.time_zone").
 */
import type * as grpc from '@grpc/grpc-js';
import { ProtocolError, ValidationError } from './errors';
import {
  INT32_MAX, INT32_MIN, UINT32_MAX, decodeStoredPayload, encodePayload, instantOrNull, integer, millis,
  requiredText, stateFromWire,
} from './envelope';
import type { CronRule, CronRule__Output } from './gen/taskring/v1/CronRule';
import type { CronServiceClient } from './gen/taskring/v1/CronService';
import type { ListCronRulesResponse__Output } from './gen/taskring/v1/ListCronRulesResponse';
import type { PutCronRuleResponse__Output } from './gen/taskring/v1/PutCronRuleResponse';
import type { TaskState } from './task';

/** What a rule is: the argument of `client.cron.create` and `.update` (Python: CronRuleSpec). */
export interface CronRuleSpec {
  namespace: string;
  /** `[a-z0-9][a-z0-9._-]{0,63}`, unique in the namespace. */
  name: string;
  /** The task each fire creates (fixed for the rule's life: it decides the rule's slot). */
  taskType: string;
  /** 5 fields, or 6 with seconds first; may start with `CRON_TZ=<zone> `. */
  schedule: string;
  /** An IANA zone ("Europe/London"); required unless `schedule` starts with `CRON_TZ=`. */
  timeZone?: string;
  /** Each fire task's payload, a JSON object; absent or null sends {}. */
  payload?: Record<string, unknown> | null;
  /** "once" or "twice"; "" (default) lets the schedule decide (docs/cron.md). */
  onRepeatedHour?: string;
  /** "at_shift" or "skip"; "" (default) lets the schedule decide. */
  onSkippedHour?: string;
  /** After an outage: "skip", "latest" (the server's default) or "all" up to `catchUpLimit`. */
  catchUp?: string;
  /** Most missed fires "all" creates (0, the default: the server's, 100). */
  catchUpLimit?: number;
  /** While the previous fire is live: "allow" (the server's default), "skip" or "queue_one". */
  overlap?: string;
  ownerTeam?: string;
  description?: string;
  /** Each fire task's per-attempt timeout, ms (rounded up); absent or null: the server's default. */
  timeoutMs?: number | null;
  /** Each fire task's retries; absent or null: the server's default. */
  maxRetries?: number | null;
}

/** A rule's spec as stored: normalised by the server (the zone and every policy filled in). */
export interface StoredCronRuleSpec extends Required<Omit<CronRuleSpec, 'payload' | 'timeoutMs' | 'maxRetries'>> {
  payload: Record<string, unknown>;
  /** null when the rule sets none (the server's default applies). */
  timeoutMs: number | null;
  maxRetries: number | null;
}

/** A rule as stored and its state (Python: CronRuleInfo). `spec` can be given back to `update`. */
export interface CronRuleInfo {
  spec: StoredCronRuleSpec;
  paused: boolean;
  /** The next fire time after now (null when paused). */
  nextFireTime: Date | null;
  /** The latest fire time, not after now, that has its task. */
  lastFireTime: Date | null;
  /** That fire's task id; "" when there is none. */
  lastFireTaskId: string;
  /** That task's state; null when there is no last fire. */
  lastFireState: TaskState | null;
  createdAt: Date | null;
  updatedAt: Date | null;
}

function text(value: unknown, field: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new ValidationError(field, `must be a string, got ${typeof value}`);
  return value;
}

/** The wire CronRule of a spec; throws ValidationError for what the wire cannot carry. */
export function cronSpecToWire(spec: CronRuleSpec): CronRule {
  if (typeof spec !== 'object' || spec === null) throw new ValidationError('rule', 'must be an object');
  const rule: CronRule = {
    namespace: requiredText(spec.namespace, 'namespace'),
    name: requiredText(spec.name, 'name'),
    task_type: requiredText(spec.taskType, 'taskType'),
    payload_json: encodePayload(spec.payload, 'payload'),
    schedule: requiredText(spec.schedule, 'schedule'),
    time_zone: text(spec.timeZone, 'timeZone'),
    on_repeated_hour: text(spec.onRepeatedHour, 'onRepeatedHour'),
    on_skipped_hour: text(spec.onSkippedHour, 'onSkippedHour'),
    catch_up: text(spec.catchUp, 'catchUp'),
    catch_up_limit: spec.catchUpLimit === undefined || spec.catchUpLimit === null
      ? 0 : integer(spec.catchUpLimit, 'catchUpLimit', 0, UINT32_MAX),
    overlap: text(spec.overlap, 'overlap'),
    owner_team: text(spec.ownerTeam, 'ownerTeam'),
    description: text(spec.description, 'description'),
  };
  // Optional on the wire: absent means the server's default, so 0 is sent as 0.
  if (spec.timeoutMs !== undefined && spec.timeoutMs !== null) {
    rule.timeout_ms = millis(spec.timeoutMs, 'timeoutMs', 0, UINT32_MAX);
  }
  if (spec.maxRetries !== undefined && spec.maxRetries !== null) {
    rule.max_retries = integer(spec.maxRetries, 'maxRetries', INT32_MIN, INT32_MAX);
  }
  return rule;
}

/** A wire CronRule (as the server returns it) -> CronRuleInfo. */
export function cronInfoFromWire(rule: CronRule__Output): CronRuleInfo {
  return {
    spec: {
      namespace: rule.namespace,
      name: rule.name,
      taskType: rule.task_type,
      schedule: rule.schedule,
      timeZone: rule.time_zone,
      payload: decodeStoredPayload(rule.payload_json),
      onRepeatedHour: rule.on_repeated_hour,
      onSkippedHour: rule.on_skipped_hour,
      catchUp: rule.catch_up,
      catchUpLimit: rule.catch_up_limit,
      overlap: rule.overlap,
      ownerTeam: rule.owner_team,
      description: rule.description,
      timeoutMs: rule.timeout_ms ?? null,
      maxRetries: rule.max_retries ?? null,
    },
    paused: rule.paused,
    nextFireTime: instantOrNull(rule.next_fire_time, 'next_fire_time'),
    lastFireTime: instantOrNull(rule.last_fire_time, 'last_fire_time'),
    lastFireTaskId: rule.last_fire_task_id,
    // The server leaves the state unset (UNSPECIFIED) when there is no last fire.
    lastFireState: rule.last_fire_task_id ? stateFromWire(rule.last_fire_state) : null,
    createdAt: instantOrNull(rule.created_at, 'created_at'),
    updatedAt: instantOrNull(rule.updated_at, 'updated_at'),
  };
}

/** One unary call on a node's CronService stub; `done` is grpc-js's callback. */
export type CronInvoke<Res> = (
  stub: CronServiceClient,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  done: (err: grpc.ServiceError | null, value?: Res) => void,
) => void;

/** How the Client runs a cron call: its nodes, token, deadline and error mapping. */
export type CronCaller = <Res>(idempotent: boolean, invoke: CronInvoke<Res>) => Promise<Res>;

function ruleOf(resp: PutCronRuleResponse__Output, call: string): CronRule__Output {
  if (resp.rule === null) throw new ProtocolError(`${call} returned no rule`);
  return resp.rule;
}

function ref(namespace: string, name: string): { namespace: string; name: string } {
  return { namespace: requiredText(namespace, 'namespace'), name: requiredText(name, 'name') };
}

/**
 * The CronService over the client's channels, token and deadline: `client.cron`.
 * Failures are the client's `RpcError` subclasses. get, list, update, pause and
 * resume are retried once on the next node after UNAVAILABLE (repeating them
 * changes nothing); create and delete are not, since a retry of one that was
 * applied would answer ALREADY_EXISTS / NOT_FOUND for a call that worked.
 */
export class CronRules {
  /** @internal Made by `Client`; use `client.cron`. */
  constructor(private readonly call: CronCaller) {}

  /**
   * A new rule. Rejects with AlreadyExistsError if the name is taken, and
   * InvalidArgumentError naming the field ("rule.time_zone") for a bad one;
   * then nothing was written.
   */
  async create(spec: CronRuleSpec): Promise<CronRuleInfo> {
    const rule = cronSpecToWire(spec);
    const resp = await this.call<PutCronRuleResponse__Output>(false, (s, m, o, done) => s.CreateCronRule({ rule }, m, o, done));
    return cronInfoFromWire(ruleOf(resp, 'CreateCronRule'));
  }

  /**
   * Replace the rule's whole spec (fields left out take their defaults); its
   * fires not yet started are cancelled and it is planned again from now. The
   * task type cannot change. NotFoundError for an unknown rule.
   */
  async update(spec: CronRuleSpec): Promise<CronRuleInfo> {
    const rule = cronSpecToWire(spec);
    const resp = await this.call<PutCronRuleResponse__Output>(true, (s, m, o, done) => s.UpdateCronRule({ rule }, m, o, done));
    return cronInfoFromWire(ruleOf(resp, 'UpdateCronRule'));
  }

  /** The rule and its state; NotFoundError for an unknown rule. */
  async get(namespace: string, name: string): Promise<CronRuleInfo> {
    const r = ref(namespace, name);
    return cronInfoFromWire(await this.call<CronRule__Output>(true, (s, m, o, done) => s.GetCronRule(r, m, o, done)));
  }

  /** Every rule of `namespace` ("" = all, which needs a token for every namespace), by namespace and name. */
  async list(namespace = ''): Promise<CronRuleInfo[]> {
    const request = { namespace: requiredText(namespace, 'namespace') };
    const resp = await this.call<ListCronRulesResponse__Output>(true, (s, m, o, done) => s.ListCronRules(request, m, o, done));
    return resp.rules.map(cronInfoFromWire);
  }

  /** Stop firing; fires not yet started are cancelled. */
  async pause(namespace: string, name: string): Promise<CronRuleInfo> {
    const r = ref(namespace, name);
    return cronInfoFromWire(await this.call<CronRule__Output>(true, (s, m, o, done) => s.PauseCronRule(r, m, o, done)));
  }

  /** Fire again from now on (what fell due while paused is not caught up). */
  async resume(namespace: string, name: string): Promise<CronRuleInfo> {
    const r = ref(namespace, name);
    return cronInfoFromWire(await this.call<CronRule__Output>(true, (s, m, o, done) => s.ResumeCronRule(r, m, o, done)));
  }

  /** Remove the rule; fires not yet started are cancelled. Resolves to the rule as it was. */
  async delete(namespace: string, name: string): Promise<CronRuleInfo> {
    const r = ref(namespace, name);
    return cronInfoFromWire(await this.call<CronRule__Output>(false, (s, m, o, done) => s.DeleteCronRule(r, m, o, done)));
  }
}
