#!/usr/bin/env bash
# The whole test suite: build, vet, gofmt, docker-compose.yml, generated-code
# staleness, unit and integration tests (real embedded NATS, real
# redis-server), and the multi-process tests that start real skillfleet
# processes.
#
# It needs Go and a few tools (redis-server, protoc, docker-compose, ip,
# chromium, bwrap, /usr/bin/python3 with openpyxl, a static busybox and
# the CA bundle for the container test's offline stand-ins, git, pgrep,
# curl, /usr/bin/time, script, unshare, setpriv, mount; node, npm, socat
# and tmux for the agent CLIs' tests). Run as root on Debian/Ubuntu, it installs the
# missing ones with apt-get (and the agent CLIs with
# scripts/install-agents.sh); otherwise it stops before running anything,
# printing one line per missing tool with its install command. The agent
# CLIs need Node 20.6 or newer: where the machine's is older, --setup run
# as root installs a pinned Node into /usr/local (below), and the suite
# without --setup stops at once naming that command.
#
#   scripts/test.sh           check or install the tools, then run the suite
#   scripts/test.sh --setup   check or install the tools, then stop
#
# SKILLFLEET_TEST_NO_INSTALL=1 reports missing tools instead of installing.
set -euo pipefail
cd "$(dirname "$0")/.."
export CI="${CI:-}"
# Without -trimpath a package's build-cache key includes its directory, so
# every fresh clone compiled the whole module again (build, vet, each test
# binary, the skillfleet binaries the tests build); with it a clone reuses
# what an earlier one compiled. The tests' own `go build`s inherit it.
export GOFLAGS="-trimpath${GOFLAGS:+ $GOFLAGS}"
setup_only=
case "${1:-}" in
--setup) setup_only=1 ;;
"") ;;
*) echo "usage: scripts/test.sh [--setup]" >&2; exit 2 ;;
esac

# tool | Debian package(s) | check
tools=(
  "redis-server|redis-server|command -v redis-server"
  "protoc|protobuf-compiler|command -v protoc"
  "docker-compose|docker-compose|command -v docker-compose"
  "dockerd (the container test's engine)|docker.io|command -v dockerd || test \"\${SKILLFLEET_CONTAINER_TEST:-}\" = 0"
  "ip|iproute2|command -v ip"
  "chromium|chromium|command -v chromium || command -v chromium-browser || test -x /usr/bin/chromium"
  "bwrap|bubblewrap|command -v bwrap"
  "python3 with openpyxl|python3 python3-openpyxl|/usr/bin/python3 -c 'import openpyxl'"
  # The offline stand-ins of the container test copy a static busybox
  # (scripts/offline-base-images.sh) and the host's CA bundle.
  "static busybox (the container test's offline stand-ins)|busybox-static|test \"\${SKILLFLEET_CONTAINER_TEST:-}\" = 0 || { test -x /bin/busybox && ! ldd /bin/busybox; } || { test -x /usr/bin/busybox && ! ldd /usr/bin/busybox; }"
  "CA certificates|ca-certificates|test -f /etc/ssl/certs/ca-certificates.crt"
  # The history test reads commits; the fleet scripts reap children with
  # pgrep and fetch counters with curl; the benches time with /usr/bin/time.
  "git|git|command -v git"
  "pgrep|procps|command -v pgrep"
  "curl|curl|command -v curl"
  "/usr/bin/time|time|test -x /usr/bin/time"
  # The terminal UI test (script), the namespace tests (unshare, mount,
  # setpriv) and the sandbox.
  "script, unshare, setpriv|util-linux bsdutils|command -v script && command -v unshare && command -v setpriv"
  "mount|mount|command -v mount"
)
agents=
if [[ -f scripts/install-agents.sh ]]; then
  agents=1
  tools+=("npm|nodejs npm|command -v npm && command -v node")
  # Claude Code's own sandbox needs socat for its tool commands.
  tools+=("socat|socat|command -v socat")
  # The harvest test types into the CLIs' terminal UIs through tmux.
  tools+=("tmux|tmux|command -v tmux")
fi

missing() {
  local t name pkgs check
  for t in "${tools[@]}"; do
    IFS='|' read -r name pkgs check <<<"$t"
    if ! (eval "$check") >/dev/null 2>&1; then
      echo "$name|$pkgs"
    fi
  done
}

