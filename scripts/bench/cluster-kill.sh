#!/usr/bin/env bash
# The compose NATS cluster losing the node that leads both the task stream
# and the run directory's bucket, just as an eval cell starts, three times
# in one campaign (deploy/compose_cluster_kill_test.go; docs/deploy.md,
# "Losing the leading node in Compose").
#
# It needs a running Docker engine and docker-compose (scripts/container-test.sh
# installs and starts them). It makes the base images present (pulled, or
# offline stand-ins from scripts/offline-base-images.sh), builds
# skillfleet:local with BuildKit and runs the test. The compose project it
# makes (sfck<pid>) is removed at the end; the images stay, so that a
# second run builds only what changed.
#
#   scripts/bench/cluster-kill.sh [--latency 250ms]
#
# --latency is the simulated model's answer time: the cells must last long
# enough for the cluster to heal between two kills.
set -euo pipefail
cd "$(dirname "$0")/../.."
latency=250ms
while [[ $# -gt 0 ]]; do
  case "$1" in
  --latency) latency=$2; shift 2 ;;
  *) echo "usage: scripts/bench/cluster-kill.sh [--latency DURATION]" >&2; exit 2 ;;
  esac
done
docker info >/dev/null 2>&1 || { echo "cluster-kill: no Docker engine answers (start dockerd, or run scripts/container-test.sh once)" >&2; exit 1; }
if docker compose version >/dev/null 2>&1; then
  export SKILLFLEET_COMPOSE="docker compose"
elif command -v docker-compose >/dev/null; then
  export SKILLFLEET_COMPOSE="docker-compose"
else
  echo "cluster-kill: docker-compose is needed (Debian: apt-get install docker-compose)" >&2
  exit 1
fi
scripts/offline-base-images.sh
# shellcheck source=scripts/lib/buildkit.sh
. scripts/lib/buildkit.sh
if [[ ${#build[@]} == 0 ]]; then
  echo "cluster-kill: no BuildKit builder (install docker-buildx, or Debian's docker.io)" >&2
  exit 1
fi
t=$SECONDS
if ! "${build[@]}" --progress=plain -t skillfleet:local . >/tmp/skillfleet-image-build.log 2>&1; then
  tail -n 40 /tmp/skillfleet-image-build.log >&2
  exit 1
fi
echo "cluster-kill: built skillfleet:local ($((SECONDS - t))s)"
SKILLFLEET_CLUSTER_KILL=1 SKILLFLEET_CLUSTER_KILL_LATENCY=$latency \
  go test -count=1 -v -timeout 40m -run '^TestComposeClusterLosesStreamAndBucketLeader$' ./deploy/
