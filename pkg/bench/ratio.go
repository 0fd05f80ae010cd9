package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/pyrand"
)

// RatioOptions describes SkillOpt's ratio split mode: one raw data file
// shuffled with a seeded CPython shuffle and cut train:val:test.
type RatioOptions struct {
	// DataPath is one JSON/JSONL/CSV file, or a directory holding exactly one.
	DataPath string
	// Ratio is "train:val:test" in positive integers, e.g. "2:1:7".
	Ratio string
	// Seed seeds random.Random(seed).shuffle.
	Seed int64
	// OutDir receives train/, val/, test/ and split_manifest.json.
	OutDir string
}

// RatioManifest is the split_manifest.json a ratio split writes.
type RatioManifest struct {
	SourceDataPath string         `json:"source_data_path"`
	SplitMode      string         `json:"split_mode"`
	SplitRatio     string         `json:"split_ratio"`
	SplitSeed      int64          `json:"split_seed"`
	Counts         map[string]int `json:"counts"`
}

// ParseRatio parses "a:b:c" into three positive integers.
func ParseRatio(s string) ([3]int, error) {
	var w [3]int
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 3 {
		return w, fmt.Errorf("split ratio %q: want three positive integers like 2:1:7", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n <= 0 {
			return w, fmt.Errorf("split ratio %q: want three positive integers like 2:1:7", s)
		}
		w[i] = n
	}
	return w, nil
}

// RatioCounts splits total items by weights with the largest-remainder
// method: each part gets floor(total*w/sum), and the items left over go one
// each to the parts with the largest fractional remainders, ties broken by
// the larger weight, then by position.
func RatioCounts(total int, w [3]int) [3]int {
	sum := w[0] + w[1] + w[2]
	var counts [3]int
	rem := make([]int, 3) // remainder numerators, exact in integers
	given := 0
	for i := range w {
		counts[i] = total * w[i] / sum
		rem[i] = total*w[i] - counts[i]*sum
		given += counts[i]
	}
	order := []int{0, 1, 2}
	sort.SliceStable(order, func(a, b int) bool {
		i, j := order[a], order[b]
		if rem[i] != rem[j] {
			return rem[i] > rem[j]
		}
		return w[i] > w[j]
	})
	for k := 0; given < total; k++ {
		counts[order[k%3]]++
		given++
	}
	return counts
}

// RatioDirName is the directory name SkillOpt gives a generated ratio split
// under out_root/_generated_splits: <env>_<a>-<b>-<c>_seed<k>.
func RatioDirName(env, ratio string, seed int64) string {
	return fmt.Sprintf("%s_%s_seed%d", env, strings.ReplaceAll(strings.TrimSpace(ratio), ":", "-"), seed)
}

// WriteRatioSplit reads the raw data, shuffles it with CPython's
// random.Random(seed).shuffle, cuts it by the ratio and writes a split
// directory (items.json per split, in shuffled order) with its manifest.
// An existing split at OutDir made from the same source, ratio and seed is
// kept as it is; one made differently is an error, never overwritten.
func WriteRatioSplit(o RatioOptions) (*RatioManifest, error) {
	w, err := ParseRatio(o.Ratio)
	if err != nil {
		return nil, err
	}
	src := o.DataPath
	if st, err := os.Stat(src); err != nil {
		return nil, fmt.Errorf("data_path %s: %w", src, err)
	} else if st.IsDir() {
		var files []string
		for _, pat := range []string{"*.json", "*.jsonl", "*.csv"} {
			m, _ := filepath.Glob(filepath.Join(src, pat))
			files = append(files, m...)
		}
		if len(files) != 1 {
			return nil, fmt.Errorf("data_path %s: a directory must hold exactly one .json, .jsonl or .csv file, found %d", src, len(files))
		}
		src = files[0]
	}
	raws, err := ReadItemsFile(src)
	if err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, fmt.Errorf("data_path %s: no items", src)
	}
	abs, _ := filepath.Abs(src)
	want := RatioManifest{SourceDataPath: abs, SplitMode: "ratio", SplitRatio: o.Ratio, SplitSeed: o.Seed}
	manifestPath := filepath.Join(o.OutDir, "split_manifest.json")
	if data, err := os.ReadFile(manifestPath); err == nil {
		var have RatioManifest
		if err := json.Unmarshal(data, &have); err != nil {
			return nil, fmt.Errorf("%s: %w", manifestPath, err)
		}
		if have.SourceDataPath != want.SourceDataPath || have.SplitRatio != want.SplitRatio || have.SplitSeed != want.SplitSeed {
			return nil, fmt.Errorf("%s: made from %s ratio %s seed %d, not %s ratio %s seed %d; choose another split_output_dir",
				manifestPath, have.SourceDataPath, have.SplitRatio, have.SplitSeed, want.SourceDataPath, want.SplitRatio, want.SplitSeed)
		}
		return &have, nil
	}
	pyrand.New(o.Seed).Shuffle(len(raws), func(i, j int) { raws[i], raws[j] = raws[j], raws[i] })
	counts := RatioCounts(len(raws), w)
	want.Counts = map[string]int{SplitTrain: counts[0], SplitVal: counts[1], SplitTest: counts[2]}
	at := 0
	for i, name := range []string{SplitTrain, SplitVal, SplitTest} {
		part := raws[at : at+counts[i]]
		at += counts[i]
		if err := os.MkdirAll(filepath.Join(o.OutDir, name), 0o755); err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(part, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := writeFileAtomic(filepath.Join(o.OutDir, name, "items.json"), b); err != nil {
			return nil, err
		}
	}
	b, _ := json.MarshalIndent(want, "", "  ")
	if err := writeFileAtomic(manifestPath, b); err != nil {
		return nil, err
	}
	return &want, nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
