#!/usr/bin/env bash
# OFFLINE STAND-IN FOR REGISTRY IMAGES. Not for production.
#
# Makes sure the base images that Dockerfile and docker-compose.yml name
# are in the local Docker engine. Each missing one is pulled; only when no
# registry answers is a stand-in built from parts on this machine and
# tagged with the registry's name, so that the project's own Dockerfile and
# compose file run unchanged on a host without registry access (CI here):
#
#   golang:<v>-bookworm        the Go toolchain of this host (GOROOT, which
#                              must be the version go.mod names), busybox
#                              for /bin/sh, the host's CA bundle; with
#                              --modcache (or when a container cannot
#                              reach the Go module proxy) the modules of
#                              go.mod too, GOPROXY=off
#   gcr.io/distroless/static-debian12:nonroot
#                              passwd/group with nonroot (65532), CA
#                              bundle, /tmp, /home/nonroot as the working
#                              directory, user 65532: as the real one
#   nats:<v>-alpine            nats-server built from the nats-server
#                              module version go.mod pins (its minor
#                              version must be <v>), busybox for the
#                              compose healthcheck's wget
#   redis:<v>-alpine           Debian's redis-server and redis-cli with
#                              their shared libraries
#   jaegertracing/jaeger:2.13.0
#                              with --tracing only (the compose `tracing`
#                              profile; a cold build takes minutes): the Jaeger
#                              v2 binary scripts/jaeger.sh builds from the
#                              module v1.76.0, which is 2.13.0, laid out
#                              as the official image: all-in-one config,
#                              in-memory storage, listening on 0.0.0.0,
#                              user 10001; its UI is the module's
#                              placeholder page (the query API is whole)
#
# Images of any other name are reported and left alone (compose starts
# them only in opt-in profiles). Every stand-in carries the label
# skillfleet.offline-stand-in=true; remove them with
#
#   docker image rm $(docker image ls -q -f label=skillfleet.offline-stand-in=true)
#
# Usage: scripts/offline-base-images.sh [--force] [--modcache] [--tracing]
#   --force      build the stand-ins even where a pull would work
#   --modcache   put go.mod's modules into the golang stand-in
#   --tracing    the `tracing` profile's Jaeger too
set -euo pipefail
cd "$(dirname "$0")/.."
force= modcache= tracing=
for a in "$@"; do
  case "$a" in
  --force) force=1 ;;
  --modcache) modcache=1 ;;
  --tracing) tracing=1 ;;
  *) echo "usage: scripts/offline-base-images.sh [--force] [--modcache] [--tracing]" >&2; exit 2 ;;
  esac
done

label=skillfleet.offline-stand-in=true
work=$(mktemp -d /tmp/skillfleet-standin.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The images the project's files name (skillfleet's own excluded).
images() {
  sed -n 's/^FROM[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' Dockerfile
  sed -n 's/^[[:space:]]*image:[[:space:]]*\([^[:space:]]*\).*/\1/p' docker-compose.yml
}

busybox_bin() {
  local b
  for b in /bin/busybox /usr/bin/busybox; do
    if [[ -x "$b" ]] && ! ldd "$b" >/dev/null 2>&1; then echo "$b"; return; fi
  done
  echo "offline stand-in: a static busybox is needed (Debian: apt-get install busybox-static)" >&2
  return 1
}

# rootfs_base DIR: busybox applets in /bin, CA bundle, /tmp.
rootfs_base() {
  local d=$1 bb a
  bb=$(busybox_bin)
  mkdir -p "$d/bin" "$d/etc/ssl/certs" "$d/tmp" "$d/root"
  chmod 1777 "$d/tmp"
  cp "$bb" "$d/bin/busybox"
  for a in sh ash cat cp env grep head ls mkdir mv rm sed sleep tail test wget; do
    ln -sf busybox "$d/bin/$a"
  done
  cp /etc/ssl/certs/ca-certificates.crt "$d/etc/ssl/certs/"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$d/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' >"$d/etc/group"
  printf 'hosts: files dns\n' >"$d/etc/nsswitch.conf"
}

# import DIR NAME CHANGES...: the directory as a one-layer image.
import() {
  local d=$1 name=$2
  shift 2
  local args=(--change "LABEL $label")
  local c
  for c in "$@"; do args+=(--change "$c"); done
  tar --numeric-owner -C "$d" -c . | docker import "${args[@]}" - "$name" >/dev/null
  echo "offline stand-in: built $name ($(docker image inspect -f '{{.Size}}' "$name" | awk '{printf "%.0f MB", $1/1e6}'))"
}

