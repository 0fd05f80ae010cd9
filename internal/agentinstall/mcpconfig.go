package agentinstall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The Copilot CLI reads its MCP servers from <home>/.copilot/mcp-config.json
// ({"mcpServers": {name: {type, command, args, tools}}}). `sleep install
// copilot` adds the skillfleet-sleep server there (the installed script's
// `mcp` subcommand, which runs `skillfleet mcp` with the install's flags),
// and uninstall takes it out again.
//
// The file is the user's: before the first edit, its bytes and mode are
// kept in the install directory (configBackup, readable by the user only)
// and uninstall puts them back exactly, or removes the file when there was
// none, as long as the file is still what the install wrote. If the user
// changed it since, uninstall removes only the server's entry and keeps
// the rest of their edits.

// configBackup is the copy of the config file as it was before the first
// install, inside the install directory.
const configBackup = ".skillfleet-install.config-backup"

// ConfigEdit is an entry an install added to an agent's config file.
type ConfigEdit struct {
	// Path is the config file (absolute).
	Path string `json:"path"`
	// Server is the key added under mcpServers.
	Server string `json:"server"`
	// Existed: the file existed before the install (its bytes are in
	// configBackup); otherwise the install created it.
	Existed bool `json:"existed"`
	// Mode is the file's permission bits before the install.
	Mode fs.FileMode `json:"mode,omitempty"`
	// Written is the sha256 of the file as the install left it.
	Written string `json:"written"`
}

// copilotMCPConfig is the Copilot CLI's MCP config file under home.
func copilotMCPConfig(home string) string { return filepath.Join(home, ".copilot", "mcp-config.json") }

// mcpEntry is the server entry an install registers: the installed script
// in its MCP mode.
func mcpEntry(script string) map[string]any {
	return map[string]any{"type": "local", "command": script, "args": []string{"mcp"}, "tools": []string{"*"}}
}

// addMCPServer adds the server entry to the config file at path, keeping
// everything else in it, and returns the edit (nil when the entry was
// already there as wanted). prev is the edit of an earlier install, if
// any. A file that is not a JSON object, or that names a server of this
// name that skillfleet did not add, is refused.
// With check set it only validates, writing nothing.
func addMCPServer(path, script string, prev *ConfigEdit, check bool) (*ConfigEdit, []byte, error) {
	orig, err := os.ReadFile(path)
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	var mode fs.FileMode = 0o600
	if existed {
		st, err := os.Stat(path)
		if err != nil {
			return nil, nil, err
		}
		mode = st.Mode().Perm()
	}
	cfg := map[string]json.RawMessage{}
	if existed && len(bytes.TrimSpace(orig)) > 0 {
		if err := json.Unmarshal(orig, &cfg); err != nil {
			return nil, nil, fmt.Errorf("%s is not a JSON object (%v): fix it, or add the %s server yourself", path, err, Name)
		}
	}
	servers := map[string]json.RawMessage{}
	if raw, ok := cfg["mcpServers"]; ok {
		if err := json.Unmarshal(raw, &servers); err != nil {
			return nil, nil, fmt.Errorf("%s: mcpServers is not an object: %w", path, err)
		}
	}
	want, _ := json.Marshal(mcpEntry(script))
	if have, ok := servers[Name]; ok {
		if jsonEqual(have, want) && prev != nil {
			return nil, nil, nil
		}
		if prev == nil {
			return nil, nil, fmt.Errorf("%s already has an MCP server named %s that skillfleet did not add: remove it first", path, Name)
		}
	}
	if check {
		return nil, nil, nil
	}
	servers[Name] = want
	sb, err := json.Marshal(servers)
	if err != nil {
		return nil, nil, err
	}
	cfg["mcpServers"] = sb
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	out = append(out, '\n')
	edit := &ConfigEdit{Path: path, Server: Name, Existed: existed, Mode: mode, Written: sum(out)}
	var backup []byte
	if prev != nil { // an earlier install's record of the original stands
		edit.Existed, edit.Mode = prev.Existed, prev.Mode
	} else if existed {
		backup = orig
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, err
	}
	if err := writeFileAtomic(path, out, mode); err != nil {
		return nil, nil, err
	}
	return edit, backup, nil
}

// removeMCPServer undoes edit: the original bytes back (or no file) when
// the file is as the install left it, else only the entry removed. It
// says which.
func removeMCPServer(edit ConfigEdit, backup []byte) (string, error) {
	cur, err := os.ReadFile(edit.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return "already gone", nil
	}
	if err != nil {
		return "", err
	}
	if sum(cur) == edit.Written {
		if !edit.Existed {
			return "removed (the install created it)", os.Remove(edit.Path)
		}
		return "restored as it was before the install", writeFileAtomic(edit.Path, backup, edit.Mode)
	}
	cfg := map[string]json.RawMessage{}
	if err := json.Unmarshal(cur, &cfg); err != nil {
		return "", fmt.Errorf("%s changed since the install and is not a JSON object: remove the %s server from it yourself", edit.Path, edit.Server)
	}
	servers := map[string]json.RawMessage{}
	if raw, ok := cfg["mcpServers"]; ok && json.Unmarshal(raw, &servers) != nil {
		return "", fmt.Errorf("%s: mcpServers is not an object: remove the %s server yourself", edit.Path, edit.Server)
	}
	if _, ok := servers[edit.Server]; !ok {
		return "changed since the install, and without the server already: left as it is", nil
	}
	delete(servers, edit.Server)
	sb, _ := json.Marshal(servers)
	cfg["mcpServers"] = sb
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	st, err := os.Stat(edit.Path)
	if err != nil {
		return "", err
	}
	return "changed since the install: only the " + edit.Server + " server removed, the rest kept", writeFileAtomic(edit.Path, append(out, '\n'), st.Mode().Perm())
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// writeFileAtomic replaces path with b (mode perm) through a temporary
// file beside it, so the agent never reads a half-written config.
func writeFileAtomic(path string, b []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
