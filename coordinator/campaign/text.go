package campaign

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/report"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

// Line is a campaign's terminal status line: its cells done,
// running and queued (and failed, stopped) of all, its spend and time so
// far, and an ETA from the pace at which cells end.
func (st Status) Line() string {
	counts, total, elapsed := st.Counts, st.Total, st.Elapsed
	done, failed, stopped := counts[StateDone], counts[StateFailed], counts[StateStopped]
	s := fmt.Sprintf("campaign: cells %d/%d done · %d running · %d queued", done, total, counts[StateRunning], counts[StateQueued])
	if failed > 0 {
		s += fmt.Sprintf(" · %d failed", failed)
	}
	if stopped > 0 {
		s += fmt.Sprintf(" · %d stopped", stopped)
	}
	s += fmt.Sprintf(" · %s tok $%.2f · %s", usage.FormatCount(st.Tokens), st.USD, elapsed.Round(time.Second))
	if ended, left := done+failed, total-done-failed; ended > 0 && left > 0 {
		s += " · ETA " + (elapsed / time.Duration(ended) * time.Duration(left)).Round(time.Second).String()
	}
	return s
}

// String is the campaign's status as a plain line.
func (st Status) String() string {
	return fmt.Sprintf("campaign: %d done, %d running, %d queued, %d failed; %s tokens, $%.2f; %s",
		st.Counts[StateDone], st.Counts[StateRunning], st.Counts[StateQueued], st.Counts[StateFailed],
		usage.FormatCount(st.Tokens), st.USD, st.Elapsed.Round(time.Second))
}

var memberName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ValidMember says whether name can name a member ([Config.Member]):
// letters, digits, '.', '-' and '_', not starting with a punctuation mark.
func ValidMember(name string) bool { return memberName.MatchString(name) }

// SelectGlobs parses comma-separated globs a cell's name must match one
// of, for [Config.Select] (nil: every cell).
func SelectGlobs(s string) (func(Cell) bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var globs []string
	for _, g := range strings.Split(s, ",") {
		g = strings.TrimSpace(g)
		if _, err := path.Match(g, ""); err != nil || g == "" {
			return nil, fmt.Errorf("%q is not a glob", g)
		}
		globs = append(globs, g)
	}
	return func(c Cell) bool {
		for _, g := range globs {
			if ok, _ := path.Match(g, c.Name); ok {
				return true
			}
		}
		return false
	}, nil
}

// WriteReport prints the results table of the campaign in dir and writes
// its CSV and HTML forms to csvOut and htmlOut when set (the HTML matrix
// links each cell's own report, written in its run dir).
func WriteReport(dir, htmlOut, csvOut string, prices *pricing.Table, stdout io.Writer) error {
	f, err := Read(dir)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := f.WriteText(stdout); err != nil {
		return err
	}
	if csvOut != "" {
		if err := writeFileWith(csvOut, f.WriteCSV); err != nil {
			return fmt.Errorf("report: --csv: %w", err)
		}
		fmt.Fprintf(stdout, "CSV: %s\n", csvOut)
	}
	if htmlOut != "" {
		links := map[string]string{}
		base, _ := filepath.Abs(filepath.Dir(htmlOut))
		for _, c := range f.Cells {
			cellDir := filepath.Join(dir, filepath.FromSlash(c.Dir))
			r, err := report.Load(cellDir, prices)
			if err != nil {
				continue // a cell that has not run yet has no report
			}
			page := filepath.Join(cellDir, "report.html")
			if err := writeFileWith(page, r.WriteHTML); err != nil {
				return fmt.Errorf("report: cell %s: %w", c.Name, err)
			}
			abs, _ := filepath.Abs(page)
			if rel, err := filepath.Rel(base, abs); err == nil {
				links[c.Name] = filepath.ToSlash(rel)
			}
		}
		if err := writeFileWith(htmlOut, func(w io.Writer) error { return f.WriteHTML(w, links) }); err != nil {
			return fmt.Errorf("report: --html: %w", err)
		}
		fmt.Fprintf(stdout, "HTML report: %s\n", htmlOut)
	}
	return nil
}

func writeFileWith(path string, write func(io.Writer) error) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(out); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
