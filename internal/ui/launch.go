package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/skillfleet/skillfleet/pkg/config"
)

// Launch turns on the new-run page: a config picker over ConfigsDir, the
// training hyperparameters as form fields mapped to --set keys, the
// estimate, a preflight, and launching, stopping and resuming runs and
// campaigns on the fleet this process serves. Nil in Options: off, and
// every launch action is refused.
//
// The functions are the command's own code paths (the config loader of
// train, train --estimate, the credential preflight, train and campaign
// themselves), so what the page accepts is what the command line accepts.
type Launch struct {
	// ConfigsDir holds the config files the picker lists (*.yaml, _base_
	// directories and price tables left out).
	ConfigsDir string
	// RunsDir is where launched runs and campaigns get their directory.
	RunsDir string
	// Fleet says in a few words where launched runs' tasks run.
	Fleet string
	// Sets are overrides of this server applied after the form's to
	// every check and launch (e.g. the model endpoints of its fleet).
	Sets []string
	// Load loads a run config with --set overrides, as train does.
	Load func(path string, sets []string) (*config.Config, error)
	// CheckCampaign checks a campaign file and every cell's config with
	// the sets applied to each cell.
	CheckCampaign func(path string, sets []string) error
	// Estimate writes the expected calls, tokens and dollars of a run of
	// cfg (train --estimate).
	Estimate func(w io.Writer, cfg *config.Config) error
	// Preflight checks the credentials of the models cfg calls.
	Preflight func(ctx context.Context, cfg *config.Config) error
	// Run runs job to its end (a resumed job carries the same Out),
	// writing its own output to out. Cancelling ctx stops it at the next
	// phase boundary, checkpointed.
	Run func(ctx context.Context, job Job, out io.Writer) error
}

// Job is one training run or campaign started from the page.
type Job struct {
	// Kind is "run" or "campaign".
	Kind string `json:"kind"`
	// Config is the config or campaign file (absolute).
	Config string `json:"config"`
	// Sets are the --set overrides the form's fields gave.
	Sets []string `json:"sets"`
	// Out is the run or campaign directory.
	Out string `json:"out"`
}

// LaunchFile is the file in a launched run's directory that records its
// Job, so that it can be resumed by a later dashboard process too.
const LaunchFile = "launch.json"

// LaunchLog is the file in a launched run's directory that gets the
// run's own output (what train or campaign prints).
const LaunchLog = "launch.log"

// launchOff is the answer to every launch action of a server without
// Launch.
const launchOff = "launching runs from the browser is off: start the dashboard with --ui-launch (skillfleet ui --ui-launch)"

// FormField is one hyperparameter of the new-run form.
type FormField struct {
	// Name is the form's name for it.
	Name string `json:"name"`
	// Key is the config key it sets (--set Key=value).
	Key   string `json:"key"`
	Label string `json:"label"`
	// Kind is int, choice or bool.
	Kind    string   `json:"kind"`
	Choices []string `json:"choices,omitempty"`
	Help    string   `json:"help"`
	value   func(c *config.Config) string
}

func itoaField(v int) string  { return strconv.Itoa(v) }
func boolField(v bool) string { return strconv.FormatBool(v) }

