package ui

import (
	"embed"
	"html/template"
	"net/http"
	"path"
	"strings"
)

// The page and its scripts are embedded: uPlot (assets/, MIT, see
// assets/README.md), our script and stylesheet. The Content-Security-Policy
// set in secure allows nothing from outside this server.

//go:embed assets/uPlot.iife.min.js assets/uPlot.min.css assets/ui.js assets/ui.css assets/launch.js
var assets embed.FS

// UPlotVersion is the version of the vendored uPlot build.
const UPlotVersion = "1.6.32"

var assetTypes = map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	data, err := assets.ReadFile("assets/" + name)
	if err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", assetTypes[path.Ext(name)])
	w.Header().Set("Cache-Control", "max-age=3600")
	_, _ = w.Write(data)
}

// The pages are shells: ui.js fills them from the JSON API and the event
// stream. html/template escapes the few values put in them.
var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/uPlot.min.css">
<link rel="stylesheet" href="/assets/ui.css">
</head>
<body data-page="{{.Page}}" data-name="{{.Name}}" data-base="{{.Base}}">
<header>
<nav><a href="/">skillfleet</a>{{range .Crumbs}} / <a href="{{.Href}}">{{.Text}}</a>{{end}} · <a href="/fleet/">fleet</a>{{if .Launch}} · <a href="/new/" id="nav-new">new run</a>{{end}}</nav>
<span id="conn" class="conn">connecting…</span>
</header>
<main id="main">
{{if eq .Page "index"}}
<h1>Runs and campaigns</h1>
{{if .Launch}}<p><a href="/new/">Start a new run or campaign</a></p>{{end}}
<ul class="targets">{{range .Targets}}<li><a href="{{.Href}}">{{.Text}}</a> <span class="kind">{{.Kind}}</span> <span class="dim">{{.Dir}}</span></li>{{else}}<li class="dim">none yet</li>{{end}}</ul>
{{else if eq .Page "run"}}
<h1 id="title"></h1>
<section class="status" id="status"></section>
<section class="charts">
<figure><figcaption>Selection score per step (current, best, candidate; ★ the final promotion of the best skill)</figcaption><div id="chart-selection" class="chart"></div></figure>
<figure><figcaption>Train rollout accuracy per step</figcaption><div id="chart-rollout" class="chart"></div></figure>
<figure><figcaption>Spend over steps (cumulative tokens spent per stage; $ spent on the right)</figcaption><div id="chart-spend" class="chart"></div></figure>
<figure><figcaption>Test split: baseline, best, final</figcaption><div id="test"></div></figure>
</section>
<section><h2>Steps</h2><table id="steps" class="grid"></table></section>
<section id="step-detail" class="detail"></section>
<section><h2>Rejected-edit buffer (this epoch)</h2><div id="rejected"></div></section>
<section><h2>Spend per stage × role × model</h2><table id="spend" class="grid"></table></section>
<section><h2>Skills</h2>
<div class="skills">
<div><h3>Current skill <a href="skill/current?download=1" download>download</a></h3><div id="skill-current" class="skill"></div></div>
<div><h3>Best skill <a href="skill/best?download=1" download>download</a></h3><div id="skill-best" class="skill"></div></div>
</div></section>
{{else if eq .Page "campaign"}}
<h1 id="title"></h1>
<section class="status" id="status"></section>
<table id="cells" class="grid"></table>
{{else if eq .Page "fleet"}}
<h1>Fleet</h1>
<section class="status" id="status"></section>
<section><h2>Workers</h2><table id="workers" class="grid"></table></section>
<section><h2>Queues</h2><table id="queues" class="grid"></table></section>
<section><h2>Registry</h2><table id="registry" class="grid"></table></section>
<section><h2>Rate-limit headroom</h2><table id="limits" class="grid"></table></section>
<section><h2>Retries and failures by cause</h2><div id="failures"></div></section>
{{else if eq .Page "new"}}
<h1>New run</h1>
<section class="status" id="status"><span id="fleet-note"></span></section>
<div class="newrun">
<div class="picker">
<label class="field">Config <select id="config"></select></label>
<div id="config-error" class="err"></div>
<pre id="preview" class="yaml"></pre>
</div>
<div class="form">
<div id="fields"></div>
<div class="field-row"><label for="f-name">Run name</label><input id="f-name" placeholder="(config name and time)"><span class="err" id="err-name"></span></div>
<div class="actions"><button type="button" id="btn-check">Estimate</button> <button type="button" id="btn-preflight">Preflight</button> <button type="button" id="btn-launch">Launch</button></div>
<div id="general" class="err"></div>
<div id="preflight" class="note"></div>
<h3>Estimate</h3>
<pre id="estimate" class="estimate dim">(choose a config)</pre>
</div>
</div>
<section><h2>Launched from this dashboard</h2><table id="jobs" class="grid"></table></section>
{{end}}
</main>
{{if eq .Page "new"}}<script src="/assets/launch.js"></script>{{else}}<script src="/assets/uPlot.iife.min.js"></script>
<script src="/assets/ui.js"></script>{{end}}
</body>
</html>
`))

type link struct{ Href, Text, Kind, Dir string }

type pageData struct {
	Title, Page, Name, Base string
	// Launch shows the way to the new-run page.
	Launch  bool
	Crumbs  []link
	Targets []link
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	d := pageData{Title: "skillfleet dashboard", Page: "index"}
	s.mu.Lock()
	for _, t := range s.targets {
		kind, href := "run", "/run/"+pathEscape(t.name)+"/"
		if t.campaign {
			kind, href = "campaign", "/campaign/"+pathEscape(t.name)+"/"
		}
		d.Targets = append(d.Targets, link{Href: href, Text: t.name, Kind: kind, Dir: t.dir})
	}
	one := len(s.targets) == 1 && s.o.Launch == nil
	d.Launch = s.o.Launch != nil
	s.mu.Unlock()
	if one {
		http.Redirect(w, r, d.Targets[0].Href, http.StatusSeeOther)
		return
	}
	render(w, d)
}

func (s *Server) page(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d := pageData{Page: kind, Launch: s.o.Launch != nil}
		switch kind {
		case "fleet":
			d.Title = "skillfleet fleet"
			d.Base = "/fleet/"
		default:
			t := s.target(w, r, kind == "campaign")
			if t == nil {
				return
			}
			d.Name = t.name
			d.Base = "/" + kind + "/" + pathEscape(t.name) + "/"
			d.Title = "skillfleet " + kind + " " + t.name
			if camp, cell, ok := strings.Cut(t.name, "~"); ok && kind == "run" {
				d.Crumbs = append(d.Crumbs, link{Href: "/campaign/" + pathEscape(camp) + "/", Text: camp}, link{Href: d.Base, Text: cell})
			} else {
				d.Crumbs = append(d.Crumbs, link{Href: d.Base, Text: t.name})
			}
		}
		render(w, d)
	}
}

func render(w http.ResponseWriter, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pageTmpl.Execute(w, d); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
