package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPlantedKeyNeverLeaks: a training run whose model key is a planted
// value uses it (the sim-llm demands it as a bearer token and serves every
// request) but never writes it: not to stdout or stderr at debug level,
// not to any file of the run directory.
func TestPlantedKeyNeverLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const key = "sk-planted-4f1c9e7a2b6d8035"
	t.Setenv("SF_PLANTED_KEY", key)
	sim := start(t, "sim-llm", "--addr", "127.0.0.1:0", "--api-key-env", "SF_PLANTED_KEY")
	line := sim.line(t, "sim-llm", 20*time.Second)
	url := line[strings.Index(line, "http://"):]

	dir := filepath.Join(t.TempDir(), "run")
	out, err := trainDemo(t, dir, nil, "--log-level", "debug",
		"--set", "runtime.sim_llm=false",
		"--set", "model.optimizer_base_url="+url, "--set", "model.target_base_url="+url,
		"--set", "model.optimizer_api_key_env=SF_PLANTED_KEY", "--set", "model.target_api_key_env=SF_PLANTED_KEY")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, out)
	}
	st := readSimStats(t, url)
	if st.Served == 0 || st.Requests != st.Served {
		t.Fatalf("sim-llm served %d of %d requests: the key did not reach it", st.Served, st.Requests)
	}
	if strings.Contains(out, key) {
		t.Errorf("the planted key appears in the command's output")
	}
	files := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), key) {
			t.Errorf("the planted key appears in %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("only %d files in the run dir: nothing was checked", files)
	}
}
