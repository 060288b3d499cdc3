/**
 * The client a business service uses to submit, cancel and look up tasks
 * (Python: client.py). Every method returns a Promise; every gRPC failure
 * comes out as an `RpcError` subclass (errors.ts), every refused spec as a
 * `ValidationError` before anything is sent.
 *
 * Several dispatcher nodes can be given; calls go round-robin over them, and
 * an idempotent call that meets UNAVAILABLE is tried once on the next node
 * (nodes.ts). Idempotent means: get, cancel, and a submit (or a batch) whose
 * tasks all carry a `taskId`, submitGraph (idempotent by its graph id), getGraph and cancelGraph
 * (for `client.cron`, see cron.ts; for `client.policies`, policies.ts). The Python SDK does not make ids on the client
 * (the server assigns a UUIDv7), so neither does this one: a submit without a
 * taskId is never retried, since the retry could create a second task.
 */
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { CronRules, type CronInvoke } from './cron';
import { ProtocolError, fromRpcError } from './errors';
import { requiredText, specToWire, stateFromWire, submitResultFromWire, taskInfoFromWire } from './envelope';
import type { CancelGraphResponse__Output } from './gen/taskring/v1/CancelGraphResponse';
import type { CancelResponse__Output } from './gen/taskring/v1/CancelResponse';
import type { CronServiceClient } from './gen/taskring/v1/CronService';
import type { GetGraphResponse__Output } from './gen/taskring/v1/GetGraphResponse';
import type { GetTaskResponse__Output } from './gen/taskring/v1/GetTaskResponse';
import type { GraphServiceClient } from './gen/taskring/v1/GraphService';
import type { PolicyServiceClient } from './gen/taskring/v1/PolicyService';
import type { SubmitBatchResponse__Output } from './gen/taskring/v1/SubmitBatchResponse';
import type { SubmitGraphResponse__Output } from './gen/taskring/v1/SubmitGraphResponse';
import type { SubmitResponse__Output } from './gen/taskring/v1/SubmitResponse';
import type { TaskServiceClient } from './gen/taskring/v1/TaskService';
import { Graph, cancelGraphToWire, graphToWire, type CancelGraphOptions, type GraphSpec } from './graph';
import { cancelledGraphFromWire, graphInfoFromWire, submittedGraphFromWire, type CancelledGraph, type GraphInfo,
  type SubmittedGraph } from './graph-info';
import { NodeList } from './nodes';
import { Policies, type PolicyInvoke } from './policies';
import type { SubmitResult, TaskInfo, TaskSpec, TaskState } from './task';
import { currentTraceparent } from './tracing';
import { loadWire } from './wire/load';

/** Batches of thousands of tasks exceed gRPC's 4 MiB default. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export interface ClientOptions {
  /** Dispatcher addresses, "host:port"; one string may list several, comma-separated. */
  nodes: string | readonly string[];
  /** Bound on every call, ms (default 10 000); null for none. */
  rpcTimeoutMs?: number | null;
  /**
   * A token of the node's tokens file (docs/security.md): sent as the metadata
   * `authorization: Bearer <token>` on every call, on plaintext and TLS alike.
   * Never logged nor put in an error.
   */
  token?: string;
  /** Default: insecure (plain TCP), as the Python SDK's default; `tlsCredentials(...)` for TLS. */
  credentials?: grpc.ChannelCredentials;
  /** Extra gRPC channel options. */
  channelOptions?: grpc.ChannelOptions;
}

function splitNodes(nodes: string | readonly string[]): string[] {
  const list = (typeof nodes === 'string' ? [nodes] : [...nodes])
    .flatMap((n) => n.split(','))
    .map((n) => n.trim())
    .filter((n) => n.length > 0);
  if (list.length === 0) throw new RangeError('nodes: give at least one dispatcher address');
  return list;
}

/**
 * TLS credentials for `ClientOptions.credentials` (Python: `taskring.tls_credentials`):
 * verify the node against the CA in `caFile` (PEM); with `certFile` and `keyFile`
 * (PEM, both or neither) show a client certificate too (mutual TLS).
 */
export function tlsCredentials(caFile: string, certFile?: string, keyFile?: string): grpc.ChannelCredentials {
  if (!caFile) throw new RangeError('tlsCredentials: a CA file is required');
  if (Boolean(certFile) !== Boolean(keyFile)) {
    throw new RangeError('tlsCredentials: give both a client certificate and its key, or neither');
  }
  const ca = readFileSync(caFile);
  return certFile && keyFile
    ? grpc.credentials.createSsl(ca, readFileSync(keyFile), readFileSync(certFile))
    : grpc.credentials.createSsl(ca);
}