if ! command -v go >/dev/null; then
  echo "missing: go — install Go $(sed -n 's/^go //p' go.mod) or newer from https://go.dev/dl/ and put it on PATH" >&2
  exit 1
fi

gaps=$(missing)
if [[ -n "$gaps" && "$(id -u)" == 0 && -z "${SKILLFLEET_TEST_NO_INSTALL:-}" ]] && command -v apt-get >/dev/null; then
  pkgs=$(cut -d'|' -f2 <<<"$gaps" | tr '\n' ' ')
  echo "== installing: $pkgs"
  export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
  log=$(mktemp)
  # shellcheck disable=SC2086 # one word per package
  if ! { apt-get update -qq && apt-get install -y -qq $pkgs; } >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    echo "apt-get install $pkgs failed" >&2
  fi
  rm -f "$log"
  hash -r
  gaps=$(missing)
fi
if [[ -n "$gaps" ]]; then
  sudo=
  [[ "$(id -u)" == 0 ]] || sudo="sudo "
  while IFS='|' read -r name pkgs; do
    if command -v apt-get >/dev/null; then
      echo "missing: $name — install: ${sudo}apt-get install $pkgs" >&2
    else
      echo "missing: $name — install the package(s) $pkgs (Debian/Ubuntu names) with your package manager" >&2
    fi
  done <<<"$gaps"
  echo "then run scripts/test.sh again" >&2
  exit 1
fi
if [[ -n "$agents" ]]; then
  # The pinned pi (0.73.1) needs Node 20.6 or newer (its package.json's
  # engines; Claude Code's asks for 22); Debian 12's nodejs is 18, on
  # which every pi call dies on a regular expression flag deep inside a
  # test. As root (CI, or --setup) it installs Node $NODE_VERSION from npm's
  # official binary package (node-linux-<arch>: the nodejs.org build,
  # checked against the registry's integrity hash by npm pack) into
  # /usr/local/lib/nodejs-$NODE_VERSION, linked as /usr/local/bin/node:
  # that comes before /usr/bin on Debian's PATH, and Debian's npm and npx
  # (#!/usr/bin/env node) run on it too. Otherwise it stops here, naming
  # the version found.
  NODE_VERSION=22.23.5
  node_old() {
    local v
    v=$(node --version 2>/dev/null | sed 's/^v//')
    [[ -z $v ]] || ! printf '20.6.0\n%s\n' "$v" | sort -C -V
  }
  install_node() {
    local arch tmp dest=/usr/local/lib/nodejs-$NODE_VERSION
    case $(uname -m) in
    x86_64) arch=x64 ;;
    aarch64) arch=arm64 ;;
    *) echo "scripts/test.sh --setup: npm has no Node.js package for $(uname -m); install Node 20.6 or newer from https://nodejs.org/" >&2; return 1 ;;
    esac
    echo "== node $NODE_VERSION (npm pack node-linux-$arch@$NODE_VERSION into $dest)"
    tmp=$(mktemp -d)
    if ! (cd "$tmp" && npm pack --fetch-retries=1 --loglevel=error "node-linux-$arch@$NODE_VERSION") >"$tmp/log" 2>&1; then
      tail -n 10 "$tmp/log" >&2
      echo "scripts/test.sh --setup: npm pack node-linux-$arch@$NODE_VERSION failed: is the npm registry ($(npm config get registry 2>/dev/null)) reachable?" >&2
      rm -rf "$tmp"
      return 1
    fi
    # Unpacked beside, then renamed: a half-unpacked tree is never linked.
    rm -rf "$dest.part" && mkdir -p "$dest.part" &&
      tar -xzf "$tmp"/node-linux-"$arch"-*.tgz -C "$dest.part" --strip-components=1 --no-same-owner &&
      rm -rf "$dest" && mv "$dest.part" "$dest" && ln -sfn "$dest/bin/node" /usr/local/bin/node
    local rc=$?
    rm -rf "$tmp"
    [[ $rc == 0 ]] || { echo "scripts/test.sh --setup: unpacking Node $NODE_VERSION into $dest failed" >&2; return 1; }
    hash -r
    if [[ "$(node --version 2>/dev/null)" != "v$NODE_VERSION" ]]; then
      echo "scripts/test.sh --setup: Node $NODE_VERSION is in /usr/local/bin/node, but the node on PATH is $(command -v node) ($(node --version 2>/dev/null)): put /usr/local/bin before it on PATH" >&2
      return 1
    fi
  }
  if node_old; then
    found=$(node --version 2>/dev/null)
    if [[ "$(id -u)" == 0 && -z "${SKILLFLEET_TEST_NO_INSTALL:-}" ]]; then
      install_node || exit 1
      echo "node: $(command -v node) $(node --version), npm $(npm --version)"
    else
      fix="scripts/test.sh --setup"
      [[ "$(id -u)" == 0 ]] || fix="sudo scripts/test.sh --setup"
      echo "missing: Node.js 20.6 or newer for the pinned agent CLIs (this machine has $found; Debian 12's nodejs is 18) — install: $fix (installs Node $NODE_VERSION from npm's node-linux-$(uname -m | sed 's/x86_64/x64/;s/aarch64/arm64/') package into /usr/local), then run scripts/test.sh again" >&2
      exit 1
    fi
  fi
  # The agent CLIs (Codex, Claude Code) at pinned versions, into
  # .tools/agents. Without them their tests skip, unless
  # SKILLFLEET_REQUIRE_AGENTS=1.
  echo "== agent CLIs (scripts/install-agents.sh)"
  if ! scripts/install-agents.sh; then
    if [[ "${SKILLFLEET_REQUIRE_AGENTS:-}" == 1 ]]; then
      echo "scripts/install-agents.sh failed (SKILLFLEET_REQUIRE_AGENTS=1)" >&2
      exit 1
    fi
    echo "note: scripts/install-agents.sh failed; the agent CLI tests will skip" >&2
  fi
