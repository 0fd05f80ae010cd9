package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/pricing"
)

// TestWriteDir: the text as WriteText writes it, then the HTML page in
// the file named, and a line naming it.
func TestWriteDir(t *testing.T) {
	t.Parallel()
	prices, err := pricing.Load(filepath.Join("testdata", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := setup(t, "demo").WriteText(&want); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(t.TempDir(), "r.html")
	var got bytes.Buffer
	if err := WriteDir(filepath.Join("testdata", "demo"), html, prices, &got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String()+"HTML report: "+html+"\n" {
		t.Errorf("output:\n%s", got.String())
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<html") {
		t.Errorf("HTML file: %v, %d bytes", err, len(b))
	}
	if err := WriteDir(filepath.Join("testdata", "demo"), filepath.Join(t.TempDir(), "no", "r.html"), prices, &got); err == nil || !strings.HasPrefix(err.Error(), "report: --html: ") {
		t.Errorf("an HTML file that cannot be made: %v", err)
	}
}