/** One unary call on one stub; `done` is grpc-js's callback. */
type Invoke<Stub, Res> = (
  stub: Stub,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  done: (err: grpc.ServiceError | null, value?: Res) => void,
) => void;

/** One dispatcher node: its services' stubs over one channel. */
interface NodeStubs {
  task: TaskServiceClient;
  cron: CronServiceClient;
  policy: PolicyServiceClient;
  graph: GraphServiceClient;
}

export class Client {
  /** Cron rules (cron.ts): create, update, get, list, pause, resume, delete; same nodes, token and errors. */
  readonly cron: CronRules;
  /** Task type policies (policies.ts): get, list, put, delete; same nodes, token and errors. */
  readonly policies: Policies;
  private readonly nodes: NodeList<NodeStubs>;
  private readonly timeoutMs: number | null;
  /** `authorization: Bearer ...` (a #private field: util.inspect and JSON do not show it). */
  readonly #authorization: string | null;

  constructor(options: ClientOptions) {
    if (options.token !== undefined && (typeof options.token !== 'string' || options.token === '')) {
      throw new RangeError('token: must be a non-empty string');
    }
    this.#authorization = options.token === undefined ? null : `Bearer ${options.token}`;
    const wire = loadWire();
    const credentials = options.credentials ?? grpc.credentials.createInsecure();
    const channelOptions: grpc.ChannelOptions = {
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      ...options.channelOptions,
    };
    this.nodes = new NodeList(splitNodes(options.nodes).map((address) => {
      const task = new wire.TaskService(address, credentials, channelOptions);
      // The other services ride the TaskService's channel: one connection (and TLS session) per node.
      const shared = { ...channelOptions, channelOverride: task.getChannel() };
      const cron = new wire.CronService(address, credentials, shared);
      const policy = new wire.PolicyService(address, credentials, shared);
      const graph = new wire.GraphService(address, credentials, shared);
      return { task, cron, policy, graph };
    }));
    this.timeoutMs = options.rpcTimeoutMs === undefined ? 10_000 : options.rpcTimeoutMs;
    this.cron = new CronRules(<Res>(idempotent: boolean, invoke: CronInvoke<Res>) => this.rpc(idempotent, (n) => n.cron, invoke));
    this.policies = new Policies(<Res>(idempotent: boolean, invoke: PolicyInvoke<Res>) => this.rpc(idempotent, (n) => n.policy, invoke));
  }

  /** Submit one task. */
  async submit(spec: TaskSpec): Promise<SubmitResult> {
    const task = specToWire(spec);
    // Inside a traced request the task goes on with its trace (tracing.ts). Read
    // before the first await, while the caller's context is the active one.
    const traceparent = currentTraceparent();
    if (!task.trace_id && traceparent) task.trace_id = traceparent;
    const resp = await this.call<SubmitResponse__Output>(Boolean(task.task_id), (s, m, o, done) => s.Submit({ task }, m, o, done));
    return submitResultFromWire(resp);
  }

  /**
   * Submit many tasks in one RPC; results are in the order of `specs`. The
   * server validates the whole batch before writing any of it, so an
   * InvalidArgumentError (field "tasks[i]....") means nothing was written.
   */
  async submitBatch(specs: readonly TaskSpec[]): Promise<SubmitResult[]> {
    if (specs.length === 0) return [];
    const traceparent = currentTraceparent(); // '' outside a traced request (tracing.ts)
    const tasks = specs.map((s, i) => {
      const task = specToWire(s, `tasks[${i}].`);
      if (!task.trace_id && traceparent) task.trace_id = traceparent;
      return task;
    });
    const idempotent = tasks.every((t) => Boolean(t.task_id));
    const resp = await this.call<SubmitBatchResponse__Output>(idempotent, (s, m, o, done) => s.SubmitBatch({ tasks }, m, o, done));
    if (resp.results.length !== specs.length) {
      throw new ProtocolError(`SubmitBatch returned ${resp.results.length} results for ${specs.length} tasks`);
    }
    return resp.results.map(submitResultFromWire);
  }

  /**
   * Cancel a task that has not finished; resolves to its state ('cancelled').
   * Rejects with NotFoundError for an unknown id and FailedPreconditionError
   * when the task is past the point where it can be stopped.
   */
  async cancel(taskId: string): Promise<TaskState> {
    const resp = await this.call<CancelResponse__Output>(true, (s, m, o, done) => s.Cancel({ task_id: taskId }, m, o, done));
    return stateFromWire(resp.state);
  }

