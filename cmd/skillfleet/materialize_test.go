package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// upstreamRow is a SearchQA row as its source dataset publishes it, with
// the id in "key".
type upstreamRow struct {
	Key      string   `parquet:"key"`
	Question string   `parquet:"question"`
	Context  string   `parquet:"context"`
	Answers  []string `parquet:"answers,list"`
	TaskType string   `parquet:"task_type"`
}

// TestMaterializedSearchQAEvaluates takes a synthetic SearchQA world apart
// into what SkillOpt releases (an ID-only manifest) and what its upstream
// publishes (Parquet rows keyed by "key", shuffled, with rows no split
// wants), materializes it back with `data materialize searchqa`, checks
// it with `data check`, and evaluates a skill on it with the simulated
// model.
func TestMaterializedSearchQAEvaluates(t *testing.T) {
	tmp := t.TempDir()
	world := filepath.Join(tmp, "world")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"data", "synth", "--bench", "searchqa", "--out", world, "--seed", "3"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("data synth: exit %d\n%s", code, stderr.String())
	}
	manifest, source, out := filepath.Join(tmp, "searchqa_id_split"), filepath.Join(tmp, "upstream"), filepath.Join(tmp, "searchqa_split")
	var rows []upstreamRow
	for _, split := range []string{"train", "val", "test"} {
		b, err := os.ReadFile(filepath.Join(world, split, "items.json"))
		if err != nil {
			t.Fatal(err)
		}
		var items []struct {
			ID       string   `json:"id"`
			Question string   `json:"question"`
			Context  string   `json:"context"`
			Answers  []string `json:"answers"`
			TaskType string   `json:"task_type"`
		}
		if err := json.Unmarshal(b, &items); err != nil {
			t.Fatal(err)
		}
		var ids []map[string]string
		for _, it := range items {
			ids = append(ids, map[string]string{"id": it.ID})
			rows = append(rows, upstreamRow{it.ID, it.Question, it.Context, it.Answers, it.TaskType})
		}
		b, _ = json.Marshal(ids)
		os.MkdirAll(filepath.Join(manifest, split), 0o755)
		if err := os.WriteFile(filepath.Join(manifest, split, "items.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(manifest, "split_manifest.json"), []byte(`{"benchmark":"SearchQA","manifest_type":"id_split","source_id_field":"key"}`), 0o644)
	// The upstream order is not the manifest's, and it has rows no split wants.
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	rows = append(rows, upstreamRow{"unwanted-1", "q", "c", []string{"a"}, ""})
	os.MkdirAll(filepath.Join(source, "data"), 0o755)
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[upstreamRow](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(source, "data", "train-00000-of-00001.parquet"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"data", "materialize", "searchqa", "--manifest", manifest, "--source", source, "--out", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("data materialize: exit %d\n%s", code, stderr.String())
	}
	for _, split := range []string{"train", "val", "test"} {
		a, _ := os.ReadFile(filepath.Join(world, split, "items.json"))
		b, _ := os.ReadFile(filepath.Join(out, split, "items.json"))
		var wa, wb any
		json.Unmarshal(a, &wa)
		json.Unmarshal(b, &wb)
		ja, _ := json.Marshal(wa)
		jb, _ := json.Marshal(wb)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("%s: materialized items differ from the world's", split)
		}
	}
	stdout.Reset()
	if code := run([]string{"data", "check", "--bench", "searchqa", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("data check: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	stdout.Reset()
	stderr.Reset()
	code := run([]string{"eval", "--config", filepath.Join(root, "configs", "synth", "searchqa.yaml"),
		"--set", "env.split_dir=" + out, "--set", "env.skill_init=" + filepath.Join(world, "seed_skill.md"),
		"--skill", filepath.Join(world, "seed_skill.md"), "--split", "test", "--out", filepath.Join(tmp, "eval")}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("eval on the materialized split: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String()+stderr.String(), "test") {
		t.Errorf("eval printed no test score:\n%s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(tmp, "eval", "eval_summary.json")); err != nil {
		t.Errorf("eval wrote no summary: %v", err)
	}
}

func TestMaterializeNamesWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"data", "materialize"}, "name the benchmark first"},
		{[]string{"data", "materialize", "alfworld", "--manifest", "x", "--source", "y", "--out", "z"}, `no materializer for "alfworld"`},
		{[]string{"data", "materialize", "searchqa", "--source", "y", "--out", "z"}, "--manifest is required"},
		{[]string{"data", "materialize", "searchqa", "--manifest", "x", "--out", "z"}, "--source is required"},
		{[]string{"data", "materialize", "searchqa", "--manifest", "x", "--source", "y"}, "--out is required"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
	}
}
