package pystr

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/runenames"
)

// Kind is the Python type of a literal [Value].
type Kind int

// The kinds of value ast.literal_eval returns.
const (
	KindNone Kind = iota
	KindBool
	KindInt
	KindFloat
	KindComplex
	KindStr
	KindBytes
	KindEllipsis
	KindTuple
	KindList
	KindSet
	KindDict
)

// Value is one Python value built from a literal.
type Value struct {
	Kind  Kind
	Bool  bool
	Int   *big.Int
	Float float64 // KindFloat; the real part of a KindComplex
	Imag  float64 // the imaginary part of a KindComplex
	Str   string  // KindStr; KindBytes holds its bytes here
	Items []Value // tuple, list and set items; dict keys
	Vals  []Value // dict values, parallel to Items
}

// ErrNotLiteral is returned (wrapped) for text ast.literal_eval rejects,
// whether Python would raise SyntaxError, ValueError or another error.
var ErrNotLiteral = errors.New("not a Python literal")

// maxIntDigits is CPython 3.11's limit on decimal integer literals
// (sys.get_int_max_str_digits()).
const maxIntDigits = 4300

// LiteralEval is ast.literal_eval(src) of CPython 3.11 for a str source:
// leading spaces and tabs are dropped, then src must be one expression
// made of literals: strings and bytes (any quotes and prefixes r, u, b, and
// their combinations; adjacent literals concatenate; escapes decoded,
// \N{NAME} included), integers and floats in every notation Python
// accepts (underscores, 0x/0o/0b, exponents, imaginary j), +/- on a
// number, a real plus or minus an imaginary number, True, False, None,
// ..., and tuples, lists, sets (and set()) and dicts of those. Comments,
// line continuations and newlines inside brackets are allowed as Python
// allows them.
//
// Everything else (names, calls, operators, f-strings, bad escapes,
// leading zeros, text after the expression) is an error wrapping
// [ErrNotLiteral]. Known limits: \N{…} knows the Unicode character names
// but not their aliases; a lone surrogate (\ud800) is refused, as Go
// strings cannot hold one; a set is refused when Python's print order
// would depend on hashing (more than one member).
func LiteralEval(src string) (Value, error) {
	src = strings.TrimLeft(src, " \t")
	if strings.ContainsRune(src, 0) {
		return Value{}, fmt.Errorf("%w: source contains a null character", ErrNotLiteral)
	}
	// The tokenizer reads \r\n and a lone \r as \n.
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	p := &litParser{src: src}
	n, err := p.parseTop()
	if err != nil {
		return Value{}, fmt.Errorf("%w: %w", ErrNotLiteral, err)
	}
	v, err := convert(n)
	if err != nil {
		return Value{}, fmt.Errorf("%w: %w", ErrNotLiteral, err)
	}
	return v, nil
}

// nodeKind is the AST node class a parsed piece came from; literal_eval's
// rules depend on it (-1 is a UnaryOp, (1) is a Constant, 1+2j a BinOp).
type nodeKind int

const (
	nConst nodeKind = iota
	nUnary
	nBinOp
	nTuple
	nList
	nSet
	nDict
	nEmptySetCall
)

type node struct {
	kind  nodeKind
	val   Value // nConst
	op    byte  // nUnary, nBinOp: '+' or '-'
	kids  []*node
	vals  []*node // dict values
	paren bool
}

type litParser struct {
	src   string
	pos   int
	depth int // bracket nesting: newlines are insignificant inside
}

func (p *litParser) errf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// skip moves past spaces, tabs, form feeds, comments, line continuations
// and, inside brackets, newlines.
func (p *litParser) skip() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == '\\' && p.pos+2 < len(p.src) && p.src[p.pos+1] == '\n':
			// A line continuation; one that ends the input is an error.
			p.pos += 2
		case c == '\n' && p.depth > 0:
			p.pos++
		default:
			return
		}
	}
}

// indent moves past the spaces, tabs and form feeds that start a line
// and returns the column they reach (a form feed resets it to 0).
func (p *litParser) indent() int {
	col := 0
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ':
			col++
		case '\t':
			col = (col/8 + 1) * 8
		case '\f':
			col = 0
		default:
			return col
		}
		p.pos++
	}
	return col
}

