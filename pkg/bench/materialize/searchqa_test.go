package materialize

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// hfRow is a row laid out as the SearchQA source dataset publishes it:
// the columns the materializer reads plus one it ignores.
type hfRow struct {
	Context  string   `parquet:"context"`
	Question string   `parquet:"question"`
	Answers  []string `parquet:"answers,list"`
	Key      string   `parquet:"key"`
	Labels   []int64  `parquet:"labels,list"`
}

func writeManifest(t *testing.T, dir string, ids map[string][]string) {
	t.Helper()
	for split, list := range ids {
		var items []map[string]string
		for _, id := range list {
			items = append(items, map[string]string{"id": id})
		}
		b, _ := json.Marshal(items)
		if err := os.MkdirAll(filepath.Join(dir, split), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, split, "items.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	head := `{"benchmark": "SearchQA", "manifest_type": "id_split", "source_repo": "lucadiliello/searchqa", "source_id_field": "key", "item_fields": ["id"]}`
	if err := os.WriteFile(filepath.Join(dir, "split_manifest.json"), []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeParquet(t *testing.T, path string, rows []hfRow) {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[hfRow](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func row(k string) hfRow {
	return hfRow{Context: "[DOC] [TLE] t " + k + " [PAR] p", Question: "q " + k, Answers: []string{"ans " + k, "alt"}, Key: k, Labels: []int64{1, 2}}
}

// TestSearchQAFromParquetAndJSONL materializes a manifest whose ids are
// spread over a Parquet shard (train split of the source) and a gzipped
// JSON Lines shard, with rows the manifest does not want among them.
func TestSearchQAFromParquetAndJSONL(t *testing.T) {
	man, src, out := t.TempDir(), t.TempDir(), t.TempDir()
	writeManifest(t, man, map[string][]string{"train": {"k3", "k1"}, "val": {"k2"}, "test": {"k5", "k4"}})
	writeParquet(t, filepath.Join(src, "train-00000-of-00001.parquet"), []hfRow{row("k1"), row("k9"), row("k3"), row("k4")})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	for _, k := range []string{"k2", "k8", "k5"} {
		r := row(k)
		b, _ := json.Marshal(map[string]any{"key": r.Key, "question": r.Question, "context": r.Context, "answers": r.Answers})
		zw.Write(append(b, '\n'))
	}
	zw.Close()
	if err := os.MkdirAll(filepath.Join(src, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "data", "validation.jsonl.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	counts, err := SearchQA(man, []string{src}, out)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{"train": 2, "val": 1, "test": 2}); !reflect.DeepEqual(counts, want) {
		t.Fatalf("counts = %v, want %v", counts, want)
	}
	var train []map[string]any
	b, err := os.ReadFile(filepath.Join(out, "train", "items.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &train); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"id": "k3", "question": "q k3", "context": "[DOC] [TLE] t k3 [PAR] p", "answers": []any{"ans k3", "alt"}},
		{"id": "k1", "question": "q k1", "context": "[DOC] [TLE] t k1 [PAR] p", "answers": []any{"ans k1", "alt"}},
	}
	if !reflect.DeepEqual(train, want) {
		t.Fatalf("train = %v\nwant %v", train, want)
	}
	var test []map[string]any
	b, _ = os.ReadFile(filepath.Join(out, "test", "items.json"))
	json.Unmarshal(b, &test)
	if len(test) != 2 || test[0]["id"] != "k5" || test[1]["id"] != "k4" {
		t.Fatalf("test split out of manifest order: %v", test)
	}
	if _, err := os.Stat(filepath.Join(out, "split_manifest.json")); err != nil {
		t.Fatal(err)
	}
}

func TestSearchQARefusesWhatItCannotMaterialize(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ids   map[string][]string
		rows  []hfRow
		extra string // a JSONL file's content
		want  string
	}{
		{"missing id", map[string][]string{"train": {"k1", "k7"}, "val": {}, "test": {}}, []hfRow{row("k1")}, "", "no row for 1 of the manifest's ids, first: k7"},
		{"id in two splits", map[string][]string{"train": {"k1"}, "val": {"k1"}, "test": {}}, []hfRow{row("k1")}, "", "listed twice, first: k1 (train and val)"},
		{"key twice in the source", map[string][]string{"train": {"k1"}, "val": {}, "test": {}}, []hfRow{row("k1")}, `{"key":"k1","question":"q","context":"c","answers":["a"]}` + "\n", "key k1 is also at"},
		{"row without answers", map[string][]string{"train": {"k2"}, "val": {}, "test": {}}, nil, `{"key":"k2","question":"q","context":"c"}` + "\n", "key k2: missing field(s) answers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			man, src, out := t.TempDir(), t.TempDir(), t.TempDir()
			writeManifest(t, man, tc.ids)
			if tc.rows != nil {
				writeParquet(t, filepath.Join(src, "a.parquet"), tc.rows)
			}
			if tc.extra != "" {
				os.WriteFile(filepath.Join(src, "b.jsonl"), []byte(tc.extra), 0o644)
			}
			_, err := SearchQA(man, []string{src}, out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("wrote %d entries on failure", len(entries))
			}
		})
	}
}
