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
# Usage: scripts/jaeger.sh [--force] [--ui]
#   --force   rebuild even where a binary (or UI build) is cached
#   --ui      build the UI instead: jaeger-ui at the same version (the Go
#             module carries none), and print the directory to give the
#             binary as extensions.jaeger_query.ui.assets_path (the UI
#             test reads it from SKILLFLEET_JAEGER_UI). Needs git (the
#             first time), node and npm (the npm registry, for npm ci).
# Environment:
#   JAEGER_VERSION   module version (default v1.76.0, the one tested)
#   JAEGER_CACHE     where to build (default
#                    ${XDG_CACHE_HOME:-$HOME/.cache}/skillfleet/jaeger-<version>)
#   JAEGER_UI_CACHE  where --ui builds (default: jaeger-ui-<version> beside it)
set -euo pipefail
force= ui=
for a in "$@"; do
  case "$a" in
    --force) force=1 ;;
    --ui) ui=1 ;;
    -h|--help) sed -n '2,/^set /{/^set /!p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "jaeger.sh: unknown argument $a (see --help)" >&2; exit 2 ;;
  esac
done
version=${JAEGER_VERSION:-v1.76.0}
dir=${JAEGER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skillfleet/jaeger-$version}
bin=$dir/bin/jaeger
log() { echo "jaeger.sh: $*" >&2; }

if [[ -n $ui ]]; then
  uidir=${JAEGER_UI_CACHE:-$(dirname "$dir")/jaeger-ui-$version}
  build=$uidir/packages/jaeger-ui/build
  if [[ -z $force && -f $build/index.html ]]; then
    log "reusing the UI build in $build"
    echo "$build"
    exit 0
  fi
  for c in git node npm; do
    command -v $c >/dev/null || { log "$c is not on PATH (--ui needs git, node and npm)"; exit 1; }
  done
  start=$(date +%s)
  if [[ ! -f $uidir/package.json ]]; then
    log "fetching jaeger-ui $version into $uidir"
    git clone -q --depth 1 --branch "$version" https://github.com/jaegertracing/jaeger-ui "$uidir" >&2
  fi
  cd "$uidir"
  if [[ ! -d node_modules ]]; then
    log "npm ci (the first time downloads some 800 packages)"
    npm ci --no-audit --no-fund >&2
  fi
  if [[ ! -f packages/plexus/lib/index.js ]]; then
    log "building plexus, the UI's graph library"
    (cd packages/plexus && npm run build) >&2
  fi
  log "building the UI (vite; minutes)"
  cd packages/jaeger-ui
  NODE_ENV=production REACT_APP_VSN_STATE="$(node ../../scripts/get-tracking-version.js)" npx vite build >&2
  [[ -f $build/index.html ]] || { log "the UI build left no $build/index.html"; exit 1; }
  log "built the UI in $(( $(date +%s) - start )) s"
  echo "$build"
  exit 0
fi

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
