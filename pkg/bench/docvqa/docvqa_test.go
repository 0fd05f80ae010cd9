package docvqa_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/docvqa"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
)

func TestParseAnswers(t *testing.T) {
	for _, tc := range []struct {
		in           string
		want, asText []string
	}{
		{`['a', 'b']`, []string{"a", "b"}, nil},
		{`["O'Neil", 'J. O\'Neil']`, []string{"O'Neil", "J. O'Neil"}, nil},
		{`[]`, nil, nil},
		{`plain answer`, []string{"plain answer"}, nil},
		// Not literals: the stripped cell is the one answer.
		{`['a', b]`, []string{"['a', b]"}, nil},
		{`['a'`, []string{"['a'"}, nil},
		{` ['a'] x `, []string{"['a'] x"}, nil},
		// List items are str()'d and stripped; empty ones dropped.
		{`[' padded ', '', 1, 2.50, b'by']`, []string{"padded", "1", "2.5", "b'by'"}, nil},
		{`['a\x41b', '\u00e9t\u00e9']`, []string{"aAb", "été"}, nil},
		// Bare numbers and tuples through literal_eval, unless read as text.
		{`.5`, []string{"0.5"}, []string{".5"}},
		{`10,000`, []string{"(10, 0)"}, []string{"10,000"}},
		{`0x10`, []string{"16"}, []string{"0x10"}},
		{`007`, []string{"007"}, []string{"007"}},
		{`'quoted'`, []string{"quoted"}, []string{"quoted"}},
		{``, nil, nil},
	} {
		got := docvqa.ParseAnswers(tc.in, docvqa.GoldOptions{})
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("ParseAnswers(%q) = %q, want %q", tc.in, got, tc.want)
		}
		want := tc.asText
		if want == nil {
			want = tc.want
		}
		if got := docvqa.ParseAnswers(tc.in, docvqa.GoldOptions{CellsAsText: true}); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("ParseAnswers(%q, CellsAsText) = %q, want %q", tc.in, got, want)
		}
	}
}

func TestLoadCSVSplit(t *testing.T) {
	s, err := registry.LoadSplits(docvqa.Name, "testdata/split", 0)
	if err != nil {
		t.Fatal(err)
	}
	var it docvqa.Item
	if err := json.Unmarshal(s.Train[1].Raw, &it); err != nil {
		t.Fatal(err)
	}
	// The document_path suffix moved to image_path; the Python list parsed.
	if it.ID != "dv-2" || it.Question != "Who signed the letter?" || it.ImagePath != "images/page1.png" ||
		strings.Join(it.Answers, "|") != "O'Neil|J. O'Neil" || it.TaskType != "letter" {
		t.Errorf("item = %+v", it)
	}
	var v docvqa.Item
	_ = json.Unmarshal(s.Val[0].Raw, &v)
	if strings.Join(v.Answers, "|") != "$1,250.00" || v.TaskType != "table" {
		t.Errorf("val item = %+v", v)
	}
}

func TestEpisodeSendsTheImage(t *testing.T) {
	dir, _ := filepath.Abs("testdata/split")
	s, err := registry.LoadSplits(docvqa.Name, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	env, err := registry.New(docvqa.Name, []byte(`{"split_dir":"`+dir+`","image_detail":"high"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		reply      string
		hard, soft float64
	}{
		{"The number is printed top right.\n<answer>INV-2041</answer>", 1, 1},
		// "inv-2041" vs "inv-2041"... lowercase equal → 1; a one-character
		// slip of eight: 1 − 1/8.
		{"<answer>INV-2047</answer>", 0, 1 - 1.0/8},
		{"<answer>unknown</answer>", 0, 0},
	} {
		m := benchtest.Text(tc.reply)
		ep, err := env.Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Train[0], Skill: "VERIFY the field label."})
		if err != nil {
			t.Fatal(err)
		}
		if ep.Hard != tc.hard || ep.Soft-tc.soft > 1e-9 || tc.soft-ep.Soft > 1e-9 {
			t.Errorf("reply %q: hard %v soft %v, want %v %v", tc.reply, ep.Hard, ep.Soft, tc.hard, tc.soft)
		}
		if (ep.FailReason != "") != (tc.soft <= 0) {
			t.Errorf("reply %q: fail reason %q", tc.reply, ep.FailReason)
		}
		user := m.Last().Messages[1]
		png, _ := os.ReadFile(filepath.Join(dir, "images", "page1.png"))
		if len(user.Parts) != 2 || user.Parts[0].Type != "image" || !strings.HasPrefix(user.Parts[0].ImageURL, "data:image/png;base64,") ||
			user.Parts[0].Detail != "high" || len(user.Parts[0].ImageURL) < len(png) {
			t.Errorf("request does not carry the page as a PNG data URI: %+v", user.Parts)
		}
		// The stored trajectory names the image instead of embedding it.
		for _, msg := range ep.Messages {
			if strings.Contains(msg.Content, "base64") || len(msg.Parts) > 0 {
				t.Error("trajectory embeds the image")
			}
		}
	}
	// A missing image is an error naming the item and the path.
	bad := s.Test[0]
	bad.Raw = json.RawMessage(strings.Replace(string(bad.Raw), "images/page1.png", "images/missing.png", 1))
	if _, err := env.Episode(context.Background(), benchtest.Text("x"), bench.EpisodeRequest{Item: bad}); err == nil ||
		!strings.Contains(err.Error(), "dv-4") || !strings.Contains(err.Error(), "missing.png") {
		t.Errorf("missing image: %v", err)
	}
}
