#!/usr/bin/env bash
# The one way to generate Python code from the wire contract.
# Output goes to sdk/python/taskring/_pb/ (committed, so installing the SDK
# needs no compiler); run this after editing proto/ and commit the result.
# Needs grpcio-tools (pinned in pyproject.toml's dev extra).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/sdk/python/taskring/_pb"
python="${PYTHON:-$root/.venv/bin/python}"
mkdir -p "$out"
"$python" -m grpc_tools.protoc -I "$root/proto" \
  --python_out="$out" --grpc_python_out="$out" --pyi_out="$out" \
  "$root/proto/taskring/v1/taskring.proto"
# protoc writes imports as `from taskring.v1 import ...`; make them package-relative.
sed -i 's/^from taskring\.v1 import taskring_pb2/from taskring._pb.taskring.v1 import taskring_pb2/' \
  "$out/taskring/v1/taskring_pb2_grpc.py"
touch "$out/__init__.py" "$out/taskring/__init__.py" "$out/taskring/v1/__init__.py"
echo "generated into $out"

# Go: committed into sdk/go/pb/ by the Go SDK's own script (needs protoc and go;
# it pins and installs its protoc plugins itself).
"$root/sdk/go/generate.sh"

# Java: nothing to run here. sdk/java generates its code from this proto at build time
# (protobuf-maven-plugin, protoc and protoc-gen-grpc-java fetched from Maven Central);
# `cd sdk/java && mvn -q -B compile` regenerates into sdk/java/target/ (not committed).

# Node: TypeScript types into sdk/node/src/gen/ (committed) with proto-loader-gen-types
# (pure JS, no protoc; the same options as the run-time loader, sdk/node/src/wire/options.ts).
# `npm run build` in sdk/node also regenerates. Needs `npm ci` in sdk/node first.
if [[ -d "$root/sdk/node/node_modules" ]]; then
  (cd "$root/sdk/node" && npm run --silent generate)
else
  echo "sdk/node: run 'npm ci' there, then 'npm run generate'" >&2
fi
