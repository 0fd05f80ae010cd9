#!/usr/bin/env bash
# Builds the Jaeger v2 binary (the all-in-one: OTLP gRPC :4317 and HTTP
# :4318 in, the query API and UI on :16686, in-memory storage by default)
# from the Go module proxy, in a scratch module under a cache directory,
# and prints its path on the last line of standard output. A binary built
# before is reused as it is. Nothing of the project's own go.mod changes.
#
# The tests that need a real Jaeger (cmd/skillfleet/jaeger_e2e_test.go)
# read the path from SKILLFLEET_JAEGER:
#
#   export SKILLFLEET_JAEGER=$(nice -n 10 scripts/jaeger.sh)
#
# The build is heavy (a few hundred packages): run it niced.
#
# Usage: scripts/jaeger.sh [--force]
#   --force   rebuild even where a binary is cached
# Environment:
#   JAEGER_VERSION   module version (default v1.76.0, the one tested)
#   JAEGER_CACHE     where to build (default
#                    ${XDG_CACHE_HOME:-$HOME/.cache}/skillfleet/jaeger-<version>)
set -euo pipefail
force=
for a in "$@"; do
  case "$a" in
    --force) force=1 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "jaeger.sh: unknown argument $a (see --help)" >&2; exit 2 ;;
  esac
done
version=${JAEGER_VERSION:-v1.76.0}
dir=${JAEGER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skillfleet/jaeger-$version}
bin=$dir/bin/jaeger
log() { echo "jaeger.sh: $*" >&2; }

if [[ -z $force && -x $bin ]] && "$bin" version >/dev/null 2>&1; then
  log "reusing $bin"
  echo "$bin"
  exit 0
fi
command -v go >/dev/null || { log "go is not on PATH"; exit 1; }
mkdir -p "$dir/src" "$dir/bin"
cd "$dir/src"
start=$(date +%s)
if [[ ! -f go.mod ]]; then
  log "scratch module in $dir/src"
  # The module's go directive follows the toolchain here; the jaeger
  # module's own go.mod raises it where it needs more.
  go mod init skillfleet.local/jaeger-build >/dev/null 2>&1
fi
log "resolving github.com/jaegertracing/jaeger@$version (go get -tool; the first time downloads a few hundred modules)"
if ! GOFLAGS=-mod=mod go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$version" >"$dir/get.log" 2>&1; then
  tail -n 20 "$dir/get.log" >&2
  log "go get failed (whole output: $dir/get.log)"
  exit 1
fi
log "$(grep -c '^go: added' "$dir/get.log" || true) modules added to the scratch module"
log "building (go build; several minutes on a cold build cache)"
# Static (no cgo), so the same binary runs in a scratch container image;
# the version stamp makes `jaeger version` name the module version.
ldflags="-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=$version"
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin.tmp" github.com/jaegertracing/jaeger/cmd/jaeger >&2
mv "$bin.tmp" "$bin"
"$bin" version >/dev/null 2>&1 || { log "built $bin but '$bin version' fails"; exit 1; }
log "built $bin in $(( $(date +%s) - start )) s"
echo "$bin"
