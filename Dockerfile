# Multi-stage build: a static skillfleet binary on a distroless, non-root
# base. BuildKit (the default builder since Docker 23; DOCKER_BUILDKIT=1
# before) keeps the Go build cache between builds, so a change to the
# source recompiles only the packages it touches.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /out/skillfleet ./cmd/skillfleet \
 && mkdir -p /out/runs

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/skillfleet /usr/local/bin/skillfleet
COPY configs /configs
# Run directories go under /runs. It belongs to the non-root user so that
# a fresh named volume mounted there (which Docker fills from the image,
# owner included) is writable without a chown step.
COPY --from=build --chown=65532:65532 /out/runs /runs
# Configs name their files relative to / (configs/skills/..., as in the
# source tree): the working directory is /, not the base's /home/nonroot.
WORKDIR /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/skillfleet"]