// FormFields are the training hyperparameters the page offers, each a
// --set key; a field left at the config file's value sets nothing.
var FormFields = []FormField{
	{Name: "learning_rate", Key: "optimizer.learning_rate", Label: "Learning rate", Kind: "int", Help: "most edits applied per step",
		value: func(c *config.Config) string { return itoaField(c.Optimizer.LearningRate) }},
	{Name: "lr_scheduler", Key: "optimizer.lr_scheduler", Label: "Scheduler", Kind: "choice", Choices: []string{"constant", "linear", "cosine", "autonomous"}, Help: "how the learning rate moves over the run",
		value: func(c *config.Config) string { return c.Optimizer.LRScheduler }},
	{Name: "num_epochs", Key: "train.num_epochs", Label: "Epochs", Kind: "int", Help: "passes over the train split",
		value: func(c *config.Config) string { return itoaField(c.Train.NumEpochs) }},
	{Name: "batch_size", Key: "train.batch_size", Label: "Batch", Kind: "int", Help: "train items per rollout batch",
		value: func(c *config.Config) string { return itoaField(c.Train.BatchSize) }},
	{Name: "analyst_workers", Key: "runtime.optimizer_concurrency", Label: "Analyst workers", Kind: "int", Help: "optimizer calls each worker runs at once (SkillOpt's gradient.analyst_workers)",
		value: func(c *config.Config) string { return itoaField(c.Runtime.OptimizerConcurrency) }},
	{Name: "use_slow_update", Key: "optimizer.use_slow_update", Label: "Slow update", Kind: "bool", Help: "the epoch-boundary slow update",
		value: func(c *config.Config) string { return boolField(c.Optimizer.UseSlowUpdate) }},
	{Name: "use_meta_skill", Key: "optimizer.use_meta_skill", Label: "Meta skill", Kind: "bool", Help: "the optimizer's epoch-level memory",
		value: func(c *config.Config) string { return boolField(c.Optimizer.UseMetaSkill) }},
	{Name: "use_gate", Key: "evaluation.use_gate", Label: "Gate", Kind: "bool", Help: "gate candidates on the selection split (off: every candidate is accepted)",
		value: func(c *config.Config) string { return boolField(c.Evaluation.UseGate) }},
}

// ConfigEntry is one file of the picker.
type ConfigEntry struct {
	// Name is the path under the configs directory, with slashes.
	Name string `json:"name"`
	// Kind is "run" or "campaign".
	Kind string `json:"kind"`
}

// listConfigs walks dir for the config and campaign files the picker
// offers: *.yaml and *.yml outside _base_ directories, a price table
// (a top-level models key) left out.
func listConfigs(dir string) ([]ConfigEntry, error) {
	var out []ConfigEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && (d.Name() == "_base_" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		kind := configKind(p)
		if kind == "" {
			return nil
		}
		out = append(out, ConfigEntry{Name: filepath.ToSlash(rel), Kind: kind})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("configs directory %s: %w", dir, err)
	}
	slices.SortFunc(out, func(a, b ConfigEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// configKind tells a campaign file (matrix or cells at the top) from a
// run config, and a price table (models at the top) from both ("").
func configKind(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var top map[string]yaml.Node
	if yaml.Unmarshal(data, &top) != nil {
		return "run" // the loader will say what is wrong with it
	}
	_, matrix := top["matrix"]
	_, cells := top["cells"]
	_, models := top["models"]
	switch {
	case matrix || cells:
		return "campaign"
	case models:
		return ""
	}
	return "run"
}

// configPath resolves a picker name to a file inside the configs
// directory; anything else is refused.
func (l *Launch) configPath(name string) (string, error) {
	if name == "" {
		return "", errors.New("no config chosen")
	}
	clean := filepath.Clean(filepath.FromSlash(name))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("config %q is not inside the configs directory", name)
	}
	root, err := filepath.Abs(l.ConfigsDir)
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, clean)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		return "", fmt.Errorf("config %q: no such file in %s", name, l.ConfigsDir)
	}
	return p, nil
}

// launchState is the server's record of the jobs it started.
type launchState struct {
	mu   sync.Mutex
	jobs map[string]*job // by target name
	wg   sync.WaitGroup
}

// job is a launched run or campaign and its current attempt.
type job struct {
	name string
	spec Job
	// state is running, finished, stopped or failed; msg says more.
	state, msg string
	started    time.Time
	ended      time.Time
	cancel     context.CancelFunc
}

// JobView is a launched job as the page shows it.
type JobView struct {
	Name    string    `json:"name"`
	Kind    string    `json:"kind"`
	Config  string    `json:"config"`
	Sets    []string  `json:"sets"`
	Dir     string    `json:"dir"`
	Href    string    `json:"href"`
	State   string    `json:"state"`
	Message string    `json:"message,omitempty"`
	Started time.Time `json:"started"`
}

