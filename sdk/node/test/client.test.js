'use strict';
// The client against in-process fake dispatchers on loopback: round-robin,
// failover of idempotent calls on UNAVAILABLE, error mapping, uint64 precision.
const test = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');
const sdk = require('../dist/index');
const { fakeDispatcher } = require('./helpers');

const accepted = (req, node) => ({
  task_id: req.task.task_id || `id-from-${node}`, duplicate: false, state: 'TASK_STATE_ACCEPTED',
  due_at: '2030-01-02T03:04:05.678Z', slot: 3,
});

async function cluster(n, handlers) {
  const nodes = [];
  for (let i = 0; i < n; i++) nodes.push(await fakeDispatcher(`n${i}`, typeof handlers === 'function' ? handlers(i) : handlers));
  const client = new sdk.Client({ nodes: nodes.map((d) => d.address), rpcTimeoutMs: 5_000 });
  const close = async () => {
    client.close();
    await Promise.all(nodes.map((d) => d.close()));
  };
  return { nodes, client, close };
}

test('calls go round-robin over the nodes', async () => {
  const { nodes, client, close } = await cluster(3, { Submit: accepted, GetTask: () => ({ task: { task_id: 'x', namespace: 'shop', task_type: 't' }, state: 'TASK_STATE_QUEUED' }) });
  try {
    for (let i = 0; i < 6; i++) await client.submit({ namespace: 'shop', taskType: 'cancel_order' });
    assert.deepEqual(nodes.map((d) => d.calls.length), [2, 2, 2]);
    await client.get('x');
    assert.equal(nodes[0].calls.length, 3);
  } finally {
    await close();
  }
});

test('a comma-separated node string is a node list', async () => {
  const a = await fakeDispatcher('a', { Submit: accepted });
  const b = await fakeDispatcher('b', { Submit: accepted });
  const client = new sdk.Client({ nodes: `${a.address}, ${b.address}` });
  try {
    const r1 = await client.submit({ namespace: 'shop', taskType: 't' });
    const r2 = await client.submit({ namespace: 'shop', taskType: 't' });
    assert.deepEqual([r1.taskId, r2.taskId], ['id-from-a', 'id-from-b']);
  } finally {
    client.close();
    await a.close();
    await b.close();
  }
});

test('submit maps the response: state, due time, slot', async () => {
  const { client, nodes, close } = await cluster(1, { Submit: accepted });
  try {
    const r = await client.submit({ namespace: 'shop', taskType: 'cancel_order', payload: { order_id: 42 }, delayMs: 1800_000, taskId: 'order-42' });
    assert.deepEqual(r, { taskId: 'order-42', duplicate: false, state: 'accepted', dueAt: new Date('2030-01-02T03:04:05.678Z'), slot: 3 });
    const sent = nodes[0].calls[0].request.task;
    assert.equal(sent.delay_ms, '1800000');
    assert.equal(sent.payload_json, '{"order_id":42}');
    assert.equal(sent.timeout_ms, undefined); // unset optional stays unset on the wire
  } finally {
    await close();
  }
});

test('UNAVAILABLE: an idempotent call is tried once on the next node', async () => {
  const down = () => { throw { code: grpc.status.UNAVAILABLE, details: 'node is restarting' }; };
  const { nodes, client, close } = await cluster(3, (i) => (i === 0
    ? { Submit: down, Cancel: down, GetTask: down, SubmitBatch: down }
    : { Submit: accepted, Cancel: (r) => ({ task_id: r.task_id, state: 'TASK_STATE_CANCELLED' }),
      SubmitBatch: (r) => ({ results: r.tasks.map((t) => accepted({ task: t }, 'b')) }) }));
  try {
    // get / cancel / submit with a task id / a batch whose tasks all have ids: retried on n1.
    assert.equal(await client.cancel('t-1'), 'cancelled');
    assert.deepEqual(nodes.map((d) => d.calls.length), [1, 1, 0]);
    await client.submit({ namespace: 'shop', taskType: 't' }); // n2: fine
    const r = await client.submit({ namespace: 'shop', taskType: 't', taskId: 'mine' }); // n0 down -> n1
    assert.equal(r.taskId, 'mine');
    assert.deepEqual(nodes.map((d) => d.calls.length), [2, 2, 1]);
    await client.submit({ namespace: 'shop', taskType: 't' }); // n2 again
    const batch = await client.submitBatch([{ namespace: 'shop', taskType: 't', taskId: 'b1' }, { namespace: 'shop', taskType: 't', taskId: 'b2' }]);
    assert.deepEqual(batch.map((x) => x.taskId), ['b1', 'b2']);
    assert.deepEqual(nodes.map((d) => d.calls.length), [3, 3, 2]);
  } finally {
    await close();
  }
});

