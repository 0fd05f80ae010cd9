package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Splits holds a benchmark's items per split, in file order.
type Splits struct {
	Train, Val, Test []Item
	// Files are the item files the splits were read from, by split name.
	Files map[string]string
}

// Get returns the items of a split by name (train, val, test and
// SkillOpt's aliases valid_seen/selection → val, valid_unseen → test).
func (s *Splits) Get(name string) ([]Item, error) {
	switch name {
	case SplitTrain:
		return s.Train, nil
	case SplitVal, "valid_seen", "selection":
		return s.Val, nil
	case SplitTest, "valid_unseen":
		return s.Test, nil
	default:
		return nil, fmt.Errorf("unknown split %q (want train, val or test)", name)
	}
}

// LoadOptions tunes LoadSplitDir.
type LoadOptions struct {
	// IDFields are the item fields tried for the id, in order (default ["id"]).
	IDFields []string
	// Files are the glob patterns tried in order in each split directory;
	// the first pattern that matches wins, and of its matches the first in
	// name order (default ["*.json"]). See [ReadItemsFile] for the formats.
	Files []string
	// Normalize, when set, rewrites each item object before its id is read
	// (a benchmark's field mapping); its error is reported with the file
	// and item index.
	Normalize func(map[string]any) (map[string]any, error)
	// Limit truncates every split to its first Limit items (0 = all).
	Limit int
}

// LoadSplitDir reads dir/{train,val,test}/: in each, one item file chosen
// by o.Files. Every item needs a non-empty id; ids must be unique across
// splits. An item whose object has no "id" field gets one holding its id,
// so every consumer finds the id under the same key.
func LoadSplitDir(dir string, o LoadOptions) (*Splits, error) {
	if len(o.IDFields) == 0 {
		o.IDFields = []string{"id"}
	}
	if len(o.Files) == 0 {
		o.Files = []string{"*.json"}
	}
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("split dir %s: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("split dir %s: not a directory", dir)
	}
	s := &Splits{Files: map[string]string{}}
	seen := map[string]string{}
	for _, sp := range []struct {
		name string
		dst  *[]Item
	}{{SplitTrain, &s.Train}, {SplitVal, &s.Val}, {SplitTest, &s.Test}} {
		sub := filepath.Join(dir, sp.name)
		if _, err := os.Stat(sub); err != nil {
			return nil, fmt.Errorf("split dir %s: missing %s/ (a split dir needs train/, val/ and test/)", dir, sp.name)
		}
		file, err := pickFile(sub, o.Files)
		if err != nil {
			return nil, err
		}
		items, err := loadItems(file, o)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if prev, dup := seen[it.ID]; dup {
				return nil, fmt.Errorf("%s: item %q also appears in %s (splits must not overlap)", file, it.ID, prev)
			}
			seen[it.ID] = file
		}
		if o.Limit > 0 && len(items) > o.Limit {
			items = items[:o.Limit]
		}
		*sp.dst = items
		s.Files[sp.name] = file
	}
	return s, nil
}

func pickFile(sub string, patterns []string) (string, error) {
	for _, p := range patterns {
		files, err := filepath.Glob(filepath.Join(sub, p))
		if err != nil {
			return "", fmt.Errorf("split dir %s: pattern %q: %w", sub, p, err)
		}
		if len(files) > 0 {
			sort.Strings(files)
			return files[0], nil
		}
	}
	return "", fmt.Errorf("split dir %s: no item file (looked for %s)", sub, strings.Join(patterns, ", "))
}

func loadItems(path string, o LoadOptions) ([]Item, error) {
	raws, err := ReadItemsFile(path)
	if err != nil {
		return nil, err
	}
	items := make([]Item, 0, len(raws))
	for i, raw := range raws {
		it, err := itemOf(raw, o)
		if err != nil {
			return nil, fmt.Errorf("%s: item %d: %w", path, i, err)
		}
		items = append(items, it)
	}
	return items, nil
}

// itemOf builds an Item from one raw object: normalised, its id found and
// stored under "id" when the object has none.
func itemOf(raw json.RawMessage, o LoadOptions) (Item, error) {
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return Item{}, errors.New("not a JSON object")
	}
	rewrite := false
	if o.Normalize != nil {
		f, err := o.Normalize(fields)
		if err != nil {
			return Item{}, err
		}
		fields, rewrite = f, true
	}
	id := ""
	for _, f := range o.IDFields {
		if v, ok := fields[f]; ok && v != nil {
			id = strings.TrimSpace(fmt.Sprint(v))
			if id != "" {
				break
			}
		}
	}
	if id == "" {
		return Item{}, fmt.Errorf("missing %s", strings.Join(o.IDFields, " or "))
	}
	if v, ok := fields["id"]; !ok || strings.TrimSpace(fmt.Sprint(v)) != id {
		fields["id"] = id
		rewrite = true
	}
	if rewrite {
		b, err := json.Marshal(fields)
		if err != nil {
			return Item{}, fmt.Errorf("item %s: %w", id, err)
		}
		raw = b
	}
	tt, _ := fields["task_type"].(string)
	return Item{ID: id, TaskType: tt, Raw: raw}, nil
}

// ReadItemsFile reads a file of item objects by its extension: .csv (a
// header row, then one item per row with every value a string), .jsonl
// (one object per non-blank line), otherwise JSON: an array of objects,
// {"data": [...]}, or an object whose values are the items (in file order).
func ReadItemsFile(path string) ([]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read items: %w", err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return readCSV(path, data)
	case ".jsonl":
		var out []json.RawMessage
		for n, line := range bytes.Split(data, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			if !json.Valid(line) || line[0] != '{' {
				return nil, fmt.Errorf("%s:%d: want one JSON object per line", path, n+1)
			}
			out = append(out, json.RawMessage(line))
		}
		return out, nil
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var wrapped struct {
			Data []json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(trimmed, &wrapped); err == nil && wrapped.Data != nil {
			return wrapped.Data, nil
		}
		vals, err := objectValues(trimmed)
		for _, v := range vals {
			if err == nil && (len(v) == 0 || v[0] != '{') {
				err = errors.New("a value is not an item object")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: want a JSON array of item objects, {\"data\": [...]}, or an object of items: %w", path, err)
		}
		return vals, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(trimmed, &raws); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of item objects: %w", path, err)
	}
	return raws, nil
}

// objectValues returns the values of a JSON object in file order.
func objectValues(data []byte) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func readCSV(path string, data []byte) ([]json.RawMessage, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: CSV header: %w", path, err)
	}
	var out []json.RawMessage
	for row := 2; ; row++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) != len(header) {
			return nil, fmt.Errorf("%s: row %d has %d fields, the header has %d", path, row, len(rec), len(header))
		}
		m := make(map[string]string, len(header))
		for i, h := range header {
			m[strings.TrimSpace(h)] = rec[i]
		}
		b, _ := json.Marshal(m)
		out = append(out, b)
	}
	return out, nil
}
