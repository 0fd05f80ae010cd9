#!/usr/bin/env bash
# The fresh-machine test: the README's test command (scripts/test.sh) in a
# clean Debian 12 container, on a fresh clone of this repository, as a new
# user's machine would run it. It shows that scripts/test.sh installs (or
# names) every tool a test needs, and lists the Debian packages it
# installed.
#
# The container:
#   - image skillfleet-fresh/debian:bookworm: debian:bookworm when a
#     registry answers, else a minimal Debian (debootstrap's minbase
#     variant) built here from Debian's package archive. debootstrap is
#     not installed for that: its package is unpacked into a temporary
#     directory and run from there, then removed. The image is kept for
#     the next run (--rebuild makes it again).
#   - privileged (the namespace, sandbox and netns tests need it, and the
#     container test runs its own dockerd inside, on a volume of its own).
#     Where this engine refuses --privileged (it runs in a container that
#     lacks a capability), the container gets every capability this host
#     has, no seccomp or AppArmor profile, unmasked /proc, a writable /sys
#     and this host's cgroup hierarchy: what the tests use of --privileged;
#   - a fresh clone of REF (default: HEAD) at /src;
#   - Go from this host's GOROOT, mounted read-only at /usr/local/go (no
#     registry ships it here); Go modules from this host's module cache
#     (read-only, as a file:// GOPROXY), falling back to the Go module
#     proxy; empty build cache and module cache;
#   - this host's local CA certificates (/usr/local/share/ca-certificates),
#     which Debian's ca-certificates adds to the bundle when --setup
#     installs it, and NODE_EXTRA_CA_CERTS when set: a network whose egress
#     inspects TLS needs them (they belong to the network, not to the
#     machine's packages);
#   - everything else comes from scripts/test.sh --setup (apt-get).
#
# It runs scripts/test.sh --setup, records the packages installed, then
# runs scripts/test.sh, both at nice 10 (--nice). The results go to OUT (default
# /tmp/skillfleet-fresh-machine): packages-installed.txt, node.txt (the
# node on PATH after the setup, and its Debian package if any), setup.log,
# test.log (test.sh's output), skillfleet-test.log (its per-package log),
# packages.txt (ok/FAIL per package), phases.txt (the time each phase of
# the setup and the suite began, UTC) and summary.txt. The container, its
# volume and the clone are removed at the end; the image stays.
#
#   scripts/fresh-machine-test.sh [--ref REF] [--out DIR] [--rebuild] [--setup-only] [--nice N]
#
# Expect an hour or more on a 2-core machine: everything is compiled cold
# and the suite's own container test builds its images inside.
set -euo pipefail
cd "$(dirname "$0")/.."
ref=HEAD out=/tmp/skillfleet-fresh-machine rebuild= setup_only= niceness=10
while [[ $# -gt 0 ]]; do
  case "$1" in
  --ref) ref=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  --rebuild) rebuild=1; shift ;;
  --setup-only) setup_only=1; shift ;;
  --nice) niceness=$2; shift 2 ;;
  *) echo "usage: scripts/fresh-machine-test.sh [--ref REF] [--out DIR] [--rebuild] [--setup-only] [--nice N]" >&2; exit 2 ;;
  esac
done
say() { echo "fresh machine: $*"; }
image=skillfleet-fresh/debian:bookworm
start=$SECONDS

command -v docker >/dev/null || { echo "fresh machine: docker is needed (Debian: apt-get install docker.io)" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "fresh machine: no Docker engine answers (start dockerd)" >&2; exit 1; }
sha=$(git rev-parse --verify "$ref^{commit}")
goroot=$(go env GOROOT)
modcache=$(go env GOMODCACHE)
proxy=$(go env GOPROXY)

name=sf-fresh-$$
work=$(mktemp -d /tmp/skillfleet-fresh.XXXXXX)
cleanup() {
  local status=$?
  set +e
  docker rm -f "$name" >/dev/null 2>&1
  docker volume rm "$name-docker" >/dev/null 2>&1
  rm -rf "$work"
  say "wall time $((SECONDS - start))s"
  exit "$status"
}
trap cleanup EXIT

