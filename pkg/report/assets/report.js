// Draws the charts of a skillfleet report from window.skillfleetReport.
// Marks the page for tests: the html element gets data-rendered=N when N charts were
// drawn, data-ink on each canvas (painted pixels sampled), and
// data-errors when anything failed.
(function () {
  "use strict";
  var fail = window.skillfleetFail || function (m) { throw new Error(m); };
  var D = window.skillfleetReport;
  if (typeof Chart === "undefined") { fail("Chart.js did not load"); return; }
  if (!D) { fail("no report data"); return; }

  var green = "#16a34a", red = "#dc2626", grey = "#98a2b3", blue = "#2563eb", amber = "#d97706";
  var palette = ["#2563eb", "#d97706", "#16a34a", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#ea580c", "#4f46e5", "#0d9488", "#a16207", "#be123c", "#475569"];

  Chart.defaults.animation = false;
  Chart.defaults.responsive = true;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.family = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  if (dark) { Chart.defaults.color = "#e4e7ec"; Chart.defaults.borderColor = "#344054"; }

  function labelled(ctx) {
    var p = ctx.raw || {};
    var v = typeof p.y === "number" ? p.y.toFixed(4) : ctx.formattedValue;
    return ctx.dataset.label + ": " + v + (p.label ? "  (" + p.label + ")" : "");
  }
  function stepAxis() {
    return { type: "linear", title: { display: true, text: "step" }, ticks: { stepSize: 1, precision: 0 } };
  }
  function scoreAxis() {
    return { suggestedMin: 0, suggestedMax: 1, title: { display: true, text: "score" } };
  }

  var charts = [];
  function draw(id, config) {
    var el = document.getElementById(id);
    if (!el) { return; }
    try {
      charts.push({ el: el, chart: new Chart(el, config) });
    } catch (e) {
      fail(id + ": " + e.message);
    }
  }

  draw("chart-selection", {
    type: "line",
    data: { datasets: [
      { label: "current", data: D.current, stepped: "before", borderColor: blue, backgroundColor: blue, pointRadius: 0, borderWidth: 2 },
      { label: "best", data: D.best, stepped: "before", borderColor: amber, backgroundColor: amber, borderDash: [6, 4], pointRadius: 0, borderWidth: 2 },
      { type: "scatter", label: "accepted", data: D.verdicts.accepted, pointStyle: "triangle", pointRadius: 7, borderColor: green, backgroundColor: green },
      { type: "scatter", label: "rejected", data: D.verdicts.rejected, pointStyle: "crossRot", pointRadius: 8, borderWidth: 3, borderColor: red, backgroundColor: red },
      { type: "scatter", label: "skipped", data: D.verdicts.skipped, pointStyle: "rect", pointRadius: 5, borderColor: grey, backgroundColor: grey }
    ].concat(D.promoted ? [
      { type: "scatter", label: "final: best promoted", data: [D.promoted], pointStyle: "star", pointRadius: 10, borderWidth: 2, borderColor: amber, backgroundColor: amber }
    ] : []) },
    options: { parsing: false, scales: { x: stepAxis(), y: scoreAxis() }, plugins: { tooltip: { callbacks: { label: labelled } } } }
  });

  draw("chart-rollout", {
    type: "line",
    data: { datasets: [
      { label: "hard", data: D.rollout_hard, borderColor: blue, backgroundColor: blue, pointRadius: 3 },
      { label: "soft", data: D.rollout_soft, borderColor: green, backgroundColor: green, borderDash: [4, 3], pointRadius: 3 }
    ] },
    options: { parsing: false, scales: { x: stepAxis(), y: scoreAxis() } }
  });

  if (D.test) {
    var ds = [{ label: "hard", data: D.test.hard, backgroundColor: blue }];
    if (D.test.soft && D.test.soft.length) { ds.push({ label: "soft", data: D.test.soft, backgroundColor: green }); }
    draw("chart-test", { type: "bar", data: { labels: D.test.labels, datasets: ds }, options: { scales: { y: scoreAxis() } } });
  }

  draw("chart-spend", {
    type: "bar",
    data: {
      labels: D.spend.labels,
      datasets: (D.spend.stages || []).map(function (s, i) {
        return { label: s.stage, data: s.tokens, backgroundColor: palette[i % palette.length], stack: "tokens" };
      })
    },
    options: {
      scales: { x: { stacked: true, title: { display: true, text: "step" } }, y: { stacked: true, title: { display: true, text: "tokens" } } },
      plugins: { tooltip: { mode: "index", intersect: false } }
    }
  });

  // Sample painted pixels so a test can tell a drawn chart from an empty box.
  charts.forEach(function (c) {
    var n = 0;
    try {
      var canvas = c.el, ctx = canvas.getContext("2d");
      var px = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      for (var i = 3; i < px.length; i += 4 * 7) { if (px[i] !== 0) { n++; } }
    } catch (e) {
      fail("sampling " + c.el.id + ": " + e.message);
    }
    c.el.setAttribute("data-ink", String(n));
  });
  document.documentElement.setAttribute("data-rendered", String(charts.length));
})();