// blankLine reports whether the line at p.pos (after its indentation) is
// blank — empty or a comment — and moves past it and its newline.
func (p *litParser) blankLine() bool {
	if p.pos < len(p.src) && p.src[p.pos] == '#' {
		for p.pos < len(p.src) && p.src[p.pos] != '\n' {
			p.pos++
		}
	}
	if p.pos < len(p.src) && p.src[p.pos] == '\n' {
		p.pos++
		return true
	}
	return false
}

// skipLeadingBlankLines drops the blank (or comment-only) lines before the
// expression; the first line with code must not be indented.
func (p *litParser) skipLeadingBlankLines() error {
	for {
		col := p.indent()
		if p.blankLine() {
			continue
		}
		if p.pos < len(p.src) && p.src[p.pos] != '#' && col > 0 {
			return p.errf("unexpected indent")
		}
		return nil
	}
}

func (p *litParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *litParser) parseTop() (*node, error) {
	if err := p.skipLeadingBlankLines(); err != nil {
		return nil, err
	}
	n, err := p.parseExprList(true)
	if err != nil {
		return nil, err
	}
	// The rest of the line, then only blank or comment lines may follow;
	// an indented last line without a newline is an indentation error,
	// as CPython's tokenizer has it.
	p.skip()
	if p.pos >= len(p.src) {
		return n, nil
	}
	if p.src[p.pos] != '\n' {
		return nil, p.errf("unexpected text after the expression")
	}
	p.pos++
	for p.pos < len(p.src) {
		col := p.indent()
		if p.pos >= len(p.src) {
			if col > 0 {
				return nil, p.errf("unexpected indent")
			}
			break
		}
		if !p.blankLine() && p.pos < len(p.src) {
			return nil, p.errf("unexpected text after the expression")
		}
	}
	return n, nil
}

// parseExprList parses "e1, e2, …" (a bare tuple when there is a comma).
func (p *litParser) parseExprList(top bool) (*node, error) {
	first, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.peek() != ',' {
		return first, nil
	}
	t := &node{kind: nTuple, kids: []*node{first}}
	for p.peek() == ',' {
		p.pos++
		p.skip()
		if p.atExprEnd(top) {
			break
		}
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		t.kids = append(t.kids, e)
		p.skip()
	}
	return t, nil
}

func (p *litParser) atExprEnd(top bool) bool {
	c := p.peek()
	if top {
		return p.pos >= len(p.src) || c == '\n'
	}
	return c == ')' || c == ']' || c == '}'
}

// parseExpr parses one expression: a signed term, optionally followed by
// + or - and another term (the parser accepts what Python's grammar
// accepts for these operators; literal_eval's checks come later).
func (p *litParser) parseExpr() (*node, error) {
	left, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		p.skip()
		c := p.peek()
		if c != '+' && c != '-' {
			return left, nil
		}
		p.pos++
		right, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		left = &node{kind: nBinOp, op: c, kids: []*node{left, right}}
	}
}

func (p *litParser) parseUnary() (*node, error) {
	p.skip()
	if c := p.peek(); c == '+' || c == '-' {
		p.pos++
		operand, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return &node{kind: nUnary, op: c, kids: []*node{operand}}, nil
	}
	return p.parseAtom()
}

