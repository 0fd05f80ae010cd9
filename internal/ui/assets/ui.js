// skillfleet dashboard. Everything shown comes from the server's JSON, which
// holds run content (skills, edits, names): untrusted text. It is only ever
// inserted with textContent / text nodes, never as HTML.
(function () {
  "use strict";
  var root = document.documentElement;
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message || e));
    root.dataset.errors = errors.join(" | ");
  });

  var body = document.body;
  var page = body.dataset.page;
  var base = body.dataset.base || "/";

  // el builds an element; string children become text nodes.
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null) continue;
        if (k === "class") e.className = attrs[k];
        else if (k === "text") e.textContent = attrs[k];
        else if (k === "href") e.setAttribute("href", safeHref(attrs[k]));
        else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), attrs[k]);
        else e.setAttribute(k, attrs[k]);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(e, c) {
    if (c == null || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(e, x); }); return; }
    if (typeof c === "string" || typeof c === "number") e.appendChild(document.createTextNode(String(c)));
    else e.appendChild(c);
  }
  // Only links to this server.
  function safeHref(h) { h = String(h); return h.charAt(0) === "/" && h.charAt(1) !== "/" ? h : "#"; }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function $(id) { return document.getElementById(id); }

  function num(v, d) { return v == null ? "–" : Number(v).toFixed(d == null ? 3 : d); }
  function tokens(n) {
    if (n == null || n < 0) return "–";
    if (n >= 1e6) return (n / 1e6).toFixed(2) + "M";
    if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
    return String(n);
  }
  function usd(v) { return v == null ? "–" : "$" + (v < 1 ? v.toFixed(4) : v.toFixed(2)); }
  function dur(s) {
    if (s == null) return "–";
    s = Math.max(0, Math.round(s));
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), x = s % 60;
    return h > 0 ? h + "h" + (m < 10 ? "0" : "") + m + "m" : m > 0 ? m + "m" + (x < 10 ? "0" : "") + x + "s" : x + "s";
  }

  function table(t, head, rows) {
    clear(t);
    t.appendChild(el("thead", null, el("tr", null, head.map(function (h) { return el("th", null, h); }))));
    var tb = el("tbody");
    rows.forEach(function (r) {
      var tr = el("tr", r.attrs || null);
      (r.cells || r).forEach(function (c) { tr.appendChild(c instanceof Node ? el("td", null, c) : el("td", null, c == null ? "–" : String(c))); });
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    if (!rows.length) tb.appendChild(el("tr", null, el("td", { colspan: String(head.length), class: "dim" }, "none")));
  }

  // --- live connection -----------------------------------------------------
  var reconnects = 0, opened = false;
  function connect(path, onView) {
    var conn = $("conn");
    var es = new EventSource(path);
    es.onopen = function () {
      if (opened) reconnects++;
      opened = true;
      root.dataset.conn = "open";
      root.dataset.reconnects = String(reconnects);
      conn.textContent = "live";
      conn.className = "conn ok";
    };
    es.onerror = function () {
      root.dataset.conn = "lost";
      conn.textContent = "reconnecting…";
      conn.className = "conn bad";
    };
    // A page gets "view" (campaign, fleet) or a run's "base" (once a
    // decision) and "live" (progress, about once a second).
    var cur = {}, partKeys = {}, haveBase = false, baseDirty = false;
    function on(name, isBase) {
      es.addEventListener(name, function (e) {
        var v = JSON.parse(e.data);
        root.dataset.updates = String(Number(root.dataset.updates || 0) + 1);
        if (name === "view") { onView(v, true); return; }
        // A part replaces its previous self: keys it no longer has
        // (empty lists and notes are left out) are dropped.
        (partKeys[name] || []).forEach(function (k) { delete cur[k]; });
        partKeys[name] = Object.keys(v);
        Object.keys(v).forEach(function (k) { cur[k] = v[k]; });
        if (isBase) { haveBase = true; baseDirty = true; }
        if (haveBase && cur.spend) { onView(cur, baseDirty); baseDirty = false; }
      });
    }
    on("view", true);
    on("base", true);
    on("live", false);
    es.addEventListener("failure", function (e) {
      var conn2 = $("conn");
      conn2.textContent = "cannot read: " + JSON.parse(e.data);
      conn2.className = "conn bad";
    });
  }

  // --- charts ----------------------------------------------------------------
  var charts = {};
  function chart(id, key, opts, data) {
    var box = $(id);
    var c = charts[id];
    if (c && c.key !== key) { c.plot.destroy(); c = null; }
    if (!c) {
      clear(box);
      opts.width = Math.max(300, box.clientWidth || 560);
      opts.height = 220;
      c = charts[id] = { key: key, plot: new uPlot(opts, data, box) };
    } else {
      c.plot.setData(data);
    }
    box.dataset.points = String(data[0].length);
    box.uplot = c.plot;
    return c.plot;
  }
  var palette = ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
  function line(label, color, extra) {
    var s = { label: label, stroke: color, width: 2, spanGaps: true };
    for (var k in extra) s[k] = extra[k];
    return s;
  }
  function pointsOnly(label, color) {
    return { label: label, stroke: color, fill: color, width: 0, paths: function () { return null; }, points: { show: true, size: 7, fill: color } };
  }
  // marker is a series drawn as one large point (the final promotion).
  function marker(label, color) {
    return { label: label, stroke: "#000", fill: color, width: 0, paths: function () { return null; }, points: { show: true, size: 14, width: 1.5, stroke: "#000", fill: color } };
  }
  function axisUSD(x) { return x == null ? "" : "$" + (x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(2) : String(+x.toFixed(4))); }
  // fitAxis sizes a y axis to its widest tick label (uPlot's fixed default
  // cut labels such as "500.0k" to "00.0k"), plus the ticks and the gap;
  // uPlot adds the axis title's room itself.
  var measure = document.createElement("canvas").getContext("2d");
  function fitAxis(u, values, axisIdx, cycleNum) {
    var axis = u.axes[axisIdx];
    if (cycleNum > 1) return axis._size;
    measure.font = axis.font[0]; // scaled by the device pixel ratio
    var w = 0;
    (values || []).forEach(function (t) { if (t != null) w = Math.max(w, measure.measureText(String(t)).width); });
    w /= window.devicePixelRatio || 1;
    return Math.max(40, Math.ceil(w + (axis.ticks.show ? axis.ticks.size : 0) + axis.gap + 6));
  }
  var stepAxis = { label: "step", values: function (u, vals) { return vals.map(function (v) { return Number.isInteger(v) ? String(v) : ""; }); } };

  // --- run page ----------------------------------------------------------
  // The step panel follows the newest step until a row is clicked.
  var shownStep = null, followLatest = true, lastSkillKey = null;

  // runView draws the run; the charts and tables of decisions only when
  // the base part changed.
  function runView(v, isBase) {
    $("title").textContent = "Run " + v.name + (v.benchmark ? " · " + v.benchmark : "") + (v.run_id ? " · " + v.run_id : "");
    root.dataset.step = String(v.last_step);
    root.dataset.selectionPoints = String(v.selection.x ? v.selection.x.length : 0);
    root.dataset.finished = String(v.finished);

    var st = clear($("status"));
    var state = v.finished ? "finished" : v.live ? "running" : "not running";
    st.appendChild(el("span", { class: "badge " + (v.finished ? "done" : v.live ? "ok" : "dim") }, state));
    st.appendChild(el("span", { class: "big" }, "step ", el("b", { id: "step-counter" }, String(v.last_step)), " / " + (v.total_steps || "?")));
    var p = v.progress;
    if (p && v.live) {
      var pct = p.total ? Math.round(100 * p.done / p.total) : 0;
      st.appendChild(el("span", null, p.head + (p.stage ? " · " + p.stage + " " + p.done + "/" + p.total + (p.failed ? " (" + p.failed + " failed)" : "") : "")));
      var bar = el("span", { class: "bar" }, el("span", { class: "fill" }));
      bar.firstChild.style.width = pct + "%";
      st.appendChild(bar);
    } else if (v.phase) {
      st.appendChild(el("span", null, "phase " + v.phase));
    }
    st.appendChild(el("span", null, "current " + num(v.current_score)));
    st.appendChild(el("span", { id: "best-so-far" }, "best so far ", el("b", null, num(v.best_score)), " (step " + v.best_step +
      (v.promoted ? ", the final skill promoted at the end: " + num(v.promoted.from) + " → " + num(v.promoted.score) : "") + ")"));
    st.appendChild(el("span", null, "ETA " + (v.finished ? "done" : dur(v.eta_s))));
    st.appendChild(el("span", null, "spend " + tokens(v.spend.total_tokens) + " tokens · " + usd(v.spend.total_usd)));
    st.appendChild(el("span", { class: "dim" }, v.decided.accepted + " accepted · " + v.decided.rejected + " rejected · " + v.decided.skipped + " skipped"));
    if (v.stop && !v.finished) {
      st.appendChild(el("button", { id: "stop", onclick: stopRun }, "Stop run"));
    }
    (v.notes || []).forEach(function (n) { st.appendChild(el("div", { class: "note" }, n)); });

    if (isBase) drawDecisions(v);

    table($("spend"), ["stage", "role", "model", "calls", "input", "output", "$"], v.spend.rows.map(function (r) {
      return [r.stage, r.role, r.model, String(r.calls), tokens(r.input_tokens), tokens(r.output_tokens), usd(r.usd)];
    }));
    $("spend").appendChild(el("caption", null, "from " + v.spend.source + (v.spend.prices_as_of ? "; prices as of " + v.spend.prices_as_of : "")));

    // The skills change only when a step is accepted, a new best is found
    // or the run ends (or an epoch starts): not on every rejected step.
    var key = v.decided.accepted + "/" + v.best_step + "/" + v.best_score + "/" + v.finished + "/" + v.epoch;
    if (key !== lastSkillKey) {
      lastSkillKey = key;
      loadSkill("current");
      loadSkill("best");
    }
  }

  function drawDecisions(v) {
    var sx = (v.selection.x || []).slice(), cur = (v.selection.values.current || []).slice(), best = (v.selection.values.best || []).slice();
    var cand = (v.selection.values.candidate || []).slice(), promo = sx.map(function () { return null; });
    var pr = v.promoted;
    if (pr) {
      // Half a step after the last: the current line rises to the best.
      sx.push(pr.x); cur.push(pr.score); best.push(pr.score); cand.push(null); promo.push(pr.score);
    }
    chart("chart-selection", "sel" + (pr ? "+promoted" : ""), {
      scales: { x: { time: false } },
      axes: [stepAxis, { label: "selection score", size: fitAxis }],
      series: [{ label: "step" }, line("current", palette[0]), line("best", palette[1], { dash: [6, 4] }), pointsOnly("candidate", palette[2])]
        .concat(pr ? [marker("★ final promotion", "#e6a100")] : [])
    }, [sx, cur, best, cand].concat(pr ? [promo] : []));
    $("chart-selection").dataset.promoted = pr ? String(pr.x) : "";

    chart("chart-rollout", "roll", {
      scales: { x: { time: false } },
      axes: [stepAxis, {}],
      series: [{ label: "step" }, line("hard", palette[3]), line("soft", palette[4], { dash: [4, 4] })]
    }, [v.rollout.x || [], v.rollout.values.hard, v.rollout.values.soft]);

    var stages = Object.keys(v.spend_curve.tokens || {}).sort();
    var hasUSD = !!(v.spend_curve.usd && v.spend_curve.usd.length);
    var series = [{ label: "step" }], data = [v.spend_curve.x || []];
    stages.forEach(function (s, i) { series.push(line(s, palette[i % palette.length], { scale: "tok" })); data.push(v.spend_curve.tokens[s]); });
    if (hasUSD) { series.push(line("$", "#000", { scale: "usd", dash: [2, 3] })); data.push(v.spend_curve.usd); }
    chart("chart-spend", stages.join("|") + (hasUSD ? "$" : ""), {
      scales: { x: { time: false } },
      axes: [stepAxis, { scale: "tok", label: "tokens spent", size: fitAxis, values: function (u, vals) { return vals.map(tokens); } }]
        .concat(hasUSD ? [{ scale: "usd", side: 1, label: "$ spent", size: fitAxis, grid: { show: false }, values: function (u, vals) { return vals.map(axisUSD); } }] : []),
      series: series
    }, data);

    var test = clear($("test"));
    if (v.test) {
      var max = 0;
      ["baseline", "best", "final"].forEach(function (k) { if (v.test[k]) max = Math.max(max, v.test[k].hard); });
      ["baseline", "best", "final"].forEach(function (k) {
        var t = v.test[k];
        if (!t) return;
        var b = el("span", { class: "hbar" });
        b.style.width = (max > 0 ? Math.round(100 * t.hard / Math.max(max, 1e-9)) : 0) + "%";
        test.appendChild(el("div", { class: "testrow" }, el("span", { class: "lbl" }, k), el("span", { class: "track" }, b), el("span", null, num(t.hard) + (t.soft != null ? " (soft " + num(t.soft) + ")" : ""))));
      });
    } else {
      test.appendChild(el("p", { class: "dim" }, "The test split is evaluated when training ends."));
    }

    var finalRow = pr ? [{
      attrs: { class: "final", id: "final-row" },
      cells: ["final", "", "final: best skill promoted", "from " + num(pr.from), num(pr.score), num(pr.score), "", "", "", "", "", ""]
    }] : [];
    table($("steps"), ["step", "epoch", "action", "candidate", "current", "best", "merged", "ranked", "applied", "not applied", "tokens", "wall"],
      finalRow.concat(v.steps.slice().reverse().map(function (s) {
        return {
          attrs: { class: "row " + (s.verdict || "") + (shownStep === s.step ? " sel" : ""), "data-step": String(s.step), onclick: function () { followLatest = false; showStep(s.step); } },
          cells: [String(s.step), String(s.epoch), s.action, s.candidate != null ? num(s.candidate) : (s.note || "–"), num(s.current), num(s.best),
            String(s.merged), String(s.ranked), String(s.applied), String(s.skipped_edits), tokens(s.tokens), dur(s.wall_s)]
        };
      })));

    var rej = clear($("rejected"));
    if (!v.rejected.length) rej.appendChild(el("p", { class: "dim" }, "No rejected edits in this epoch."));
    v.rejected.forEach(function (r) {
      rej.appendChild(el("div", { class: "rejstep" }, el("h4", null, "step " + r.step), items(r.edits)));
    });

    var newest = v.steps.length ? v.steps[v.steps.length - 1].step : null;
    if (newest != null && (shownStep == null || (followLatest && newest !== shownStep))) showStep(newest, true);
  }

  function loadSkill(which) {
    fetch(base + "skill/" + which, { credentials: "same-origin" }).then(function (r) {
      return r.ok ? r.text() : Promise.resolve("");
    }).then(function (text) {
      var box = clear($("skill-" + which));
      if (!text) { box.appendChild(el("p", { class: "dim" }, "not written yet")); return; }
      box.appendChild(markdown(text));
    });
  }

  // markdown renders a small subset (headings, lists, code fences,
  // paragraphs) as elements whose content is text.
  function markdown(text) {
    var out = el("div", { class: "md" });
    var lines = text.split("\n"), list = null, code = null, para = null;
    function flush() { list = null; para = null; }
    lines.forEach(function (ln) {
      if (code) {
        if (/^\s*```/.test(ln)) { code = null; return; }
        code.textContent += ln + "\n";
        return;
      }
      if (/^\s*```/.test(ln)) { flush(); code = el("pre"); out.appendChild(code); return; }
      var h = /^(#{1,6})\s+(.*)$/.exec(ln);
      if (h) { flush(); out.appendChild(el("h" + Math.min(6, h[1].length + 3), null, h[2])); return; }
      var li = /^\s*(?:[-*+]|\d+[.)])\s+(.*)$/.exec(ln);
      if (li) { para = null; if (!list) { list = el("ul"); out.appendChild(list); } list.appendChild(el("li", null, li[1])); return; }
      if (!ln.trim()) { flush(); return; }
      list = null;
      if (!para) { para = el("p"); out.appendChild(para); } else para.appendChild(document.createTextNode(" "));
      para.appendChild(document.createTextNode(ln));
    });
    return out;
  }

  // items lists edits: each field as a labelled text line.
  function items(list) {
    if (!list || !list.length) return el("p", { class: "dim" }, "none");
    var ol = el("ol", { class: "items" });
    list.forEach(function (it) {
      var li = el("li");
      if (it && typeof it === "object") {
        Object.keys(it).forEach(function (k) {
          var val = it[k];
          if (val == null || val === "") return;
          if (typeof val === "object") val = JSON.stringify(val);
          li.appendChild(el("div", { class: "kv" }, el("span", { class: "k" }, k), el("span", { class: "v" }, String(val))));
        });
      } else li.appendChild(document.createTextNode(JSON.stringify(it)));
      ol.appendChild(li);
    });
    return ol;
  }

  function showStep(n, quiet) {
    shownStep = n;
    Array.prototype.forEach.call(document.querySelectorAll("#steps tr.row"), function (tr) {
      tr.classList.toggle("sel", tr.dataset.step === String(n));
    });
    fetch(base + "step/" + n, { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error("step " + n + ": " + r.status);
      return r.json();
    }).then(function (d) {
      var box = clear($("step-detail"));
      box.appendChild(el("h2", null, "Step " + d.step + (d.action ? " · " + d.action : "") + (d.rejected ? " (rejected: its ranked edits went to the buffer)" : "")));
      var cols = el("div", { class: "cols" });
      cols.appendChild(el("div", null, el("h3", null, "Merged " + (d.payload_key || "edits") + " (" + d.merged.length + ")"), items(d.merged)));
      cols.appendChild(el("div", null, el("h3", null, "Ranked (" + d.ranked.length + ")"), items(d.ranked)));
      cols.appendChild(el("div", null, el("h3", null, "Applied / not applied (" + d.apply.length + ")"), items(d.apply)));
      box.appendChild(cols);
      box.appendChild(el("h3", null, "Skill diff" + (d.diff_from ? ": " + d.diff_from + " → " + d.diff_to : "")));
      var pre = el("pre", { class: "diff" });
      d.diff.forEach(function (l) {
        pre.appendChild(el("span", { class: l.op === "+" ? "add" : l.op === "-" ? "del" : "ctx" }, l.op + " " + l.text + "\n"));
      });
      if (!d.diff.length) pre.appendChild(el("span", { class: "dim" }, "no change"));
      box.appendChild(pre);
      var failed = d.failed || [];
      box.appendChild(el("h3", null, "Failed rollouts (" + failed.length + ")"));
      var fl = el("ul", { class: "failed" });
      failed.forEach(function (f) {
        fl.appendChild(el("li", null, el("a", { href: base + f.link, target: "_blank", rel: "noopener" }, f.id),
          " " + f.outcome + " · hard " + num(f.hard) + " · answered " + JSON.stringify(f.prediction) + (f.fail_reason ? " · " + f.fail_reason : "")));
      });
      if (!failed.length) fl.appendChild(el("li", { class: "dim" }, "none"));
      box.appendChild(fl);
      (d.notes || []).forEach(function (n2) { box.appendChild(el("div", { class: "note" }, n2)); });
    }).catch(function (e) { if (!quiet) $("step-detail").textContent = String(e); });
  }

  function stopRun() {
    if (!window.confirm("Stop this run at its next phase boundary? It can be resumed later.")) return;
    fetch(base + "stop", { method: "POST", credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (t) {
      var b = $("stop");
      if (b) { b.disabled = true; b.textContent = "stop requested"; }
      $("status").appendChild(el("div", { class: "note" }, t));
    });
  }

  // --- campaign page -----------------------------------------------------
  function campaignView(v) {
    $("title").textContent = "Campaign " + v.name;
    root.dataset.cells = String(v.cells.length);
    var st = clear($("status"));
    st.appendChild(el("span", null, v.cells.length + " cells"));
    st.appendChild(el("span", null, "spend " + tokens(v.total_tokens) + " tokens · " + usd(v.total_usd)));
    (v.notes || []).forEach(function (n) { st.appendChild(el("div", { class: "note" }, n)); });
    table($("cells"), ["cell", "state", "step", "current", "best", "Δ test best", "Δ test final", "Δ vs no skill", "tokens", "$", "ETA"], v.cells.map(function (c) {
      var name = c.link ? el("a", { href: c.link }, c.name) : el("span", null, c.name);
      return {
        attrs: { class: "cell " + c.state },
        cells: [name, c.state + (c.error ? " (" + c.error + ")" : ""), c.step + "/" + (c.total_steps || "?"), num(c.current), num(c.best),
          signed(c.test_delta_best), signed(c.test_delta_final), signed(c.test_delta_no_skill), tokens(c.tokens), usd(c.usd), c.state === "done" ? "done" : dur(c.eta_s)]
      };
    }));
  }
  function signed(v) { return v == null ? "–" : (v >= 0 ? "+" : "") + v.toFixed(3); }

  // --- fleet page ------------------------------------------------------------
  function fleetView(v) {
    var st = clear($("status"));
    var f = v.live;
    if (!f) {
      st.appendChild(el("p", { class: "dim" }, v.error ? "fleet status failed: " + v.error : "No live fleet: this dashboard serves finished runs (start it with --ui on train or coordinator to see workers)."));
    } else {
      st.appendChild(el("span", null, f.workers.length + " workers connected"));
      st.appendChild(el("span", null, f.pending + " tasks awaiting results"));
      st.appendChild(el("span", null, f.recorded + " results recorded"));
      (f.notes || []).forEach(function (n) { st.appendChild(el("div", { class: "note" }, n)); });
    }
    f = f || { workers: [], queues: [], registry: [], limits: [] };
    table($("workers"), ["worker", "host", "in flight", "concurrency", "completed", "last seen"], f.workers.map(function (w) {
      return [w.id, w.host || "", String(w.in_flight), String(w.concurrency), String(w.completed), new Date(w.last_seen).toLocaleTimeString()];
    }));
    table($("queues"), ["class", "waiting", "in delivery", ""], (f.queues || []).map(function (q) { return [q.class, String(q.waiting), String(q.in_delivery), q.error || ""]; }));
    table($("registry"), ["worker", "host", "in flight", "concurrency", "running"], (f.registry || []).map(function (w) {
      return [w.id, w.host || "", String(w.in_flight), String(w.concurrency), (w.running || []).length + " tasks"];
    }));
    if (f.registry_error) $("registry").appendChild(el("caption", null, "registry: " + f.registry_error));
    function left(l, of, shared) {
      if (!of) return "no limit";
      if (l == null) return "? of " + of + (shared ? " (shared in Redis, not readable here)" : "");
      return String(Math.floor(l)) + " of " + of + (shared ? " (shared in Redis)" : "");
    }
    table($("limits"), ["worker", "backend", "model", "endpoint", "requests left / min", "tokens left / min", "in flight / cap (max)", "waiting"], (f.limits || []).map(function (h) {
      return [h.worker, h.backend, h.model, h.endpoint, left(h.requests_left, h.requests_per_min, h.shared), left(h.tokens_left, h.tokens_per_min, h.shared),
        String(h.in_flight) + (h.max_concurrency ? " / " + h.concurrency_cap + " (" + h.max_concurrency + ")" : " (no cap)"), String(h.waiting)];
    }));
    var fl = clear($("failures"));
    v.runs.forEach(function (r) {
      var t = el("table", { class: "grid" });
      fl.appendChild(el("h3", null, r.name));
      fl.appendChild(t);
      table(t, ["stage", "tasks", "failed tasks", "failed calls", "retries", "rate limited", "invalid replies", "failed attempts by cause"], r.failures.map(function (x) {
        var causes = (x.causes || []).map(function (c) { return c.cause + " " + c.n; }).join(", ");
        return [x.stage, String(x.tasks), String(x.failed_tasks), String(x.failed_calls), String(x.retries), String(x.rate_limited), String(x.invalid_replies), causes || "–"];
      }));
    });
  }

  if (page === "run") connect(base + "events", runView);
  else if (page === "campaign") connect(base + "events", campaignView);
  else if (page === "fleet") connect("/fleet/events", fleetView);
  else { var c0 = $("conn"); c0.textContent = ""; }
  root.dataset.ready = "1";
})();
