package spreadsheet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkSandboxOverhead measures what the sandbox adds to one test
// case's execution: the same program (open the input with openpyxl, write
// the answer, save) run by Sandbox.Run and run directly on the host
// (python -I -B with the bootstrap, in a fresh directory), interleaved;
// the reported metric is the difference of the medians (wall time; on a
// loaded host, noisy: compare with BenchmarkOverhead in pkg/sandbox).
//
//	go test -run '^$' -bench SandboxOverhead -benchtime 20x ./pkg/bench/spreadsheet/
func BenchmarkSandboxOverhead(b *testing.B) {
	python := findPython(b)
	in := book(b, filepath.Join(b.TempDir(), "in.xlsx"), map[string]any{"Sheet1!A1": 1, "Sheet1!A2": 2})
	input, err := os.ReadFile(in)
	if err != nil {
		b.Fatal(err)
	}
	box := &Sandbox{Python: python, Limits: Limits{Wall: time.Minute}}
	if err := box.Ready(); err != nil {
		b.Fatal(err)
	}
	code := "import openpyxl\nwb = openpyxl.load_workbook(INPUT_PATH)\nwb.active['B1'] = 3\nwb.save(OUTPUT_PATH)\n"
	var boxed, direct []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := box.Run(context.Background(), code, input, RunOptions{})
		if err != nil || res.Failed() || res.Workbook == nil || res.Workbook.Type != "file" {
			b.Fatalf("sandboxed: %v %+v", err, res)
		}
		boxed = append(boxed, time.Since(start))

		start = time.Now()
		dir, err := os.MkdirTemp("", "skillfleet-bench-")
		if err != nil {
			b.Fatal(err)
		}
		for name, data := range map[string][]byte{inputName: input, "solution.py": []byte(code), "sandbox_boot.py": []byte(bootstrap)} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		cmd := exec.Command(python, "-I", "-B", "sandbox_boot.py")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("direct: %v %s", err, out)
		}
		if _, err := os.ReadFile(filepath.Join(dir, OutputName)); err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(dir)
		direct = append(direct, time.Since(start))
	}
	mb, md := median(boxed), median(direct)
	b.ReportMetric(float64(mb.Microseconds())/1000, "ms-sandboxed-median")
	b.ReportMetric(float64(md.Microseconds())/1000, "ms-direct-median")
	b.ReportMetric(float64((mb-md).Microseconds())/1000, "ms-overhead-median")
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
