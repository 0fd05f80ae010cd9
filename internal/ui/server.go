package ui

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/pkg/pricing"
)

// TokenEnv is the environment variable holding the dashboard's access
// token. With a token set, every request must carry it (the page sets a
// cookie after one visit to /?token=...), and the stop action is enabled.
const TokenEnv = "SKILLFLEET_UI_TOKEN"

// Options configure the dashboard server.
type Options struct {
	// Addr is the listen address (host:port; port 0 picks one).
	Addr string
	// Token, when set, is required on every request and enables the stop
	// action. Never logged.
	Token string
	// Insecure allows a non-loopback Addr without a token.
	Insecure bool
	// Prices turns tokens into dollars (nil: the built-in table).
	Prices *pricing.Table
	// Poll is how often an open page's run dir is checked for changes
	// (default 3s).
	Poll time.Duration
	// Fleet reports the live fleet (nil: the Fleet page says there is none).
	Fleet func(ctx context.Context) (*Fleet, error)
	// Log gets the server's own messages (nil: none).
	Log *slog.Logger
	// Launch, when set, turns on the new-run page and its actions
	// (--ui-launch); see [CheckLaunchBind] for where it may listen.
	Launch *Launch
	// TLS, when set, serves the dashboard over HTTPS.
	TLS *tls.Config
}

// ProfileLabel and ProfileValue are the pprof label on the goroutines
// doing the dashboard's work (the HTTP server, its pollers, the
// progress.json writer), so that a CPU profile of a process serving it
// tells that work apart:
//
//	go tool pprof -tagfocus=skillfleet=dashboard BINARY PROFILE
const (
	ProfileLabel = "skillfleet"
	ProfileValue = "dashboard"
)

// labelled runs f with the dashboard's profile label; goroutines f starts
// keep it.
func labelled(f func()) {
	pprof.Do(context.Background(), pprof.Labels(ProfileLabel, ProfileValue), func(context.Context) { f() })
}

// CheckBind refuses to listen beyond loopback without a token, unless
// insecure is set. The error is one line, fit to print as is.
func CheckBind(addr, token string, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--ui %q: want host:port (e.g. 127.0.0.1:8080)", addr)
	}
	if token != "" || insecure || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("--ui %s listens beyond loopback: set %s to an access token, or pass --ui-insecure to serve the dashboard to anyone who can reach it", addr, TokenEnv)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// CheckLaunchBind refuses launching beyond loopback unless the dashboard
// is served over TLS with a token: starting runs spends money, so
// --ui-insecure does not open it to the network.
func CheckLaunchBind(addr, token string, tls bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--ui %q: want host:port (e.g. 127.0.0.1:8080)", addr)
	}
	if isLoopback(host) || (token != "" && tls) {
		return nil
	}
	return fmt.Errorf("--ui-launch on %s listens beyond loopback: launching runs from the browser needs both TLS (--ui-tls-cert, --ui-tls-key) and %s set to an access token there (--ui-insecure does not apply to launching)", addr, TokenEnv)
}

// Server serves the dashboard for some run and campaign dirs.
type Server struct {
	o      Options
	ln     net.Listener
	srv    *http.Server
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	targets []*target // in the order given
	byName  map[string]*target
	fleet   *watch
	started time.Time
	launch  launchState
}

// target is one run or campaign dir given to the server.
type target struct {
	name     string
	dir      string
	campaign bool
	w        *watch
	// steps are the run's step panels as last served.
	steps stepCache
}

