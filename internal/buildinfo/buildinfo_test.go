package buildinfo

import (
	"bytes"
	"testing"
)

func TestReadPrefersStampedValues(t *testing.T) {
	in := Read("v1.2.3", "abc123")
	if in.Version != "v1.2.3" || in.Commit != "abc123" {
		t.Errorf("Read(v1.2.3, abc123) = %q %q, want the stamped values", in.Version, in.Commit)
	}
	if in.GoVersion == "" {
		t.Error("Read: GoVersion is empty, want the toolchain's version")
	}
}

func TestReadUnstampedIsDev(t *testing.T) {
	// A test binary's main module version is (devel): not a release.
	if in := Read("dev", ""); in.Version != "dev" || in.Commit == "" {
		t.Errorf("Read(dev, \"\") = %q %q, want dev and a commit or unknown", in.Version, in.Commit)
	}
}

func TestPseudoCommit(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"v0.0.0-20261128042708-6515125abcde", "6515125abcde"},
		{"v1.2.4-0.20261128042708-6515125abcde", "6515125abcde"},
		{"v1.2.3", ""},
		{"v1.2.3-rc.1", ""},
		{"(devel)", ""},
	} {
		if got := pseudoCommit(tc.in); got != tc.want {
			t.Errorf("pseudoCommit(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestWriteNamesEveryFact(t *testing.T) {
	var b bytes.Buffer
	in := Info{Version: "v1.0.0", Commit: "c0ffee", GoVersion: "go1.26", RunDirFormat: "1.0", WireVersion: 1}
	if err := in.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "skillfleet v1.0.0\ncommit: c0ffee\nrun-dir format: 1.0\nwire format: 1\ngo: go1.26\n"
	if b.String() != want {
		t.Errorf("Write = %q, want %q", b.String(), want)
	}
}
