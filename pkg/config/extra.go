package config

import (
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"
)

// DecodeExtra decodes the benchmark-specific env keys (Extra) into dst, a
// pointer to a struct whose fields carry yaml tags. It is strict: a key
// dst does not name, or a value of the wrong type, is a *[FieldError]
// naming the file that set it and the key as "env.KEY". Fields whose keys
// are absent keep their values, so dst may hold the benchmark's defaults.
// Secret values decode into string or [Secret] fields.
func (e *Env) DecodeExtra(dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("config: DecodeExtra: want a non-nil pointer to a struct, got %T", dst)
	}
	root := newMap("")
	for _, k := range sortedKeys(e.Extra) {
		n, ok := e.extra[k]
		if !ok {
			// Set in Go rather than loaded: rebuild the node from the value.
			var err error
			if n, err = nodeOf(e.Extra[k]); err != nil {
				return &FieldError{Field: "env." + k, Msg: err.Error()}
			}
		}
		root.add(k, n)
	}
	d := &decoder{src: map[string]string{}}
	return d.decodeStruct(v.Elem(), root, "env")
}

// nodeOf builds a tree from a Go value, revealing Secrets so that they
// decode into the benchmark's fields.
func nodeOf(x any) (*tnode, error) {
	if s, ok := x.(Secret); ok {
		return &tnode{val: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.Reveal()}}, nil
	}
	if m, ok := x.(map[string]any); ok {
		t := newMap("")
		for _, k := range sortedKeys(m) {
			kid, err := nodeOf(m[k])
			if err != nil {
				return nil, err
			}
			t.add(k, kid)
		}
		return t, nil
	}
	var y yaml.Node
	if err := y.Encode(x); err != nil {
		return nil, err
	}
	return fromYAML(&y, "", "", false)
}
