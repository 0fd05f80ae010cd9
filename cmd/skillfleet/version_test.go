package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/rundir"
	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestVersionPrintsStampedRelease sets the values scripts/release.sh
// stamps with -ldflags "-X main.version=... -X main.commit=..." and checks
// that `skillfleet version` prints them with the run-dir and wire formats.
// (release.sh checks the linked binary's first line itself.)
func TestVersionPrintsStampedRelease(t *testing.T) {
	const tag, sha = "v9.8.7", "0123456789abcdef0123456789abcdef01234567"
	oldV, oldC := version, commit
	version, commit = tag, sha
	t.Cleanup(func() { version, commit = oldV, oldC })
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("skillfleet version: exit %d, stderr %q", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"skillfleet " + tag + "\n",
		"commit: " + sha + "\n",
		"run-dir format: " + rundir.FormatVersion + "\n",
		"wire format: " + strconv.FormatUint(uint64(skillfleetv1.WireVersion), 10) + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("skillfleet version = %q, want a line %q", out, want)
		}
	}
	if !strings.HasPrefix(out, "skillfleet "+tag+"\n") {
		t.Errorf("skillfleet version = %q, want the release on the first line", out)
	}
}

// TestVersionUnstampedIsDev checks an unstamped build says dev, not an
// empty or invented version.
func TestVersionUnstampedIsDev(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("skillfleet version: exit %d, stderr %q", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "skillfleet dev\n") {
		t.Errorf("unstamped skillfleet version = %q, want it to start with %q", stdout.String(), "skillfleet dev\n")
	}
}
