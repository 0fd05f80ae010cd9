package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/internal/agentinstall"
	"github.com/skillfleet/skillfleet/internal/testfs"
)

// scriptedClaudeAPI is a stand-in for the Anthropic Messages API that the
// real Claude Code CLI talks to: each streamed request is recorded; the
// first one of a session that offers the Skill tool is answered with a
// call of the Skill tool with skillInput (when set), every other one with
// a short text. It plays the model only so that what Claude Code sends
// and does can be read: it decides nothing about the install.
type scriptedClaudeAPI struct {
	skillInput map[string]string

	mu       sync.Mutex
	requests []claudeRequest
}

// claudeRequest is the part of a Messages API request the tests read.
type claudeRequest struct {
	Stream bool `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// texts returns the text parts of every message of r, in order.
func (r claudeRequest) texts() []string {
	var out []string
	for _, m := range r.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			out = append(out, s)
			continue
		}
		var parts []struct{ Type, Text string }
		_ = json.Unmarshal(m.Content, &parts)
		for _, p := range parts {
			if p.Type == "text" {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

func (r claudeRequest) hasToolResult() bool {
	for _, m := range r.Messages {
		if bytes.Contains(m.Content, []byte(`"tool_result"`)) {
			return true
		}
	}
	return false
}

func (s *scriptedClaudeAPI) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var r claudeRequest
	if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/v1/messages") || json.Unmarshal(body, &r) != nil {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not served here"}}`, http.StatusNotFound)
		return
	}
	if !r.Stream {
		// A side request (a title, a quota probe): a plain short answer.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_side","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, r)
	n := len(s.requests)
	s.mu.Unlock()
	offersSkill := slices.ContainsFunc(r.Tools, func(t struct {
		Name string `json:"name"`
	}) bool {
		return t.Name == "Skill"
	})
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant",
		"model": "claude-sonnet-4-5", "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}})
	stop := "end_turn"
	if s.skillInput != nil && offersSkill && !r.hasToolResult() {
		in, _ := json.Marshal(s.skillInput)
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": "toolu_skill", "name": "Skill", "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		stop = "tool_use"
	} else {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "done"}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 5}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

