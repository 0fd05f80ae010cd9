package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// tnode is one value of the merged configuration tree: either a mapping
// (kids) or any other YAML value (val). Every node remembers the file it
// came from, so errors found after merging still name the right file.
type tnode struct {
	file string
	val  *yaml.Node
	kids map[string]*tnode
	keys []string // kids in insertion order
}

func newMap(file string) *tnode {
	return &tnode{file: file, kids: map[string]*tnode{}}
}

func (n *tnode) isMap() bool { return n.kids != nil }

func (n *tnode) isNull() bool {
	return !n.isMap() && n.val.Kind == yaml.ScalarNode && n.val.ShortTag() == "!!null"
}

func (n *tnode) add(key string, kid *tnode) {
	if _, ok := n.kids[key]; !ok {
		n.keys = append(n.keys, key)
	}
	n.kids[key] = kid
}

func (n *tnode) remove(key string) {
	if _, ok := n.kids[key]; !ok {
		return
	}
	delete(n.kids, key)
	for i, k := range n.keys {
		if k == key {
			n.keys = append(n.keys[:i:i], n.keys[i+1:]...)
			break
		}
	}
}

// lookup returns the node at a dotted path, or nil.
func (n *tnode) lookup(path []string) *tnode {
	for _, k := range path {
		if n == nil || !n.isMap() {
			return nil
		}
		n = n.kids[k]
	}
	return n
}

// parent returns the mapping that holds path's last key, creating the
// mappings on the way; nil if a non-mapping value is in the way.
func (n *tnode) parent(path []string, file string) *tnode {
	for _, k := range path[:len(path)-1] {
		kid, ok := n.kids[k]
		if !ok {
			kid = newMap(file)
			n.add(k, kid)
		}
		if !kid.isMap() {
			return nil
		}
		n = kid
	}
	return n
}

// insertStrict puts kid at path. Within one file a key may appear nested
// and flat, but not twice: a second value for a key is an error, whose
// Field is relative to n.
func (n *tnode) insertStrict(path []string, kid *tnode) *FieldError {
	twice := &FieldError{File: kid.file, Field: strings.Join(path, "."), Msg: "given twice"}
	p := n.parent(path, kid.file)
	if p == nil {
		return twice
	}
	key := path[len(path)-1]
	old, ok := p.kids[key]
	if !ok {
		p.add(key, kid)
		return nil
	}
	if !old.isMap() || !kid.isMap() {
		return twice
	}
	for _, k := range kid.keys {
		if fe := old.insertStrict([]string{k}, kid.kids[k]); fe != nil {
			fe.Field = joinPath(strings.Join(path, "."), fe.Field)
			return fe
		}
	}
	return nil
}

// set puts kid at path, replacing what is there (later overrides win).
func (n *tnode) set(path []string, kid *tnode) *FieldError {
	p := n.parent(path, kid.file)
	if p == nil {
		return &FieldError{File: kid.file, Field: strings.Join(path, "."), Msg: "conflicts with a non-mapping value"}
	}
	p.add(path[len(path)-1], kid)
	return nil
}

// merge deep-merges child over base: mappings merge key by key, anything
// else in child replaces base.
func merge(base, child *tnode) *tnode {
	if base == nil {
		return child
	}
	if child == nil {
		return base
	}
	if !base.isMap() || !child.isMap() {
		return child
	}
	out := newMap(child.file)
	for _, k := range base.keys {
		out.add(k, base.kids[k])
	}
	for _, k := range child.keys {
		out.add(k, merge(out.kids[k], child.kids[k]))
	}
	return out
}

// fromYAML converts a YAML value into a tree. At the top level a key with
// dots ("train.seed") is the flat spelling of a nested key, and a null
// section is an empty one.
func fromYAML(y *yaml.Node, file, path string, top bool) (*tnode, error) {
	for y.Kind == yaml.AliasNode {
		y = y.Alias
	}
	if y.Kind == yaml.DocumentNode {
		if len(y.Content) == 0 {
			return newMap(file), nil
		}
		return fromYAML(y.Content[0], file, path, top)
	}
	if y.Kind != yaml.MappingNode {
		return &tnode{file: file, val: y}, nil
	}
	m := newMap(file)
	for i := 0; i+1 < len(y.Content); i += 2 {
		k, v := y.Content[i], y.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, &FieldError{File: file, Field: path, Msg: "keys must be strings"}
		}
		key := k.Value
		kp := joinPath(path, key)
		kid, err := fromYAML(v, file, kp, false)
		if err != nil {
			return nil, err
		}
		keyPath := []string{key}
		if top {
			keyPath = strings.Split(key, ".")
			for _, part := range keyPath {
				if part == "" {
					return nil, &FieldError{File: file, Field: key, Msg: "empty key segment"}
				}
			}
			if len(keyPath) == 1 && kid.isNull() {
				kid = newMap(file)
			}
		}
		if fe := m.insertStrict(keyPath, kid); fe != nil {
			fe.Field = joinPath(path, fe.Field)
			return nil, fe
		}
	}
	return m, nil
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}