func (p *litParser) parseAtom() (*node, error) {
	p.skip()
	if p.pos >= len(p.src) {
		return nil, p.errf("unexpected end of input")
	}
	c := p.src[p.pos]
	switch {
	case c == '(' || c == '[' || c == '{':
		return p.parseBracket(c)
	case c == '.' && strings.HasPrefix(p.src[p.pos:], "..."):
		p.pos += 3
		return &node{kind: nConst, val: Value{Kind: KindEllipsis}}, nil
	case c >= '0' && c <= '9' || c == '.':
		v, err := p.parseNumber()
		if err != nil {
			return nil, err
		}
		return &node{kind: nConst, val: v}, nil
	case c == '\'' || c == '"':
		return p.parseStrings()
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	if r == '_' || unicode.IsLetter(r) {
		start := p.pos
		for p.pos < len(p.src) {
			r, n := utf8.DecodeRuneInString(p.src[p.pos:])
			if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) && !unicode.Is(unicode.Mc, r) {
				break
			}
			p.pos += n
		}
		word := p.src[start:p.pos]
		if c := p.peek(); c == '\'' || c == '"' {
			if isStrPrefix(word) {
				p.pos = start
				return p.parseStrings()
			}
		}
		switch word {
		case "True", "False":
			return &node{kind: nConst, val: Value{Kind: KindBool, Bool: word == "True"}}, nil
		case "None":
			return &node{kind: nConst, val: Value{Kind: KindNone}}, nil
		case "set":
			p.skip()
			if p.peek() == '(' {
				p.pos++
				p.depth++
				p.skip()
				if p.peek() == ')' {
					p.pos++
					p.depth--
					return &node{kind: nEmptySetCall}, nil
				}
			}
		}
		return nil, p.errf("name %q is not a literal", word)
	}
	return nil, p.errf("unexpected character %q", r)
}

func isStrPrefix(w string) bool {
	switch strings.ToLower(w) {
	case "r", "u", "b", "br", "rb", "f", "fr", "rf":
		return true
	}
	return false
}

func (p *litParser) parseBracket(open byte) (*node, error) {
	closer := map[byte]byte{'(': ')', '[': ']', '{': '}'}[open]
	p.pos++
	p.depth++
	defer func() { p.depth-- }()
	p.skip()
	var n *node
	switch open {
	case '(':
		n = &node{kind: nTuple}
	case '[':
		n = &node{kind: nList}
	default:
		n = &node{kind: nDict}
	}
	if p.peek() == closer {
		p.pos++
		return n, nil
	}
	first, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	p.skip()
	if open == '(' && p.peek() == ')' {
		p.pos++
		first.paren = true
		return first, nil
	}
	isDict := false
	if open == '{' {
		if p.peek() == ':' {
			isDict = true
		} else {
			n.kind = nSet
		}
	}
	item := first
	for {
		if isDict {
			p.skip()
			if p.peek() != ':' {
				return nil, p.errf("expected ':' in a dict")
			}
			p.pos++
			v, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, item)
			n.vals = append(n.vals, v)
		} else {
			n.kids = append(n.kids, item)
		}
		p.skip()
		switch p.peek() {
		case closer:
			p.pos++
			return n, nil
		case ',':
			p.pos++
			p.skip()
			if p.peek() == closer {
				p.pos++
				return n, nil
			}
			if item, err = p.parseExpr(); err != nil {
				return nil, err
			}
		default:
			return nil, p.errf("expected ',' or %q", closer)
		}
	}
}

