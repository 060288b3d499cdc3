'use strict';
// Test helpers: the shared vectors, a proto3-JSON view of wire messages, an
// in-process fake dispatcher, and a caller of an executor. Everything binds
// 127.0.0.1 only.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const grpc = require('@grpc/grpc-js');
const protobuf = require('protobufjs');
const { loadWire, protoDir, PROTO_FILE } = require('../dist/wire/load');

const VECTORS = path.resolve(__dirname, '..', '..', 'vectors');

function loadVector(name) {
  return JSON.parse(fs.readFileSync(path.join(VECTORS, name), 'utf8'));
}

// ---- proto3 JSON (canonical), by reflection over the .proto ----

const root = new protobuf.Root().loadSync(path.join(protoDir(), PROTO_FILE), { keepCase: true });
root.resolveAll();
const type = (name) => root.lookupType(`taskring.v1.${name}`);

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
const LONGS = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

/** A proto3 `optional` field: alone in a synthetic oneof, so it has presence. */
function hasPresence(field) {
  return Boolean(field.partOf && field.partOf.oneof.length === 1 && field.partOf.name === `_${field.name}`);
}

function scalarToJson(field, v) {
  if (field.resolvedType instanceof protobuf.Enum) return field.resolvedType.valuesById[v] ?? v;
  if (LONGS.has(field.type)) return String(v);
  return v;
}

function isDefault(field, v) {
  if (field.resolvedType instanceof protobuf.Enum) return v === 0;
  if (LONGS.has(field.type)) return String(v) === '0';
  return v === 0 || v === '' || v === false;
}

/** Canonical proto3 JSON of a decoded protobufjs message. */
function toProto3Json(t, msg) {
  const out = {};
  for (const field of t.fieldsArray) {
    if (!Object.prototype.hasOwnProperty.call(msg, field.name)) continue;
    const v = msg[field.name];
    if (v === null || v === undefined) continue;
    const key = camel(field.name);
    if (field.repeated) {
      if (v.length === 0) continue;
      out[key] = v.map((x) => (field.resolvedType instanceof protobuf.Type ? toProto3Json(field.resolvedType, x) : scalarToJson(field, x)));
    } else if (field.resolvedType instanceof protobuf.Type) {
      out[key] = toProto3Json(field.resolvedType, v);
    } else if (hasPresence(field) || !isDefault(field, v)) {
      out[key] = scalarToJson(field, v);
    }
  }
  return out;
}

/** proto3 JSON -> a plain object with .proto field names, for Type.fromObject. */
function fromProto3Json(t, json) {
  const out = {};
  for (const field of t.fieldsArray) {
    const key = camel(field.name);
    const v = json[key] ?? json[field.name];
    if (v === undefined) continue;
    const conv = (x) => {
      if (field.resolvedType instanceof protobuf.Type) return fromProto3Json(field.resolvedType, x);
      if (field.type === 'double' || field.type === 'float') return typeof x === 'string' ? Number(x) : x;
      return x;
    };
    out[field.name] = field.repeated ? v.map(conv) : conv(v);
  }
  return out;
}

/** Bytes of a message given in proto3 JSON. */
function encodeProto3Json(typeName, json) {
  const t = type(typeName);
  return Buffer.from(t.encode(t.fromObject(fromProto3Json(t, json))).finish());
}

// ---- gRPC on loopback ----

/** Start a server with `services` [[definition, impl]], on 127.0.0.1:<free>; resolves { port, close }. */
function serve(services, credentials = grpc.ServerCredentials.createInsecure()) {
  const server = new grpc.Server();
  for (const [definition, impl] of services) server.addService(definition, impl);
  return new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', credentials, (err, port) => {
      if (err) return reject(err);
      resolve({
        port,
        address: `127.0.0.1:${port}`,
        close: () => new Promise((r) => server.tryShutdown(() => r())),
        force: () => server.forceShutdown(),
      });
    });
  });
}