fi
# Jaeger v2, built from the Go module proxy: the tracing test exports runs
# and campaigns to it and reads every token back through its query API
# (cmd/skillfleet/jaeger_e2e_test.go). The first build compiles a few
# hundred packages (minutes); later runs reuse the binary.
jaegerlog=/tmp/skillfleet-jaeger-build.log
echo "== jaeger (scripts/jaeger.sh)"
if ! SKILLFLEET_JAEGER=$(nice -n 5 scripts/jaeger.sh 2>"$jaegerlog" | tail -n 1) || [[ ! -x $SKILLFLEET_JAEGER ]]; then
  tail -n 20 "$jaegerlog" >&2
  echo "scripts/jaeger.sh failed (log: $jaegerlog); the tracing test needs its binary" >&2
  exit 1
fi
export SKILLFLEET_JAEGER SKILLFLEET_REQUIRE_JAEGER=1
echo "jaeger: $SKILLFLEET_JAEGER"
# Its web UI (jaeger-ui from GitHub, built with npm) for the test that does
# the docs' search in Chromium; without GitHub that one test skips.
if SKILLFLEET_JAEGER_UI=$(nice -n 5 scripts/jaeger.sh --ui 2>>"$jaegerlog" | tail -n 1) && [[ -f $SKILLFLEET_JAEGER_UI/index.html ]]; then
  export SKILLFLEET_JAEGER_UI SKILLFLEET_REQUIRE_JAEGER_UI=1
  echo "jaeger-ui: $SKILLFLEET_JAEGER_UI"
else
  unset SKILLFLEET_JAEGER_UI
  echo "note: scripts/jaeger.sh --ui failed (log: $jaegerlog); TestJaegerUIFindsACellsReflectCalls will skip"
fi
if [[ -n "$setup_only" ]]; then
  echo "test prerequisites: all present"
  exit 0
fi

