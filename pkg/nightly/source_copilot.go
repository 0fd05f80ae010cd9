package nightly

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// SourceCopilot is GitHub Copilot Chat in VS Code: the chat sessions VS
// Code keeps per workspace under User/workspaceStorage/<id>/chatSessions.
const SourceCopilot = "copilot"

// copilotExtension is the chat participant whose requests are Copilot's;
// other extensions' participants share the same logs.
const copilotExtension = "github.copilot-chat"

// defaultVSCodeStorage lists the workspaceStorage directories of VS Code
// and VS Code Insiders for this OS, a portable install's first.
func defaultVSCodeStorage(home string) []string {
	var roots []string
	if p := os.Getenv("VSCODE_PORTABLE"); p != "" {
		roots = append(roots, filepath.Join(p, "user-data"))
	}
	var base string
	switch runtime.GOOS {
	case "windows":
		base = os.Getenv("APPDATA")
		if base == "" {
			base = filepath.Join(home, "AppData", "Roaming")
		}
	case "darwin":
		base = filepath.Join(home, "Library", "Application Support")
	default:
		base = os.Getenv("XDG_CONFIG_HOME")
		if base == "" {
			base = filepath.Join(home, ".config")
		}
	}
	roots = append(roots, filepath.Join(base, "Code"), filepath.Join(base, "Code - Insiders"))
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		out = append(out, filepath.Join(r, "User", "workspaceStorage"))
	}
	return out
}

