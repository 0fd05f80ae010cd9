package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var (
	secretType   = reflect.TypeFor[Secret]()
	durationType = reflect.TypeFor[time.Duration]()
	envType      = reflect.TypeFor[Env]()
)

// field is one key of a struct's schema.
type field struct {
	key   string
	index []int
}

// fieldsOf lists a struct's keys from its yaml tags. Fields tagged
// `yaml:",inline"` contribute their keys, each preceded by the field's
// `prefix` tag; untagged fields use their lower-cased name, as yaml.v3 does.
func fieldsOf(t reflect.Type) []field {
	var out []field
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			idx := append(append([]int(nil), index...), i)
			if slices.Contains(strings.Split(opts, ","), "inline") && f.Type.Kind() == reflect.Struct {
				walk(f.Type, prefix+f.Tag.Get("prefix"), idx)
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			out = append(out, field{key: prefix + name, index: idx})
		}
	}
	walk(t, "", nil)
	return out
}

// decoder sets Go values from a tree, recording where each came from.
type decoder struct {
	src      map[string]string
	warnings []Warning
	// extra collects env keys the Env struct does not name.
	extra     map[string]*tnode
	extraKeys []string
	// hint suggests a section for an unknown top-level key.
	hint func(key string) string
}

// decode sets c's fields from the merged tree.
func (c *Config) decode(root *tnode) error {
	d := &decoder{src: map[string]string{}, extra: map[string]*tnode{}, hint: sectionHint}
	if err := d.decodeStruct(reflect.ValueOf(c).Elem(), root, ""); err != nil {
		return err
	}
	c.src = d.src
	c.Env.extra = d.extra
	if len(d.extraKeys) > 0 {
		c.Env.Extra = make(map[string]any, len(d.extraKeys))
	}
	for _, k := range d.extraKeys {
		v, err := d.extraValue(k, d.extra[k], "env."+k)
		if err != nil {
			return err
		}
		c.Env.Extra[k] = v
	}
	c.Warnings = append(c.Warnings, d.warnings...)
	return nil
}