test('UNAVAILABLE: a submit without task id is not retried (it could create a second task)', async () => {
  const down = () => { throw { code: grpc.status.UNAVAILABLE, details: 'kafka refused' }; };
  const { nodes, client, close } = await cluster(2, (i) => (i === 0 ? { Submit: down, SubmitBatch: down } : { Submit: accepted }));
  try {
    await assert.rejects(client.submit({ namespace: 'shop', taskType: 't' }), (e) => e instanceof sdk.UnavailableError && e.details === 'kafka refused');
    assert.deepEqual(nodes.map((d) => d.calls.length), [1, 0]);
    await client.submit({ namespace: 'shop', taskType: 't' }); // n1
    // A batch with one task lacking an id is not idempotent either.
    await assert.rejects(client.submitBatch([{ namespace: 'shop', taskType: 't', taskId: 'a' }, { namespace: 'shop', taskType: 't' }]), sdk.UnavailableError);
    assert.deepEqual(nodes.map((d) => d.calls.length), [2, 1]);
  } finally {
    await close();
  }
});

test('UNAVAILABLE on both tries reaches the caller; a node that is down is UNAVAILABLE too', async () => {
  const dead = await fakeDispatcher('dead', {});
  const address = dead.address;
  await dead.close();
  const client = new sdk.Client({ nodes: [address, address], rpcTimeoutMs: 3_000 });
  try {
    await assert.rejects(client.get('x'), sdk.UnavailableError);
  } finally {
    client.close();
  }
});

test('errors: every status code maps to its class, with the field of INVALID_ARGUMENT', async () => {
  let next;
  const { client, close } = await cluster(1, { GetTask: () => { throw next; } });
  const cases = [
    [grpc.status.INVALID_ARGUMENT, 'task.payload_json: is not valid JSON', sdk.InvalidArgumentError],
    [grpc.status.NOT_FOUND, "task 'x' not found", sdk.NotFoundError],
    [grpc.status.ALREADY_EXISTS, 'unique key taken', sdk.AlreadyExistsError],
    [grpc.status.FAILED_PRECONDITION, 'already succeeded', sdk.FailedPreconditionError],
    [grpc.status.UNAVAILABLE, 'mysql down', sdk.UnavailableError],
    [grpc.status.RESOURCE_EXHAUSTED, 'shedding', sdk.ResourceExhaustedError],
    [grpc.status.DEADLINE_EXCEEDED, 'slow', sdk.DeadlineExceededError],
    [grpc.status.PERMISSION_DENIED, 'no', sdk.PermissionDeniedError],
    [grpc.status.UNAUTHENTICATED, 'who', sdk.PermissionDeniedError],
    [grpc.status.INTERNAL, 'boom', sdk.RpcError],
  ];
  try {
    for (const [code, details, cls] of cases) {
      next = { code, details };
      const err = await client.get('x').then(() => null, (e) => e);
      assert.ok(err instanceof cls, `${code} -> ${err && err.constructor.name}`);
      assert.ok(err instanceof sdk.RpcError && err instanceof sdk.TaskringError && err instanceof Error);
      assert.equal(err.code, code);
      assert.equal(err.details, details);
      assert.equal(err.name, cls.name);
    }
    next = { code: grpc.status.INVALID_ARGUMENT, details: 'tasks[2].schedule_time: has no UTC offset; RFC 3339 requires it' };
    const e = await client.get('x').then(() => null, (x) => x);
    assert.equal(e.field, 'tasks[2].schedule_time');
    assert.equal(e.problem, 'has no UTC offset; RFC 3339 requires it');
    assert.equal(e.message, 'INVALID_ARGUMENT: tasks[2].schedule_time: has no UTC offset; RFC 3339 requires it');
  } finally {
    await close();
  }
});

test('errors: InvalidArgumentError without a field name', () => {
  const e = new sdk.InvalidArgumentError('bad things happened: really');
  assert.equal(e.field, '');
  assert.equal(e.problem, 'bad things happened: really');
});

test('deadline: a slow node is DEADLINE_EXCEEDED and not retried elsewhere', async () => {
  const a = await fakeDispatcher('slow', { GetTask: () => new Promise((r) => setTimeout(() => r({ task: {}, state: 'TASK_STATE_QUEUED' }), 1_000)) });
  const b = await fakeDispatcher('fast', {});
  const client = new sdk.Client({ nodes: [a.address, b.address], rpcTimeoutMs: 200 });
  try {
    await assert.rejects(client.get('x'), sdk.DeadlineExceededError);
    assert.equal(b.calls.length, 0);
  } finally {
    client.close();
    await a.close();
    await b.close();
  }
});

