package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Anthropic Messages API (POST /v1/messages, with or without
// ?beta=true), as Claude Code sends it: "system" as a string or text
// blocks, "messages" of roles user, assistant and (Claude Code's
// mid-conversation) system, whose content is a string or blocks (text,
// tool_use, tool_result, thinking, image...), "tools", "max_tokens",
// "stream". Replies are a message object, or with stream an SSE stream of
// message_start, content_block_*, message_delta and message_stop.

type messagesRequest struct {
	Model     string            `json:"model"`
	System    json.RawMessage   `json:"system"`
	Messages  []messagesMessage `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
	MaxTokens int               `json:"max_tokens"`
	Stream    bool              `json:"stream"`
}

type messagesMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type messagesBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// messagesBlocks reads content: a string or a list of blocks.
func messagesBlocks(raw json.RawMessage) ([]messagesBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []messagesBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []messagesBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("want a string or a list of content blocks: %w", err)
	}
	return blocks, nil
}

// blocksText joins the text blocks.
func blocksText(blocks []messagesBlock) string {
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func (r *messagesRequest) conversation() (*Conversation, error) {
	c := &Conversation{Model: r.Model, MaxTokens: r.MaxTokens}
	sys, err := messagesBlocks(r.System)
	if err != nil {
		return nil, fmt.Errorf("system: %w", err)
	}
	size := 0
	if t := blocksText(sys); t != "" {
		c.System = append(c.System, t)
		size += len(t)
	}
	for i, m := range r.Messages {
		blocks, err := messagesBlocks(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		switch m.Role {
		case "system":
			t := blocksText(blocks)
			c.System = append(c.System, t)
			size += len(t)
			continue
		case "user", "assistant":
		default:
			return nil, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
		var text []string
		flush := func() {
			if len(text) > 0 {
				c.Turns = append(c.Turns, Turn{Role: m.Role, Text: strings.Join(text, "\n")})
				text = nil
			}
		}
		for j, b := range blocks {
			switch b.Type {
			case "text":
				text = append(text, b.Text)
				size += len(b.Text)
			case "tool_use":
				flush()
				args := string(bytes.TrimSpace(b.Input))
				if args == "" {
					args = "{}"
				}
				size += len(b.Name) + len(args)
				c.Turns = append(c.Turns, Turn{Role: "assistant", Call: &ToolCall{ID: b.ID, Name: b.Name, Args: args}})
			case "tool_result":
				flush()
				inner, err := messagesBlocks(b.Content)
				if err != nil {
					return nil, fmt.Errorf("messages[%d].content[%d].content: %w", i, j, err)
				}
				out := blocksText(inner)
				size += len(out)
				c.Turns = append(c.Turns, Turn{Role: "tool", CallID: b.ToolUseID, Output: out})
			default:
				// thinking, images, documents: nothing the sim reads
			}
		}
		flush()
	}
	for i, raw := range r.Tools {
		var t struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		size += len(raw)
		if t.Name != "" && len(t.InputSchema) > 0 {
			c.Tools = append(c.Tools, ToolDef{Name: t.Name, Description: t.Description, Params: t.InputSchema})
		}
	}
	c.Size = size
	return c, nil
}

type messagesUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

type messagesObject struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []map[string]any `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        messagesUsage    `json:"usage"`
}

func messagesStopReason(finish string) string {
	switch finish {
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	default:
		return "end_turn"
	}
}

func (s *Server) messagesReply(w http.ResponseWriter, stream bool, seq int64, model string, r *AgentReply) {
	var content []map[string]any
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for _, c := range r.Calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Args)})
	}
	stop := messagesStopReason(r.Finish)
	obj := messagesObject{
		ID: fmt.Sprintf("msg_sim_%d", seq), Type: "message", Role: "assistant", Model: model, Content: content,
		StopReason: &stop, Usage: messagesUsage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens},
	}
	if !stream {
		writeJSON(w, http.StatusOK, obj)
		return
	}
	sse := newSSE(w)
	start := obj
	start.Content, start.StopReason = []map[string]any{}, nil
	start.Usage.OutputTokens = 0
	sse.event("message_start", map[string]any{"type": "message_start", "message": start})
	for i, block := range content {
		switch block["type"] {
		case "text":
			sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, d := range chunks(r.Text, 64) {
				sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": d}})
			}
		case "tool_use":
			sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
			sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(block["input"].(json.RawMessage))}})
		}
		sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"input_tokens": obj.Usage.InputTokens, "output_tokens": obj.Usage.OutputTokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// writeMessagesError writes an Anthropic-style error body.
func writeMessagesError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}
