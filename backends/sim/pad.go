package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A padded target reply opens with padOpen, filler words and padClose, so
// that a rollout's trajectory (which holds the reply) is as large as a
// real agent's. The padding changes no decision: the answer is read from
// the reply's last <answer> tag, and an optimizer request drops every
// padding its payload quotes before the reply is drawn from the payload
// bytes, so it answers exactly as it would to the unpadded trajectories.
const (
	padOpen  = "[[trajectory-pad "
	padClose = "]] "
	padWords = "lorem ipsum dolor sit amet consectetur adipiscing elit "
)

var padRE = regexp.MustCompile(`\[\[trajectory-pad [a-z ]*\]\] `)

// pad returns reply with padding in front, to at least size bytes in all.
func pad(reply string, size int) string {
	n := size - len(reply) - len(padOpen) - len(padClose)
	if size <= 0 || n <= 0 {
		return reply
	}
	words := strings.Repeat(padWords, n/len(padWords)+1)[:n]
	return padOpen + words + padClose + reply
}

// unpad drops the paddings a payload quotes.
func unpad(payload json.RawMessage) json.RawMessage {
	if !bytes.Contains(payload, []byte(padOpen)) {
		return payload
	}
	return padRE.ReplaceAll(payload, nil)
}

// ParseSize reads a byte size: a number of bytes, or one with a KB, MB
// (or KiB, MiB) suffix, in units of 1,024.
func ParseSize(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"K", 1 << 10}, {"M", 1 << 20}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || n > 64<<20/mult {
		return 0, fmt.Errorf("size %q: want bytes, or a number with KB or MB, up to 64MB", s)
	}
	return n * mult, nil
}
