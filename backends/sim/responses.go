package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI Responses API (POST /v1/responses), as Codex CLI sends it:
// "instructions", "input" as a string or a list of items (messages with
// input_text/output_text parts, function_call and function_call_output
// items, reasoning items), "tools" (function tools, and others the sim
// ignores), "stream". Replies are a response object, or with stream an
// SSE stream of response.* events ending in response.completed with usage.

type responsesRequest struct {
	Model           string            `json:"model"`
	Instructions    string            `json:"instructions"`
	Input           json.RawMessage   `json:"input"`
	Tools           []json.RawMessage `json:"tools"`
	Stream          bool              `json:"stream"`
	MaxOutputTokens int               `json:"max_output_tokens"`
	Temperature     *float64          `json:"temperature"`
	Seed            *int64            `json:"seed"`
}

type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Input     string          `json:"input"`
}

// conversation reads a Responses request.
func (r *responsesRequest) conversation() (*Conversation, error) {
	c := &Conversation{Model: r.Model, MaxTokens: r.MaxOutputTokens, Seed: r.Seed}
	size := len(r.Instructions)
	if r.Instructions != "" {
		c.System = append(c.System, r.Instructions)
	}
	in := bytes.TrimSpace(r.Input)
	switch {
	case len(in) == 0 || string(in) == "null":
	case in[0] == '"':
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
		c.Turns = append(c.Turns, Turn{Role: "user", Text: s})
		size += len(s)
	default:
		var items []responsesItem
		if err := json.Unmarshal(in, &items); err != nil {
			return nil, fmt.Errorf("input: want a string or a list of items: %w", err)
		}
		for i, it := range items {
			switch it.Type {
			case "message", "":
				text, err := responsesText(it.Content)
				if err != nil {
					return nil, fmt.Errorf("input[%d]: %w", i, err)
				}
				size += len(text)
				switch it.Role {
				case "system", "developer":
					c.System = append(c.System, text)
				case "user", "assistant":
					c.Turns = append(c.Turns, Turn{Role: it.Role, Text: text})
				default:
					return nil, fmt.Errorf("input[%d]: unknown message role %q", i, it.Role)
				}
			case "function_call", "custom_tool_call":
				args := it.Arguments
				if it.Type == "custom_tool_call" {
					args = it.Input
				}
				size += len(it.Name) + len(args)
				c.Turns = append(c.Turns, Turn{Role: "assistant", Call: &ToolCall{ID: it.CallID, Name: it.Name, Args: args}})
			case "function_call_output", "custom_tool_call_output":
				out, err := responsesOutput(it.Output)
				if err != nil {
					return nil, fmt.Errorf("input[%d]: output: %w", i, err)
				}
				size += len(out)
				c.Turns = append(c.Turns, Turn{Role: "tool", CallID: it.CallID, Output: out})
			default:
				// reasoning and other items carry nothing the sim reads
			}
		}
	}
	for i, raw := range r.Tools {
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		size += len(raw)
		if t.Type == "function" && t.Name != "" {
			c.Tools = append(c.Tools, ToolDef{Name: t.Name, Description: t.Description, Params: t.Parameters})
		}
	}
	c.Size = size
	return c, nil
}

// responsesText reads a message's content: a string or a list of parts.
func responsesText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content: want a string or a list of parts: %w", err)
	}
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
		case "refusal":
			texts = append(texts, p.Refusal)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// responsesOutput reads a function_call_output's output: a string or a
// list of content parts.
func responsesOutput(raw json.RawMessage) (string, error) {
	return responsesText(raw)
}

// Response objects.

type responsesObject struct {
	ID                string           `json:"id"`
	Object            string           `json:"object"`
	CreatedAt         int64            `json:"created_at"`
	Status            string           `json:"status"`
	Model             string           `json:"model"`
	Output            []map[string]any `json:"output"`
	ParallelToolCalls bool             `json:"parallel_tool_calls"`
	ToolChoice        string           `json:"tool_choice"`
	Tools             []any            `json:"tools"`
	Error             any              `json:"error"`
	IncompleteDetails any              `json:"incomplete_details"`
	Usage             *responsesUsage  `json:"usage"`
}

type responsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// responsesOutputItems renders a reply as output items.
func responsesOutputItems(seq int64, r *AgentReply) []map[string]any {
	var items []map[string]any
	if r.Text != "" {
		items = append(items, map[string]any{
			"id": fmt.Sprintf("msg_sim_%d", seq), "type": "message", "status": "completed", "role": "assistant",
			"content": []map[string]any{{"type": "output_text", "text": r.Text, "annotations": []any{}}},
		})
	}
	for i, c := range r.Calls {
		items = append(items, map[string]any{
			"id": fmt.Sprintf("fc_sim_%d_%d", seq, i+1), "type": "function_call", "status": "completed",
			"call_id": c.ID, "name": c.Name, "arguments": c.Args,
		})
	}
	return items
}

func (s *Server) responsesReply(w http.ResponseWriter, stream bool, seq int64, model string, r *AgentReply) {
	u := &responsesUsage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens, TotalTokens: r.Usage.InputTokens + r.Usage.OutputTokens}
	obj := responsesObject{
		ID: fmt.Sprintf("resp_sim_%d", seq), Object: "response", CreatedAt: created, Status: "completed", Model: model,
		Output: responsesOutputItems(seq, r), ToolChoice: "auto", Tools: []any{}, Usage: u,
	}
	if r.Finish == "length" {
		obj.Status = "incomplete"
		obj.IncompleteDetails = map[string]string{"reason": "max_output_tokens"}
	}
	if !stream {
		writeJSON(w, http.StatusOK, obj)
		return
	}
	sse := newSSE(w)
	start := obj
	start.Status, start.Output, start.Usage = "in_progress", []map[string]any{}, nil
	sse.event("response.created", map[string]any{"type": "response.created", "response": start})
	sse.event("response.in_progress", map[string]any{"type": "response.in_progress", "response": start})
	for i, item := range obj.Output {
		id := item["id"]
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["status"] = "in_progress"
		switch item["type"] {
		case "message":
			added["content"] = []any{}
			sse.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			sse.event("response.content_part.added", map[string]any{"type": "response.content_part.added", "item_id": id, "output_index": i, "content_index": 0, "part": part})
			for _, d := range chunks(r.Text, 64) {
				sse.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": id, "output_index": i, "content_index": 0, "delta": d, "logprobs": []any{}})
			}
			sse.event("response.output_text.done", map[string]any{"type": "response.output_text.done", "item_id": id, "output_index": i, "content_index": 0, "text": r.Text, "logprobs": []any{}})
			part["text"] = r.Text
			sse.event("response.content_part.done", map[string]any{"type": "response.content_part.done", "item_id": id, "output_index": i, "content_index": 0, "part": part})
		case "function_call":
			args := item["arguments"].(string)
			added["arguments"] = ""
			sse.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
			sse.event("response.function_call_arguments.delta", map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": i, "delta": args})
			sse.event("response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done", "item_id": id, "output_index": i, "arguments": args})
		}
		sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": item})
	}
	done := "response.completed"
	if obj.Status == "incomplete" {
		done = "response.incomplete"
	}
	sse.event(done, map[string]any{"type": done, "response": obj})
}

// sse writes server-sent events with a sequence number in each.
type sse struct {
	w   http.ResponseWriter
	f   http.Flusher
	seq int
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event; a map payload gets "sequence_number" (Responses).
func (s *sse) event(name string, payload any) {
	if m, ok := payload.(map[string]any); ok && strings.HasPrefix(name, "response.") {
		m["sequence_number"] = s.seq
	}
	s.seq++
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(payload)
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, bytes.TrimRight(buf.Bytes(), "\n"))
	if s.f != nil {
		s.f.Flush()
	}
}

// chunks splits s into pieces of about n bytes on rune boundaries.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut < len(s) && !utf8RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" || len(out) == 0 {
		out = append(out, s)
	}
	return out
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
