package sim

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/synth"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// DocVQA: the page arrives as an image part (a data URI); the sim reads
// the form's text off the pixels ([synth.ReadPage]) and copies the field
// the question names.
var docvqaAsk = regexp.MustCompile(`What is printed in the (\S+) field of the form\?`)

// imagePart returns the first image part of the first user message.
func imagePart(msgs []llm.Message) (string, bool) {
	for _, m := range msgs {
		if m.Role != llm.RoleUser {
			continue
		}
		for _, p := range m.Parts {
			if p.Type == "image" {
				return p.ImageURL, true
			}
		}
		return "", false
	}
	return "", false
}

// readImage reads the text of a page image sent as a base64 data URI.
func readImage(uri string) ([]string, error) {
	_, data, ok := strings.Cut(uri, ";base64,")
	if !ok || !strings.HasPrefix(uri, "data:image/") {
		return nil, fmt.Errorf("image is not a base64 data URI")
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, err
	}
	return synth.ReadPage(raw)
}

var docvqaWorld = world{
	name: "docvqa",
	match: func(req *llm.Request) bool {
		_, ok := imagePart(req.Messages)
		return ok && docvqaAsk.MatchString(worldUser(req.Messages))
	},
	answer: func(m *Model, req *llm.Request, seed int64) (string, []llm.ToolCall) {
		user := worldUser(req.Messages)
		field := docvqaAsk.FindStringSubmatch(user)[1]
		uri, _ := imagePart(req.Messages)
		lines, err := readImage(uri)
		if err != nil {
			return "I cannot read the page image.\n<answer>unreadable</answer>", nil
		}
		value := ""
		for _, l := range lines {
			if v, ok := strings.CutPrefix(l, field+": "); ok {
				value = strings.TrimSpace(v)
			}
		}
		if value == "" {
			return fmt.Sprintf("The page has no %s field.\n<answer>not found</answer>", field), nil
		}
		v := m.judge(skillIn(worldSystem(req.Messages)), user, synth.CuesIn(user, allRuleIDs()), req.Model, seed)
		return fmt.Sprintf("The %s field of the form reads %s.\n<answer>%s</answer>", field, value, v.dress(value)), nil
	},
}
