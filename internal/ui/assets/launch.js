// skillfleet dashboard: the new-run page. Config files, loader errors and
// run output are shown as text only (textContent), never as HTML.
(function () {
  "use strict";
  var root = document.documentElement;
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message || e));
    root.dataset.errors = errors.join(" | ");
  });
  function $(id) { return document.getElementById(id); }
  function el(tag, attrs) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null) continue;
      if (k === "class") e.className = attrs[k];
      else if (k === "href") { var h = String(attrs[k]); e.setAttribute("href", h.charAt(0) === "/" && h.charAt(1) !== "/" ? h : "#"); }
      else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c == null) continue;
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function bump(key) { root.dataset[key] = String(Number(root.dataset[key] || 0) + 1); }

  function post(path, body) {
    return fetch(path, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {})
    }).then(function (r) {
      return r.text().then(function (t) {
        var v = null;
        try { v = JSON.parse(t); } catch (e) { v = null; }
        return { status: r.status, ok: r.ok, json: v, text: t };
      });
    });
  }

  var fields = [];
  var fileValues = {};
  var kind = "run";

  function request() {
    var f = {};
    fields.forEach(function (d) {
      var inp = $("f-" + d.name);
      if (!inp || inp.disabled) return;
      f[d.name] = d.kind === "bool" ? String(inp.checked) : inp.value;
    });
    var req = { config: $("config").value, fields: f };
    var n = $("f-name").value.trim();
    if (n) req.name = n;
    return req;
  }

  function showErrors(res) {
    fields.concat([{ name: "name" }]).forEach(function (d) {
      var e = $("err-" + d.name);
      if (e) e.textContent = "";
      var inp = $("f-" + d.name);
      if (inp) inp.classList.remove("bad");
    });
    var fe = (res && res.field_errors) || {};
    var n = 0;
    Object.keys(fe).forEach(function (k) {
      var e = $("err-" + k);
      if (e) { e.textContent = fe[k]; n++; }
      var inp = $("f-" + k);
      if (inp) inp.classList.add("bad");
    });
    root.dataset.fieldErrors = String(n);
    $("general").textContent = (res && res.error) || "";
  }

  function buildForm() {
    var box = clear($("fields"));
    fields.forEach(function (d) {
      var inp;
      if (d.kind === "choice") {
        inp = el("select", { id: "f-" + d.name });
        d.choices.forEach(function (c) { inp.appendChild(el("option", { value: c }, c)); });
      } else if (d.kind === "bool") {
        inp = el("input", { id: "f-" + d.name, type: "checkbox" });
      } else {
        inp = el("input", { id: "f-" + d.name, type: "text", inputmode: "numeric", size: "6" });
      }
      inp.addEventListener("change", scheduleCheck);
      box.appendChild(el("div", { class: "field-row" },
        el("label", { for: "f-" + d.name, title: d.key }, d.label),
        inp,
        el("span", { class: "dim key" }, d.key),
        el("span", { class: "err", id: "err-" + d.name })));
    });
  }

  function setValues(v) {
    fields.forEach(function (d) {
      var inp = $("f-" + d.name);
      if (!v || v[d.name] == null) return;
      if (d.kind === "bool") inp.checked = v[d.name] === "true";
      else inp.value = v[d.name];
    });
  }

  function loadConfig() {
    var name = $("config").value;
    root.dataset.preview = "";
    return fetch("/new/config?name=" + encodeURIComponent(name), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (pv) {
        kind = pv.kind;
        fileValues = pv.values || {};
        $("preview").textContent = pv.yaml;
        $("config-error").textContent = pv.error || "";
        setValues(fileValues);
        // For a campaign, a field set here overrides every cell; left
        // empty it sets nothing.
        fields.forEach(function (d) {
          var inp = $("f-" + d.name);
          if (kind === "campaign" && d.kind !== "bool") inp.value = "";
        });
        $("btn-launch").textContent = kind === "campaign" ? "Launch campaign" : "Launch";
        root.dataset.preview = name;
        return check();
      });
  }

  function campaignFields(req) {
    // A campaign's cells keep their own values unless a field is given.
    if (kind !== "campaign") return req;
    var f = {};
    fields.forEach(function (d) {
      var inp = $("f-" + d.name);
      if (d.kind !== "bool" && inp.value.trim() !== "") f[d.name] = inp.value;
    });
    req.fields = f;
    return req;
  }

  var timer = null;
  function scheduleCheck() {
    if (timer) clearTimeout(timer);
    timer = setTimeout(check, 250);
  }

  function check() {
    timer = null;
    var est = $("estimate");
    return post("/new/check", campaignFields(request())).then(function (r) {
      if (!r.json) { $("general").textContent = r.text; return; }
      showErrors(r.json);
      if (r.json.estimate) {
        est.textContent = r.json.estimate;
        est.classList.remove("dim");
      } else {
        est.textContent = r.json.ok ? (kind === "campaign" ? "(campaigns are estimated per cell: skillfleet train --estimate on a cell's config)" : "") : "(fix the errors to see the estimate)";
        est.classList.add("dim");
      }
      root.dataset.checkOk = r.json.ok ? "1" : "0";
      root.dataset.sets = (r.json.sets || []).join(" ");
      bump("checks");
    });
  }

  function preflight() {
    $("preflight").textContent = "checking credentials…";
    return post("/new/preflight", campaignFields(request())).then(function (r) {
      if (r.json && r.json.field_errors) { showErrors(r.json); $("preflight").textContent = "fix the errors first"; return; }
      var v = r.json || { ok: false, message: r.text };
      $("preflight").textContent = (v.ok ? "preflight passed: " : "preflight failed: ") + v.message;
      root.dataset.preflight = v.ok ? "ok" : "failed";
    });
  }

  function launch() {
    var b = $("btn-launch");
    b.disabled = true;
    return post("/new/launch", campaignFields(request())).then(function (r) {
      b.disabled = false;
      if (!r.ok) {
        if (r.json) showErrors(r.json); else $("general").textContent = r.text;
        root.dataset.launch = "refused";
        return;
      }
      root.dataset.launch = r.json.href;
      window.location.href = r.json.href;
    });
  }

  function jobAction(name, what) {
    return post("/new/jobs/" + encodeURIComponent(name) + "/" + what, {}).then(function (r) {
      if (!r.ok) $("general").textContent = r.text;
      return loadJobs();
    });
  }

  function loadJobs() {
    return fetch("/new/jobs", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (v) {
      var t = clear($("jobs"));
      t.appendChild(el("tr", null, el("th", null, "name"), el("th", null, "kind"), el("th", null, "state"), el("th", null, "settings"), el("th", null, "directory"), el("th", null, "")));
      (v.jobs || []).forEach(function (j) {
        var act = el("td");
        if (j.state === "running") act.appendChild(el("button", { type: "button", class: "stop", onclick: function () { jobAction(j.name, "stop"); } }, "Stop"));
        if (j.state === "stopped" || j.state === "failed") act.appendChild(el("button", { type: "button", class: "resume", onclick: function () { jobAction(j.name, "resume"); } }, "Resume"));
        t.appendChild(el("tr", { "data-name": j.name, "data-state": j.state },
          el("td", null, el("a", { href: j.href }, j.name)),
          el("td", null, j.kind),
          el("td", { title: j.message || "" }, j.state + (j.message ? ": " + j.message : "")),
          el("td", null, (j.sets || []).join(" ") || "(the file's)"),
          el("td", { class: "dim" }, j.dir),
          act));
      });
      root.dataset.jobs = String((v.jobs || []).length);
    });
  }

  $("btn-check").addEventListener("click", check);
  $("btn-preflight").addEventListener("click", preflight);
  $("btn-launch").addEventListener("click", launch);
  $("config").addEventListener("change", loadConfig);
  $("f-name").addEventListener("change", function () { $("err-name").textContent = ""; });

  fetch("/new/configs", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (v) {
    fields = v.fields || [];
    buildForm();
    $("fleet-note").textContent = "Runs start on " + (v.fleet || "this process") + "; configs from " + v.configs_dir + ", run directories in " + v.runs_dir + "." +
      ((v.sets || []).length ? " This dashboard also sets " + v.sets.join(" ") + "." : "");
    $("conn").hidden = true;
    var sel = $("config");
    var want = new URLSearchParams(window.location.search).get("config");
    (v.configs || []).forEach(function (c) {
      sel.appendChild(el("option", { value: c.name }, c.name + (c.kind === "campaign" ? " (campaign)" : "")));
    });
    root.dataset.configs = String((v.configs || []).length);
    if (want) sel.value = want;
    else if ((v.configs || []).some(function (c) { return c.name === "demo.yaml"; })) sel.value = "demo.yaml";
    return loadConfig();
  }).then(function () { root.dataset.ready = "1"; });
  loadJobs();
  setInterval(loadJobs, 2000);
})();
