// Command fakeagent stands in for the Copilot CLI, pi or opencode (named by
// the name it is run as) in the end-to-end tests: it takes the argv and
// environment skillfleet's harness gives the real CLI, finds the model
// endpoint where that CLI would (COPILOT_PROVIDER_BASE_URL, pi's
// models.json, OPENCODE_CONFIG_CONTENT), lists the skills installed where
// that CLI looks for them, and runs a small tool loop over the Responses
// API with one shell tool; then it prints the answer as that CLI's JSON
// event stream. It is a test double of the CLI, not of the model: the
// model (sim-llm) decides what to read and what to answer.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

var versions = map[string]string{"copilot": "GitHub Copilot CLI 1.0.102", "pi": "0.73.1", "opencode": "1.18.33"}

var skillGlobs = map[string]string{"copilot": ".github/skills/*/SKILL.md", "pi": ".pi/skills/*/SKILL.md", "opencode": ".opencode/skills/*/SKILL.md"}

func main() {
	agent := filepath.Base(os.Args[0])
	if _, ok := versions[agent]; !ok {
		fail("fakeagent: run as copilot, pi or opencode, not %q", agent)
	}
	args := os.Args[1:]
	if len(args) == 1 && args[0] == "--version" {
		fmt.Println(versions[agent])
		return
	}
	prompt, model := args[len(args)-1], ""
	for i, a := range args[:len(args)-1] {
		switch a {
		case "-p":
			if agent == "copilot" {
				prompt = args[i+1]
			}
		case "--model":
			model = args[i+1]
		}
	}
	if _, m, ok := strings.Cut(model, "/"); ok { // opencode: provider/model
		model = m
	}
	base := baseURL(agent)
	if base == "" {
		fail("fakeagent %s: no model endpoint configured", agent)
	}
	answer, err := loop(base, model, instructions(agent), prompt)
	if err != nil {
		fail("fakeagent %s: %v", agent, err)
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	emit := func(v any) {
		b, _ := json.Marshal(v)
		w.Write(append(b, '\n'))
	}
	switch agent {
	case "copilot":
		emit(map[string]any{"type": "assistant.message", "data": map[string]any{"content": answer}})
		emit(map[string]any{"type": "result", "exitCode": 0})
	case "pi":
		emit(map[string]any{"type": "session", "version": 3, "id": "fake", "cwd": "."})
		emit(map[string]any{"type": "message_end", "message": map[string]any{"role": "assistant", "stopReason": "stop",
			"content": []any{map[string]any{"type": "text", "text": answer}}}})
		emit(map[string]any{"type": "agent_end", "messages": []any{}})
	case "opencode":
		emit(map[string]any{"type": "text", "part": map[string]any{"type": "text", "text": answer}})
		emit(map[string]any{"type": "step_finish", "part": map[string]any{"type": "step-finish", "reason": "stop"}})
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(1)
}

// baseURL is the endpoint the harness configured for the agent.
func baseURL(agent string) string {
	switch agent {
	case "copilot":
		return os.Getenv("COPILOT_PROVIDER_BASE_URL")
	case "pi":
		var m struct {
			Providers map[string]struct {
				BaseURL string `json:"baseUrl"`
			} `json:"providers"`
		}
		b, _ := os.ReadFile(filepath.Join(os.Getenv("PI_CODING_AGENT_DIR"), "models.json"))
		if json.Unmarshal(b, &m) == nil {
			for _, p := range m.Providers {
				return p.BaseURL
			}
		}
	case "opencode":
		var c struct {
			Provider map[string]struct {
				Options struct {
					BaseURL string `json:"baseURL"`
				} `json:"options"`
			} `json:"provider"`
		}
		if json.Unmarshal([]byte(os.Getenv("OPENCODE_CONFIG_CONTENT")), &c) == nil {
			for _, p := range c.Provider {
				return p.Options.BaseURL
			}
		}
	}
	return ""
}

// instructions lists the installed skills as these CLIs do: name,
// description and the SKILL.md's absolute path.
func instructions(agent string) string {
	files, _ := filepath.Glob(skillGlobs[agent])
	var b strings.Builder
	b.WriteString("You are a coding agent. Skills:\n<available_skills>\n")
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		name, desc := frontMatter(f)
		fmt.Fprintf(&b, "<skill>\n<name>%s</name>\n<description>%s</description>\n<location>%s</location>\n</skill>\n", name, desc, abs)
	}
	b.WriteString("</available_skills>\n")
	return b.String()
}

func frontMatter(path string) (name, desc string) {
	b, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "name: "); ok && name == "" {
			name = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "description: "); ok && desc == "" {
			desc = strings.TrimSpace(v)
		}
	}
	return name, desc
}

var bashTool = map[string]any{"type": "function", "name": "bash", "description": "Run a shell command in the work directory.",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{
		"command": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"}}, "required": []string{"command"}}}

// loop asks the model until it answers with text, running each shell call
// it makes.
func loop(base, model, instr, prompt string) (string, error) {
	input := []any{map[string]any{"type": "message", "role": "user", "content": prompt}}
	for range 12 {
		body, _ := json.Marshal(map[string]any{"model": model, "instructions": instr, "input": input, "tools": []any{bashTool}})
		req, err := http.NewRequest(http.MethodPost, strings.TrimRight(base, "/")+"/responses", bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+os.Getenv("COPILOT_PROVIDER_API_KEY"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		var r struct {
			Output []struct {
				Type      string `json:"type"`
				CallID    string `json:"call_id"`
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
				Content   []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"output"`
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("responses: status %d: %v", resp.StatusCode, err)
		}
		var text []string
		called := false
		for _, it := range r.Output {
			switch it.Type {
			case "message":
				for _, c := range it.Content {
					text = append(text, c.Text)
				}
			case "function_call":
				called = true
				var a struct {
					Command string `json:"command"`
				}
				_ = json.Unmarshal([]byte(it.Arguments), &a)
				out, _ := exec.Command("bash", "-c", a.Command).CombinedOutput()
				input = append(input,
					map[string]any{"type": "function_call", "call_id": it.CallID, "name": it.Name, "arguments": it.Arguments},
					map[string]any{"type": "function_call_output", "call_id": it.CallID, "output": string(out)})
			}
		}
		if !called {
			return strings.Join(text, ""), nil
		}
	}
	return "", fmt.Errorf("no answer after 12 turns")
}
