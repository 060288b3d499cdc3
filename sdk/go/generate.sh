#!/usr/bin/env bash
# The one way to generate the Go code of the wire contract (proto/taskring/v1).
# Output: sdk/go/pb/taskring/v1/*.pb.go, committed, so `go get` of the SDK needs
# no compiler (the Go convention). Run after editing proto/ and commit the result.
#
# Needs protoc (Debian: apt-get install -y protobuf-compiler) and go. The two
# plugins are pinned here and installed with `go install` into a private,
# per-version directory, so regenerating never depends on (or changes) whatever
# plugin versions happen to be on PATH.
set -euo pipefail
PROTOC_GEN_GO_VERSION=v1.36.10
PROTOC_GEN_GO_GRPC_VERSION=v1.5.1

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
module=github.com/taskring/taskring/sdk/go
pkg="$module/pb/taskring/v1;taskringv1"
tools="${TASKRING_GO_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/taskring/go-tools/$PROTOC_GEN_GO_VERSION-$PROTOC_GEN_GO_GRPC_VERSION}"

command -v protoc >/dev/null || { echo "protoc not found: apt-get install -y protobuf-compiler" >&2; exit 1; }
if [[ ! -x "$tools/protoc-gen-go" || ! -x "$tools/protoc-gen-go-grpc" ]]; then
  mkdir -p "$tools"
  GOBIN="$tools" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
  GOBIN="$tools" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
fi

# The .proto has no go_package option (it is shared by every language), so the
# Go import path is given here with M flags instead.
PATH="$tools:$PATH" protoc -I "$root/proto" \
  --go_out="$here" --go_opt=module="$module" --go_opt="Mtaskring/v1/taskring.proto=$pkg" \
  --go-grpc_out="$here" --go-grpc_opt=module="$module" --go-grpc_opt="Mtaskring/v1/taskring.proto=$pkg" \
  "$root/proto/taskring/v1/taskring.proto"
echo "generated into $here/pb/taskring/v1"