  /** The task as stored: state, attempts, last error and its history. */
  async get(taskId: string): Promise<TaskInfo> {
    const resp = await this.call<GetTaskResponse__Output>(true, (s, m, o, done) => s.GetTask({ task_id: taskId }, m, o, done));
    return taskInfoFromWire(resp);
  }

  /**
   * Submit a graph of tasks (graph.ts) in one call: a `Graph` built with its
   * checks, or a plain `GraphSpec` (checked by the server only). The server
   * validates it whole before writing anything (InvalidArgumentError naming
   * the field, "tasks[2].depends_on[0]"). A retry with the same graph id and
   * tasks answers the graph as it stands with `duplicate: true`, so the call
   * is retried on the next node after UNAVAILABLE.
   */
  async submitGraph(graph: Graph | GraphSpec): Promise<SubmittedGraph> {
    const spec = graph instanceof Graph ? graph.toSpec() : graph;
    const request = graphToWire(spec, currentTraceparent()); // read before the first await, as in submit
    const resp = await this.rpc<GraphServiceClient, SubmitGraphResponse__Output>(true, (n) => n.graph,
      (s, m, o, done) => s.SubmitGraph(request, m, o, done));
    if (resp.tasks.length !== request.tasks?.length) {
      throw new ProtocolError(`SubmitGraph returned ${resp.tasks.length} tasks for ${request.tasks?.length ?? 0}`);
    }
    return submittedGraphFromWire(resp);
  }

  /**
   * The graph: each task's state, attempts, edges and what a waiting one
   * waits for; with `withResults`, each task's kept result (`nodes.get(key).result`).
   * NotFoundError for an unknown graph.
   */
  async getGraph(namespace: string, graphId: string, options: { withResults?: boolean } = {}): Promise<GraphInfo> {
    const request = {
      namespace: requiredText(namespace, 'namespace'),
      graph_id: requiredText(graphId, 'graph_id'),
      with_results: options.withResults === true,
    };
    const resp = await this.rpc<GraphServiceClient, GetGraphResponse__Output>(true, (n) => n.graph,
      (s, m, o, done) => s.GetGraph(request, m, o, done));
    return graphInfoFromWire(resp);
  }

  /**
   * Cancel every task of the graph that has not ended. `mode` 'graceful' (the
   * default): running tasks finish (a failed one is not retried) and nothing
   * new starts; 'immediate': running tasks of types that heartbeat are told to
   * stop too. `reason` ("" for the server's) is kept in each cancelled task's
   * history. Resolves to how many were cancelled and the keys of those left
   * running. Another mode is a ValidationError, nothing sent; NotFoundError for
   * an unknown graph. A repeated cancel cancels nothing more, so the call is
   * retried on the next node after UNAVAILABLE.
   */
  async cancelGraph(namespace: string, graphId: string, options: CancelGraphOptions = {}): Promise<CancelledGraph> {
    const request = cancelGraphToWire(namespace, graphId, options);
    const resp = await this.rpc<GraphServiceClient, CancelGraphResponse__Output>(true, (n) => n.graph,
      (s, m, o, done) => s.CancelGraph(request, m, o, done));
    return cancelledGraphFromWire(resp);
  }

  /** Close every channel (the other services' stubs share them). Safe to call twice. */
  close(): void {
    for (const node of this.nodes.all()) node.task.close();
  }

  private call<Res>(idempotent: boolean, invoke: Invoke<TaskServiceClient, Res>): Promise<Res> {
    return this.rpc(idempotent, (n) => n.task, invoke);
  }

  private rpc<Stub, Res>(idempotent: boolean, stubOf: (node: NodeStubs) => Stub, invoke: Invoke<Stub, Res>): Promise<Res> {
    return this.nodes.run(idempotent, (node) => new Promise<Res>((resolve, reject) => {
      const stub = stubOf(node);
      const options: grpc.CallOptions = this.timeoutMs === null ? {} : { deadline: Date.now() + this.timeoutMs };
      const metadata = new grpc.Metadata();
      if (this.#authorization !== null) metadata.set('authorization', this.#authorization);
      invoke(stub, metadata, options, (err, value) => {
        if (err) reject(err); // mapped below, after the node list had its chance to retry
        else if (value === undefined) reject(new ProtocolError('empty response'));
        else resolve(value);
      });
    })).catch((err: unknown) => {
      throw err instanceof ProtocolError ? err : fromRpcError(err);
    });
  }
}
