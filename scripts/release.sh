#!/usr/bin/env bash
# Builds a skillfleet release from one git tag: static binaries for
# linux and darwin on amd64 and arm64, a SHA256SUMS file over them, and,
# when a Docker engine answers, the image skillfleet:TAG.
#
#   scripts/release.sh v1.2.3 [OUT_DIR]     (default OUT_DIR: dist/v1.2.3)
#
# The build uses the tag's tree exactly (git archive of the tag, not the
# work tree), stamps the tag and its commit into every binary
# (-X main.version, -X main.commit; `skillfleet version` prints them), and
# refuses a tag whose CHANGELOG.md has no "## TAG" section.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

tag=${1:-}
if [[ -z $tag ]]; then
  echo "usage: scripts/release.sh vX.Y.Z [OUT_DIR]" >&2
  exit 2
fi
if ! [[ $tag =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release: tag $tag is not a semantic version (vMAJOR.MINOR.PATCH[-PRE])" >&2
  exit 2
fi
if ! sha=$(git rev-parse --verify --quiet "refs/tags/$tag^{commit}"); then
  echo "release: no tag $tag in this repository (git tag -a $tag -m $tag first)" >&2
  exit 1
fi
out=${2:-$root/dist/$tag}
mkdir -p "$out"
out=$(cd "$out" && pwd)

src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
git archive "$tag" | tar -x -C "$src"
if ! grep -q "^## $tag\b" "$src/CHANGELOG.md" 2>/dev/null; then
  echo "release: CHANGELOG.md at $tag has no \"## $tag\" section; add the release's entries and tag again" >&2
  exit 1
fi

ldflags="-s -w -X main.version=$tag -X main.commit=$sha"
targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
files=()
for target in "${targets[@]}"; do
  os=${target%/*} arch=${target#*/}
  name=skillfleet-$tag-$os-$arch
  echo "release: building $name" >&2
  (cd "$src" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
    -ldflags "$ldflags" -o "$out/$name" ./cmd/skillfleet)
  files+=("$name")
done
(cd "$out" && sha256sum "${files[@]}" > SHA256SUMS)

# The binary for this machine must say what it is.
host=skillfleet-$tag-$(go env GOOS)-$(go env GOARCH)
if [[ -x $out/$host ]]; then
  if ! "$out/$host" version | head -1 | grep -qx "skillfleet $tag"; then
    echo "release: $host does not report version $tag:" >&2
    "$out/$host" version >&2
    exit 1
  fi
fi

image="not built: no Docker engine answers here (run again where one does)"
status=0
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  # shellcheck source=scripts/lib/buildkit.sh
  . "$root/scripts/lib/buildkit.sh"
  if [[ ${#build[@]} == 0 ]]; then
    echo "release: no BuildKit builder for the image (install docker-buildx, or Debian's docker.io)" >&2
    build=(false)
  fi
  echo "release: building image skillfleet:$tag" >&2
  if "${build[@]}" --build-arg "VERSION=$tag" --build-arg "COMMIT=$sha" -t "skillfleet:$tag" "$src" >&2 &&
    docker run --rm "skillfleet:$tag" version | head -1 | grep -qx "skillfleet $tag"; then
    image="skillfleet:$tag"
  else
    image="FAILED: docker build (its base images must be pullable from this host) or the image's version check"
    status=1
  fi
fi

echo "release $tag ($sha)"
echo "  binaries: $out"
sed 's/^/    /' "$out/SHA256SUMS"
echo "  image: $image"
exit $status