/** A fake dispatcher: `handlers` override TaskService methods; every call is recorded. */
async function fakeDispatcher(name, handlers = {}, credentials = undefined) {
  const wire = loadWire();
  const calls = [];
  const impl = {};
  for (const method of ['Submit', 'SubmitBatch', 'Cancel', 'GetTask']) {
    impl[method] = (call, callback) => {
      calls.push({ method, request: call.request, node: name, authorization: call.metadata.get('authorization') });
      const h = handlers[method];
      if (!h) return callback({ code: grpc.status.UNIMPLEMENTED, details: `${method} not faked` });
      Promise.resolve()
        .then(() => h(call.request, name))
        .then((resp) => callback(null, resp), (err) => callback(err));
    };
  }
  const s = await serve([[wire.TaskService.service, impl]], credentials);
  return { ...s, calls, name };
}

const CRON_METHODS = ['CreateCronRule', 'UpdateCronRule', 'GetCronRule', 'ListCronRules', 'PauseCronRule',
  'ResumeCronRule', 'DeleteCronRule'];

/**
 * A fake node serving CronService (`cron` handlers) and TaskService (`task`
 * handlers) on one port; every call of either is recorded in `calls`.
 */
async function fakeCronNode(name, cron = {}, task = {}) {
  const wire = loadWire();
  const calls = [];
  const implOf = (methods, handlers) => {
    const impl = {};
    for (const method of methods) {
      impl[method] = (call, callback) => {
        calls.push({ method, request: call.request, node: name, authorization: call.metadata.get('authorization') });
        const h = handlers[method];
        if (!h) return callback({ code: grpc.status.UNIMPLEMENTED, details: `${method} not faked` });
        Promise.resolve()
          .then(() => h(call.request, name))
          .then((resp) => callback(null, resp), (err) => callback(err));
      };
    }
    return impl;
  };
  const s = await serve([
    [wire.CronService.service, implOf(CRON_METHODS, cron)],
    [wire.TaskService.service, implOf(['Submit', 'SubmitBatch', 'Cancel', 'GetTask'], task)],
  ]);
  return { ...s, calls, name };
}

/**
 * CronService handlers over an in-memory map, with the server's refusals the
 * CLI must pass on: a duplicate (ALREADY_EXISTS), a missing rule (NOT_FOUND),
 * an unknown zone (INVALID_ARGUMENT naming rule.time_zone). The stored rule is
 * normalised as the real server does (catch_up "latest", overlap "allow").
 */
function memoryCron(now = '2030-01-02T03:04:05Z') {
  const rules = new Map();
  const key = (r) => `${r.namespace}/${r.name}`;
  const fail = (code, details) => { throw { code, details }; };
  const stored = (r) => rules.get(key(r)) ?? fail(grpc.status.NOT_FOUND, `cron rule ${key(r)} not found`);
  const view = (r) => ({ ...r, next_fire_time: r.paused ? '' : '2030-01-03T00:00:00Z' });
  const put = (req) => {
    const rule = req.rule;
    if (!rule.time_zone || rule.time_zone.startsWith('Mars/')) {
      fail(grpc.status.INVALID_ARGUMENT, `rule.time_zone: unknown time zone ${JSON.stringify(rule.time_zone)}`);
    }
    const out = { ...rule, catch_up: rule.catch_up || 'latest', overlap: rule.overlap || 'allow',
      catch_up_limit: rule.catch_up_limit || 100, paused: false, created_at: now, updated_at: now };
    if (rule.timeout_ms === undefined) delete out.timeout_ms;
    if (rule.max_retries === undefined) delete out.max_retries;
    return out;
  };
  const handlers = {
    CreateCronRule: (req) => {
      if (rules.has(key(req.rule))) fail(grpc.status.ALREADY_EXISTS, `cron rule ${key(req.rule)} already exists`);
      const r = put(req);
      rules.set(key(r), r);
      return { rule: view(r) };
    },
    UpdateCronRule: (req) => {
      stored(req.rule);
      const r = put(req);
      rules.set(key(r), r);
      return { rule: view(r) };
    },
    GetCronRule: (req) => view(stored(req)),
    ListCronRules: (req) => ({
      rules: [...rules.values()].filter((r) => !req.namespace || r.namespace === req.namespace).map(view),
    }),
    PauseCronRule: (req) => view(Object.assign(stored(req), { paused: true })),
    ResumeCronRule: (req) => view(Object.assign(stored(req), { paused: false })),
    DeleteCronRule: (req) => {
      const r = stored(req);
      rules.delete(key(r));
      return { ...r, next_fire_time: '' };
    },
  };
  return { handlers, rules };
}