func (s *Server) launchRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /new/{$}", s.newPage)
	mux.HandleFunc("GET /new/configs", s.newConfigs)
	mux.HandleFunc("GET /new/config", s.newConfig)
	mux.HandleFunc("POST /new/check", s.newCheck)
	mux.HandleFunc("POST /new/preflight", s.newPreflight)
	mux.HandleFunc("POST /new/launch", s.newLaunch)
	mux.HandleFunc("GET /new/jobs", s.newJobs)
	mux.HandleFunc("POST /new/jobs/{name}/stop", s.jobStop)
	mux.HandleFunc("POST /new/jobs/{name}/resume", s.jobResume)
}

// launchOn answers 403 and returns false when launching is off.
func (s *Server) launchOn(w http.ResponseWriter) bool {
	if s.o.Launch == nil {
		http.Error(w, launchOff, http.StatusForbidden)
		return false
	}
	return true
}

// writable guards the actions that start or stop work: launching on, a
// JSON body (a cross-site form cannot send one without this server's
// consent, which it never gives), a same-origin request, and without a
// token a Host naming loopback (a page on another name that resolves to
// 127.0.0.1 is refused).
func (s *Server) writable(w http.ResponseWriter, r *http.Request) bool {
	if !s.launchOn(w) {
		return false
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "launch actions take a JSON body (Content-Type: application/json)", http.StatusUnsupportedMediaType)
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			http.Error(w, "cross-origin launch action refused", http.StatusForbidden)
			return false
		}
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		http.Error(w, "cross-site launch action refused", http.StatusForbidden)
		return false
	}
	if s.o.Token == "" {
		host, _, err := splitHostPortOrHost(r.Host)
		if err != nil || !isLoopback(host) {
			http.Error(w, "launch actions without a token are served to loopback names only (Host "+strconv.Quote(r.Host)+")", http.StatusForbidden)
			return false
		}
	}
	return true
}

func splitHostPortOrHost(h string) (string, string, error) {
	if !strings.Contains(h, ":") || strings.HasSuffix(h, "]") {
		return h, "", nil
	}
	return net.SplitHostPort(h)
}

func (s *Server) newPage(w http.ResponseWriter, r *http.Request) {
	if !s.launchOn(w) {
		return
	}
	render(w, pageData{Title: "skillfleet new run", Page: "new", Base: "/new/", Launch: true})
}

func (s *Server) newConfigs(w http.ResponseWriter, r *http.Request) {
	if !s.launchOn(w) {
		return
	}
	list, err := listConfigs(s.o.Launch.ConfigsDir)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, map[string]any{"configs": list, "fields": FormFields, "fleet": s.o.Launch.Fleet, "configs_dir": s.o.Launch.ConfigsDir, "runs_dir": s.o.Launch.RunsDir, "sets": s.o.Launch.Sets})
}

