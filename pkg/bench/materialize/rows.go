package materialize

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// sourceFiles expands the given paths (files, or directories searched
// recursively) into the data files a source dataset is published as:
// Parquet, JSON Lines (optionally gzipped) and JSON lists.
func sourceFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		if !st.IsDir() {
			if !isData(p) {
				return nil, fmt.Errorf("source %s: not a .parquet, .jsonl, .jsonl.gz or .json file", p)
			}
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != p {
				return filepath.SkipDir
			}
			if !d.IsDir() && isData(path) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", p, err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("source %s: no .parquet, .jsonl, .jsonl.gz or .json file in it", p)
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}

func isData(p string) bool {
	for _, ext := range []string{".parquet", ".jsonl", ".jsonl.gz", ".json", ".json.gz", ".csv"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

// eachRow calls fn with every row of a data file, as the JSON value it
// would be (maps, lists, strings, float64). where names the row for
// errors: the file and its row or line number.
func eachRow(path string, fn func(where string, row map[string]any) error) error {
	if strings.HasSuffix(path, ".parquet") {
		return eachParquetRow(path, fn)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	base := strings.TrimSuffix(path, ".gz")
	if strings.HasSuffix(base, ".csv") {
		return eachCSVRow(path, r, fn)
	}
	if strings.HasSuffix(base, ".jsonl") {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 256<<20)
		for line := 1; sc.Scan(); line++ {
			b := sc.Bytes()
			if len(strings.TrimSpace(string(b))) == 0 {
				continue
			}
			var row map[string]any
			if err := json.Unmarshal(b, &row); err != nil {
				return fmt.Errorf("%s:%d: %w", path, line, err)
			}
			if err := fn(fmt.Sprintf("%s:%d", path, line), row); err != nil {
				return err
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%s: want a JSON list of objects", path)
	}
	for i := 0; dec.More(); i++ {
		var row map[string]any
		if err := dec.Decode(&row); err != nil {
			return fmt.Errorf("%s: element %d: %w", path, i, err)
		}
		if err := fn(fmt.Sprintf("%s[%d]", path, i), row); err != nil {
			return err
		}
	}
	return nil
}

// eachParquetRow reads a Parquet file row group by row group into maps;
// nested lists (Parquet's LIST) become []any as JSON would have them.
func eachParquetRow(path string, fn func(where string, row map[string]any) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: not a readable Parquet file: %w", path, err)
	}
	r := parquet.NewGenericReader[any](pf, pf.Schema())
	defer r.Close()
	buf := make([]any, 64)
	row := 0
	for {
		clear(buf)
		n, err := r.Read(buf)
		for _, v := range buf[:n] {
			m, ok := normalize(v).(map[string]any)
			if !ok {
				return fmt.Errorf("%s row %d: not a record (%T)", path, row, v)
			}
			if err := fn(fmt.Sprintf("%s row %d", path, row), m); err != nil {
				return err
			}
			row++
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s row %d: %w", path, row, err)
		}
		if n == 0 {
			return nil
		}
	}
}

// normalize turns the values a Parquet reader gives into JSON's: byte
// strings into strings, every list into []any, every map into
// map[string]any, numbers into float64.
func normalize(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case map[string]any:
		if l, ok := listOf(x); ok {
			return normalize(l)
		}
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case float32:
		return float64(x)
	}
	return v
}

// listOf unwraps Parquet's three-level LIST layout as a map reader gives
// it, {"list": [{"element": v}, ...]} ("item" in older writers), into the
// list of its values.
func listOf(m map[string]any) ([]any, bool) {
	l, ok := m["list"].([]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	out := make([]any, len(l))
	for i, e := range l {
		em, ok := e.(map[string]any)
		if !ok || len(em) != 1 {
			return nil, false
		}
		v, ok := em["element"]
		if !ok {
			if v, ok = em["item"]; !ok {
				return nil, false
			}
		}
		out[i] = v
	}
	return out, true
}

// eachCSVRow reads a CSV file with a header row: each row is a map from
// the header's names to the cells' text (line numbers count the header).
func eachCSVRow(path string, r io.Reader, fn func(where string, row map[string]any) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s: header: %w", path, err)
	}
	for i := range head {
		head[i] = strings.TrimSpace(strings.TrimPrefix(head[i], "\ufeff"))
	}
	for n := 2; ; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) != len(head) {
			return fmt.Errorf("%s: row %d: %d fields, the header has %d", path, n, len(rec), len(head))
		}
		row := make(map[string]any, len(head))
		for i, h := range head {
			row[h] = rec[i]
		}
		if err := fn(fmt.Sprintf("%s:row %d", path, n), row); err != nil {
			return err
		}
	}
}