// vscodeChatFiles lists <storage>/<workspace>/chatSessions/*.jsonl (the
// operation logs of current VS Code) and *.json (whole sessions, as older
// versions wrote them). Missing directories are passed over.
func vscodeChatFiles(storage []string, sk *Skipped) ([]string, error) {
	var out []string
	for _, root := range storage {
		ws, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, w := range ws {
			if !w.IsDir() {
				continue
			}
			dir := filepath.Join(root, w.Name(), "chatSessions")
			ents, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range ents {
				if e.Type().IsRegular() && (strings.HasSuffix(e.Name(), ".jsonl") || strings.HasSuffix(e.Name(), ".json")) {
					out = append(out, filepath.Join(dir, e.Name()))
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// vscodeProject reads the workspace's folder from the workspace.json beside
// chatSessions/: a folder URI, or the directory of a .code-workspace file.
func vscodeProject(workspaceDir string) string {
	b, err := os.ReadFile(filepath.Join(workspaceDir, "workspace.json"))
	if err != nil {
		return ""
	}
	var w struct {
		Folder    string `json:"folder"`
		Workspace string `json:"workspace"`
	}
	if json.Unmarshal(b, &w) != nil {
		return ""
	}
	if p := fileURIPath(w.Folder); p != "" {
		return p
	}
	if p := fileURIPath(w.Workspace); p != "" {
		return filepath.Dir(p)
	}
	return ""
}

// fileURIPath is the local path of a file: URI; "" for another scheme
// (a remote or virtual workspace has no local project).
func fileURIPath(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return ""
	}
	p := u.Path
	if len(p) > 2 && p[0] == '/' && p[2] == ':' { // /C:/… on Windows
		p = p[1:]
	}
	return filepath.Clean(filepath.FromSlash(p))
}

// replayChatLog rebuilds a chat session from VS Code's operation log: a
// first record (kind 0) holds the session, then each record sets the value
// at a path (1), appends to or truncates-and-appends an array (2), or
// deletes a key or element (3). The file is read up to the size it had
// when opened, so a live writer cannot make the read endless. A record
// that names a path the session lacks is counted as malformed.
func replayChatLog(f *os.File, limit int, sk *Skipped) (map[string]any, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var state map[string]any
	huge, err := readLines(io.LimitReader(f, st.Size()), limit, func(line []byte) {
		var r struct {
			Kind *int            `json:"kind"`
			K    []any           `json:"k"`
			V    json.RawMessage `json:"v"`
			I    *int            `json:"i"`
		}
		if json.Unmarshal(line, &r) != nil || r.Kind == nil {
			sk.MalformedLines++
			return
		}
		var v any
		if len(r.V) > 0 && decodeJSON(r.V, &v) != nil {
			sk.MalformedLines++
			return
		}
		ok := true
		switch {
		case *r.Kind == 0:
			m, isMap := v.(map[string]any)
			if state, ok = m, isMap; !isMap {
				state = nil
			}
		case state == nil:
			ok = false
		case *r.Kind == 1:
			ok = opSet(state, r.K, v)
		case *r.Kind == 2:
			ok = opPush(state, r.K, v, r.I)
		case *r.Kind == 3:
			ok = opDelete(state, r.K)
		default:
			ok = false
		}
		if !ok {
			sk.MalformedLines++
		}
	})
	sk.HugeLines += huge
	return state, err
}

// decodeJSON decodes keeping numbers exact (timestamps in milliseconds).
func decodeJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// opParent walks path to the container of its last component.
func opParent(root any, path []any) (any, any, bool) {
	if len(path) == 0 {
		return nil, nil, false
	}
	cur := root
	for _, c := range path[:len(path)-1] {
		next, ok := opChild(cur, c)
		if !ok {
			return nil, nil, false
		}
		cur = next
	}
	return cur, path[len(path)-1], true
}

func opChild(cur, c any) (any, bool) {
	switch x := cur.(type) {
	case map[string]any:
		k, ok := c.(string)
		if !ok {
			return nil, false
		}
		v, ok := x[k]
		return v, ok
	case []any:
		i, ok := opIndex(c)
		if !ok || i >= len(x) {
			return nil, false
		}
		return x[i], true
	}
	return nil, false
}

func opIndex(c any) (int, bool) {
	switch n := c.(type) {
	case float64:
		if n >= 0 && n == float64(int(n)) {
			return int(n), true
		}
	case json.Number:
		if i, err := n.Int64(); err == nil && i >= 0 {
			return int(i), true
		}
	}
	return 0, false
}

func opSet(root any, path []any, v any) bool {
	parent, last, ok := opParent(root, path)
	if !ok {
		return false
	}
	switch x := parent.(type) {
	case map[string]any:
		k, ok := last.(string)
		if ok {
			x[k] = v
		}
		return ok
	case []any:
		i, ok := opIndex(last)
		if ok && i < len(x) {
			x[i] = v
			return true
		}
	}
	return false
}

// opPush appends v's elements to the array at path, first cutting it to
// index i when i is given.
func opPush(root any, path []any, v any, i *int) bool {
	vals, isList := v.([]any)
	if v != nil && !isList {
		return false
	}
	parent, last, ok := opParent(root, path)
	if !ok {
		return false
	}
	arr, ok := opChild(parent, last)
	list, isArr := arr.([]any)
	if !ok || !isArr {
		return false
	}
	if i != nil {
		if *i < 0 || *i > len(list) {
			return false
		}
		list = list[:*i]
	}
	return opSet(root, path, append(list, vals...))
}

func opDelete(root any, path []any) bool {
	parent, last, ok := opParent(root, path)
	if !ok {
		return false
	}
	switch x := parent.(type) {
	case map[string]any:
		k, ok := last.(string)
		if _, has := x[k]; ok && has {
			delete(x, k)
			return true
		}
	case []any:
		i, ok := opIndex(last)
		if ok && i < len(x) {
			return opSet(root, path[:len(path)-1], append(x[:i:i], x[i+1:]...))
		}
	}
	return false
}

// parseVSCodeChat reads one Copilot Chat session of VS Code: the user's
// prompts to Copilot's participant (requests the editor started itself
// are left out), the visible Markdown of its answers and the tools it
// invoked. Reasoning, tool inputs and outputs are never read.
func parseVSCodeChat(path string, o *HarvestOptions) (*Digest, Skipped, error) {
	var sk Skipped
	f, err := os.Open(path)
	if err != nil {
		return nil, sk, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, sk, err
	}
	var state map[string]any
	if strings.HasSuffix(path, ".json") {
		if st.Size() > int64(o.MaxLineBytes) {
			sk.HugeLines++
			return nil, sk, nil
		}
		b, err := io.ReadAll(f)
		if err != nil {
			return nil, sk, err
		}
		if decodeJSON(b, &state) != nil {
			return nil, sk, fmt.Errorf("%s: not a chat session object", path)
		}
	} else if state, err = replayChatLog(f, o.MaxLineBytes, &sk); err != nil {
		return nil, sk, err
	}
	if state == nil {
		return nil, sk, fmt.Errorf("%s: no session record (kind 0)", path)
	}
	s := &session{id: strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".jsonl"), ".json"),
		project: vscodeProject(filepath.Dir(filepath.Dir(path)))}
	if id, ok := state["sessionId"].(string); ok && id != "" {
		s.id = id
	}
	s.stampMillis(state["creationDate"])
	reqs, _ := state["requests"].([]any)
	for _, r := range reqs {
		req, ok := r.(map[string]any)
		if !ok || req["isSystemInitiated"] == true {
			continue
		}
		if ext := chatExtensionID(req); ext != "" && ext != copilotExtension {
			continue
		}
		msg, _ := req["message"].(map[string]any)
		text, _ := msg["text"].(string)
		s.stampMillis(req["timestamp"])
		if ms, ok := req["modelState"].(map[string]any); ok {
			s.stampMillis(ms["completedAt"])
		}
		s.user(text)
		parts, _ := req["response"].([]any)
		var md strings.Builder
		for _, p := range parts {
			part, ok := p.(map[string]any)
			if !ok {
				continue
			}
			switch part["kind"] {
			case nil, "markdownContent":
				if v, ok := part["value"].(string); ok {
					md.WriteString(v)
				}
			case "toolInvocationSerialized":
				if id, ok := part["toolId"].(string); ok {
					s.tools = addUnique(s.tools, sanitizeToolName(id))
				}
			}
		}
		s.assistant(md.String())
	}
	if s.start.IsZero() { // a session without timestamps: the file's mtime
		s.start, s.end, s.noTimes = st.ModTime().UTC(), st.ModTime().UTC(), true
	}
	if s.project == "" {
		s.project = "unknown"
	}
	return s.digest(path, &sk), sk, nil
}

// chatExtensionID is the extension of the participant a request went to:
// a string or an identifier object ({value, _lower}); "" when unnamed.
func chatExtensionID(req map[string]any) string {
	agent, _ := req["agent"].(map[string]any)
	switch id := agent["extensionId"].(type) {
	case string:
		return strings.ToLower(id)
	case map[string]any:
		for _, k := range []string{"_lower", "value"} {
			if v, ok := id[k].(string); ok && v != "" {
				return strings.ToLower(v)
			}
		}
	}
	return ""
}

// stampMillis records a timestamp given in milliseconds (or seconds) since
// the epoch, or as RFC 3339 text.
func (s *session) stampMillis(v any) {
	var n int64
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return
		}
		n = int64(f)
	case float64:
		n = int64(x)
	case string:
		s.stamp(x)
		return
	default:
		return
	}
	if n <= 0 {
		return
	}
	if n < 10_000_000_000 { // seconds
		n *= 1000
	}
	s.stamp(time.UnixMilli(n).UTC().Format(time.RFC3339Nano))
}
