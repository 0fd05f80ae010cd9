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
	// IDField, when set (env.id_field), is the only field ids are read from:
	// an item without it is an error.
	IDField string
	// Files are the glob patterns tried in order in each split directory;
	// the first pattern that matches wins, and of its matches the first in
	// name order (default ["*.json"]). See [ReadItemsFile] for the formats.
	Files []string
	// Normalize, when set, rewrites each item object before its id is read
	// (a benchmark's field mapping); its error is reported with the file
	// and line of the item.
	Normalize func(map[string]any) (map[string]any, error)
	// Limit truncates every split to its first Limit items (0 = all).
	Limit int
}

// LoadSplitDir reads dir/{train,val,test}/: in each, one item file chosen
// by o.Files. Ids come from o.IDField when it is set, else from the first
// of o.IDFields an item has; a file where no item has one gets ids from
// each item's position (see [DerivedID]). Ids must be unique across
// splits. An item whose object has no "id" field gets one holding its id,
// so every consumer finds the id under the same key.
//
// Every error about an item names the file and line it came from: for a
// split that [WriteRatioSplit] generated, the user's source file (from
// the split's manifest), not the generated one.
func LoadSplitDir(dir string, o LoadOptions) (*Splits, error) {
	if o.IDField != "" {
		o.IDFields = []string{o.IDField}
	}
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
	gen := readRatioManifest(dir)
	out := &Splits{Files: map[string]string{}}
	splits := []struct {
		name string
		dst  *[]Item
	}{{SplitTrain, &out.Train}, {SplitVal, &out.Val}, {SplitTest, &out.Test}}
	files := make([]*splitFile, len(splits))
	withID := 0
	for i, sp := range splits {
		sub := filepath.Join(dir, sp.name)
		if _, err := os.Stat(sub); err != nil {
			return nil, fmt.Errorf("split dir %s: missing %s/ (a split dir needs train/, val/ and test/)", dir, sp.name)
		}
		file, err := pickFile(sub, o.Files)
		if err != nil {
			return nil, err
		}
		if files[i], err = parseSplitFile(file, sp.name, gen, o); err != nil {
			return nil, err
		}
		withID += files[i].withID
	}
	// Ids come from the items, or, when no item of any split has one (and
	// no id field was named), from their positions. Data where some items
	// have ids and others not is an error: a misspelt id is not silently
	// replaced.
	derive := withID == 0 && o.IDField == ""
	seen := map[string]string{}
	for i, sp := range splits {
		f := files[i]
		items, err := f.items(derive, o)
		if err != nil {
			return nil, err
		}
		for j, it := range items {
			if prev, dup := seen[it.ID]; dup {
				return nil, fmt.Errorf("%s: item %q also appears at %s (ids must be unique and splits must not overlap)", f.locs[j], it.ID, prev)
			}
			seen[it.ID] = f.locs[j]
		}
		if o.Limit > 0 && len(items) > o.Limit {
			items = items[:o.Limit]
		}
		*sp.dst = items
		out.Files[sp.name] = f.path
	}
	return out, nil
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

// DerivedID is the id of an item without one: "row-N" for the N-th item
// (from 1) of a ratio split's source file, "<split>-row-N" for the N-th
// item of a split directory's file. It stays the same as long as the rows
// before it do.
func DerivedID(split string, row int) string {
	if split == "" {
		return fmt.Sprintf("row-%d", row)
	}
	return fmt.Sprintf("%s-row-%d", split, row)
}

// splitFile is one split's item file, parsed: each item's object, the id
// it carries ("" if none), and where it came from ("file:line", the user's
// source file when the split was generated by WriteRatioSplit).
type splitFile struct {
	path    string
	locs    []string
	rows    []int
	idSplit string // the split named in derived ids ("" for a ratio split)
	fields  []map[string]any
	raws    []json.RawMessage
	ids     []string
	norm    bool
	withID  int
}

func parseSplitFile(path, split string, gen *RatioManifest, o LoadOptions) (*splitFile, error) {
	raws, err := readItems(path)
	if err != nil {
		return nil, err
	}
	f := &splitFile{path: path, idSplit: split, norm: o.Normalize != nil}
	src := gen.sources(split, path, len(raws))
	if src != nil {
		f.idSplit = ""
	}
	for i, r := range raws {
		loc, row := fmt.Sprintf("%s:%d", path, r.Line), i+1
		if src != nil {
			loc, row = fmt.Sprintf("%s:%d", gen.SourceDataPath, src[i].Line), src[i].Row
		}
		fields, err := objectOf(r.Raw, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", loc, err)
		}
		id := idOf(fields, o.IDFields)
		if id != "" {
			f.withID++
		}
		f.locs, f.rows = append(f.locs, loc), append(f.rows, row)
		f.fields, f.raws, f.ids = append(f.fields, fields), append(f.raws, r.Raw), append(f.ids, id)
	}
	return f, nil
}

// items builds the file's items, numbering them by position when derive.
func (f *splitFile) items(derive bool, o LoadOptions) ([]Item, error) {
	items := make([]Item, 0, len(f.raws))
	for i := range f.raws {
		id := f.ids[i]
		if derive {
			id = DerivedID(f.idSplit, f.rows[i])
		}
		if id == "" {
			what := strings.Join(o.IDFields, " or ")
			if o.IDField != "" {
				return nil, fmt.Errorf("%s: missing %s (env.id_field)", f.locs[i], what)
			}
			return nil, fmt.Errorf("%s: missing %s (other items have one; give every item an id, or none to number them by position)", f.locs[i], what)
		}
		it, err := itemOf(f.fields[i], f.raws[i], id, f.norm)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.locs[i], err)
		}
		items = append(items, it)
	}
	return items, nil
}