const POLICY_METHODS = ['GetTypePolicy', 'ListTypePolicies', 'PutTypePolicy', 'DeleteTypePolicy'];

/**
 * A fake node serving PolicyService (`policy` handlers) and TaskService (`task`
 * handlers) on one port; every call of either is recorded in `calls`.
 */
async function fakePolicyNode(name, policy = {}, task = {}) {
  const wire = loadWire();
  const calls = [];
  const implOf = (methods, handlers) => {
    const impl = {};
    for (const method of methods) {
      impl[method] = (call, callback) => {
        calls.push({ method, request: call.request, node: name, authorization: call.metadata.get('authorization') });
        const h = handlers[method];
        if (!h) return callback({ code: grpc.status.UNIMPLEMENTED, details: `${method} not faked` });
        Promise.resolve()
          .then(() => h(call.request, name))
          .then((resp) => callback(null, resp), (err) => callback(err));
      };
    }
    return impl;
  };
  const s = await serve([
    [wire.PolicyService.service, implOf(POLICY_METHODS, policy)],
    [wire.TaskService.service, implOf(['Submit', 'SubmitBatch', 'Cancel', 'GetTask'], task)],
  ]);
  return { ...s, calls, name };
}

/** A fake node serving GraphService (`graph` handlers); every call is recorded in `calls`. */
async function fakeGraphNode(name, graph = {}) {
  const wire = loadWire();
  const calls = [];
  const impl = {};
  for (const method of ['SubmitGraph', 'GetGraph', 'CancelGraph']) {
    impl[method] = (call, callback) => {
      calls.push({ method, request: call.request, node: name, authorization: call.metadata.get('authorization') });
      const h = graph[method];
      if (!h) return callback({ code: grpc.status.UNIMPLEMENTED, details: `${method} not faked` });
      Promise.resolve()
        .then(() => h(call.request, name))
        .then((resp) => callback(null, resp), (err) => callback(err));
    };
  }
  const s = await serve([[wire.GraphService.service, impl]]);
  return { ...s, calls, name };
}

/**
 * PolicyService handlers over an in-memory map, with the refusals of the
 * contract the CLI must pass on: an empty reason (INVALID_ARGUMENT naming
 * `reason`), a bad entry (INVALID_ARGUMENT naming `policy_json.<field>`; here
 * only concurrency.per_type is judged), a stale if_revision
 * (FAILED_PRECONDITION), a delete without an API entry (NOT_FOUND). `file`
 * holds the policies file's entries, keyed "ns/type".
 */
