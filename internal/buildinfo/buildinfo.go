// Package buildinfo says which skillfleet this is: the release version and
// commit stamped into the binary, and the formats it reads and writes (the
// run-dir format and the wire format), so that `skillfleet version` and a
// worker's registration name the same facts.
package buildinfo

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// Info is what a binary knows about its own build.
type Info struct {
	// Version is the release tag (v1.2.3), or "dev" for an unreleased build.
	Version string
	// Commit is the git commit the binary was built from ("+dirty" when the
	// work tree had changes), or "unknown".
	Commit string
	// GoVersion is the toolchain that built it.
	GoVersion string
	// RunDirFormat and WireVersion are the formats it speaks; the caller
	// fills them in from pkg/rundir and the proto package.
	RunDirFormat string
	WireVersion  uint32
}

// Read resolves the build's version and commit. Values stamped with
// -ldflags "-X main.version=... -X main.commit=..." win; otherwise the
// module version recorded by `go install module@vX.Y.Z` and the VCS
// revision recorded by `go build` in a git checkout are used.
func Read(stampedVersion, stampedCommit string) Info {
	in := Info{Version: stampedVersion, Commit: stampedCommit}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		in.GoVersion = bi.GoVersion
	}
	if in.Version == "" || in.Version == "dev" {
		in.Version = "dev"
		if ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
	}
	if in.Commit == "" && ok {
		var rev string
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			in.Commit = rev
			if dirty {
				in.Commit += "+dirty"
			}
		} else if c := pseudoCommit(bi.Main.Version); c != "" {
			in.Commit = c
		}
	}
	if in.Commit == "" {
		in.Commit = "unknown"
	}
	return in
}

// pseudoCommit is the commit prefix of a Go pseudo-version
// (v0.0.0-20261128042708-6515125abcde), which `go install module@commit`
// records; "" for a tagged version.
func pseudoCommit(v string) string {
	parts := strings.Split(strings.TrimSuffix(v, "+incompatible"), "-")
	if len(parts) < 3 {
		return ""
	}
	last := parts[len(parts)-1]
	if len(last) != 12 {
		return ""
	}
	for _, r := range last {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return ""
		}
	}
	return last
}

// Write prints the build as `skillfleet version` shows it, one fact a line.
func (in Info) Write(w io.Writer) error {
	_, err := fmt.Fprintf(w, "skillfleet %s\ncommit: %s\nrun-dir format: %s\nwire format: %d\ngo: %s\n",
		in.Version, in.Commit, in.RunDirFormat, in.WireVersion, in.GoVersion)
	return err
}