// parseNumber reads an int, float or imaginary literal.
func (p *litParser) parseNumber() (Value, error) {
	start := p.pos
	s := p.src
	digits := func(ok func(byte) bool) (string, error) {
		from := p.pos
		for p.pos < len(s) && (ok(s[p.pos]) || s[p.pos] == '_') {
			if s[p.pos] == '_' {
				if p.pos+1 >= len(s) || !ok(s[p.pos+1]) || p.pos == from {
					return "", p.errf("invalid underscore in a number")
				}
			}
			p.pos++
		}
		return strings.ReplaceAll(s[from:p.pos], "_", ""), nil
	}
	dec := func(b byte) bool { return b >= '0' && b <= '9' }
	if s[p.pos] == '0' && p.pos+1 < len(s) && strings.ContainsRune("xXoObB", rune(s[p.pos+1])) {
		base, ok := 16, func(b byte) bool { return dec(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }
		switch s[p.pos+1] {
		case 'o', 'O':
			base, ok = 8, func(b byte) bool { return b >= '0' && b <= '7' }
		case 'b', 'B':
			base, ok = 2, func(b byte) bool { return b == '0' || b == '1' }
		}
		p.pos += 2
		if p.pos < len(s) && s[p.pos] == '_' {
			p.pos++
		}
		d, err := digits(ok)
		if err != nil {
			return Value{}, err
		}
		if d == "" {
			return Value{}, p.errf("invalid number literal")
		}
		if err := p.numberEnd(); err != nil {
			return Value{}, err
		}
		i, _ := new(big.Int).SetString(d, base)
		return Value{Kind: KindInt, Int: i}, nil
	}
	intPart, err := digits(dec)
	if err != nil {
		return Value{}, err
	}
	isFloat := false
	if p.pos < len(s) && s[p.pos] == '.' {
		isFloat = true
		p.pos++
		if p.pos < len(s) && dec(s[p.pos]) {
			if _, err := digits(dec); err != nil {
				return Value{}, err
			}
		}
		if intPart == "" && p.pos == start+1 {
			return Value{}, p.errf("invalid number literal")
		}
	}
	if p.pos < len(s) && (s[p.pos] == 'e' || s[p.pos] == 'E') {
		save := p.pos
		p.pos++
		if p.pos < len(s) && (s[p.pos] == '+' || s[p.pos] == '-') {
			p.pos++
		}
		if p.pos < len(s) && dec(s[p.pos]) {
			if _, err := digits(dec); err != nil {
				return Value{}, err
			}
			isFloat = true
		} else {
			p.pos = save
			return Value{}, p.errf("invalid exponent")
		}
	}
	text := strings.ReplaceAll(s[start:p.pos], "_", "")
	isImag := false
	if p.pos < len(s) && (s[p.pos] == 'j' || s[p.pos] == 'J') {
		isImag = true
		p.pos++
	}
	if err := p.numberEnd(); err != nil {
		return Value{}, err
	}
	if !isFloat && !isImag {
		if len(text) > 1 && strings.Trim(text, "0") != "" && text[0] == '0' {
			return Value{}, p.errf("leading zeros in a decimal integer")
		}
		if len(text) > maxIntDigits {
			return Value{}, p.errf("integer literal longer than %d digits", maxIntDigits)
		}
		i, _ := new(big.Int).SetString(text, 10)
		return Value{Kind: KindInt, Int: i}, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return Value{}, p.errf("invalid number %q", text)
	}
	if isImag {
		return Value{Kind: KindComplex, Imag: f}, nil
	}
	return Value{Kind: KindFloat, Float: f}, nil
}

// numberEnd refuses a number run into a name ("1abc", "0x1g").
func (p *litParser) numberEnd() error {
	if p.pos >= len(p.src) {
		return nil
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	if r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) {
		return p.errf("invalid number literal")
	}
	return nil
}

// parseStrings reads one or more adjacent string or bytes literals.
func (p *litParser) parseStrings() (*node, error) {
	var b strings.Builder
	kind := Kind(-1)
	for {
		p.skip()
		start := p.pos
		for p.pos < len(p.src) && p.pos-start < 2 && strings.ContainsRune("rRuUbBfF", rune(p.src[p.pos])) {
			p.pos++
		}
		prefix := strings.ToLower(p.src[start:p.pos])
		if c := p.peek(); c != '\'' && c != '"' {
			if kind < 0 {
				return nil, p.errf("expected a string")
			}
			p.pos = start
			break
		}
		if prefix != "" && !isStrPrefix(prefix) {
			return nil, p.errf("invalid string prefix %q", prefix)
		}
		if strings.Contains(prefix, "f") {
			return nil, p.errf("f-strings are not literals")
		}
		k := KindStr
		if strings.Contains(prefix, "b") {
			k = KindBytes
		}
		if kind >= 0 && k != kind {
			return nil, p.errf("cannot mix bytes and nonbytes literals")
		}
		kind = k
		s, err := p.parseOneString(strings.Contains(prefix, "r"), k == KindBytes)
		if err != nil {
			return nil, err
		}
		b.WriteString(s)
	}
	return &node{kind: nConst, val: Value{Kind: kind, Str: b.String()}}, nil
}

func (p *litParser) parseOneString(raw, bytes bool) (string, error) {
	q := p.src[p.pos]
	triple := strings.HasPrefix(p.src[p.pos:], strings.Repeat(string(q), 3))
	delim := string(q)
	if triple {
		delim = strings.Repeat(string(q), 3)
	}
	p.pos += len(delim)
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			return "", p.errf("unterminated string literal")
		}
		if strings.HasPrefix(p.src[p.pos:], delim) {
			p.pos += len(delim)
			return b.String(), nil
		}
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == '\n' && !triple {
			return "", p.errf("unterminated string literal")
		}
		if bytes && r >= 0x80 {
			return "", p.errf("bytes can only contain ASCII literal characters")
		}
		if r != '\\' {
			b.WriteString(p.src[p.pos : p.pos+n])
			p.pos += n
			continue
		}
		// A backslash.
		if p.pos+1 >= len(p.src) {
			return "", p.errf("unterminated string literal")
		}
		if raw {
			// The backslash stays, and the next character cannot end
			// the string.
			r2, n2 := utf8.DecodeRuneInString(p.src[p.pos+1:])
			if bytes && r2 >= 0x80 {
				return "", p.errf("bytes can only contain ASCII literal characters")
			}
			b.WriteString(p.src[p.pos : p.pos+1+n2])
			p.pos += 1 + n2
			continue
		}
		if err := p.escape(&b, bytes); err != nil {
			return "", err
		}
	}
}

