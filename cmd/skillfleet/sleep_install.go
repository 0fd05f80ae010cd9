package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	sleepdrv "github.com/skillfleet/skillfleet/coordinator/sleep"
	"github.com/skillfleet/skillfleet/internal/agentinstall"
)

// sleepAgentCommand runs `sleep install|uninstall AGENT` and `sleep
// record` (the session-end hook's command).
func sleepAgentCommand(cmd string, args []string, stdout, stderr io.Writer) error {
	var err error
	agent := agentinstall.ClaudeCode
	if cmd != "record" {
		if agent, args, err = agentinstall.AgentArg(cmd, args); err != nil {
			return installError(err)
		}
	}
	home, _ := os.UserHomeDir()
	var inst agentinstall.InstallFlags
	// The replay target's flags, registered as sleep run's.
	var target sleepdrv.Options
	homeDir, stateDir := &home, filepath.Join(home, ".skillfleet-sleep")
	var fs = newFlagSet("sleep "+cmd, "sleep "+cmd+" "+strings.Join(agentinstall.Agents(), "|")+" [flags]", stderr)
	switch cmd {
	case "install":
		inst.Register(fs)
		target.RegisterTarget(fs)
	case "uninstall":
		homeDir = fs.String("home", home, "the home directory it was installed into")
	default:
		fs = newFlagSet("sleep record", "sleep record --agent claude-code|codex [--state-dir DIR] < hook.json", stderr)
		fs.StringVar(&agent, "agent", agentinstall.ClaudeCode, "the agent whose hook calls it")
		fs.StringVar(&stateDir, "state-dir", stateDir, "the sleep state directory")
	}
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	switch {
	case cmd == "record":
		err = agentinstall.Record(agent, stateDir, os.Stdin)
	case agent == "":
		fs.Usage()
	case cmd == "install":
		if inst.TargetArgs, err = target.TargetArgs(fs); err != nil {
			return usageError{fmt.Errorf("sleep install %s: %w", agent, err)}
		}
		err = inst.InstallCommand(agent, version, fs, stdout)
	default:
		err = agentinstall.UninstallCommand(agent, *homeDir, stdout)
	}
	return installError(err)
}

func installError(err error) error {
	var ue agentinstall.UsageError
	var se sleepdrv.UsageError
	if errors.As(err, &ue) || errors.As(err, &se) {
		return usageError{err}
	}
	return err
}
