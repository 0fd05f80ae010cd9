package config

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// baseKey names a file's parent.
const baseKey = "_base_"

// keyAliases are keys read as another key. They are renamed in each file
// before merging, so precedence between a parent and a child holds
// whichever spelling either used.
var keyAliases = []struct {
	from, to string
	legacy   bool // warn that the spelling is outdated
}{
	{"gradient.analyst_workers", "runtime.optimizer_concurrency", false},
	{"model.azure_endpoint", "model.azure_openai_endpoint", true},
	{"model.azure_api_version", "model.azure_openai_api_version", true},
	{"model.azure_api_key", "model.azure_openai_api_key", true},
}

// Load reads the config file at path with its _base_ parents, applies the
// overrides ("section.key=value", later ones win), and returns the
// normalised, validated configuration. Every error is a *[FieldError].
//
// Override values are cast like SkillOpt's: true/yes/false/no become
// booleans, then integers, then floats, else strings; "null" is null, and
// a value starting with "[" or "{" is read as YAML flow syntax
// (leading_words=[MUST,NEVER]).
func Load(path string, overrides []string) (*Config, error) {
	if path == "" {
		return nil, &FieldError{Msg: "no config file given"}
	}
	l := &loader{}
	root, err := l.file(path, nil)
	if err != nil {
		return nil, err
	}
	set, err := parseOverrides(overrides)
	if err != nil {
		return nil, err
	}
	if err := l.renameAliases(set); err != nil {
		return nil, err
	}
	root = merge(root, set)

	c := Default()
	c.File = path
	c.Files = l.files
	if err := c.decode(root); err != nil {
		return nil, err
	}
	c.Warnings = append(l.warnings, c.Warnings...)
	if err := c.normalize(); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := c.checkFiles(); err != nil {
		return nil, err
	}
	return c, nil
}

type loader struct {
	files    []string
	warnings []Warning
}

// file reads one file and its parents. chain is the files that inherit
// from it, innermost last.
func (l *loader) file(path string, chain []string) (*tnode, error) {
	path = filepath.Clean(path)
	child := ""
	if len(chain) > 0 {
		child = chain[len(chain)-1]
	}
	for i, p := range chain {
		if p == path {
			cycle := append(append([]string(nil), chain[i:]...), path)
			return nil, &FieldError{File: child, Field: baseKey, Msg: "inheritance cycle: " + strings.Join(cycle, " -> ")}
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		msg := "read: " + err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			msg = "file not found"
		}
		if child != "" {
			return nil, &FieldError{File: child, Field: baseKey, Msg: msg + ": " + path}
		}
		return nil, &FieldError{File: path, Msg: msg}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &FieldError{File: path, Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 && doc.Content[0].Kind != yaml.MappingNode {
		if doc.Content[0].ShortTag() != "!!null" {
			return nil, &FieldError{File: path, Msg: "top level must be a mapping"}
		}
		doc.Content = nil
	}
	t, err := fromYAML(&doc, path, "", true)
	if err != nil {
		return nil, err
	}
	if err := l.renameAliases(t); err != nil {
		return nil, err
	}

	b, ok := t.kids[baseKey]
	if !ok {
		l.files = append(l.files, path)
		return t, nil
	}
	t.remove(baseKey)
	if b.isMap() || b.val.Kind != yaml.ScalarNode || b.isNull() || b.val.ShortTag() != "!!str" || b.val.Value == "" {
		return nil, &FieldError{File: path, Field: baseKey, Msg: "wrong type: want a file path, got " + describe(b)}
	}
	basePath := b.val.Value
	if !filepath.IsAbs(basePath) {
		basePath = filepath.Join(filepath.Dir(path), basePath)
	}
	base, err := l.file(basePath, append(chain, path))
	if err != nil {
		return nil, err
	}
	l.files = append(l.files, path)
	return merge(base, t), nil
}

// renameAliases moves aliased keys of one source to their canonical path.
func (l *loader) renameAliases(t *tnode) error {
	for _, a := range keyAliases {
		from := strings.Split(a.from, ".")
		n := t.lookup(from)
		if n == nil {
			continue
		}
		t.lookup(from[:len(from)-1]).remove(from[len(from)-1])
		if t.lookup(strings.Split(a.to, ".")) != nil {
			return &FieldError{File: n.file, Field: a.from, Msg: "given twice (also as " + a.to + ")"}
		}
		if fe := t.insertStrict(strings.Split(a.to, "."), n); fe != nil {
			return fe
		}
		if a.legacy {
			l.warnings = append(l.warnings, Warning{File: n.file, Field: a.from, Msg: "legacy key, read as " + a.to})
		}
	}
	return nil
}

// parseOverrides turns "section.key=value" strings into a tree whose
// nodes come from SourceOverride.
func parseOverrides(overrides []string) (*tnode, error) {
	root := newMap(SourceOverride)
	for _, o := range overrides {
		key, raw, ok := strings.Cut(o, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, &FieldError{File: SourceOverride, Field: o, Msg: "want section.key=value"}
		}
		path := strings.Split(key, ".")
		for _, p := range path {
			if p == "" {
				return nil, &FieldError{File: SourceOverride, Field: key, Msg: "empty key segment"}
			}
		}
		kid, err := castOverride(key, raw)
		if err != nil {
			return nil, err
		}
		if fe := root.set(path, kid); fe != nil {
			return nil, fe
		}
	}
	return root, nil
}

// castOverride types an override value: booleans, then integers, then
// floats, else a string; flow YAML for lists and maps.
func castOverride(key, raw string) (*tnode, error) {
	s := strings.TrimSpace(raw)
	if strings.HasPrefix(s, "[") || strings.HasPrefix(s, "{") {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(s), &doc); err != nil {
			return nil, &FieldError{File: SourceOverride, Field: key, Msg: "invalid value: " + strings.TrimPrefix(err.Error(), "yaml: ")}
		}
		return fromYAML(&doc, SourceOverride, key, false)
	}
	scalar := func(tag, v string) *tnode {
		return &tnode{file: SourceOverride, val: &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}}
	}
	switch strings.ToLower(s) {
	case "true", "yes":
		return scalar("!!bool", "true"), nil
	case "false", "no":
		return scalar("!!bool", "false"), nil
	case "null", "~":
		return scalar("!!null", "null"), nil
	}
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return scalar("!!int", s), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return scalar("!!float", s), nil
	}
	return scalar("!!str", raw), nil
}