// extraValue converts an env key the Env struct does not name: mappings
// become map[string]any, and a scalar under a secret-like key (at any
// depth of mappings) a Secret.
func (d *decoder) extraValue(key string, n *tnode, path string) (any, error) {
	if n.isMap() {
		m := make(map[string]any, len(n.keys))
		for _, k := range n.keys {
			v, err := d.extraValue(k, n.kids[k], joinPath(path, k))
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	}
	if secretKey(key) && n.val.Kind == yaml.ScalarNode && !n.isNull() {
		s := n.val.Value
		if s == Redacted {
			s = ""
		}
		if s != "" {
			d.warnSecret(n, path)
		}
		return NewSecret(s), nil
	}
	return toAny(n, path)
}

// sectionHint returns " (did you mean section.key?)" when key is a key of
// exactly one section.
func sectionHint(key string) string {
	var found []string
	t := reflect.TypeFor[Config]()
	for _, sec := range fieldsOf(t) {
		for _, f := range fieldsOf(t.FieldByIndex(sec.index).Type) {
			if f.key == key {
				found = append(found, sec.key+"."+key)
			}
		}
	}
	for _, a := range keyAliases {
		if strings.HasSuffix(a.from, "."+key) {
			found = append(found, a.from)
		}
	}
	if len(found) != 1 {
		return ""
	}
	return " (did you mean " + found[0] + "?)"
}

func (d *decoder) decodeStruct(v reflect.Value, n *tnode, path string) error {
	if !n.isMap() {
		if n.isNull() {
			return nil
		}
		return wrongType(n, path, "mapping")
	}
	byKey := map[string]field{}
	for _, f := range fieldsOf(v.Type()) {
		byKey[f.key] = f
	}
	// Every bad key of the mapping is reported, not only the first: a
	// file's mistakes are mended in one go.
	var errs []error
	for _, k := range n.keys {
		kid := n.kids[k]
		kp := joinPath(path, k)
		f, ok := byKey[k]
		if !ok {
			if v.Type() == envType && d.extra != nil {
				d.extra[k] = kid
				d.extraKeys = append(d.extraKeys, k)
				d.src[kp] = kid.file
				continue
			}
			msg := "unknown key"
			if path == "" && d.hint != nil {
				msg += d.hint(k)
			} else if h := keyHint(k, byKey); h != "" {
				msg += " (did you mean " + joinPath(path, h) + "?)"
			}
			errs = append(errs, &FieldError{File: kid.file, Field: kp, Msg: msg})
			continue
		}
		if err := d.value(v.FieldByIndex(f.index), kid, kp); err != nil {
			errs = append(errs, err)
			continue
		}
		d.src[kp] = kid.file
	}
	return errors.Join(errs...)
}

// keyHint is the one key of known closest to key in spelling (at most
// two edits away), or "".
func keyHint[T any](key string, known map[string]T) string {
	keys := make([]string, 0, len(known))
	for k := range known {
		keys = append(keys, k)
	}
	return ClosestKey(key, keys)
}

// ClosestKey is the one key of known at most two edits from key (the
// Levenshtein distance), or "" when there is none or two are as close:
// the "did you mean" of an unknown key.
func ClosestKey(key string, known []string) string {
	best, bestD, ties := "", 3, 0
	for _, k := range known {
		switch d := editDistance(key, k); {
		case d < bestD:
			best, bestD, ties = k, d, 1
		case d == bestD:
			ties++
		}
	}
	if ties != 1 {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (d *decoder) warnSecret(n *tnode, path string) {
	d.warnings = append(d.warnings, Warning{File: n.file, Field: path,
		Msg: "secret written in a config file; keep it in an environment variable instead"})
}

// value sets v from n.
func (d *decoder) value(v reflect.Value, n *tnode, path string) error {
	switch v.Type() {
	case secretType:
		s, err := scalarText(n, path, "string")
		if err != nil {
			return err
		}
		if s == Redacted {
			s = ""
		}
		if s != "" {
			d.warnSecret(n, path)
		}
		v.Set(reflect.ValueOf(NewSecret(s)))
		return nil
	case durationType:
		dur, err := parseDuration(n, path)
		if err != nil {
			return err
		}
		v.SetInt(int64(dur))
		return nil
	}

	kind := v.Kind()
	switch kind {
	case reflect.Pointer:
		if n.isNull() {
			v.Set(reflect.Zero(v.Type()))
			return nil
		}
		p := reflect.New(v.Type().Elem())
		if err := d.value(p.Elem(), n, path); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Struct:
		return d.decodeStruct(v, n, path)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return &FieldError{File: n.file, Field: path, Msg: "cannot decode into a map without string keys"}
		}
		if n.isNull() {
			v.Set(reflect.Zero(v.Type()))
			return nil
		}
		if !n.isMap() {
			return wrongType(n, path, "mapping")
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.keys))
		for _, k := range n.keys {
			e := reflect.New(v.Type().Elem()).Elem()
			if err := d.value(e, n.kids[k], joinPath(path, k)); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
		v.Set(m)
		return nil
	case reflect.Slice:
		return d.slice(v, n, path)
	case reflect.Interface:
		x, err := toAny(n, path)
		if err != nil {
			return err
		}
		if x == nil {
			v.Set(reflect.Zero(v.Type()))
		} else {
			v.Set(reflect.ValueOf(x))
		}
		return nil
	}

	want := map[reflect.Kind]string{reflect.Bool: "boolean", reflect.String: "string"}[kind]
	switch {
	case v.CanInt(), v.CanUint():
		want = "integer"
	case v.CanFloat():
		want = "number"
	}
	if want == "" {
		return &FieldError{File: n.file, Field: path, Msg: "cannot decode into " + v.Type().String()}
	}
	if n.isNull() {
		v.Set(reflect.Zero(v.Type()))
		return nil
	}
	s, err := scalarText(n, path, want)
	if err != nil {
		return err
	}
	switch {
	case kind == reflect.String:
		v.SetString(s)
	case kind == reflect.Bool:
		b, ok := parseBool(s)
		if !ok {
			return wrongType(n, path, want)
		}
		v.SetBool(b)
	case v.CanInt():
		i, ok := parseInt(n.val, s)
		if !ok {
			return wrongType(n, path, want)
		}
		if v.OverflowInt(i) {
			return &FieldError{File: n.file, Field: path, Msg: "out of range: " + s}
		}
		v.SetInt(i)
	case v.CanUint():
		i, ok := parseInt(n.val, s)
		if !ok || i < 0 {
			return wrongType(n, path, "non-negative integer")
		}
		if v.OverflowUint(uint64(i)) {
			return &FieldError{File: n.file, Field: path, Msg: "out of range: " + s}
		}
		v.SetUint(uint64(i))
	default:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return wrongType(n, path, want)
		}
		v.SetFloat(f)
	}
	return nil
}

// slice decodes a YAML list; a list of strings may also be written as one
// comma-separated string.
func (d *decoder) slice(v reflect.Value, n *tnode, path string) error {
	if n.isNull() {
		v.Set(reflect.Zero(v.Type()))
		return nil
	}
	if !n.isMap() && n.val.Kind == yaml.ScalarNode && v.Type().Elem().Kind() == reflect.String {
		var parts []string
		for p := range strings.SplitSeq(n.val.Value, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		out := reflect.MakeSlice(v.Type(), len(parts), len(parts))
		for i, p := range parts {
			out.Index(i).SetString(p)
		}
		v.Set(out)
		return nil
	}
	if n.isMap() || n.val.Kind != yaml.SequenceNode {
		return wrongType(n, path, "list")
	}
	out := reflect.MakeSlice(v.Type(), len(n.val.Content), len(n.val.Content))
	for i, y := range n.val.Content {
		ep := fmt.Sprintf("%s[%d]", path, i)
		e, err := fromYAML(y, n.file, ep, false)
		if err != nil {
			return err
		}
		if err := d.value(out.Index(i), e, ep); err != nil {
			return err
		}
	}
	v.Set(out)
	return nil
}

// scalarText returns a scalar's text, or a wrong-type error naming want.
func scalarText(n *tnode, path, want string) (string, error) {
	if n.isMap() || n.val.Kind != yaml.ScalarNode {
		return "", wrongType(n, path, want)
	}
	if n.isNull() {
		return "", nil
	}
	return n.val.Value, nil
}

func wrongType(n *tnode, path, want string) *FieldError {
	return &FieldError{File: n.file, Field: path, Msg: "wrong type: want " + want + ", got " + describe(n)}
}

// describe names a value for an error message.
func describe(n *tnode) string {
	switch {
	case n.isMap():
		return "a mapping"
	case n.val.Kind == yaml.SequenceNode:
		return "a list"
	case n.isNull():
		return "null"
	}
	return strconv.Quote(n.val.Value)
}

func parseBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

func parseInt(y *yaml.Node, s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, true
	}
	if y.ShortTag() == "!!int" { // 0x1F, 0o17, 1_000
		if i, err := strconv.ParseInt(s, 0, 64); err == nil {
			return i, true
		}
	}
	return 0, false
}

// parseDuration reads a Go duration ("90s", "2m") or a number of seconds.
func parseDuration(n *tnode, path string) (time.Duration, error) {
	const want = `duration (like "90s") or seconds`
	if n.isNull() {
		return 0, nil
	}
	s, err := scalarText(n, path, want)
	if err != nil {
		return 0, err
	}
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) > math.MaxInt64/float64(time.Second) {
		return 0, wrongType(n, path, want)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// toAny converts a tree into plain YAML values: map[string]any, []any,
// strings, ints, floats, bools, nil.
func toAny(n *tnode, path string) (any, error) {
	if n.isMap() {
		m := make(map[string]any, len(n.keys))
		for _, k := range n.keys {
			v, err := toAny(n.kids[k], joinPath(path, k))
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	}
	var x any
	if err := n.val.Decode(&x); err != nil {
		return nil, &FieldError{File: n.file, Field: path, Msg: "invalid value: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	return x, nil
}

// secretKey reports whether an env key holds a credential by its name.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"api_key", "apikey", "secret", "password", "token"} {
		if k == s || strings.HasSuffix(k, "_"+s) {
			return true
		}
	}
	return false
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
