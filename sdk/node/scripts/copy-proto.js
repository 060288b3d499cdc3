#!/usr/bin/env node
// Part of `npm run build`: ship the wire contract inside the package (dist/proto/),
// since the SDK loads the .proto at run time and an installed package has no
// ../../proto beside it.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const rel = path.join('taskring', 'v1', 'taskring.proto');
const from = path.resolve(root, '..', '..', 'proto', rel);
const to = path.join(root, 'dist', 'proto', rel);
fs.mkdirSync(path.dirname(to), { recursive: true });
fs.copyFileSync(from, to);