// Serve starts serving the dashboard for dirs (run dirs or campaign dirs)
// on o.Addr until ctx ends or Close is called.
func Serve(ctx context.Context, o Options, dirs ...string) (*Server, error) {
	if o.Launch != nil {
		if err := CheckLaunchBind(o.Addr, o.Token, o.TLS != nil); err != nil {
			return nil, err
		}
	}
	if err := CheckBind(o.Addr, o.Token, o.Insecure); err != nil {
		return nil, err
	}
	if len(dirs) == 0 && o.Launch == nil {
		return nil, errors.New("ui: no run or campaign directory to serve")
	}
	if o.Poll <= 0 {
		o.Poll = 3 * time.Second
	}
	if o.Prices == nil {
		o.Prices = pricing.Default()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, byName: map[string]*target{}, started: time.Now(), launch: launchState{jobs: map[string]*job{}}}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil {
			s.cancel()
			return nil, fmt.Errorf("ui: %w", err)
		} else if !fi.IsDir() {
			s.cancel()
			return nil, fmt.Errorf("ui: %s is not a directory", d)
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			s.cancel()
			return nil, fmt.Errorf("ui: %s: %w", d, err)
		}
		if _, err := s.addTarget(abs, isCampaignDir(abs)); err != nil {
			s.cancel()
			return nil, err
		}
	}
	if o.Launch != nil {
		s.adoptLaunched()
	}
	s.fleet = newWatch(s.ctx, 2*o.Poll, nil, one(func() (any, error) { return s.fleetView() }))

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("--ui %s: %w", o.Addr, err)
	}
	if o.TLS != nil {
		ln = tls.NewListener(ln, o.TLS)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(o.Log.Handler(), slog.LevelDebug)}
	// The connections' goroutines, and the pollers their streams start,
	// inherit the profile label.
	labelled(func() {
		go func() {
			if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				o.Log.Error("dashboard stopped", "err", err)
			}
		}()
	})
	go func() {
		<-ctx.Done()
		s.Close()
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the dashboard's address (without the token).
func (s *Server) URL() string {
	if s.o.TLS != nil {
		return "https://" + s.Addr() + "/"
	}
	return "http://" + s.Addr() + "/"
}

// Close stops the server and ends the open pages' streams. Runs launched
// from the page are stopped (checkpointed) and waited for.
func (s *Server) Close() {
	s.cancel()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(sctx)
	s.launch.wg.Wait()
}

// addTarget serves dir (absolute) under a name of its own.
func (s *Server) addTarget(dir string, campaign bool) (*target, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.targets {
		if t.dir == dir {
			return t, nil
		}
	}
	t := &target{dir: dir, campaign: campaign}
	t.name = s.uniqueName(filepath.Base(dir))
	if t.campaign {
		t.w = newWatch(s.ctx, s.o.Poll, func() string { return campaignFingerprint(t.dir) }, one(func() (any, error) { return s.campaignView(t) }))
	} else {
		t.w = s.runWatch(t)
	}
	s.targets = append(s.targets, t)
	s.byName[t.name] = t
	return t, nil
}

func (s *Server) uniqueName(base string) string {
	base = strings.Map(func(r rune) rune {
		if r == '/' || r == '~' || r < ' ' {
			return '_'
		}
		return r
	}, base)
	if base == "" || base == "." {
		base = "run"
	}
	name := base
	for i := 2; s.byName[name] != nil; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name
}

// isRunDir reports whether dir looks like a run dir.
func isRunDir(dir string) bool {
	for _, f := range []string{"events.jsonl", "state.json", "run_id"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// isCampaignDir: a campaign.json, or no run files but run dirs inside.
func isCampaignDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, CampaignFile)); err == nil {
		return true
	}
	if isRunDir(dir) {
		return false
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.IsDir() && isRunDir(filepath.Join(dir, e.Name())) {
			return true
		}
	}
	return false
}

// runWatch watches a run dir: the view is rebuilt when one of runFiles
// changes, and sent as its two parts, "base" and "live". The loader tells
// what changed (it stats each file once a poll), so the watch has no
// fingerprint of its own, and a poll that finds nothing new marshals
// nothing.
func (s *Server) runWatch(t *target) *watch {
	l := newRunLoader(t.dir, s.o.Prices)
	// The parts as last sent: the base marshalled once a decision, the
	// live part once a change.
	var base, live []byte
	return newWatch(s.ctx, s.o.Poll, nil, func() ([]part, error) {
		v, changed, anyChanged, err := l.load()
		if err != nil {
			return nil, err
		}
		if changed || base == nil {
			v.Name = t.name
			v.Stop = s.o.Token != "" || s.o.Launch != nil
			if base, err = json.Marshal(v.RunBase); err != nil {
				return nil, err
			}
		}
		if anyChanged || live == nil {
			if live, err = json.Marshal(v.RunLive); err != nil {
				return nil, err
			}
		}
		return []part{{event: "base", raw: base}, {event: "live", raw: live}}, nil
	})
}

