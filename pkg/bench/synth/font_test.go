package synth

import (
	"slices"
	"testing"
)

func TestPageRoundTrip(t *testing.T) {
	lines := []string{"INVOICE #4821 - HARLOW DEPOT", "", "TOTAL DUE: 7,593.00 (NET)", "abc xyz 0123456789 /:.,"}
	data, err := RenderPage(lines)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadPage(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"INVOICE #4821 - HARLOW DEPOT", "", "TOTAL DUE: 7,593.00 (NET)", "ABC XYZ 0123456789 /:.,"}
	if !slices.Equal(got, want) {
		t.Fatalf("read back %q, want %q", got, want)
	}
	seen := map[string]rune{}
	for c, g := range glyphs {
		k := ""
		for _, r := range g {
			if len(r) != 5 {
				t.Fatalf("glyph %q: row %q is not 5 wide", c, r)
			}
			k += r
		}
		if d, dup := seen[k]; dup {
			t.Fatalf("glyphs %q and %q are the same", c, d)
		}
		seen[k] = c
	}
}