# Can a container reach the Go module proxy? Tried with the distroless
# stand-in (or real image) and a tiny static probe built here.
container_reaches_proxy() {
  local base=$1 d=$work/probe
  mkdir -p "$d"
  cat >"$d/main.go" <<'EOF'
package main

import (
	"net/http"
	"os"
	"time"
)

func main() {
	c := http.Client{Timeout: 10 * time.Second}
	r, err := c.Get(os.Args[1])
	if err != nil || r.StatusCode != 200 {
		os.Exit(1)
	}
}
EOF
  printf 'module probe\ngo 1.21\n' >"$d/go.mod"
  (cd "$d" && CGO_ENABLED=0 GOFLAGS= go build -o probe .)
  local proxy
  proxy=$(go env GOPROXY | tr ',|' '\n\n' | grep -E '^https?://' | head -n1)
  [[ -n "$proxy" ]] || return 1
  docker run --rm -v "$d/probe:/probe:ro" --entrypoint /probe "$base" "$proxy/github.com/nats-io/nats.go/@v/list" >/dev/null 2>&1
}

build_distroless() {
  local name=$1 d=$work/distroless
  mkdir -p "$d/etc/ssl/certs" "$d/tmp" "$d/home/nonroot" "$d/root"
  chmod 1777 "$d/tmp"
  chmod 0700 "$d/home/nonroot" "$d/root"
  cp /etc/ssl/certs/ca-certificates.crt "$d/etc/ssl/certs/"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$d/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n' >"$d/etc/group"
  printf 'hosts: files dns\n' >"$d/etc/nsswitch.conf"
  chown 65532:65532 "$d/home/nonroot"
  import "$d" "$name" \
    "USER 65532" "WORKDIR /home/nonroot" \
    "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"
}

