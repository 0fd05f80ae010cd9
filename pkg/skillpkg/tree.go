package skillpkg

// MapText returns a copy of p whose every file's text is f of its path and
// text; paths and execute bits are kept. A result that is not text (a NUL
// byte, invalid UTF-8) is refused like any other ([CheckText]). No bound is
// checked: a transform for display (redaction, say) must not make a valid
// package invalid by a byte.
func (p *Package) MapText(f func(name, text string) string) (*Package, error) {
	q := p.Clone()
	for name, text := range q.files {
		out := f(name, text)
		if err := CheckText(name, out); err != nil {
			return nil, err
		}
		q.files[name] = out
	}
	return q, nil
}
