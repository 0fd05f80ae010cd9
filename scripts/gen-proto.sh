#!/usr/bin/env bash
# Regenerates the Go code for proto/ with pinned plugin versions.
# Usage: scripts/gen-proto.sh [OUT_DIR]   (default: the repository itself)
# Needs protoc (Debian: apt-get install protobuf-compiler).
set -euo pipefail
cd "$(dirname "$0")/.."
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.5.1
out="${1:-.}"
bin="$PWD/bin"
mkdir -p "$bin"
if [[ ! -x "$bin/protoc-gen-go" ]] || ! "$bin/protoc-gen-go" --version 2>/dev/null | grep -q "${PROTOC_GEN_GO_VERSION}"; then
  GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOC_GEN_GO_VERSION}"
fi
if [[ ! -x "$bin/protoc-gen-go-grpc" ]] || ! "$bin/protoc-gen-go-grpc" --version 2>/dev/null | grep -q "${PROTOC_GEN_GO_GRPC_VERSION#v}"; then
  GOBIN="$bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC_VERSION}"
fi
command -v protoc >/dev/null || { echo "gen-proto: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
mkdir -p "$out/proto"
PATH="$bin:$PATH" protoc -I proto \
  --go_out="$out/proto" --go_opt=paths=source_relative \
  --go-grpc_out="$out/proto" --go-grpc_opt=paths=source_relative \
  $(cd proto && find . -name '*.proto' | sort | sed 's|^\./||' | sed 's|^|proto/|' | sed 's|^proto/||')