# build_image: a minimal Debian 12 from the package archive.
build_image() {
  local d=$work/debootstrap mirror=http://deb.debian.org/debian
  mkdir -p "$d"
  say "building $image with debootstrap (unpacked in $d, not installed)"
  (cd "$d" && apt-get download debootstrap >/dev/null 2>&1) || { echo "fresh machine: apt-get download debootstrap failed" >&2; return 1; }
  dpkg-deb -x "$d"/debootstrap_*.deb "$d/x"
  if ! DEBOOTSTRAP_DIR=$d/x/usr/share/debootstrap nice -n 10 "$d/x/usr/sbin/debootstrap" --variant=minbase \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg bookworm "$d/rootfs" "$mirror" >"$d/log" 2>&1; then
    tail -n 20 "$d/log" >&2
    return 1
  fi
  # The official image's sources: the release, its updates and security.
  rm -f "$d/rootfs/etc/apt/sources.list"
  cat >"$d/rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -rf "$d/rootfs/var/cache/apt/archives/"*.deb "$d/rootfs/var/lib/apt/lists/"*
  tar --numeric-owner -C "$d/rootfs" -c . |
    docker import --change 'LABEL skillfleet.offline-stand-in=true' --change 'ENV LANG=C.UTF-8' \
      --change 'CMD ["bash"]' - "$image" >/dev/null
  rm -rf "$d"
}

if [[ -n "$rebuild" ]] || ! docker image inspect "$image" >/dev/null 2>&1; then
  t=$SECONDS
  if [[ -z "$rebuild" ]] && timeout 120 docker pull -q debian:bookworm >/dev/null 2>&1; then
    docker tag debian:bookworm "$image"
    say "pulled debian:bookworm"
  else
    build_image
  fi
  say "image $image ready ($((SECONDS - t))s)"
fi

git clone -q --no-checkout . "$work/src"
git -C "$work/src" checkout -q --detach "$sha"
mkdir -p "$out"
rm -f "$out"/{packages-installed.txt,node.txt,setup.log,test.log,skillfleet-test.log,packages.txt,phases.txt,summary.txt}
say "clone of $(git rev-parse --short "$sha") in $work/src; results in $out"

# What runs inside: the package list before and after --setup, then the
# suite. Its exit status is the suite's (or setup's).
cat >"$work/inside.sh" <<'EOF'
#!/bin/bash
set -uo pipefail
# Without --privileged, /sys is mounted read-only: dockerd needs it writable.
[[ -z "${REMOUNT_SYS:-}" ]] || mount -o remount,rw /sys
# phases: each "== phase" line of test.sh (and the setup's steps) with the
# wall-clock time it was printed, into /out/phases.txt.
phases() {
  local l
  while IFS= read -r l; do
    printf '%s\n' "$l"
    [[ $l == "== "* || $l == jaeger* || $l == note:* || $l == "test prerequisites"* ]] && printf '%(%T)T %s\n' -1 "$l" >>/out/phases.txt
  done
}
dpkg-query -W -f '${Package}\n' | sort >/tmp/before.txt
cd /src
printf '%(%T)T setup started\n' -1 >>/out/phases.txt
nice -n "$NICENESS" scripts/test.sh --setup 2>&1 | phases >/out/setup.log
rc=${PIPESTATUS[0]}
printf '%(%T)T setup ended (exit %s)\n' -1 "$rc" >>/out/phases.txt
dpkg-query -W -f '${Package}\n' | sort >/tmp/after.txt
comm -13 /tmp/before.txt /tmp/after.txt >/out/packages-installed.txt
# Node.js is not always a Debian package: the setup may install it from npm.
if node=$(command -v node); then
  pkg=$(dpkg -S "$(readlink -f "$node")" 2>/dev/null | head -n 1 | cut -d: -f1)
  echo "$node $(node --version) (${pkg:+Debian package }${pkg:-not from a Debian package})" >/out/node.txt
