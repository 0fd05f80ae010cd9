# Sourced by scripts that build the image. Sets the array `build` to a
# `docker build` command that uses BuildKit (the Dockerfile's cache mount
# needs it), or leaves it empty when this host has no BuildKit builder.
# BuildKit is `docker build` itself where buildx is installed (Docker 23+);
# Debian's docker.io 20.10 client has it built in behind DOCKER_BUILDKIT=1.
build=()
if docker buildx version >/dev/null 2>&1; then
  build=(docker build)
else
  for cli in docker /usr/bin/docker; do
    v=$("$cli" version -f '{{.Client.Version}}' 2>/dev/null || true)
    if [[ "${v%%.*}" =~ ^[0-9]+$ && "${v%%.*}" -lt 23 ]]; then
      build=(env DOCKER_BUILDKIT=1 "$cli" build)
      break
    fi
  done
fi