function memoryPolicies({ file = {}, now = '2030-01-02T03:04:05Z', by = 'ops-token' } = {}) {
  const api = new Map();
  const revisions = new Map(); // the last revision of each key, kept across deletes
  const key = (r) => `${r.namespace}/${r.task_type}`;
  const fail = (code, details) => { throw { code, details }; };
  const view = (namespace, taskType) => {
    const k = `${namespace}/${taskType}`;
    const entry = api.get(k);
    const fromFile = file[k];
    return {
      namespace, task_type: taskType,
      policy_json: entry ? entry.policy_json : JSON.stringify(fromFile ?? {}),
      source: entry ? 'api' : fromFile ? 'file' : 'none',
      revision: entry ? String(entry.revision) : '0',
      updated_by: entry ? by : '',
      updated_at: entry ? now : '',
      file_policy_json: fromFile ? JSON.stringify(fromFile) : '',
    };
  };
  const checkWrite = (req) => {
    if (!req.reason) fail(grpc.status.INVALID_ARGUMENT, 'reason: required (it goes in the audit trail)');
    const current = api.get(key(req))?.revision ?? 0;
    if (req.if_revision !== undefined && String(req.if_revision) !== String(current)) {
      fail(grpc.status.FAILED_PRECONDITION, `if_revision: the entry is at revision ${current}, not ${req.if_revision}`);
    }
  };
  const handlers = {
    GetTypePolicy: (req) => view(req.namespace, req.task_type),
    ListTypePolicies: (req) => {
      const keys = new Set([...api.keys(), ...Object.keys(file)]);
      return {
        policies: [...keys].sort()
          .map((k) => k.split('/'))
          .filter(([ns]) => !req.namespace || ns === req.namespace)
          .map(([ns, t]) => view(ns, t)),
      };
    },
    PutTypePolicy: (req) => {
      const doc = JSON.parse(req.policy_json);
      const perType = doc.concurrency?.per_type;
      if (perType !== undefined && !(Number.isInteger(perType) && perType > 0)) {
        fail(grpc.status.INVALID_ARGUMENT, `policy_json.concurrency.per_type: must be a positive integer, got ${JSON.stringify(perType)}`);
      }
      checkWrite(req);
      const revision = (revisions.get(key(req)) ?? 0) + 1;
      revisions.set(key(req), revision);
      api.set(key(req), { policy_json: req.policy_json, revision });
      return view(req.namespace, req.task_type);
    },
    DeleteTypePolicy: (req) => {
      if (!api.has(key(req))) fail(grpc.status.NOT_FOUND, `no API policy entry for ${key(req)}`);
      checkWrite(req);
      api.delete(key(req));
      return view(req.namespace, req.task_type);
    },
  };
  return { handlers, api };
}

/** Call Execute on an executor at `address` (plain text unless `credentials` are given). */
function execute(address, deliveries, deadlineMs = 30_000, credentials = grpc.credentials.createInsecure()) {
  const wire = loadWire();
  const client = new wire.ExecutorService(address, credentials);
  return new Promise((resolve, reject) => {
    client.Execute({ deliveries, dispatcher_node: 'test' }, { deadline: Date.now() + deadlineMs }, (err, resp) => {
      client.close();
      if (err) reject(err);
      else resolve(resp.outcomes);
    });
  });
}

/** A delivery of `taskType` with the given id/attempt/timeout. */
function delivery(taskId, taskType, { attempt = 1, timeoutMs = 5_000, payload = '{"n":1}', epoch = '7' } = {}) {
  return {
    task: { task_id: taskId, namespace: 'shop', task_type: taskType, payload_json: payload, trace_id: 'tr' },
    attempt,
    epoch,
    timeout_ms: timeoutMs,
  };
}

/**
 * Fresh certificates of deploy/local/certs.sh in a temporary directory, removed
 * after the test `t`: ca.pem, server.pem/key (127.0.0.1, localhost), client.pem/key,
 * other-ca.pem, other-client.pem/key. Returns { dir, file(name), read(name) }.
 */
function makeCerts(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskring-node-tls-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  execFileSync('bash', [path.join(__dirname, '..', '..', '..', 'deploy', 'local', 'certs.sh'), dir], { stdio: 'ignore' });
  const file = (name) => path.join(dir, name);
  return { dir, file, read: (name) => fs.readFileSync(file(name)) };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll until `check()` holds (the Execute call has arrived, etc.), or fail after `ms`. */
async function until(check, ms = 2_000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not reached in ${ms} ms`);
    await sleep(2);
  }
}

module.exports = {
  VECTORS, loadVector, type, toProto3Json, fromProto3Json, encodeProto3Json, serve, fakeDispatcher, fakeCronNode,
  memoryCron, fakePolicyNode, memoryPolicies, fakeGraphNode, execute, delivery, makeCerts, sleep, until,
};
