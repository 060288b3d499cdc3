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
