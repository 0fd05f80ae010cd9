package jsonx

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

var extractTests = []struct {
	name         string
	text         string
	want         string
	wantRepaired bool
	wantErr      bool
}{
	{name: "bare object", text: `{"a": 1}`, want: `{"a": 1}`},
	{
		name: "json fence first",
		text: "Here:\n```json\n{\"a\": 1}\n```\nDone {x}",
		want: `{"a": 1}`,
	},
	{name: "fence tag case", text: "```JSON\n{\"a\": 1}\n```", want: `{"a": 1}`},
	{name: "greedy braces", text: `Sure! {"a": {"b": 2}} hope this helps`, want: `{"a": {"b": 2}}`},
	{
		name: "json fence holding an array falls through",
		text: "```json\n[1]\n```\n{\"a\":1}",
		want: `{"a":1}`,
	},
	{
		name: "untagged fence",
		text: "```\n{\"a\": 1}\n```\n and {oops}",
		want: `{"a": 1}`, wantRepaired: true,
	},
	{
		name: "other tag",
		text: "```python\n{\"a\": 1}\n```\n and {oops}",
		want: `{"a": 1}`, wantRepaired: true,
	},
	{
		name: "one-line fence",
		text: "```{\"a\": 1}``` {oops}",
		want: `{"a": 1}`, wantRepaired: true,
	},
	{
		name: "trailing commas",
		text: `{"a": [1, 2,], "b": 3,}`,
		want: `{"a": [1, 2], "b": 3}`, wantRepaired: true,
	},
	{
		name: "truncated in a later edit",
		text: `{"reasoning": "ok", "edits": [{"op": "append", "content": "a"}, {"op": "repl`,
		want: `{"reasoning": "ok", "edits": [{"op": "append", "content": "a"}]}`, wantRepaired: true,
	},
	{
		name: "truncated edit dropped whole",
		text: `{"r": "x", "edits": [{"op": "append", "content": "Always wrap the ans`,
		want: `{"r": "x"}`, wantRepaired: true,
	},
	{
		name: "partial member object keeps complete fields",
		text: `{"patch": {"reasoning": "x", "edits": [{"op": "a"}], "more": "tr`,
		want: `{"patch": {"reasoning": "x", "edits": [{"op": "a"}]}}`, wantRepaired: true,
	},
	{name: "truncated in a key", text: `{"a": 1, "b`, want: `{"a": 1}`, wantRepaired: true},
	{name: "truncated number dropped", text: `{"a": 12`, want: `{}`, wantRepaired: true},
	{name: "truncated after colon", text: `{"a": `, want: `{}`, wantRepaired: true},
	{name: "truncated literal", text: `{"a": tru`, want: `{}`, wantRepaired: true},
	{name: "complete literal at end", text: `{"a": true`, want: `{"a": true}`, wantRepaired: true},
	{name: "truncated escape", text: `{"a": "x\`, want: `{}`, wantRepaired: true},
	{name: "truncated nested", text: `{"a": {"b": [true, {"c": null`, want: `{"a": {"b": [true]}}`, wantRepaired: true},
	{name: "truncated empty containers", text: `{"a": 1, "b": {"c": [`, want: `{"a": 1}`, wantRepaired: true},
	{
		name: "raw newline in string",
		text: "{\"a\": \"line1\nline2\tx\x01\"}",
		want: `{"a": "line1\nline2\tx\u0001"}`, wantRepaired: true,
	},
	{
		name: "unterminated fence",
		text: "```json\n{\"a\": [1, 2",
		want: `{"a": [1]}`, wantRepaired: true,
	},
	{name: "mismatched closer", text: `{"a": [1, 2}`, want: `{"a": [1, 2]}`, wantRepaired: true},
	{name: "stray closer after object", text: `{"a": 1} and then }`, want: `{"a": 1}`, wantRepaired: true},
	{name: "two objects", text: `{"a": 1} {"b": 2}`, want: `{"a": 1}`, wantRepaired: true},
	{name: "braces inside strings", text: `x {"a": "x } y \" {"} z`, want: `{"a": "x } y \" {"}`},
	{name: "no json", text: "no json here", wantErr: true},
	{name: "top-level array", text: "[1, 2]", wantErr: true},
	{name: "not json", text: "{not json}", wantErr: true},
	{name: "single quotes", text: "{'a': 1}", wantErr: true},
	{name: "empty", text: "", wantErr: true},
}

func TestExtract(t *testing.T) {
	t.Parallel()
	for _, tt := range extractTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw, repaired, err := Extract(tt.text)
			if tt.wantErr {
				if !errors.Is(err, ErrNoObject) {
					t.Errorf("Extract(%q) error = %v, want ErrNoObject", tt.text, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Extract(%q): %v", tt.text, err)
			}
			if string(raw) != tt.want || repaired != tt.wantRepaired {
				t.Errorf("Extract(%q) = %s, %v; want %s, %v", tt.text, raw, repaired, tt.want, tt.wantRepaired)
			}
		})
	}
}

func TestInt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw    string
		want   int
		wantOK bool
	}{
		{`8`, 8, true},
		{`8.0`, 8, true},
		{`8e0`, 8, true},
		{`-3`, -3, true},
		{` 8 `, 8, true},
		{`"8"`, 8, true},
		{`" 8 "`, 8, true},
		{`"8.0"`, 8, true},
		{`"+8"`, 8, true},
		{`9223372036854775807`, 9223372036854775807, true},
		{`8.5`, 0, false},
		{`"8.5"`, 0, false},
		{`1e19`, 0, false},
		{`"eight"`, 0, false},
		{`"0x10"`, 0, false},
		{`"Inf"`, 0, false},
		{`"NaN"`, 0, false},
		{`""`, 0, false},
		{`true`, 0, false},
		{`null`, 0, false},
		{`[8]`, 0, false},
		{`{"n": 8}`, 0, false},
		{``, 0, false},
		{`8x`, 0, false},
	}
	for _, tt := range tests {
		got, ok := Int(json.RawMessage(tt.raw))
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Int(%s) = %d, %v; want %d, %v", tt.raw, got, ok, tt.want, tt.wantOK)
		}
	}
}

func FuzzExtract(f *testing.F) {
	for _, tt := range extractTests {
		f.Add(tt.text)
	}
	f.Add("```json\n{\"edits\": [{\"op\": \"append\", \"content\": \"x\",}]}\n```")
	f.Add("{\"a\": [{\"b\": \"c\\u00e9\"}, 1.5e3, -0, false]")
	f.Fuzz(func(t *testing.T, text string) {
		raw, repaired, err := Extract(text)
		if err != nil {
			if raw != nil || repaired {
				t.Fatalf("Extract(%q) = %s, %v with error %v", text, raw, repaired, err)
			}
			return
		}
		if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
			t.Fatalf("Extract(%q) = %q, not a JSON object", text, raw)
		}
		if !repaired && !strings.Contains(text, string(raw)) {
			t.Fatalf("Extract(%q) = %q unrepaired but not a substring of the text", text, raw)
		}
	})
}

func FuzzInt(f *testing.F) {
	for _, s := range []string{`8`, `"8"`, `8.0`, `"x"`, `1e400`, `-0`, `"-9.2e18"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, ok := Int(json.RawMessage(raw))
		if !ok && v != 0 {
			t.Fatalf("Int(%q) = %d, false; want 0 when rejected", raw, v)
		}
	})
}

func BenchmarkExtract(b *testing.B) {
	text := "Here is my analysis.\n```json\n" + `{"batch_size": 8, "failure_summary": [{"failure_type": "format", "count": 3, "description": "answers not wrapped"}], "patch": {"reasoning": "wrap answers", "edits": [{"op": "append", "content": "Always wrap the final answer in <answer> tags."}]}}` + "\n```\n"
	for b.Loop() {
		if _, _, err := Extract(text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExtractRepair(b *testing.B) {
	text := `{"reasoning": "ok", "edits": [{"op": "append", "content": "a"}, {"op": "replace", "target": "b", "content": "c",}, {"op": "repl`
	for b.Loop() {
		if _, _, err := Extract(text); err != nil {
			b.Fatal(err)
		}
	}
}