func (s *scriptedClaudeAPI) recorded() []claudeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// TestClaudeCodeLoadsTheSleepPlugin installs the Claude Code plugin into a
// temporary home and has the pinned real Claude Code run sessions against
// a scripted Messages API, reading what it sends:
//   - the Skill tool's list offers skillfleet-sleep:skillfleet-sleep with
//     the skill's description (the /skillfleet-sleep command of the same
//     name is the user's, not the model's), and the handoff command;
//   - the model calling the Skill tool for it loads skills/skillfleet-sleep/
//     SKILL.md, which names the installed script;
//   - the user typing /skillfleet-sleep:skillfleet-sleep dry-run --max-tokens 9
//     gets the command, with those arguments;
//   - the user typing /skillfleet-sleep status gets the skill, with that
//     argument;
//   - /skillfleet-sleep:skillfleet-sleep-handoff dry-run gets the handoff
//     loop, and the subagent tool it names is one Claude Code offers.
//
// Uninstall leaves the home as it was, file for file.
func TestClaudeCodeLoadsTheSleepPlugin(t *testing.T) {
	bin := realAgentBin(t, "claude")
	t.Parallel()
	home, tmp := t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(home, ".claude", "settings.json"), `{"theme":"dark"}`+"\n")
	writeTestFile(t, filepath.Join(home, "work", "app", "README.md"), "the user's project\n")
	before := testfs.Tree(t, home)
	sf := skillfleetIn(t, binary, home, tmp)
	sf("sleep", "install", "claude-code", "--home", home, "--skillfleet", binary, "--state-dir", filepath.Join(tmp, "state"), "--persona", "researcher", "--backend", "sim")
	dir, _ := agentinstall.Dir(agentinstall.ClaudeCode, home)
	cliHome := t.TempDir()
	copyHome(t, home, cliHome)
	cliDir, _ := agentinstall.Dir(agentinstall.ClaudeCode, cliHome)
	// The installed files name the script where the install put it (the
	// CLI runs on a copy of that home).
	script := filepath.Join(dir, "bin", agentinstall.Name)

	// session runs one claude -p session against a fresh scripted API and
	// returns its requests and its stream-json output.
	session := func(t *testing.T, prompt string, skillInput map[string]string) ([]claudeRequest, string) {
		t.Helper()
		api := &scriptedClaudeAPI{skillInput: skillInput}
		srv := httptest.NewServer(api)
		defer srv.Close()
		cmd := exec.Command(bin, "-p", prompt, "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5", "--no-session-persistence")
		cmd.Env = agentEnv(cliHome, tmp, "ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=sk-ant-test-not-a-key")
		cmd.Dir = filepath.Join(cliHome, "work", "app")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude -p %q: %v\n%s", prompt, err, tailLines(string(out), 30))
		}
		reqs := api.recorded()
		if len(reqs) == 0 {
			t.Fatalf("claude -p %q sent no request:\n%s", prompt, tailLines(string(out), 30))
		}
		return reqs, string(out)
	}
	lastUserText := func(r claudeRequest) string { return strings.Join(r.texts(), "\n") }

	t.Run("model-invokes-the-skill", func(t *testing.T) {
		reqs, out := session(t, "run skillfleet sleep and tell me the status", map[string]string{"skill": agentinstall.Name + ":" + agentinstall.Name, "args": "status"})
		// The Skill tool's list: the skill's own description under the
		// plugin's name, and the handoff command's.
		var list string
		for _, s := range reqs[0].texts() {
			if strings.Contains(s, "available for use with the Skill tool") {
				list = s
			}
		}
		for _, want := range []string{
			"- " + agentinstall.Name + ":" + agentinstall.Name + ": Run or schedule a skillfleet sleep night, which learns from this project's recent agent sessions",
			"- " + agentinstall.Name + ":" + agentinstall.Name + "-handoff: Run a skillfleet sleep night whose model calls this session answers",
		} {
			if !strings.Contains(list, want) {
				t.Errorf("the Skill tool's list has no %q:\n%s", want, list)
			}
		}
		// The call loads the skill's SKILL.md (the next request carries it).
		if len(reqs) < 2 {
			t.Fatalf("no request after the Skill call:\n%s", tailLines(out, 30))
		}
		loaded := lastUserText(reqs[len(reqs)-1])
		for _, want := range []string{"Base directory for this skill: " + filepath.Join(cliDir, "skills", agentinstall.Name), "# skillfleet sleep",
			script + " run", "Run `adopt` only when the user explicitly asks"} {
			if !strings.Contains(loaded, want) {
				t.Errorf("after the Skill call, what Claude Code sent has no %q:\n%s", want, tailLines(loaded, 40))
			}
		}
	})

	t.Run("user-types-the-command", func(t *testing.T) {
		reqs, _ := session(t, "/"+agentinstall.Name+":"+agentinstall.Name+" dry-run --max-tokens 9", nil)
		sent := lastUserText(reqs[0])
		for _, want := range []string{"<command-args>dry-run --max-tokens 9</command-args>", `The user asked for: "dry-run --max-tokens 9"`, script + " <subcommand>"} {
			if !strings.Contains(sent, want) {
				t.Errorf("/%s:%s: what Claude Code sent has no %q:\n%s", agentinstall.Name, agentinstall.Name, want, tailLines(sent, 40))
			}
		}
	})

	t.Run("user-types-the-short-name", func(t *testing.T) {
		// /skillfleet-sleep alone resolves to the skill, with the
		// arguments after it.
		reqs, _ := session(t, "/"+agentinstall.Name+" status", nil)
		sent := lastUserText(reqs[0])
		for _, want := range []string{"<command-args>status</command-args>", "Base directory for this skill: " + filepath.Join(cliDir, "skills", agentinstall.Name), script + " run"} {
			if !strings.Contains(sent, want) {
				t.Errorf("/%s status: what Claude Code sent has no %q:\n%s", agentinstall.Name, want, tailLines(sent, 40))
			}
		}
	})

	t.Run("user-types-the-handoff-command", func(t *testing.T) {
		reqs, _ := session(t, "/"+agentinstall.Name+":"+agentinstall.Name+"-handoff dry-run", nil)
		sent := lastUserText(reqs[0])
		for _, want := range []string{`The user asked for: "dry-run"`, fmt.Sprintf("Repeat at most %d times", agentinstall.HandoffRounds),
			script + " handoff <mode>", "Never answer a prompt yourself"} {
			if !strings.Contains(sent, want) {
				t.Errorf("the handoff command: what Claude Code sent has no %q:\n%s", want, tailLines(sent, 40))
			}
		}
		// The subagent tool the command allows is one Claude Code offers.
		b, err := os.ReadFile(filepath.Join(cliDir, "commands", agentinstall.Name+"-handoff.md"))
		if err != nil {
			t.Fatal(err)
		}
		var offered []string
		for _, tool := range reqs[0].Tools {
			offered = append(offered, tool.Name)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		found := false
		for sc.Scan() {
			if allowed, ok := strings.CutPrefix(sc.Text(), "allowed-tools: "); ok {
				for _, name := range []string{"Task", "Agent"} {
					found = found || strings.Contains(allowed, ", "+name) && slices.Contains(offered, name)
				}
			}
		}
		if !found {
			t.Errorf("the handoff command allows no subagent tool that Claude Code offers (%v)", offered)
		}
	})

	sf("sleep", "uninstall", "claude-code", "--home", home)
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("%s is still there after uninstall", dir)
	}
	if diff := cmp.Diff(before, testfs.Tree(t, home)); diff != "" {
		t.Errorf("the home after uninstall differs from before the install (-before +after):\n%s", diff)
	}
}