fi
echo "setup exit $rc, $(wc -l </out/packages-installed.txt) packages installed"
[[ $rc == 0 ]] || exit "$rc"
[[ -z "${SETUP_ONLY:-}" ]] || exit 0
nice -n "$NICENESS" scripts/test.sh 2>&1 | phases >/out/test.log
rc=${PIPESTATUS[0]}
printf '%(%T)T suite ended (exit %s)\n' -1 "$rc" >>/out/phases.txt
cp /tmp/skillfleet-test.log /out/skillfleet-test.log 2>/dev/null
exit "$rc"
EOF
chmod 755 "$work/inside.sh"

# --privileged, or its parts where the engine refuses it.
if docker run --rm --privileged "$image" true >/dev/null 2>&1; then
  power=(--privileged)
else
  power=(--cap-add ALL --security-opt seccomp=unconfined --security-opt apparmor=unconfined
    --security-opt systempaths=unconfined -v /sys/fs/cgroup:/sys/fs/cgroup:rw -e REMOUNT_SYS=1)
  # Capabilities the engine itself lacks cannot be given: drop them until it starts.
  if ! docker run --rm "${power[@]}" "$image" true >/dev/null 2>&1; then
    for c in SYS_RESOURCE SYS_MODULE SYS_BOOT SYS_TIME MAC_ADMIN MAC_OVERRIDE BPF PERFMON CHECKPOINT_RESTORE; do
      power+=(--cap-drop "$c")
      docker run --rm "${power[@]}" "$image" true >/dev/null 2>&1 && break
    done
  fi
  say "this engine refuses --privileged: running with ${power[*]}"
fi
# The network's CA certificates, if this host has any.
cas=()
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  cas+=(-v /usr/local/share/ca-certificates:/usr/local/share/ca-certificates:ro)
fi
[[ -z "${NODE_EXTRA_CA_CERTS:-}" ]] || cas+=(-e NODE_EXTRA_CA_CERTS="$NODE_EXTRA_CA_CERTS")
docker volume create "$name-docker" >/dev/null
t=$SECONDS
say "running scripts/test.sh${setup_only:+ --setup} in $image (container $name)"
set +e
docker run --name "$name" "${power[@]}" "${cas[@]}" --hostname fresh-debian \
  -v "$work/src:/src" -v "$out:/out" -v "$work/inside.sh:/inside.sh:ro" \
  -v "$goroot:/usr/local/go:ro" -v "$modcache/cache/download:/host-modcache:ro" \
  -v "$name-docker:/var/lib/docker" \
  -e PATH=/root/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  -e GOPROXY="file:///host-modcache,$proxy" -e GOTOOLCHAIN=local -e SETUP_ONLY="$setup_only" -e NICENESS="$niceness" \
  "$image" /inside.sh
rc=$?
set -e
say "container exited $rc ($((SECONDS - t))s)"

{
  echo "ref $(git rev-parse --short "$sha"), image $image, exit $rc, $((SECONDS - t)) s in the container"
  echo "Debian packages installed by scripts/test.sh --setup: $(wc -l <"$out/packages-installed.txt" 2>/dev/null || echo '?')"
  [[ ! -s "$out/node.txt" ]] || echo "node after the setup: $(cat "$out/node.txt")"
} >"$out/summary.txt"
if [[ -f "$out/test.log" ]]; then
  # One line per package: go test's ok/FAIL lines, the cmd shards', the
  # container test's end.
  grep -E '^(ok |FAIL|--- FAIL|panic:)' "$out/test.log" | sort -u >"$out/packages.txt" || true
  grep -E '^packages: ' "$out/test.log" >>"$out/summary.txt" || true
  grep -E '^(container test: (tests|wall)|--- (PASS|FAIL): TestCompose)' "$out/test.log" >>"$out/summary.txt" || true
fi
if [[ -s "$out/phases.txt" ]]; then
  { echo "phases (UTC):"; sed 's/^/  /' "$out/phases.txt"; } >>"$out/summary.txt"
fi
cat "$out/summary.txt"
exit "$rc"