// ConfigPreview is one config as the picker shows it: its text, and for
// a run config the form fields' values it sets (defaults included).
type ConfigPreview struct {
	Name   string            `json:"name"`
	Kind   string            `json:"kind"`
	YAML   string            `json:"yaml"`
	Values map[string]string `json:"values,omitempty"`
	// Error is why the file does not load as it is.
	Error    string   `json:"error,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// previewLimit bounds the text of a previewed file.
const previewLimit = 256 << 10

func (s *Server) newConfig(w http.ResponseWriter, r *http.Request) {
	if !s.launchOn(w) {
		return
	}
	l := s.o.Launch
	name := r.URL.Query().Get("name")
	p, err := l.configPath(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	data, err := os.ReadFile(p)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if len(data) > previewLimit {
		data = append(data[:previewLimit:previewLimit], "\n… (cut)"...)
	}
	pv := ConfigPreview{Name: name, Kind: configKind(p), YAML: string(data)}
	if pv.Kind == "campaign" {
		if l.CheckCampaign != nil {
			if err := l.CheckCampaign(p, l.Sets); err != nil {
				pv.Error = err.Error()
			}
		}
		writeJSON(w, pv)
		return
	}
	cfg, err := l.Load(p, l.Sets)
	if err != nil {
		pv.Error = err.Error()
		writeJSON(w, pv)
		return
	}
	pv.Values = fieldValues(cfg)
	for _, wn := range cfg.Warnings {
		pv.Warnings = append(pv.Warnings, wn.String())
	}
	writeJSON(w, pv)
}

func fieldValues(cfg *config.Config) map[string]string {
	out := map[string]string{}
	for _, f := range FormFields {
		out[f.Name] = f.value(cfg)
	}
	return out
}

// LaunchRequest is what the page sends to check, preflight or launch.
type LaunchRequest struct {
	Config string            `json:"config"`
	Fields map[string]string `json:"fields"`
	// Name is the run directory's name under the runs directory (empty:
	// the config's name and the time).
	Name string `json:"name,omitempty"`
}

// CheckResult is the answer to a check: the sets the fields give, the
// loader's errors by form field (Error: those no field owns), and the
// estimate once the config loads.
type CheckResult struct {
	Kind        string            `json:"kind"`
	Sets        []string          `json:"sets"`
	FieldErrors map[string]string `json:"field_errors,omitempty"`
	Error       string            `json:"error,omitempty"`
	Warnings    []string          `json:"warnings,omitempty"`
	Estimate    string            `json:"estimate,omitempty"`
	// Values are the fields' values the loaded config holds.
	Values map[string]string `json:"values,omitempty"`
	OK     bool              `json:"ok"`
}

// prepared is a request resolved against the configs directory.
type prepared struct {
	path string
	kind string
	sets []string
	cfg  *config.Config
	res  CheckResult
}

// prepare loads the request's config with the sets its fields give,
// through the same loader as the command line. A field equal to the
// file's own value sets nothing.
func (s *Server) prepare(req LaunchRequest) prepared {
	l := s.o.Launch
	var p prepared
	path, err := l.configPath(req.Config)
	if err != nil {
		p.res.Error = err.Error()
		return p
	}
	p.path, p.kind = path, configKind(path)
	p.res.Kind = p.kind
	var base map[string]string
	if p.kind == "run" {
		if cfg, err := l.Load(path, l.Sets); err == nil {
			base = fieldValues(cfg)
		}
	}
	p.res.FieldErrors = map[string]string{}
	for _, f := range FormFields {
		v, ok := req.Fields[f.Name]
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if v == "" {
			p.res.FieldErrors[f.Name] = "empty: give a value, or leave the file's"
			continue
		}
		if base != nil && base[f.Name] == v {
			continue
		}
		if strings.ContainsAny(v, "\n\r") {
			p.res.FieldErrors[f.Name] = "one line only"
			continue
		}
		p.sets = append(p.sets, f.Key+"="+v)
	}
	for name := range req.Fields {
		if !slices.ContainsFunc(FormFields, func(f FormField) bool { return f.Name == name }) {
			p.res.FieldErrors[name] = "not a field of this form"
		}
	}
	p.res.Sets = p.sets
	if len(p.res.FieldErrors) > 0 {
		return p
	}
	// The server's own overrides come last, as on a command line.
	p.sets = append(slices.Clone(p.sets), l.Sets...)
	if p.kind == "campaign" {
		if l.CheckCampaign != nil {
			s.loaderErrors(&p.res, l.CheckCampaign(path, p.sets))
		}
		p.res.OK = p.res.Error == "" && len(p.res.FieldErrors) == 0
		return p
	}
	cfg, err := l.Load(path, p.sets)
	if err != nil {
		s.loaderErrors(&p.res, err)
		return p
	}
	p.cfg = cfg
	p.res.Values = fieldValues(cfg)
	for _, wn := range cfg.Warnings {
		p.res.Warnings = append(p.res.Warnings, wn.String())
	}
	p.res.OK = true
	return p
}

// loaderErrors puts each of the loader's field errors next to the form
// field that sets its key; the rest go to Error.
func (s *Server) loaderErrors(res *CheckResult, err error) {
	if err == nil {
		return
	}
	var rest []string
	for _, e := range leafErrors(err) {
		var fe *config.FieldError
		if errors.As(e, &fe) {
			if i := slices.IndexFunc(FormFields, func(f FormField) bool { return f.Key == fe.Field }); i >= 0 {
				// A campaign's cells all say the same of one bad value:
				// said once.
				name := FormFields[i].Name
				switch prev := res.FieldErrors[name]; {
				case prev == "":
					res.FieldErrors[name] = fe.Msg
				case !slices.Contains(strings.Split(prev, "; "), fe.Msg):
					res.FieldErrors[name] = prev + "; " + fe.Msg
				}
				continue
			}
		}
		rest = append(rest, e.Error())
	}
	res.Error = strings.Join(rest, "\n")
}

// leafErrors flattens joined errors; a wrapped error stays whole (its
// message keeps the context the wrapper added).
func leafErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	if u := errors.Unwrap(err); u != nil {
		if _, ok := u.(interface{ Unwrap() []error }); ok {
			return leafErrors(u)
		}
	}
	return []error{err}
}

// readRequest decodes a launch request body (at most 64 KiB).
func readRequest(w http.ResponseWriter, r *http.Request) (LaunchRequest, bool) {
	var req LaunchRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "launch request: "+err.Error(), http.StatusBadRequest)
		return req, false
	}
	return req, true
}

// newCheck validates the form and, when the config loads, estimates the
// run.
func (s *Server) newCheck(w http.ResponseWriter, r *http.Request) {
	if !s.writable(w, r) {
		return
	}
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	p := s.prepare(req)
	if p.cfg != nil && s.o.Launch.Estimate != nil {
		var b bytes.Buffer
		if err := s.o.Launch.Estimate(&b, p.cfg); err != nil {
			s.loaderErrors(&p.res, err)
			p.res.OK = p.res.Error == "" && len(p.res.FieldErrors) == 0
		}
		p.res.Estimate = b.String()
	}
	writeJSON(w, p.res)
}

// preparedRequest reads a write request and loads the config it names
// with its fields; a request that may not write, cannot be read or names
// a config that does not load has been answered (ok false).
func (s *Server) preparedRequest(w http.ResponseWriter, r *http.Request) (LaunchRequest, prepared, bool) {
	if !s.writable(w, r) {
		return LaunchRequest{}, prepared{}, false
	}
	req, ok := readRequest(w, r)
	if !ok {
		return LaunchRequest{}, prepared{}, false
	}
	p := s.prepare(req)
	if !p.res.OK {
		w.WriteHeader(http.StatusUnprocessableEntity)
		writeJSON(w, p.res)
		return req, p, false
	}
	return req, p, true
}

// newPreflight checks the credentials of the models the run would call.
func (s *Server) newPreflight(w http.ResponseWriter, r *http.Request) {
	_, p, ok := s.preparedRequest(w, r)
	if !ok {
		return
	}
	if p.cfg == nil {
		writeJSON(w, map[string]any{"ok": true, "message": "a campaign's cells are checked when it starts"})
		return
	}
	if p.cfg.Runtime.SimLLM {
		writeJSON(w, map[string]any{"ok": true, "message": "runtime.sim_llm: the run calls the in-process simulated model, no credentials to check"})
		return
	}
	if s.o.Launch.Preflight == nil {
		writeJSON(w, map[string]any{"ok": true, "message": "no preflight in this process"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	if err := s.o.Launch.Preflight(ctx, p.cfg); err != nil {
		writeJSON(w, map[string]any{"ok": false, "message": err.Error()})
		return
	}
	writeJSON(w, map[string]any{"ok": true, "message": "every model answered with the credentials set"})
}

// runName is a launched directory's name: letters, digits, '.', '_', '-'.
var runName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// newLaunch starts the run or campaign and answers where its live view is.
func (s *Server) newLaunch(w http.ResponseWriter, r *http.Request) {
	req, p, ok := s.preparedRequest(w, r)
	if !ok {
		return
	}
	name := req.Name
	if name == "" {
		base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(p.path), ".yaml"), ".yml")
		name = base + "-" + time.Now().UTC().Format("20060102-150405")
	}
	if !runName.MatchString(name) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		writeJSON(w, CheckResult{FieldErrors: map[string]string{"name": "letters, digits, '.', '_' and '-' only (at most 100)"}})
		return
	}
	out, err := filepath.Abs(filepath.Join(s.o.Launch.RunsDir, name))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := os.Stat(out); err == nil {
		w.WriteHeader(http.StatusConflict)
		writeJSON(w, CheckResult{FieldErrors: map[string]string{"name": out + " exists: choose another name, or resume it from the list"}})
		return
	}
	spec := Job{Kind: p.kind, Config: p.path, Sets: p.sets, Out: out}
	if err := os.MkdirAll(out, 0o755); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	data, _ := json.MarshalIndent(spec, "", "  ")
	if err := os.WriteFile(filepath.Join(out, LaunchFile), append(data, '\n'), 0o644); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	t, err := s.addTarget(out, p.kind == "campaign")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	j := &job{name: t.name, spec: spec}
	s.launch.mu.Lock()
	s.launch.jobs[t.name] = j
	s.launch.mu.Unlock()
	s.startJob(j)
	s.o.Log.Warn("dashboard: launched", "kind", spec.Kind, "config", spec.Config, "sets", spec.Sets, "out", spec.Out)
	writeJSON(w, s.jobView(j))
}

// startJob runs j's next attempt in the background.
func (s *Server) startJob(j *job) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.launch.mu.Lock()
	j.state, j.msg, j.started, j.ended, j.cancel = "running", "", time.Now(), time.Time{}, cancel
	s.launch.mu.Unlock()
	s.launch.wg.Add(1)
	go func() {
		defer s.launch.wg.Done()
		defer cancel()
		logf, err := os.OpenFile(filepath.Join(j.spec.Out, LaunchLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		var out io.Writer = io.Discard
		if err == nil {
			defer logf.Close()
			out = logf
		}
		err = s.o.Launch.Run(ctx, j.spec, out)
		if err == nil {
			// A stop that came after the run's last phase boundary
			// would end its next attempt at once.
			_ = os.Remove(filepath.Join(j.spec.Out, "STOP"))
		}
		s.launch.mu.Lock()
		defer s.launch.mu.Unlock()
		j.ended = time.Now()
		switch {
		case err == nil:
			j.state, j.msg = "finished", ""
		case isStop(err):
			j.state, j.msg = "stopped", err.Error()
		default:
			j.state, j.msg = "failed", err.Error()
		}
		if out != io.Discard {
			fmt.Fprintf(out, "dashboard: %s %s %s\n", j.spec.Kind, j.state, j.msg)
		}
	}()
}

// Stopped is the error a Launch.Run returns for a run that stopped on
// request (checkpointed, resumable); Run's error wraps it.
var Stopped = errors.New("stopped on request")

func isStop(err error) bool { return errors.Is(err, Stopped) || errors.Is(err, context.Canceled) }

func (s *Server) jobView(j *job) JobView {
	s.launch.mu.Lock()
	defer s.launch.mu.Unlock()
	kind := j.spec.Kind
	return JobView{Name: j.name, Kind: kind, Config: j.spec.Config, Sets: j.spec.Sets, Dir: j.spec.Out,
		Href: "/" + kind + "/" + pathEscape(j.name) + "/", State: j.state, Message: j.msg, Started: j.started}
}

func (s *Server) newJobs(w http.ResponseWriter, r *http.Request) {
	if !s.launchOn(w) {
		return
	}
	s.launch.mu.Lock()
	list := make([]*job, 0, len(s.launch.jobs))
	for _, j := range s.launch.jobs {
		list = append(list, j)
	}
	s.launch.mu.Unlock()
	slices.SortFunc(list, func(a, b *job) int { return a.started.Compare(b.started) })
	out := make([]JobView, len(list))
	for i, j := range list {
		out[i] = s.jobView(j)
	}
	writeJSON(w, map[string]any{"jobs": out})
}

func (s *Server) job(w http.ResponseWriter, r *http.Request) *job {
	s.launch.mu.Lock()
	j := s.launch.jobs[r.PathValue("name")]
	s.launch.mu.Unlock()
	if j == nil {
		http.Error(w, "no run or campaign launched from this dashboard is named "+strconv.Quote(r.PathValue("name")), http.StatusNotFound)
	}
	return j
}

// jobStop stops a launched job at its next phase boundary: a run through
// its STOP file (as the run page's stop does), a campaign by cancelling
// it (each running cell stops checkpointed).
func (s *Server) jobStop(w http.ResponseWriter, r *http.Request) {
	if !s.writable(w, r) {
		return
	}
	j := s.job(w, r)
	if j == nil {
		return
	}
	s.launch.mu.Lock()
	running, cancel := j.state == "running", j.cancel
	s.launch.mu.Unlock()
	if !running {
		http.Error(w, j.name+" is not running", http.StatusConflict)
		return
	}
	if j.spec.Kind == "run" {
		if err := touchStop(j.spec.Out); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	} else {
		cancel()
	}
	s.o.Log.Warn("dashboard: stop requested", "kind", j.spec.Kind, "name", j.name)
	writeJSON(w, map[string]string{"stop": "requested: it stops at its next phase boundary and can be resumed"})
}

// jobResume starts a stopped or failed job again on its directory: the
// run resumes from its checkpoint.
func (s *Server) jobResume(w http.ResponseWriter, r *http.Request) {
	if !s.writable(w, r) {
		return
	}
	j := s.job(w, r)
	if j == nil {
		return
	}
	s.launch.mu.Lock()
	state := j.state
	s.launch.mu.Unlock()
	if state == "running" || state == "finished" {
		http.Error(w, j.name+" is "+state+": nothing to resume", http.StatusConflict)
		return
	}
	// A STOP file left by a stop that came too late would end the
	// resumed run at once.
	_ = os.Remove(filepath.Join(j.spec.Out, "STOP"))
	s.startJob(j)
	s.o.Log.Warn("dashboard: resumed", "kind", j.spec.Kind, "name", j.name)
	writeJSON(w, s.jobView(j))
}

func touchStop(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, "STOP"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// adoptLaunched registers the jobs recorded in the served directories'
// launch.json files (launched by an earlier dashboard process), so that
// they can be resumed from the page.
func (s *Server) adoptLaunched() {
	s.mu.Lock()
	targets := slices.Clone(s.targets)
	s.mu.Unlock()
	for _, t := range targets {
		data, err := os.ReadFile(filepath.Join(t.dir, LaunchFile))
		if err != nil {
			continue
		}
		var spec Job
		if json.Unmarshal(data, &spec) != nil || spec.Out != t.dir || (spec.Kind != "run" && spec.Kind != "campaign") {
			continue
		}
		state := "stopped"
		if _, err := os.Stat(filepath.Join(t.dir, "summary.json")); err == nil && spec.Kind == "run" {
			state = "finished"
		}
		s.launch.mu.Lock()
		s.launch.jobs[t.name] = &job{name: t.name, spec: spec, state: state, msg: "launched by an earlier dashboard process"}
		s.launch.mu.Unlock()
	}
}