// escape decodes the escape sequence at p.pos (a backslash).
func (p *litParser) escape(b *strings.Builder, bytes bool) error {
	s := p.src
	p.pos++
	c := s[p.pos]
	simple := map[byte]byte{'\\': '\\', '\'': '\'', '"': '"', 'a': 7, 'b': 8, 'f': 12, 'n': '\n', 'r': '\r', 't': '\t', 'v': 11}
	if v, ok := simple[c]; ok {
		b.WriteByte(v)
		p.pos++
		return nil
	}
	put := func(v rune) error {
		if bytes {
			b.WriteByte(byte(v))
			return nil
		}
		if v >= 0xd800 && v <= 0xdfff {
			return p.errf("lone surrogate \\u%04x", v)
		}
		if v > unicode.MaxRune {
			return p.errf("illegal Unicode character")
		}
		b.WriteRune(v)
		return nil
	}
	hexN := func(n int) (rune, error) {
		if p.pos+1+n > len(s) {
			return 0, p.errf("truncated \\%c escape", c)
		}
		h := s[p.pos+1 : p.pos+1+n]
		v, err := strconv.ParseUint(h, 16, 32)
		if err != nil || strings.ContainsAny(h, "+-_") {
			return 0, p.errf("truncated \\%c escape", c)
		}
		p.pos += 1 + n
		return rune(v), nil
	}
	switch {
	case c == '\n':
		p.pos++
		return nil
	case c >= '0' && c <= '7':
		v := rune(0)
		for i := 0; i < 3 && p.pos < len(s) && s[p.pos] >= '0' && s[p.pos] <= '7'; i++ {
			v = v*8 + rune(s[p.pos]-'0')
			p.pos++
		}
		if bytes {
			v &= 0xff
		}
		return put(v)
	case c == 'x':
		v, err := hexN(2)
		if err != nil {
			return err
		}
		return put(v)
	case !bytes && c == 'u':
		v, err := hexN(4)
		if err != nil {
			return err
		}
		return put(v)
	case !bytes && c == 'U':
		v, err := hexN(8)
		if err != nil {
			return err
		}
		return put(v)
	case !bytes && c == 'N':
		if p.pos+1 >= len(s) || s[p.pos+1] != '{' {
			return p.errf("malformed \\N character escape")
		}
		end := strings.IndexByte(s[p.pos:], '}')
		if end < 0 {
			return p.errf("malformed \\N character escape")
		}
		name := s[p.pos+2 : p.pos+end]
		r, ok := lookupName(name)
		if !ok {
			return p.errf("unknown Unicode character name %q", name)
		}
		p.pos += end + 1
		return put(r)
	}
	// An unknown escape keeps its backslash.
	b.WriteByte('\\')
	return nil
}

var (
	namesOnce sync.Once
	names     map[string]rune
)

