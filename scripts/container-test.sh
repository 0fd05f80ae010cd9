#!/usr/bin/env bash
# The container test: the shipped Dockerfile and docker-compose.yml on a
# real Docker engine (deploy/compose_fleet_test.go): the demo campaign
# with 2 worker containers, scaled to 6 mid-campaign, 2 killed; every cell
# as alone, every result once; and a failing campaign ending `up` within
# seconds with its exit status.
#
# It installs Debian's docker.io (and docker-compose) when they are
# missing (as root, with apt-get), starts dockerd when none answers, makes
# the base images present (pulled, or built from local parts by
# scripts/offline-base-images.sh when no registry answers), builds
# skillfleet:local with BuildKit and runs the Go tests. At the end it
# removes what it made: the compose projects (containers, networks,
# volumes), the images it built, and the daemon if it started it. The
# BuildKit cache (Go build cache and module download) stays with the
# engine, so the next build compiles only what changed.
#
#   scripts/container-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
say() { echo "container test: $*"; }
elapsed() { echo "$((SECONDS - ${1:-$start}))s"; }

need_install=
command -v dockerd >/dev/null || need_install+=" docker.io"
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null; then
  need_install+=" docker-compose"
fi
if [[ -n "$need_install" ]]; then
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null || [[ -n "${SKILLFLEET_TEST_NO_INSTALL:-}" ]]; then
    echo "container test: missing:$need_install (Debian: apt-get install$need_install)" >&2
    exit 1
  fi
  say "installing$need_install"
  export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
  # shellcheck disable=SC2086 # one word per package
  if ! { apt-get update -qq && apt-get install -y -qq $need_install; } >/tmp/skillfleet-container-apt.log 2>&1; then
    tail -n 20 /tmp/skillfleet-container-apt.log >&2
    exit 1
  fi
  hash -r
fi
if docker compose version >/dev/null 2>&1; then
  export SKILLFLEET_COMPOSE="docker compose"
else
  export SKILLFLEET_COMPOSE="docker-compose"
fi

# The engine: the running one, or one started here (and stopped at the end).
dockerd_pid=
images_before=
cleanup() {
  local status=$?
  set +e
  # Compose projects of the tests (their own cleanup removes them; this
  # catches an interrupted run).
  local p
  for p in $(docker ps -a --format '{{.Label "com.docker.compose.project"}}' 2>/dev/null | grep -E '^sfc[tf][0-9]+$' | sort -u); do
    docker ps -aq --filter "label=com.docker.compose.project=$p" | xargs -r docker rm -f >/dev/null
    docker volume ls -q --filter "label=com.docker.compose.project=$p" | xargs -r docker volume rm >/dev/null
    docker network ls -q --filter "label=com.docker.compose.project=$p" | xargs -r docker network rm >/dev/null
  done
  # Images this run made (the project image and any stand-ins).
  if [[ -n "$images_before" ]]; then
    local img
    for img in $(docker image ls --format '{{.Repository}}:{{.Tag}}' 2>/dev/null); do
      grep -qxF "$img" <<<"$images_before" || docker image rm "$img" >/dev/null 2>&1
    done
  fi
  if [[ -n "$dockerd_pid" ]]; then
    kill "$dockerd_pid" 2>/dev/null
    for _ in $(seq 1 60); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.5; done
    say "stopped the dockerd it started"
  fi
  say "wall time $(elapsed)"
  exit "$status"
}
trap cleanup EXIT
if ! docker info >/dev/null 2>&1; then
  say "no Docker engine answers; starting dockerd"
  dockerd >/tmp/skillfleet-dockerd.log 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$dockerd_pid" 2>/dev/null || { tail -n 20 /tmp/skillfleet-dockerd.log >&2; exit 1; }
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { echo "container test: dockerd did not answer in 60 s" >&2; tail -n 20 /tmp/skillfleet-dockerd.log >&2; exit 1; }
fi
images_before=$(docker image ls --format '{{.Repository}}:{{.Tag}}')
# A line that names no image, so that an engine without images still
# counts as "listed" for the cleanup.
images_before+=$'\n-'
say "engine $(docker version -f '{{.Server.Version}}'), compose: $SKILLFLEET_COMPOSE ($(elapsed))"

t=$SECONDS
scripts/offline-base-images.sh
say "base images ready ($(elapsed "$t"))"

# shellcheck source=scripts/lib/buildkit.sh
. scripts/lib/buildkit.sh
if [[ ${#build[@]} == 0 ]]; then
  echo "container test: no BuildKit builder (install docker-buildx, or Debian's docker.io)" >&2
  exit 1
fi
t=$SECONDS
if ! "${build[@]}" --progress=plain -t skillfleet:local . >/tmp/skillfleet-image-build.log 2>&1; then
  tail -n 40 /tmp/skillfleet-image-build.log >&2
  exit 1
fi
say "built skillfleet:local ($(elapsed "$t"), $(docker image inspect -f '{{.Size}}' skillfleet:local | awk '{printf "%.0f MB", $1/1e6}'))"

t=$SECONDS
SKILLFLEET_CONTAINER_TEST=1 go test -count=1 -v -timeout 20m -run '^TestCompose(FleetGrowsAndLosesWorkers|FailingCampaignEndsUp)$' ./deploy/
say "tests ($(elapsed "$t"))"