echo "== build"
go build ./...
echo "== vet"
go vet ./...
echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go') 2>/dev/null || true)
if [[ -n "$unformatted" ]]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi
echo "== lint and exports (beside the tests; their output comes after)"
# golangci-lint at its pinned version (.golangci.yml; docs/architecture.md),
# then: no exported name of gate, plan or schedule is used only by tests
# (scripts/exports, its own module; its test runs first). Installing the
# linter the first time compiles it (minutes of CPU): it runs beside the
# tests, which spend much of their time waiting on processes.
lintlog=/tmp/skillfleet-lint.log
(
  set -e
  echo "== lint"
  # The first install compiles for minutes of CPU: CI's fresh clone skips
  # it unless the linter is there or SKILLFLEET_LINT=1.
  if [[ -x .tools/bin/golangci-lint || -n "${SKILLFLEET_LINT:-}" ]]; then
    scripts/lint.sh
  else
    echo "lint skipped: golangci-lint not installed (SKILLFLEET_LINT=1 installs and runs it)"
  fi
  echo "== exports"
  go test -C scripts/exports -count=1 .
  go run -C scripts/exports . -dir ../..
) >"$lintlog" 2>&1 &
lintpid=$!
echo "== docker-compose.yml"
# Docker's own parser; no engine needed.
docker-compose -f docker-compose.yml config -q
echo "== tests"
# The library packages run under the race detector. cmd/skillfleet's tests
# drive separate skillfleet processes (built without it) and mostly wait on
# them, so that package runs beside the others without the detector.
filter='^(=== RUN|=== PAUSE|=== CONT|    --- PASS)'
log=/tmp/skillfleet-test.log
# They mostly wait on the processes they start, so they run as
# $SKILLFLEET_CMD_SHARDS test processes at once (default 3), plus one for
# the nemesis test; each process builds its own skillfleet binary. The
# tests are dealt out longest first, each to the shard with the least
# work so far, by the seconds scripts/cmd-test-seconds.txt gives them
# (a test it does not name counts as $default_secs s). gotestsum prints
# what `go test` would and keeps every test's time in $log.cmd.*.json;
# the slowest are listed after the run, to refresh that file from.
shards=${SKILLFLEET_CMD_SHARDS:-3}
default_secs=30
gotestsum_version=v1.13.0
gotestsum=$PWD/.tools/bin/gotestsum
if ! "$gotestsum" --version 2>/dev/null | grep -qx "gotestsum version $gotestsum_version"; then
  echo "installing gotestsum $gotestsum_version into .tools/bin (once)"
  GOBIN="$PWD/.tools/bin" go install "gotest.tools/gotestsum@$gotestsum_version"
