# Multi-stage build: a static skillfleet binary on a distroless, non-root base.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/skillfleet ./cmd/skillfleet

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/skillfleet /usr/local/bin/skillfleet
COPY configs /configs
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/skillfleet"]
