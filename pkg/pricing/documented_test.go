package pricing

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// modelFamily matches a hosted model's name in prose: the OpenAI, Anthropic
// and Google families the built-in table covers. Group 1 is the name.
var modelFamily = regexp.MustCompile(`(?:^|[^\w\-./@])(gpt-\d[\w.\-]*|o[134](?:-mini|-pro|-nano)?|claude-(?:opus|sonnet|haiku)-[\w.\-@]+|claude-\d[\w.\-@]*|gemini-\d[\w.\-]*)(?:$|[^\w])`)

// modelKey matches a config key whose value names a model, in YAML
// ("target: X", "targets: [X, Y]", flow maps) and in --set flags
// ("model.target=X"). Group 2 is the value.
var modelKey = regexp.MustCompile(`(?m)(?:^|[ \t{,\-])((?:model\.)?(?:optimizer|target|optimizer_model|target_model|targets))[ \t]*[:=][ \t]*(\[[^\]\n]*\]|[^\s#,{}\[\]]+)`)

// yamlComment is a YAML comment: a "#" at a line's start or after a blank.
var yamlComment = regexp.MustCompile(`(?m)(^|[ \t])#.*$`)

// unpricedOnPurpose are model names the docs use that have no list price,
// each with why; the test fails when one of them is no longer named (drop
// it) or becomes priced.
var unpricedOnPurpose = map[string]string{
	"gpt-5.5-codex": "not on OpenAI's price list; docs/skillopt-users.md says so and why it is not priced",
	"qwen/qwen3-8b": "self-hosted on vLLM in docs/backends.md: no list price, the user prices it in a --prices table",
}

// documentedModels returns every model name found in README.md, docs/**.md
// and configs/**.yaml (the price table aside), with one file naming it.
func documentedModels(t *testing.T, root string) map[string]string {
	t.Helper()
	found := map[string]string{}
	add := func(name, where string) {
		name = strings.ToLower(strings.Trim(name, "\"'.-`"))
		if name == "" || strings.HasPrefix(name, "$") || strings.Contains(name, "<") {
			return
		}
		if _, ok := found[name]; !ok {
			found[name] = where
		}
	}
	scanKeys := func(text, where string) {
		text = yamlComment.ReplaceAllString(text, "$1")
		for _, m := range modelKey.FindAllStringSubmatch(text, -1) {
			v := m[2]
			if strings.HasPrefix(v, "[") {
				for _, item := range strings.Split(strings.Trim(v, "[]"), ",") {
					add(strings.TrimSpace(item), where)
				}
				continue
			}
			add(v, where)
		}
	}
	var files []string
	files = append(files, filepath.Join(root, "README.md"))
	for _, dir := range []string{"docs", "configs"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			ext := filepath.Ext(path)
			if (dir == "docs" && ext == ".md") || (dir == "configs" && (ext == ".yaml" || ext == ".yml") && d.Name() != "prices.yaml") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		text := string(b)
		for _, m := range modelFamily.FindAllStringSubmatch(text, -1) {
			add(m[1], rel)
		}
		if strings.HasSuffix(path, ".md") {
			// Config keys count inside yaml code blocks and --set flags.
			for _, m := range regexp.MustCompile("(?s)```ya?ml\n(.*?)```").FindAllStringSubmatch(text, -1) {
				scanKeys(m[1], rel)
			}
			for _, m := range regexp.MustCompile("(?:model\\.(?:optimizer|target)=|--(?:model|target[_-]model|optimizer[_-]model)[ =])([^\\s\"'\\\\`,;)]+)").FindAllStringSubmatch(text, -1) {
				add(m[1], rel)
			}
			continue
		}
		scanKeys(text, rel)
	}
	return found
}

func TestEveryDocumentedModelIsPriced(t *testing.T) {
	t.Parallel()
	tab := Default()
	found := documentedModels(t, filepath.Join("..", ".."))
	// The scan must see the models the README and the base config name,
	// or it checks nothing.
	for _, must := range []string{"gpt-5.5", "gpt-5.4-mini", "sim-target", "claude-sonnet-4-6", "qwen/qwen3-8b"} {
		if _, ok := found[must]; !ok {
			t.Errorf("the scan did not find %q in README.md, docs or configs", must)
		}
	}
	names := make([]string, 0, len(found))
	for name := range found {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		_, _, priced := tab.Lookup(name)
		if name == "sim" {
			// The simulated model answers to any name; bench.sh's
			// examples call it "sim".
			continue
		}
		why, exempt := unpricedOnPurpose[name]
		switch {
		case exempt && priced:
			t.Errorf("%s (named in %s) is exempt as unpriced (%s) but the table prices it: drop the exemption", name, found[name], why)
		case !exempt && !priced:
			t.Errorf("%s is named in %s but configs/prices.yaml has no price for it (nor is it a sim-* model): add its list price to configs/prices.yaml and pkg/pricing/prices.yaml, or name a priced model", name, found[name])
		}
	}
	for name := range unpricedOnPurpose {
		if _, ok := found[name]; !ok {
			t.Errorf("exemption %q is no longer named in README.md, docs or configs: drop it", name)
		}
	}
	t.Logf("%d model names checked", len(names))
}

func TestModelScan(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for path, body := range map[string]string{
		"README.md": "Run with `--set model.optimizer=gpt-5.5 --set model.target=gpt-5.4-mini`.\n" +
			"The cell searchqa-gpt-5.4-mini-api-s1 is a cell name, claude-code a tool; o3-pro and claude-sonnet-4-5@20250929 are models.\n",
		"docs/a.md": "```yaml\nmodel:\n  target: Qwen/Qwen3-8B   # local\n  targets: [my-deploy, sim-target]\n```\n" +
			"target: outside-a-block is prose\n",
		"configs/c.yaml":      "model:\n  optimizer: gpt-4o   # the optimizer: claude, not scanned\n  target: \"\"\ntarget_task_filter: true\noptimizer:\n  learning_rate: 4\n",
		"configs/prices.yaml": "models:\n  target: not-scanned\n",
	} {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found := documentedModels(t, root)
	var got []string
	for name := range found {
		got = append(got, name)
	}
	sort.Strings(got)
	want := []string{"claude-sonnet-4-5@20250929", "gpt-4o", "gpt-5.4-mini", "gpt-5.5", "my-deploy", "o3-pro", "qwen/qwen3-8b", "sim-target"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("found %v, want %v", got, want)
	}
}
