package report

import (
	"fmt"
	"io"
	"os"

	"github.com/skillfleet/skillfleet/pkg/pricing"
)

// WriteDir writes the report of the run in dir, priced with prices: its
// text to w and, with htmlOut, its HTML page to that file (named on w).
func WriteDir(dir, htmlOut string, prices *pricing.Table, w io.Writer) error {
	r, err := Load(dir, prices)
	if err != nil {
		return err
	}
	if err := r.WriteText(w); err != nil {
		return err
	}
	if htmlOut == "" {
		return nil
	}
	f, err := os.Create(htmlOut)
	if err != nil {
		return fmt.Errorf("report: --html: %w", err)
	}
	if err := r.WriteHTML(f); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "HTML report: %s\n", htmlOut)
	return err
}