// lookupName finds a character by its Unicode name, case-insensitively,
// as \N{…} does (aliases excepted).
func lookupName(name string) (rune, bool) {
	name = strings.ToUpper(name)
	for _, pre := range []string{"CJK UNIFIED IDEOGRAPH-", "CJK COMPATIBILITY IDEOGRAPH-"} {
		if h, ok := strings.CutPrefix(name, pre); ok && (len(h) == 4 || len(h) == 5) {
			v, err := strconv.ParseUint(h, 16, 32)
			if err == nil && assigned(rune(v)) && unicode.Is(unicode.Ideographic, rune(v)) {
				return rune(v), true
			}
			return 0, false
		}
	}
	namesOnce.Do(func() {
		names = map[string]rune{}
		for r := rune(0); r <= unicode.MaxRune; r++ {
			if !assigned(r) || r >= 0xd800 && r <= 0xdfff {
				continue
			}
			if n := runenames.Name(r); n != "" && !strings.HasPrefix(n, "<") {
				names[n] = r
			}
		}
	})
	r, ok := names[name]
	return r, ok
}

// convert applies literal_eval's rules to the parsed tree.
func convert(n *node) (Value, error) {
	switch n.kind {
	case nConst:
		return n.val, nil
	case nTuple, nList, nSet:
		v := Value{Kind: map[nodeKind]Kind{nTuple: KindTuple, nList: KindList, nSet: KindSet}[n.kind]}
		for _, k := range n.kids {
			item, err := convert(k)
			if err != nil {
				return Value{}, err
			}
			v.Items = append(v.Items, item)
		}
		if n.kind == nSet {
			for _, item := range v.Items {
				if !hashable(item) {
					return Value{}, errors.New("unhashable set member")
				}
			}
			v.Items = dedupe(v.Items)
			if len(v.Items) > 1 {
				return Value{}, errors.New("a set of several members prints in hash order")
			}
		}
		return v, nil
	case nEmptySetCall:
		return Value{Kind: KindSet}, nil
	case nDict:
		v := Value{Kind: KindDict}
		for i, k := range n.kids {
			key, err := convert(k)
			if err != nil {
				return Value{}, err
			}
			val, err := convert(n.vals[i])
			if err != nil {
				return Value{}, err
			}
			if !hashable(key) {
				return Value{}, errors.New("unhashable dict key")
			}
			if j := indexOf(v.Items, key); j >= 0 {
				v.Vals[j] = val
				continue
			}
			v.Items = append(v.Items, key)
			v.Vals = append(v.Vals, val)
		}
		return v, nil
	case nBinOp:
		left, err := signedNum(n.kids[0])
		if err != nil {
			return Value{}, err
		}
		right, err := num(n.kids[1])
		if err != nil {
			return Value{}, err
		}
		if left.Kind == KindComplex || right.Kind != KindComplex {
			return Value{}, errors.New("only a real plus or minus an imaginary number is a literal")
		}
		re := left.Float
		if left.Kind == KindInt {
			f, _ := new(big.Float).SetInt(left.Int).Float64()
			re = f
		}
		im := right.Imag
		reR := right.Float
		// The real operand becomes complex(re, +0.0) first.
		if n.op == '-' {
			return Value{Kind: KindComplex, Float: re - reR, Imag: 0.0 - im}, nil
		}
		return Value{Kind: KindComplex, Float: re + reR, Imag: 0.0 + im}, nil
	default:
		return signedNum(n)
	}
}

// num is _convert_num: a number constant.
func num(n *node) (Value, error) {
	if n.kind != nConst || (n.val.Kind != KindInt && n.val.Kind != KindFloat && n.val.Kind != KindComplex) {
		return Value{}, errors.New("malformed node or string")
	}
	return n.val, nil
}

// signedNum is _convert_signed_num: a number constant, or + or - on one.
func signedNum(n *node) (Value, error) {
	if n.kind != nUnary {
		return num(n)
	}
	v, err := num(n.kids[0])
	if err != nil {
		return Value{}, err
	}
	if n.op == '+' {
		return v, nil
	}
	switch v.Kind {
	case KindInt:
		v.Int = new(big.Int).Neg(v.Int)
	case KindFloat:
		v.Float = -v.Float
	case KindComplex:
		v.Float, v.Imag = -v.Float, -v.Imag
	}
	return v, nil
}

func hashable(v Value) bool {
	switch v.Kind {
	case KindList, KindDict, KindSet:
		return false
	case KindTuple:
		for _, it := range v.Items {
			if !hashable(it) {
				return false
			}
		}
	}
	return true
}

func dedupe(items []Value) []Value {
	var out []Value
	for _, it := range items {
		if indexOf(out, it) < 0 {
			out = append(out, it)
		}
	}
	return out
}