// runFiles are the files whose change means the run view changed.
var runFiles = []string{"events.jsonl", "state.json", ProgressFileName, "summary.json", "tokens.json"}

// fingerprint is the size and modification time of dir's files.
func fingerprint(dir string, files ...string) string {
	b := make([]byte, 0, 40*len(files))
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			b = append(b, "-;"...)
			continue
		}
		b = strconv.AppendInt(b, fi.Size(), 10)
		b = append(b, '.')
		b = strconv.AppendInt(b, fi.ModTime().UnixNano(), 10)
		b = append(b, ';')
	}
	return string(b)
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /assets/{file}", serveAsset)
	mux.HandleFunc("GET /run/{name}/{$}", s.page("run"))
	mux.HandleFunc("GET /run/{name}/api", s.runAPI)
	mux.HandleFunc("GET /run/{name}/events", s.runEvents)
	mux.HandleFunc("GET /run/{name}/step/{n}", s.stepAPI)
	mux.HandleFunc("GET /run/{name}/trajectory", s.trajectory)
	mux.HandleFunc("GET /run/{name}/skill/{which}", s.skillFile)
	mux.HandleFunc("POST /run/{name}/stop", s.stop)
	mux.HandleFunc("GET /campaign/{name}/{$}", s.page("campaign"))
	mux.HandleFunc("GET /campaign/{name}/api", s.campaignAPI)
	mux.HandleFunc("GET /campaign/{name}/events", s.campaignEvents)
	mux.HandleFunc("GET /fleet/{$}", s.page("fleet"))
	mux.HandleFunc("GET /fleet/api", s.fleetAPI)
	mux.HandleFunc("GET /fleet/events", s.fleetEvents)
	s.launchRoutes(mux)
	return s.secure(mux)
}

const cookieName = "skillfleet_ui"

// secure sets the security headers and checks the token.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if s.o.Token != "" {
			if q := r.URL.Query().Get("token"); q != "" && r.Method == http.MethodGet {
				if !s.tokenOK(q) {
					http.Error(w, "wrong token", http.StatusUnauthorized)
					return
				}
				http.SetCookie(w, &http.Cookie{Name: cookieName, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
				u := *r.URL
				qs := u.Query()
				qs.Del("token")
				u.RawQuery = qs.Encode()
				http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
				return
			}
			if !s.authorized(r) {
				http.Error(w, "this dashboard needs its access token: open it once as /?token=TOKEN (the value of "+TokenEnv+")", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tokenOK(t string) bool {
	return s.o.Token != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.o.Token)) == 1
}

func (s *Server) authorized(r *http.Request) bool {
	if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") && s.tokenOK(strings.TrimPrefix(a, "Bearer ")) {
		return true
	}
	if c, err := r.Cookie(cookieName); err == nil && s.tokenOK(c.Value) {
		return true
	}
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) target(w http.ResponseWriter, r *http.Request, campaign bool) *target {
	name := r.PathValue("name")
	s.mu.Lock()
	t := s.byName[name]
	s.mu.Unlock()
	if t == nil && !campaign {
		t = s.cellTarget(name)
	}
	if t == nil || t.campaign != campaign {
		http.Error(w, "no such run or campaign: "+name, http.StatusNotFound)
		return nil
	}
	return t
}

// cellTarget resolves "campaign~cell" to the cell's run dir, registering
// a watch for it on first use.
func (s *Server) cellTarget(name string) *target {
	camp, cell, ok := strings.Cut(name, "~")
	if !ok {
		return nil
	}
	s.mu.Lock()
	c := s.byName[camp]
	s.mu.Unlock()
	if c == nil || !c.campaign {
		return nil
	}
	dir := ""
	for _, cl := range readCampaign(c.dir).Cells {
		if cl.Name == cell {
			dir = cl.Dir
		}
	}
	if dir == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.byName[name]; t != nil {
		return t
	}
	t := &target{name: name, dir: dir}
	t.w = s.runWatch(t)
	s.byName[name] = t
	return t
}

func (s *Server) runAPI(w http.ResponseWriter, r *http.Request) {
	if t := s.target(w, r, false); t != nil {
		serveCurrent(w, t.w)
	}
}

func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	if t := s.target(w, r, false); t != nil {
		t.w.stream(w, r)
	}
}

