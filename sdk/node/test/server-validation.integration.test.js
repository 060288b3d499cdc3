'use strict';
// The server-side validation vectors (sdk/vectors/validation.json, checked_by
// "server") against the real dispatcher TaskService, through this SDK's error
// mapping. The dispatcher runs as a child process: test/fixtures/dispatcher_api.py
// serves it on loopback with an in-memory store and its clock held at the
// vectors' `now`. Skipped unless TASKRING_IT_ZK is set (the integration switch)
// and the repository's Python virtualenv is present.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const grpc = require('@grpc/grpc-js');
const { loadWire } = require('../dist/wire/load');
const { fromRpcError, InvalidArgumentError } = require('../dist/errors');
const { loadVector, type, fromProto3Json } = require('./helpers');

const repo = path.resolve(__dirname, '..', '..', '..');
const python = path.join(repo, '.venv', 'bin', 'python');
const skip = !process.env.TASKRING_IT_ZK ? 'set TASKRING_IT_ZK to run the integration tests'
  : !fs.existsSync(python) ? `no Python virtualenv at ${python}` : false;

async function startDispatcher(now) {
  const child = spawn(python, [path.join(__dirname, 'fixtures', 'dispatcher_api.py'), now], {
    cwd: repo, stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout });
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('dispatcher fixture did not start in 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`dispatcher fixture exited with ${code}`)));
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve(Number(line.replace(/^port /, '')));
    });
  });
  return { port, stop: () => new Promise((r) => { child.once('exit', () => r()); child.stdin.end(); }) };
}

function taskOf(c) {
  const json = { ...c.task };
  if ('payload_size_bytes' in json) {
    json.payloadJson = '{"x":"' + 'a'.repeat(json.payload_size_bytes - 8) + '"}';
    delete json.payload_size_bytes;
  }
  return fromProto3Json(type('Task'), json);
}

test('server validation vectors, through the SDK error mapping', { skip, timeout: 120_000 }, async (t) => {
  const vectors = loadVector('validation.json');
  const dispatcher = await startDispatcher(vectors.now);
  const stub = new (loadWire().TaskService)(`127.0.0.1:${dispatcher.port}`, grpc.credentials.createInsecure());
  const submit = (task) => new Promise((resolve) => {
    stub.Submit({ task }, { deadline: Date.now() + 10_000 }, (err, resp) => resolve(err ? fromRpcError(err) : resp));
  });
  try {
    for (const c of vectors.cases.filter((x) => x.checked_by === 'server')) {
      await t.test(c.name, async () => {
        const got = await submit(taskOf(c));
        if (c.ok) {
          assert.ok(!(got instanceof Error), `expected acceptance, got ${got && got.message}`);
          assert.match(String(got.state), /^TASK_STATE_/);
          assert.ok(got.task_id);
        } else {
          assert.ok(got instanceof InvalidArgumentError, `expected INVALID_ARGUMENT, got ${got && (got.message || JSON.stringify(got))}`);
          assert.equal(got.field, c.error_field, got.message);
          assert.ok(got.details.startsWith(`${c.error_field}: `));
        }
      });
    }
  } finally {
    stub.close();
    await dispatcher.stop();
  }
});
