package registry

import (
	"reflect"
	"sort"
	"strings"
)

// configTypes are the config types of the benchmarks, by name, recorded
// as the registry is built.
var configTypes = map[string]reflect.Type{}

// ConfigKeys lists the env keys benchmark name reads (its config type's
// JSON keys, the common ones included), sorted; false for an unknown
// benchmark.
func ConfigKeys(name string) ([]string, bool) {
	t, ok := configTypes[name]
	if !ok {
		return nil, false
	}
	seen := map[string]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case tag == "-":
			case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
				walk(f.Type)
			case tag != "":
				seen[tag] = true
			case f.IsExported():
				seen[f.Name] = true
			}
		}
	}
	walk(t)
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, true
}
