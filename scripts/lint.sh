#!/usr/bin/env bash
# Lints the module with golangci-lint (configuration: .golangci.yml), at a
# pinned version installed once into .tools/bin (git-ignored) with go install.
#
#   scripts/lint.sh            lint everything
#   scripts/lint.sh ./pkg/...  lint some packages
set -euo pipefail
cd "$(dirname "$0")/.."
version=v2.15.0
bin=.tools/bin/golangci-lint
if ! [[ -x $bin ]] || ! "$bin" version 2>/dev/null | grep -q "version ${version#v}"; then
  echo "installing golangci-lint $version into .tools/bin (once)" >&2
  GOBIN="$PWD/.tools/bin" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$version"
fi
if [[ $# -eq 0 ]]; then
  set -- ./...
fi
exec "$bin" run --timeout 30m "$@"
