package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ItemCheck is what `skillfleet data check` verifies of a benchmark's
// items beyond their ids, on the items as the benchmark's loader left
// them. Fields says it in words for the report.
type ItemCheck struct {
	Fields string
	// Check verifies one item of split (train, val or test) of the split
	// directory dir; nil when the loader's own checks are all there is.
	Check func(dir, split string, item map[string]any) error
}

// NeedString fails unless m[f] is a non-blank string.
func NeedString(m map[string]any, f string) error {
	if s, ok := m[f].(string); !ok || strings.TrimSpace(s) == "" {
		return fmt.Errorf("field %s: want a non-empty string", f)
	}
	return nil
}

// NeedStrings fails unless m[f] is a non-empty list of strings.
func NeedStrings(m map[string]any, f string) error {
	l, ok := m[f].([]any)
	if !ok || len(l) == 0 {
		return fmt.Errorf("field %s: want a non-empty list of strings", f)
	}
	for i, v := range l {
		if _, ok := v.(string); !ok {
			return fmt.Errorf("field %s[%d]: want a string", f, i)
		}
	}
	return nil
}

// ExistsUnder fails unless a path names a file (or, with wantDir, a
// directory) as given when absolute, else under dir or its parent.
func ExistsUnder(dir, p string, wantDir bool) error {
	if filepath.IsAbs(p) {
		if st, err := os.Stat(p); err == nil && st.IsDir() == wantDir {
			return nil
		}
		return fmt.Errorf("%s: not found", p)
	}
	for _, root := range []string{dir, filepath.Dir(dir)} {
		if st, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err == nil && st.IsDir() == wantDir {
			return nil
		}
	}
	return fmt.Errorf("%s: not found under %s or %s", p, dir, filepath.Dir(dir))
}

// errNotString is a field that is present but not a string.
func errNotString(f string) error { return errors.New("field " + f + ": want a string") }

// NeedStringField fails unless m[f] is a string (it may be empty).
func NeedStringField(m map[string]any, f string) error {
	if _, ok := m[f].(string); !ok {
		return errNotString(f)
	}
	return nil
}
