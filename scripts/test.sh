#!/usr/bin/env bash
# The whole test suite: build, vet, generated-code staleness, unit and
# integration tests (real embedded NATS, real redis-server), and the
# multi-process tests that start real skillfleet processes.
set -euo pipefail
cd "$(dirname "$0")/.."
export CI="${CI:-}"
echo "== build"
go build ./...
echo "== vet"
go vet ./...
echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go') 2>/dev/null || true)
if [[ -n "$unformatted" ]]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi
echo "== tests"
go test -race -count=1 -timeout 25m ./... 2>&1 | tee /tmp/skillfleet-test.log | grep -Ev '^(=== RUN|=== PAUSE|=== CONT|    --- PASS)' 
status=${PIPESTATUS[0]}
passed=$(grep -c '^ok ' /tmp/skillfleet-test.log || true)
failed=$(grep -c '^FAIL' /tmp/skillfleet-test.log || true)
echo "packages: ${passed} passed, ${failed} failed"
exit "$status"
