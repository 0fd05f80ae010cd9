package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sfmcp "github.com/skillfleet/skillfleet/internal/mcp"
)

// runMCP serves the sleep commands as MCP tools on stdin and stdout until
// the client closes stdin.
func runMCP(ctx context.Context, args []string, _, stderr io.Writer) error {
	home, _ := os.UserHomeDir()
	wd, _ := os.Getwd()
	var o sfmcp.Options
	var nightArgs, runArgs multiFlag
	fs := newFlagSet("mcp", "mcp [--state-dir DIR] [--arg FLAG]... [--run-arg FLAG]...  (an MCP server on stdio)", stderr)
	fs.StringVar(&o.StateDir, "state-dir", filepath.Join(home, ".skillfleet-sleep"), "the sleep state directory the tools use")
	fs.StringVar(&o.Project, "project", wd, "the project of a tool call that names none (default: the working directory)")
	fs.StringVar(&o.Skillfleet, "skillfleet", "", "the skillfleet binary the tools run (default: this one)")
	fs.Var(&nightArgs, "arg", "one argument given to every sleep command, repeatable in order (--arg=--backend --arg=anthropic)")
	fs.Var(&runArgs, "run-arg", "one argument given to run, dry-run and schedule only (the replay target's flags), repeatable")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	var err error
	if o.Skillfleet == "" {
		if o.Skillfleet, err = os.Executable(); err != nil {
			return err
		}
	}
	for _, p := range []*string{&o.Skillfleet, &o.StateDir, &o.Project} {
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	o.Args, o.RunArgs, o.Version = nightArgs, runArgs, version
	s, err := sfmcp.New(o)
	if err != nil {
		return usageError{fmt.Errorf("mcp: %w", err)}
	}
	// stdout is the protocol's channel: nothing else may be written there.
	return s.Run(ctx, &mcp.StdioTransport{})
}