// objectOf decodes one raw item and applies the benchmark's normalisation.
func objectOf(raw json.RawMessage, o LoadOptions) (map[string]any, error) {
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return nil, errors.New("not a JSON object")
	}
	if o.Normalize == nil {
		return fields, nil
	}
	f, err := o.Normalize(fields)
	if err == nil && f == nil {
		err = errors.New("the benchmark's normalisation returned no item")
	}
	return f, err
}

// idOf returns the first non-empty value of the id fields, or "".
func idOf(fields map[string]any, idFields []string) string {
	for _, f := range idFields {
		if v, ok := fields[f]; ok && v != nil {
			if id := strings.TrimSpace(fmt.Sprint(v)); id != "" {
				return id
			}
		}
	}
	return ""
}

// itemOf builds an Item from one object: its id stored under "id" when the
// object has none (or another value there).
func itemOf(fields map[string]any, raw json.RawMessage, id string, rewrite bool) (Item, error) {
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

// sourceItem is one raw item and the line of its source file it starts on.
type sourceItem struct {
	Raw  json.RawMessage
	Line int
}

// ReadItemsFile reads a file of item objects by its extension: .csv (a
// header row, then one item per row with every value a string), .jsonl
// (one object per non-blank line), otherwise JSON: an array of objects,
// {"data": [...]}, or an object whose values are the items (in file order).
// Errors name the file and line.
func ReadItemsFile(path string) ([]json.RawMessage, error) {
	items, err := readItems(path)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(items))
	for i, it := range items {
		out[i] = it.Raw
	}
	return out, nil
}

func readItems(path string) ([]sourceItem, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read items: %w", err)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return readCSV(path, data)
	case ".jsonl":
		var out []sourceItem
		for n, line := range bytes.Split(data, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if n == 0 {
				line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
			}
			if len(line) == 0 {
				continue
			}
			if !json.Valid(line) || line[0] != '{' {
				return nil, fmt.Errorf("%s:%d: want one JSON object per line", path, n+1)
			}
			out = append(out, sourceItem{Raw: json.RawMessage(line), Line: n + 1})
		}
		return out, nil
	}
	return readJSON(path, data)
}

// readJSON reads the three JSON layouts, keeping each item's line.
func readJSON(path string, data []byte) ([]sourceItem, error) {
	if err := json.Unmarshal(data, new(any)); err != nil {
		return nil, jsonErr(path, data, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, _ := dec.Token()
	var out []sourceItem
	switch tok {
	case json.Delim('['):
		return elements(path, data, dec, false)
	case json.Delim('{'):
		// {"data": [...]} when "data" holds an array, else an object of items.
		var wrapped struct {
			Data []json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(data, &wrapped); err == nil && wrapped.Data != nil {
			for dec.More() {
				key, _ := dec.Token()
				if key == "data" {
					if t, _ := dec.Token(); t == json.Delim('[') {
						out, err = elements(path, data, dec, false)
						if err != nil {
							return nil, err
						}
						continue
					}
				}
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return nil, jsonErr(path, data, err)
				}
			}
			return out, nil
		}
		return elements(path, data, dec, true)
	}
	return nil, fmt.Errorf("%s:%d: want a JSON array of item objects, {\"data\": [...]}, or an object of items", path, lineAt(data, 0))
}

// elements reads the values of the array or object dec has just opened;
// each must be an object.
func elements(path string, data []byte, dec *json.Decoder, keyed bool) ([]sourceItem, error) {
	var out []sourceItem
	for dec.More() {
		if keyed {
			if _, err := dec.Token(); err != nil {
				return nil, jsonErr(path, data, err)
			}
		}
		line := lineAt(data, dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, jsonErr(path, data, err)
		}
		if len(v) == 0 || v[0] != '{' {
			return nil, fmt.Errorf("%s:%d: want a JSON array of item objects, {\"data\": [...]}, or an object of items: a value is not an item object", path, line)
		}
		out = append(out, sourceItem{Raw: v, Line: line})
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonErr(path, data, err)
	}
	return out, nil
}

// lineAt is the line (from 1) of the first byte at or after off that is
// not white space or a JSON separator.
func lineAt(data []byte, off int64) int {
	i := int(off)
	for i < len(data) && strings.IndexByte(" \t\r\n,:", data[i]) >= 0 {
		i++
	}
	return bytes.Count(data[:min(i, len(data))], []byte("\n")) + 1
}

// jsonErr names path and, where the error has an offset, the line.
func jsonErr(path string, data []byte, err error) error {
	line := func(off int64) int { return bytes.Count(data[:min(int(off), len(data))], []byte("\n")) + 1 }
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%s:%d: invalid JSON: %w", path, line(se.Offset), err)
	case errors.As(err, &te):
		return fmt.Errorf("%s:%d: %w", path, line(te.Offset), err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

func readCSV(path string, data []byte) ([]sourceItem, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: CSV header: %w", path, err)
	}
	var out []sourceItem
	for row := 2; ; row++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: %w", path, pe.StartLine, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("%s:%d: row %d has %d fields, the header has %d", path, line, row, len(rec), len(header))
		}
		m := make(map[string]string, len(header))
		for i, h := range header {
			m[strings.TrimSpace(h)] = rec[i]
		}
		b, _ := json.Marshal(m)
		out = append(out, sourceItem{Raw: b, Line: line})
	}
	return out, nil
}
