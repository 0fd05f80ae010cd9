package materialize

import (
	"fmt"
	"strings"
)

// byIDSpec is a benchmark whose manifest ids match one field of its
// source's rows.
type byIDSpec struct {
	benchmark string
	// keyField is the source's field the ids match (the manifest's
	// source_id_field wins).
	keyField string
	// key, when set, makes a row's id instead (from the file it is in and
	// the row); ok false skips the row.
	key    func(file string, row map[string]any) (id string, ok bool)
	fields []string
	item   func(id string, row map[string]any) (map[string]any, error)
}

// byID selects, for every id of the manifest, the one source row whose
// key field equals it and turns it into an item; a key found twice, a row
// the item refuses, or an id without a row is an error naming it, and
// nothing is written then.
func byID(manifestDir string, sources []string, out string, b byIDSpec) (Counts, error) {
	m, err := ReadManifest(manifestDir)
	if err != nil {
		return nil, err
	}
	return byIDOf(m, sources, out, b)
}

// byIDOf is byID on a manifest already read.
func byIDOf(m *Manifest, sources []string, out string, b byIDSpec) (Counts, error) {
	manifestDir := m.Dir
	if m.Benchmark != "" && !strings.EqualFold(m.Benchmark, b.benchmark) {
		return nil, fmt.Errorf("manifest %s is for %s, not %s", manifestDir, m.Benchmark, b.benchmark)
	}
	keyField := b.keyField
	if m.SourceID != "" {
		keyField = m.SourceID
	}
	files, err := sourceFiles(sources)
	if err != nil {
		return nil, err
	}
	wanted := m.Wanted()
	rows := map[string]map[string]any{}
	where := map[string]string{}
	for _, file := range files {
		err := eachRow(file, func(at string, row map[string]any) error {
			key, ok := idString(row[keyField])
			if b.key != nil {
				key, ok = b.key(file, row)
			}
			if !ok || !wanted[key] {
				return nil
			}
			if prev, dup := where[key]; dup {
				return fmt.Errorf("%s: %s %s is also at %s", at, keyField, key, prev)
			}
			item, err := b.item(key, row)
			if err != nil {
				return fmt.Errorf("%s: %s %s: %w", at, keyField, key, err)
			}
			rows[key], where[key] = item, at
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return m.write(out, rows, b.fields, files, b.benchmark)
}
