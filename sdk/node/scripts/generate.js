#!/usr/bin/env node
// `npm run generate`: TypeScript types of the wire messages and services, from
// ../../proto (the one wire contract), into src/gen/ (committed). Pure JS
// (proto-loader-gen-types reads the .proto with protobufjs): no protoc needed.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const protoDir = path.resolve(root, '..', '..', 'proto');
const out = path.join(root, 'src', 'gen');
fs.rmSync(out, { recursive: true, force: true });
const bin = require.resolve('@grpc/proto-loader/build/bin/proto-loader-gen-types.js');
execFileSync(process.execPath, [
  bin,
  // Must match src/wire/options.ts, which the run-time loader uses.
  '--keepCase', '--longs=String', '--enums=String', '--defaults', '--oneofs',
  '--grpcLib=@grpc/grpc-js', '--includeComments',
  '-I', protoDir, '-O', out,
  'taskring/v1/taskring.proto',
], { stdio: 'inherit' });
// The generator writes the absolute path of the .proto into each header; keep
// the committed files free of this machine's paths.
for (const file of walk(out)) {
  const text = fs.readFileSync(file, 'utf8');
  fs.writeFileSync(file, text.replace(/^\/\/ Original file: .*\/proto\//m, '// Original file: proto/'));
}
console.log(`generated into ${path.relative(process.cwd(), out) || out}`);

function* walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(full);
    else yield full;
  }
}
