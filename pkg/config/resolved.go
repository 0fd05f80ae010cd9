package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
)

// benchHashExcluded are env keys that do not change what a rollout
// measures: where runs and generated splits are written, the rollout pool
// size, and the initial skill's path (rollouts are keyed by the skill's
// content hash, so runs that differ only in skill_init share a cache).
var benchHashExcluded = []string{"out_root", "workers", "skill_init", "split_output_dir"}

// Resolved returns the fully resolved configuration as YAML, in schema
// order, with every secret redacted. Loading it again yields the same
// configuration, less the secrets.
func (c *Config) Resolved() ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{c.node()}}
	doc.HeadComment = "resolved skillfleet configuration; secrets are redacted"
	if c.File != "" {
		doc.HeadComment += "\nloaded from " + c.File
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode resolved config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode resolved config: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteResolved writes [Config.Resolved] to path atomically (a temporary
// file in the same directory, then a rename).
func (c *Config) WriteResolved(path string) error {
	data, err := c.Resolved()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, data); err != nil {
		return fmt.Errorf("resolved config: %w", err)
	}
	return nil
}

// MarshalYAML writes the configuration as Resolved does (secrets redacted).
func (c Config) MarshalYAML() (any, error) { return c.node(), nil }

// MarshalJSON writes the configuration as a JSON object of sections, keys
// as in YAML, durations as strings, secrets redacted.
func (c Config) MarshalJSON() ([]byte, error) {
	var v any
	if err := c.node().Decode(&v); err != nil {
		return nil, fmt.Errorf("marshal config: %w", err)
	}
	return json.Marshal(v)
}

// MarshalYAML writes the model section with its prefixed keys flattened.
func (m Model) MarshalYAML() (any, error) { return encodeStruct(reflect.ValueOf(m)), nil }

// BenchHash identifies the benchmark-relevant part of the configuration
// for cache keys: the env section without out_root, workers, skill_init
// and split_output_dir. It is the first 16 hex digits of the SHA-256 of
// its canonical JSON (sorted keys). Secret values are not part of it.
func (c *Config) BenchHash() string {
	var env map[string]any
	if err := c.envNode().Decode(&env); err != nil {
		// The node was built from Go values; decoding it cannot fail.
		panic("config: decode env node: " + err.Error())
	}
	for _, k := range benchHashExcluded {
		delete(env, k)
	}
	data, err := json.Marshal(env)
	if err != nil {
		panic("config: marshal env: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// node builds the configuration as a YAML mapping of sections.
func (c *Config) node() *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode}
	v := reflect.ValueOf(c).Elem()
	for _, f := range fieldsOf(v.Type()) {
		val := encodeValue(v.FieldByIndex(f.index))
		if f.key == "env" {
			val = c.envNode()
		}
		out.Content = append(out.Content, keyNode(f.key), val)
	}
	return out
}

func (c *Config) envNode() *yaml.Node {
	n := encodeStruct(reflect.ValueOf(c.Env))
	for _, k := range sortedKeys(c.Env.Extra) {
		n.Content = append(n.Content, keyNode(k), encodeAny(c.Env.Extra[k]))
	}
	return n
}

func keyNode(k string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}
}

func nullNode() *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}

func encodeStruct(v reflect.Value) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range fieldsOf(v.Type()) {
		n.Content = append(n.Content, keyNode(f.key), encodeValue(v.FieldByIndex(f.index)))
	}
	return n
}

func encodeValue(v reflect.Value) *yaml.Node {
	switch v.Type() {
	case secretType:
		return encodeAny(v.Interface())
	case durationType:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: time.Duration(v.Int()).String()}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nullNode()
		}
		return encodeValue(v.Elem())
	case reflect.Struct:
		return encodeStruct(v)
	case reflect.Slice:
		n := encodeAny(v.Interface())
		if v.Type().Elem().Kind() == reflect.String {
			n.Kind, n.Tag, n.Style = yaml.SequenceNode, "!!seq", yaml.FlowStyle
		}
		return n
	}
	return encodeAny(v.Interface())
}

// encodeAny encodes a plain value; Secrets come out redacted.
func encodeAny(x any) *yaml.Node {
	if s, ok := x.(Secret); ok {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.String()}
	}
	if x == nil {
		return nullNode()
	}
	var n yaml.Node
	if err := n.Encode(x); err != nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprint(x)}
	}
	return &n
}
