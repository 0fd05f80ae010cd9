package main

import (
	"context"
	"io"

	"github.com/skillfleet/skillfleet/internal/buildinfo"
	"github.com/skillfleet/skillfleet/pkg/rundir"
	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// version and commit are stamped at build time with
// -ldflags "-X main.version=v1.2.3 -X main.commit=<sha>" (scripts/release.sh,
// the Dockerfile); unstamped builds fall back to the Go build info.
var (
	version = "dev"
	commit  = ""
)

// build is this binary's version, commit and formats.
func build() buildinfo.Info {
	in := buildinfo.Read(version, commit)
	in.RunDirFormat = rundir.FormatVersion
	in.WireVersion = skillfleetv1.WireVersion
	return in
}

func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) error {
	return build().Write(stdout)
}