test('get: state and history', async () => {
  const { client, close } = await cluster(1, {
    GetTask: (req) => ({
      task: { task_id: req.task_id, namespace: 'shop', task_type: 'cancel_order', payload_json: '{"order_id":42}', timeout_ms: 0 },
      state: 'TASK_STATE_SUCCEEDED', attempts: 2,
      history: [
        { state: 'TASK_STATE_ACCEPTED', at: '2030-01-02T03:04:05.678Z', node: 'd1' },
        { state: 'TASK_STATE_SUCCEEDED', at: '2030-01-02T03:34:06.001Z', node: 'd2', attempt: 2 },
      ],
    }),
  });
  try {
    const info = await client.get('order-42');
    assert.equal(info.state, 'succeeded');
    assert.ok(sdk.isTerminal(info.state));
    assert.deepEqual(info.payload, { order_id: 42 });
    assert.equal(info.timeoutMs, 0); // present even when 0: proto3 optional
    assert.equal(info.maxRetries, null);
    assert.equal(info.waiting, ''); // absent on the wire
    assert.deepEqual(info.history.map((h) => [h.state, h.at.toISOString(), h.attempt]), [
      ['accepted', '2030-01-02T03:04:05.678Z', 0], ['succeeded', '2030-01-02T03:34:06.001Z', 2]]);
  } finally {
    await close();
  }
});

test('get: last error and why a due task waits', async () => {
  const waiting = 'concurrency limit per_type (at most 20 running)';
  const { client, close } = await cluster(1, {
    GetTask: (req) => ({
      task: { task_id: req.task_id, namespace: 'shop', task_type: 'cancel_order' },
      state: 'TASK_STATE_QUEUED', attempts: 1, last_error: 'boom', waiting,
    }),
  });
  try {
    const info = await client.get('order-42');
    assert.equal(info.state, 'queued');
    assert.equal(info.lastError, 'boom');
    assert.equal(info.waiting, waiting);
  } finally {
    await close();
  }
});

test('an unknown state from a newer server is a ProtocolError', async () => {
  const { client, close } = await cluster(1, { Cancel: () => ({ task_id: 'x', state: 42 }) });
  try {
    await assert.rejects(client.cancel('x'), sdk.ProtocolError);
  } finally {
    await close();
  }
});

test('validation errors are thrown before anything is sent; batch items are named', async () => {
  const { client, nodes, close } = await cluster(1, { SubmitBatch: () => ({ results: [] }) });
  try {
    await assert.rejects(client.submit({ namespace: 'shop', taskType: 't', scheduleTime: '2030-01-02T03:04:05' }),
      (e) => e instanceof sdk.ValidationError && e.field === 'scheduleTime');
    await assert.rejects(client.submit({ namespace: 'shop', taskType: 't', payload: [1, 2] }), (e) => e.field === 'payload');
    await assert.rejects(client.submit({ namespace: 'shop', taskType: 't', payload: { x: NaN } }), (e) => e.field === 'payload');
    await assert.rejects(client.submit({ namespace: 'shop', taskType: 't', timeoutMs: 0 }), (e) => e.field === 'timeoutMs');
    await assert.rejects(client.submit({ namespace: 'shop', taskType: 't', retryPolicy: { multiplier: 0.5 } }), (e) => e.field === 'retryPolicy.multiplier');
    await assert.rejects(client.submitBatch([{ namespace: 'shop', taskType: 't' }, { namespace: 'shop', taskType: 't', delayMs: -5 }]),
      (e) => e instanceof sdk.ValidationError && e.field === 'tasks[1].delayMs');
    assert.equal(nodes[0].calls.length, 0);
    assert.deepEqual(await client.submitBatch([]), []);
  } finally {
    await close();
  }
});

test('uint64: a delay beyond 2^32 ms travels exactly; an unsafe integer is refused', async () => {
  const { client, nodes, close } = await cluster(1, { Submit: accepted });
  try {
    await client.submit({ namespace: 'shop', taskType: 't', delayMs: 7_776_000_000 });
    assert.equal(nodes[0].calls[0].request.task.delay_ms, '7776000000');
    await client.submit({ namespace: 'shop', taskType: 't', delayMs: 1.2 }); // rounded up: never early
    assert.equal(nodes[0].calls[1].request.task.delay_ms, '2');
    await assert.rejects(client.submit({ namespace: 'shop', taskType: 't', delayMs: 2 ** 53 + 2 }), (e) => e.field === 'delayMs');
  } finally {
    await close();
  }
});