func (s *Server) campaignAPI(w http.ResponseWriter, r *http.Request) {
	if t := s.target(w, r, true); t != nil {
		serveCurrent(w, t.w)
	}
}

func (s *Server) campaignEvents(w http.ResponseWriter, r *http.Request) {
	if t := s.target(w, r, true); t != nil {
		t.w.stream(w, r)
	}
}

func (s *Server) fleetAPI(w http.ResponseWriter, r *http.Request) { serveCurrent(w, s.fleet) }
func (s *Server) fleetEvents(w http.ResponseWriter, r *http.Request) {
	s.fleet.stream(w, r)
}

func serveCurrent(w http.ResponseWriter, wt *watch) {
	data, err := wt.current()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// skillFile serves the current or best skill as text (download=1: as an
// attachment). It is never served as HTML.
func (s *Server) skillFile(w http.ResponseWriter, r *http.Request) {
	t := s.target(w, r, false)
	if t == nil {
		return
	}
	which := r.PathValue("which")
	var path string
	switch which {
	case "best":
		path = bestSkillPath(t.dir)
	case "current":
		path = currentSkillPath(t.dir)
	default:
		http.Error(w, "skill: want current or best", http.StatusNotFound)
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			http.Error(w, "no "+which+" skill yet", http.StatusNotFound)
			return
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.URL.Query().Get("download") != "" {
		w.Header().Set("Content-Disposition", "attachment; filename="+strconv.Quote(t.name+"-"+which+"_skill.md"))
	}
	_, _ = w.Write(data)
}

// bestSkillPath is best_skill.md once the run has written it; before
// that (no step accepted yet) the best skill is the seed,
// skills/skill_v0000.md.
func bestSkillPath(dir string) string {
	p := filepath.Join(dir, "best_skill.md")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if seed := filepath.Join(dir, "skills", "skill_v0000.md"); func() bool { _, err := os.Stat(seed); return err == nil }() {
		return seed
	}
	return p
}

// currentSkillPath is state.json's current skill, else the newest
// skills/skill_vNNNN.md.
func currentSkillPath(dir string) string {
	var st struct {
		Path string `json:"current_skill_path"`
	}
	if readJSON(filepath.Join(dir, "state.json"), &st) == nil && st.Path != "" && !strings.Contains(st.Path, "..") {
		return filepath.Join(dir, filepath.FromSlash(st.Path))
	}
	m, _ := filepath.Glob(filepath.Join(dir, "skills", "skill_v*.md"))
	sort.Strings(m)
	if len(m) == 0 {
		return filepath.Join(dir, "best_skill.md")
	}
	return m[len(m)-1]
}

// stop writes the STOP file the run checks at each phase boundary. It needs
// the token (and so is off without one) and a same-origin request.
func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	if s.o.Token == "" && s.o.Launch == nil {
		http.Error(w, "stopping is disabled: start the dashboard with "+TokenEnv+" set, or with --ui-launch", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			http.Error(w, "cross-origin stop refused", http.StatusForbidden)
			return
		}
	}
	if s.o.Token == "" {
		// Allowed by --ui-launch alone: only from a page on a loopback
		// name of this server.
		host, _, err := splitHostPortOrHost(r.Host)
		if site := r.Header.Get("Sec-Fetch-Site"); err != nil || !isLoopback(host) || (site != "" && site != "same-origin") {
			http.Error(w, "stop without a token is served to same-origin pages on loopback names only", http.StatusForbidden)
			return
		}
	}
	t := s.target(w, r, false)
	if t == nil {
		return
	}
	f, err := os.OpenFile(filepath.Join(t.dir, "STOP"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_ = f.Close()
	s.o.Log.Warn("dashboard: stop requested", "run", t.name)
	writeJSON(w, map[string]string{"stop": "requested: the run stops at its next phase boundary and can be resumed"})
}