fi
mapfile -t cmdtests < <(grep -hoE '^func (Test|Example)[A-Za-z0-9_]*\(' cmd/skillfleet/*_test.go |
  sed -E 's/^func //; s/\($//' | grep -vx TestMain | sort)
if [[ ${#cmdtests[@]} -eq 0 ]]; then
  echo "no tests found in cmd/skillfleet/*_test.go"
  exit 1
fi
declare -A secs=()
while read -r name s _; do
  [[ -n $name && $name != \#* ]] && secs[$name]=$s
done <scripts/cmd-test-seconds.txt
rm -f "$log".cmd.*
cmdpids=()
# One test binary for all of them (each `go test` would compile and link
# its own), run in the package's directory as `go test` runs it.
cmdbin=$(mktemp -d)/skillfleet.test
go test -c -o "$cmdbin" ./cmd/skillfleet/
gotest() { # shard-name test-binary-flags...
  local name=$1 out=$log.cmd.$1 began=$SECONDS rc=0
  shift
  (cd cmd/skillfleet && "$gotestsum" --format standard-quiet --jsonfile "$out.json" --raw-command -- \
    go tool test2json -t -p github.com/skillfleet/skillfleet/cmd/skillfleet "$cmdbin" -test.v=test2json \
    -test.count=1 -test.timeout=25m "$@") >"$out" 2>&1 || rc=$?
  if [[ $rc == 0 ]]; then
    printf 'ok  \tgithub.com/skillfleet/skillfleet/cmd/skillfleet\t%ds (shard %s)\n' $((SECONDS - began)) "$name" >>"$out"
  else
    printf 'FAIL\tgithub.com/skillfleet/skillfleet/cmd/skillfleet\t%ds (shard %s)\n' $((SECONDS - began)) "$name" >>"$out"
  fi
  return "$rc"
}
# The nemesis test (a cluster, a fleet and two campaigns under faults)
# is the longest by far: it gets a process of its own from the start.
rest=()
for name in "${cmdtests[@]}"; do
  [[ $name == TestNemesis ]] || rest+=("$name")
done
if [[ ${#rest[@]} -lt ${#cmdtests[@]} ]]; then
  gotest nemesis -test.run '^TestNemesis$' &
  cmdpids+=($!)
fi
load=()
shardnames=()
for ((i = 0; i < shards; i++)); do load[i]=0; shardnames[i]=; done
while read -r _ name; do
  k=0
  for ((i = 1; i < shards; i++)); do ((load[i] < load[k])) && k=$i; done
  ((load[k] += ${secs[$name]:-$default_secs}))
  shardnames[k]+="${shardnames[k]:+|}$name"
done < <(for name in "${rest[@]}"; do echo "${secs[$name]:-$default_secs} $name"; done | sort -k1,1nr -k2)
for ((i = 0; i < shards; i++)); do
  [[ -n ${shardnames[i]} ]] || continue
  gotest "$i" -test.run "^(${shardnames[i]})\$" &
  cmdpids+=($!)
done
# Tests that gain nothing from the race detector and spend minutes under
# it run once without it, beside the rest: backends/exec's real agent CLI
# tests (node processes the detector does not see, which it only slows)
# and the experiments that measure without testing concurrency of their
# own (internal/testrace.SkipExperiment: many trainings, or episodes in
# the Python sandbox). The race pass skips them (SKILLFLEET_AGENT_TESTS=off;
# an experiment skips itself under -race).
(
  rc=0
  go test -count=1 -timeout 25m ./backends/exec/ || rc=1
  go test -count=1 -timeout 25m -run '^TestPairedGateOnANoisyTarget$' ./coordinator/trainer/ || rc=1
  go test -count=1 -timeout 25m -run '^(TestWorldSpreadsheet|TestWorldTextGame|TestTrajectoryPadKeepsDecisions)$' ./backends/sim/ || rc=1
  exit "$rc"
) >"$log.norace" 2>&1 &
noracepid=$!
set +e
SKILLFLEET_AGENT_TESTS=off go test -race -count=1 -timeout 25m $(go list ./... | grep -v '/cmd/skillfleet$') 2>&1 | tee "$log.lib" | grep -Ev "$filter"
status=${PIPESTATUS[0]}
# ---- container test (scripts/container-test.sh; docs/deploy.md) ----
# The shipped Dockerfile and docker-compose.yml on a real Docker engine:
# installs docker.io and starts dockerd if needed, builds offline stand-ins
# for the base images when no registry answers, and removes all it made.
# It starts once the library packages (the CPU-heavy race-detector runs)
# are done, beside the cmd/skillfleet tests, which mostly wait on the
# processes they start. SKILLFLEET_CONTAINER_TEST=0 skips it.
containerpid=
if [[ "${SKILLFLEET_CONTAINER_TEST:-}" != 0 ]]; then
  echo "== container test: started beside the cmd/skillfleet tests (output follows theirs)"
  scripts/container-test.sh >"$log.container" 2>&1 &
  containerpid=$!
fi
# ---- end container test ----
wait "$noracepid" || status=1
echo "== without the race detector"
cat "$log.norace"
for pid in "${cmdpids[@]}"; do
  wait "$pid" || status=1
done
cat $(ls "$log".cmd.* | grep -v '\.json$') >"$log.cmd"
lintstatus=0
wait "$lintpid" || lintstatus=$?
set -e
grep -Ev "$filter" "$log.cmd" || true
echo "== the slowest cmd/skillfleet tests (seconds; scripts/cmd-test-seconds.txt)"
scripts/cmd-test-seconds.py "$log".cmd.*.json | head -25 || true
cat "$lintlog"
if [[ $lintstatus != 0 ]]; then
  echo "lint or exports check failed (exit $lintstatus): see above"
  status=1
fi
cat "$log.lib" "$log.norace" "$log.cmd" >"$log"
if [[ -n $containerpid ]]; then
  wait "$containerpid" || status=1
  echo "== container test"
  cat "$log.container"
  cat "$log.container" >>"$log"
fi
rm -rf "$(dirname "$cmdbin")"
# A package's line is "ok  <package> ..." or "FAIL<tab><package> ..."; a bare
# "FAIL" line is go test's own last word on a failed package, not another one.
passed=$(grep -c '^ok ' "$log" || true)
failed=$(grep -cE '^FAIL[[:space:]]+[^[:space:]]' "$log" || true)
echo "packages: ${passed} passed, ${failed} failed"
exit "$status"
