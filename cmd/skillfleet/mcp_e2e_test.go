package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sfmcp "github.com/skillfleet/skillfleet/internal/mcp"
	"github.com/skillfleet/skillfleet/internal/testfs"
)

// TestMCPServerOverStdio starts `skillfleet mcp` as an agent would, talks
// to it with the SDK's client over its stdin and stdout, lists its tools
// and asks for the sleep status of a project, which the real `skillfleet
// sleep status` answers.
func TestMCPServerOverStdio(t *testing.T) {
	home := t.TempDir()
	proj, state := filepath.Join(home, "proj"), filepath.Join(home, "state")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(binary, "mcp", "--state-dir", state, "--arg=--source", "--arg=pi")
	cmd.Dir = proj
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != sfmcp.Name {
		t.Errorf("server name %q, want %q", got, sfmcp.Name)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	if want := sfmcp.Tools(); !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("tools/list = %v, want %v", names, want)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep_status"})
	if err != nil {
		t.Fatal(err)
	}
	var r sfmcp.Result
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil || res.IsError || r.ExitCode != 0 {
		t.Fatalf("sleep_status: error %v, %+v, %v\nserver stderr: %s", res.IsError, r, err, stderr.String())
	}
	var status struct {
		State  string `json:"state"`
		Nights int    `json:"nights"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &status); err != nil || status.State != filepath.Join(state, "state.json") || status.Nights != 0 {
		t.Fatalf("sleep_status stdout %q (%v): want the JSON status of %s", r.Stdout, err, state)
	}
	if !slices.Contains(r.Command, "--source") || !slices.Contains(r.Command, proj) {
		t.Errorf("sleep_status ran %q, want the fixed --source pi and the server's project", r.Command)
	}
	// Closing stdin ends the server cleanly.
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, stderr.String())
	}
}

// TestSleepInstallCopilotRegistersMCP: after `sleep install copilot`, the
// server the Copilot CLI's mcp-config.json names starts, lists the sleep
// tools and answers sleep_status with the install's state dir; uninstall
// leaves the home as it was.
func TestSleepInstallCopilotRegistersMCP(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(filepath.Join(home, ".copilot"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".copilot", "mcp-config.json"), []byte(`{"mcpServers":{"mine":{"command":"mine-mcp"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testfs.Tree(t, home)
	out := runSleepBinary(t, home, "sleep", "install", "copilot", "--home", home, "--skillfleet", binary, "--source", "copilot_cli")
	if !strings.Contains(out, "the skillfleet-sleep MCP server added") {
		t.Errorf("install output does not say the server was added:\n%s", out)
	}
	var cfg struct {
		McpServers map[string]struct {
			Command string
			Args    []string
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".copilot", "mcp-config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.McpServers["mine"].Command != "mine-mcp" {
		t.Fatalf("mcp-config.json after install: %s (%v)", b, err)
	}
	entry, ok := cfg.McpServers[sfmcp.Name]
	if !ok {
		t.Fatalf("mcp-config.json has no %s server: %s", sfmcp.Name, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(entry.Command, entry.Args...)
	cmd.Dir = proj
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "copilot-stand-in", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("start the registered server: %v\n%s", err, stderr.String())
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil || len(lt.Tools) != len(sfmcp.Tools()) {
		t.Fatalf("tools/list: %v, %v", lt, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep_status"})
	if err != nil || res.IsError {
		t.Fatalf("sleep_status: %+v, %v\n%s", res, err, stderr.String())
	}
	var r sfmcp.Result
	rb, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(rb, &r) != nil || !strings.Contains(r.Stdout, filepath.Join(home, ".skillfleet-sleep", "state.json")) ||
		!slices.Contains(r.Command, "copilot_cli") {
		t.Fatalf("sleep_status ran %q and printed %q: want the install's state dir and --source copilot_cli", r.Command, r.Stdout)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, stderr.String())
	}
	runSleepBinary(t, home, "sleep", "uninstall", "copilot", "--home", home)
	// The state dir the status call created is the only thing left.
	if err := os.RemoveAll(filepath.Join(home, ".skillfleet-sleep")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, testfs.Tree(t, home)); diff != "" {
		t.Fatalf("the home after uninstall (-before +after):\n%s", diff)
	}
}