build_golang() {
  local name=$1 d=$work/golang want have goroot
  want=$(sed -n 's/^go //p' go.mod)
  goroot=$(go env GOROOT)
  have=$(go env GOVERSION)
  local minor=${name#golang:}
  minor=${minor%%-*}
  if [[ "${have#go}" != "$minor" && "${have#go}" != "$minor".* ]]; then
    echo "offline stand-in: $name needs Go $minor, this host has $have at $goroot" >&2
    return 1
  fi
  echo "offline stand-in: $name from $goroot ($have; go.mod wants $want)"
  rootfs_base "$d"
  mkdir -p "$d/usr/local" "$d/go/bin" "$d/go/src"
  tar -C "$(dirname "$goroot")" --exclude="$(basename "$goroot")/test" --exclude="$(basename "$goroot")/doc" \
    -c "$(basename "$goroot")" | tar -C "$d/usr/local" -x
  [[ "$(basename "$goroot")" == go ]] || mv "$d/usr/local/$(basename "$goroot")" "$d/usr/local/go"
  local env=(
    "ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    "ENV GOLANG_VERSION=${have#go}" "ENV GOTOOLCHAIN=local" "ENV GOPATH=/go"
  )
  if [[ -n "$modcache" ]]; then
    # go.mod's modules, read from this host's module cache (or its proxy).
    echo "offline stand-in: adding go.mod's modules to $name (GOPROXY=off inside)"
    mkdir -p "$d/go/pkg/mod"
    GOFLAGS=-mod=mod GOMODCACHE="$d/go/pkg/mod" \
      GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" go mod download
    env+=("ENV GOPROXY=off" "ENV GOFLAGS=-mod=mod")
  fi
  import "$d" "$name" "${env[@]}" "WORKDIR /go" 'CMD ["sh"]'
}

build_nats() {
  local name=$1 d=$work/nats tagminor modver
  modver=$(go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)
  tagminor=${name#nats:}
  tagminor=${tagminor%%-*}
  if [[ "${modver#v}" != "$tagminor".* ]]; then
    echo "offline stand-in: $name does not match the pinned nats-server $modver" >&2
    return 1
  fi
  echo "offline stand-in: $name from nats-server $modver (go.mod)"
  rootfs_base "$d"
  mkdir -p "$d/usr/local/bin" "$d/etc/nats" "$d/data"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$d/usr/local/bin/nats-server" github.com/nats-io/nats-server/v2
  printf 'port: 4222\nmonitor_port: 8222\n' >"$d/etc/nats/nats-server.conf"
  # The official image's entrypoint: arguments that start with "-" are
  # nats-server's.
  cat >"$d/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e
if [ "${1#-}" != "$1" ]; then
  set -- nats-server "$@"
fi
exec "$@"
EOF
  chmod 755 "$d/usr/local/bin/docker-entrypoint.sh"
  import "$d" "$name" \
    "ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "EXPOSE 4222 6222 8222" \
    'ENTRYPOINT ["docker-entrypoint.sh"]' \
    'CMD ["nats-server", "--config", "/etc/nats/nats-server.conf"]'
}

build_redis() {
  local name=$1 d=$work/redis bin lib
  for bin in redis-server redis-cli; do
    command -v "$bin" >/dev/null || { echo "offline stand-in: $bin missing (Debian: apt-get install redis-server)" >&2; return 1; }
  done
  echo "offline stand-in: $name from $(redis-server --version | awk '{print $1, $3}') (this host's)"
  rootfs_base "$d"
  mkdir -p "$d/usr/local/bin" "$d/data"
  for bin in redis-server redis-cli; do
    cp "$(command -v "$bin")" "$d/usr/local/bin/"
    for lib in $(ldd "$(command -v "$bin")" | grep -o '/[^ ]*'); do
      mkdir -p "$d$(dirname "$lib")"
      cp -L "$lib" "$d$lib"
    done
  done
  cat >"$d/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e
case "$1" in
-* | *.conf) set -- redis-server "$@" ;;
esac
# The official image's redis-server is built with protected mode off
# (the network, not the server, fences it): the same here.
if [ "$1" = redis-server ]; then
  shift
  set -- redis-server "$@" --protected-mode no
fi
exec "$@"
EOF
  chmod 755 "$d/usr/local/bin/docker-entrypoint.sh"
  import "$d" "$name" \
    "ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "WORKDIR /data" "EXPOSE 6379" \
    'ENTRYPOINT ["docker-entrypoint.sh"]' 'CMD ["redis-server"]'
}

build_jaeger() {
  local name=$1 d=$work/jaeger bin
  # Jaeger's v2 image tags pair with the Go module's v1 versions.
  if [[ "${name##*:}" != 2.13.0 ]]; then
    echo "offline stand-in: $name: only jaegertracing/jaeger:2.13.0 (module v1.76.0) has a stand-in" >&2
    return 1
  fi
  echo "offline stand-in: $name from github.com/jaegertracing/jaeger v1.76.0 (scripts/jaeger.sh)"
  bin=$(JAEGER_VERSION=v1.76.0 nice -n 10 scripts/jaeger.sh | tail -n 1)
  rootfs_base "$d"
  mkdir -p "$d/cmd/jaeger"
  cp "$bin" "$d/cmd/jaeger/jaeger-linux"
  import "$d" "$name" \
    "ENV JAEGER_LISTEN_HOST=0.0.0.0" \
    "EXPOSE 4317 4318 13133 16686" \
    "USER 10001" \
    'ENTRYPOINT ["/cmd/jaeger/jaeger-linux"]'
}

if ! docker info >/dev/null 2>&1; then
  echo "offline stand-in: no Docker engine answers (docker info)" >&2
  exit 1
fi
mapfile -t names < <(images | grep -v '^skillfleet' | sort -u)
# distroless first: the proxy probe runs in it.
mapfile -t names < <(printf '%s\n' "${names[@]}" | awk '/distroless/ {print; next} {rest[NR]=$0} END {for (i in rest) print rest[i]}')
for name in "${names[@]}"; do
  if [[ -z "$force" ]] && docker image inspect "$name" >/dev/null 2>&1; then
    continue
  fi
  if [[ -z "$force" ]] && timeout 60 docker pull -q "$name" >/dev/null 2>&1; then
    echo "pulled $name"
    continue
  fi
  case "$name" in
  gcr.io/distroless/static*) build_distroless "$name" ;;
  golang:*)
    if [[ -z "$modcache" ]]; then
      distroless=$(printf '%s\n' "${names[@]}" | grep distroless | head -n1)
      if ! container_reaches_proxy "$distroless"; then
        echo "offline stand-in: containers cannot reach the Go module proxy; the golang stand-in carries go.mod's modules"
        modcache=1
      fi
    fi
    build_golang "$name"
    ;;
  nats:*) build_nats "$name" ;;
  redis:*) build_redis "$name" ;;
  jaegertracing/jaeger:*)
    if [[ -n "$tracing" ]]; then
      build_jaeger "$name"
    else
      echo "offline stand-in: no stand-in for $name without --tracing (left alone; compose starts it only in the tracing profile)"
    fi
    ;;
  *) echo "offline stand-in: no stand-in for $name (left alone; compose starts it only in an opt-in profile)" ;;
  esac
done