func indexOf(items []Value, v Value) int {
	for i, it := range items {
		if pyEqual(it, v) {
			return i
		}
	}
	return -1
}

// pyEqual is == for hashable values (1 == 1.0 == True, as in Python).
func pyEqual(a, b Value) bool {
	an, aok := numeric(a)
	bn, bok := numeric(b)
	if aok && bok {
		return an == bn
	}
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case KindNone, KindEllipsis:
		return true
	case KindStr, KindBytes:
		return a.Str == b.Str
	case KindTuple:
		if len(a.Items) != len(b.Items) {
			return false
		}
		for i := range a.Items {
			if !pyEqual(a.Items[i], b.Items[i]) {
				return false
			}
		}
		return true
	}
	return false
}

func numeric(v Value) (complex128, bool) {
	switch v.Kind {
	case KindBool:
		if v.Bool {
			return 1, true
		}
		return 0, true
	case KindInt:
		f, _ := new(big.Float).SetInt(v.Int).Float64()
		return complex(f, 0), true
	case KindFloat:
		return complex(v.Float, 0), true
	case KindComplex:
		return complex(v.Float, v.Imag), true
	}
	return 0, false
}

// String is str(v).
func (v Value) String() string {
	if v.Kind == KindStr {
		return v.Str
	}
	return v.Repr()
}

// Repr is repr(v).
func (v Value) Repr() string {
	switch v.Kind {
	case KindNone:
		return "None"
	case KindEllipsis:
		return "Ellipsis"
	case KindBool:
		if v.Bool {
			return "True"
		}
		return "False"
	case KindInt:
		return v.Int.String()
	case KindFloat:
		return FloatRepr(v.Float)
	case KindComplex:
		return complexRepr(v.Float, v.Imag)
	case KindStr:
		return StrRepr(v.Str)
	case KindBytes:
		return bytesRepr(v.Str)
	case KindTuple:
		if len(v.Items) == 1 {
			return "(" + v.Items[0].Repr() + ",)"
		}
		return "(" + joinRepr(v.Items) + ")"
	case KindList:
		return "[" + joinRepr(v.Items) + "]"
	case KindSet:
		if len(v.Items) == 0 {
			return "set()"
		}
		return "{" + joinRepr(v.Items) + "}"
	case KindDict:
		parts := make([]string, len(v.Items))
		for i := range v.Items {
			parts[i] = v.Items[i].Repr() + ": " + v.Vals[i].Repr()
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return "?"
}

func joinRepr(items []Value) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = it.Repr()
	}
	return strings.Join(parts, ", ")
}

// FloatRepr is repr(float): the shortest digits that read back to f, in
// positional notation when the decimal exponent is in [-4, 16), else
// as d.ddde±XX; a whole number gets ".0".
func FloatRepr(f float64) string { return formatFloat(f, true) }

func formatFloat(f float64, addDot0 bool) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	decpt := exp + 1
	if decpt > -4 && decpt <= 16 {
		var out string
		switch {
		case decpt <= 0:
			out = "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			out = digits + strings.Repeat("0", decpt-len(digits))
			if addDot0 {
				out += ".0"
			}
		default:
			out = digits[:decpt] + "." + digits[decpt:]
		}
		return sign + out
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
}

func complexRepr(re, im float64) string {
	if re == 0 && !math.Signbit(re) {
		return formatFloat(im, false) + "j"
	}
	ims := formatFloat(im, false)
	if !strings.HasPrefix(ims, "-") {
		ims = "+" + ims
	}
	return "(" + formatFloat(re, false) + ims + "j)"
}

// IsPrintable is str.isprintable() for one code point: everything but
// the categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs, the space excepted.
func IsPrintable(r rune) bool {
	if r == ' ' {
		return true
	}
	if !assigned(r) || r >= 0xd800 && r <= 0xdfff {
		return false
	}
	return !unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Zl, unicode.Zp, unicode.Zs)
}

// StrRepr is repr(str).
func StrRepr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x7f || IsPrintable(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

func bytesRepr(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteString("b")
	b.WriteByte(q)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < ' ' || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(q)
	return b.String()
}
