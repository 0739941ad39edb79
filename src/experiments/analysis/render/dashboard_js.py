"""The dashboard's stylesheet and script, inlined into the page (no CDN, works from file://)."""

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1280px;padding:0 16px;color:#222}
h1{font-size:22px} h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px} th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left}
th{background:#f5f5f5;position:sticky;top:0} th button{all:unset;cursor:pointer;font-weight:600}
.v-holds{color:#1a7f37;font-weight:600} .v-does{color:#cf222e;font-weight:600} .v-inconclusive{color:#9a6700;font-weight:600} .v-not{color:#57606a;font-weight:600}
#filters fieldset{display:inline-block;vertical-align:top;margin:4px;border:1px solid #ddd}
#runs-wrap{max-height:480px;overflow:auto;border:1px solid #ddd}
figure{margin:12px 0} figure img{max-width:100%;border:1px solid #eee} figcaption{font-weight:600}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:4px 6px;border-radius:3px;font-size:12px;display:none}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
tr.diverged td{background:#fdecea} tr.diverged td.status{color:#cf222e;font-weight:600}
header{display:flex;align-items:baseline;gap:16px;flex-wrap:wrap;border-bottom:1px solid #ddd;margin-bottom:8px}
header h1{margin:10px 0 6px} .sub{color:#57606a;font-size:12px}
#first-screen{display:flex;gap:24px;align-items:flex-start;flex-wrap:wrap}
#answer-figure{flex:0 1 auto;max-width:62%;margin:0}
#answer-figure img{display:block;width:auto;height:auto;max-width:100%;max-height:calc(100vh - 150px)}
#verdicts-box{flex:1 1 380px;min-width:0} #verdicts-box h2{margin-top:0}
#verdict-lines{list-style:none;padding:0;margin:0} #verdict-lines li{padding:5px 0;border-bottom:1px solid #eee}
.claim{font-weight:600} .key{font-size:13px;font-variant-numeric:tabular-nums;color:#333}
#rules{margin:10px 0} #rules summary{cursor:pointer;color:#0969da}
#verdicts{table-layout:fixed;width:100%} #verdicts td{vertical-align:top;overflow-wrap:anywhere}
#quick-look h2{margin-top:8px} .ql-cond{display:flex;flex-wrap:wrap;gap:4px 28px} .caption{font-weight:600;margin:4px 0}
table.ql td:not(:first-child){text-align:right;font-variant-numeric:tabular-nums}
#selftest-result{white-space:pre-wrap;overflow-wrap:anywhere}
"""

JS = r"""
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("dashboard-data").textContent);
  const FILTER_KEYS = ["attention", "d_k", "task", "optimizer", "status"];
  const diverged = (r) => r.status === "diverged";
  const state = { sortKey: "run_id", sortDir: 1, metric: DATA.metrics[0] };
  const $ = (id) => document.getElementById(id);
  const colour = (v) => DATA.colours[v] || "#7f7f7f";
  const fmt = (x) => (x === null || x === undefined) ? "—" :
    (typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toPrecision(4)) : String(x));

  function uniques(key) {
    const vals = [...new Set(DATA.runs.map((r) => r[key]))];
    return vals.sort((a, b) => (typeof a === "number" ? a - b : String(a).localeCompare(String(b))));
  }

  function buildFilters() {
    const box = $("filters");
    FILTER_KEYS.filter((k) => DATA.columns.includes(k)).forEach((key) => {
      const fs = document.createElement("fieldset");
      const lg = document.createElement("legend");
      lg.textContent = key;
      fs.appendChild(lg);
      uniques(key).forEach((val) => {
        const lab = document.createElement("label");
        const cb = document.createElement("input");
        cb.type = "checkbox"; cb.checked = true;
        cb.dataset.filter = key; cb.dataset.value = String(val);
        cb.addEventListener("change", update);
        lab.appendChild(cb);
        if (key === "attention") {
          const sw = document.createElement("span");
          sw.className = "swatch"; sw.style.background = colour(val);
          lab.appendChild(sw);
        }
        lab.appendChild(document.createTextNode(String(val) + " "));
        fs.appendChild(lab);
      });
      box.appendChild(fs);
    });
  }

  function selectedRuns() {
    const allowed = {};
    document.querySelectorAll("#filters input[data-filter]").forEach((cb) => {
      allowed[cb.dataset.filter] = allowed[cb.dataset.filter] || new Set();
      if (cb.checked) allowed[cb.dataset.filter].add(cb.dataset.value);
    });
    return DATA.runs.filter((r) => Object.keys(allowed).every((k) => allowed[k].has(String(r[k]))));
  }

  function renderTable(runs) {
    const key = state.sortKey, dir = state.sortDir;
    const sorted = runs.slice().sort((a, b) => {
      const x = a[key], y = b[key];
      if (x === y) return 0;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * dir;
    });
    const head = $("runs").tHead.rows[0];
    head.innerHTML = "";
    DATA.columns.forEach((c) => {
      const th = document.createElement("th");
      const b = document.createElement("button");
      b.textContent = c + (c === key ? (dir > 0 ? " ▲" : " ▼") : "");
      b.addEventListener("click", () => {
        state.sortDir = state.sortKey === c ? -state.sortDir : 1; state.sortKey = c; update();
      });
      th.appendChild(b); head.appendChild(th);
    });
    const body = $("runs").tBodies[0];
    body.innerHTML = "";
    sorted.forEach((r) => {
      const tr = body.insertRow();
      if (diverged(r)) tr.className = "diverged";
      DATA.columns.forEach((c) => { const td = tr.insertCell(); td.textContent = fmt(r[c]); td.className = c; });
    });
    const nDiv = runs.filter(diverged).length;
    $("count").textContent = runs.length + " of " + DATA.runs.length + " runs shown" +
      (nDiv ? " (" + nDiv + " diverged, highlighted)" : "");
  }

  function svgEl(name, attrs, parent) {
    const el = document.createElementNS("http://www.w3.org/2000/svg", name);
    Object.entries(attrs).forEach(([k, v]) => el.setAttribute(k, v));
    if (parent) parent.appendChild(el);
    return el;
  }

  function renderChart(runs) {
    const svg = $("chart");
    svg.innerHTML = "";
    const W = 720, H = 360, L = 64, R = 150, T = 16, B = 44, m = state.metric;
    const pts = runs.filter((r) => typeof r[m] === "number" && typeof r.d_k === "number" && r.d_k > 0);
    const dks = [...new Set(DATA.runs.map((r) => r.d_k))].filter((d) => d > 0).sort((a, b) => a - b);
    if (!pts.length || !dks.length) {
      svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, svg).textContent = "no runs with " + m;
      return;
    }
    const lx = dks.map(Math.log2), x0 = Math.min(...lx), x1 = Math.max(...lx) + 1e-9;
    let y0 = Math.min(...pts.map((r) => r[m])), y1 = Math.max(...pts.map((r) => r[m]));
    if (y1 - y0 < 1e-12) { y0 -= 0.5; y1 += 0.5; }
    const X = (d) => L + (Math.log2(d) - x0) / (x1 - x0) * (W - L - R);
    const Y = (v) => H - B - (v - y0) / (y1 - y0) * (H - T - B);
    svgEl("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#444" }, svg);
    svgEl("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#444" }, svg);
    dks.forEach((d) => { svgEl("text", { x: X(d), y: H - B + 16, "text-anchor": "middle", "font-size": 11 }, svg).textContent = d; });
    [0, 0.25, 0.5, 0.75, 1].forEach((f) => {
      const v = y0 + f * (y1 - y0);
      svgEl("text", { x: L - 6, y: Y(v) + 4, "text-anchor": "end", "font-size": 11 }, svg).textContent = fmt(v);
    });
    svgEl("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", "font-size": 12 }, svg).textContent = "d_k (log2 scale)";
    svgEl("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", "font-size": 12,
      transform: "rotate(-90 14 " + (T + H - B) / 2 + ")" }, svg).textContent = m;
    const variants = [...new Set(pts.map((r) => r.attention))];
    variants.forEach((v, i) => {
      const rs = pts.filter((r) => r.attention === v);
      const done = rs.filter((r) => !diverged(r));
      const means = dks.map((d) => { const s = done.filter((r) => r.d_k === d); return s.length ? [d, s.reduce((a, r) => a + r[m], 0) / s.length] : null; }).filter(Boolean);
      svgEl("polyline", { points: means.map(([d, y]) => X(d) + "," + Y(y)).join(" "), fill: "none", stroke: colour(v), "stroke-width": 2 }, svg);
      rs.forEach((r) => {
        const x = X(r.d_k), y = Y(r[m]);
        const c = diverged(r)
          ? svgEl("path", { d: "M" + (x - 4) + "," + (y - 4) + "l8,8m0,-8l-8,8", stroke: colour(v), "stroke-width": 2, class: "pt-diverged" }, svg)
          : svgEl("circle", { cx: x, cy: y, r: 3.5, fill: colour(v), "fill-opacity": 0.55, class: "pt" }, svg);
        c.addEventListener("mousemove", (e) => showTip(e, r));
        c.addEventListener("mouseleave", () => { $("tip").style.display = "none"; });
      });
      svgEl("rect", { x: W - R + 12, y: T + i * 18, width: 10, height: 10, fill: colour(v) }, svg);
      svgEl("text", { x: W - R + 28, y: T + i * 18 + 9, "font-size": 12 }, svg).textContent = v;
    });
  }

  function showTip(e, r) {
    const tip = $("tip");
    tip.textContent = r.run_id + " | " + r.attention + " d_k=" + r.d_k + " seed=" + r.seed + " | " + state.metric + " = " + fmt(r[state.metric]) +
      (diverged(r) ? " | diverged at step " + fmt(r.diverged_at_step) : "");
    tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px"; tip.style.display = "block";
  }

  function update() { const runs = selectedRuns(); renderTable(runs); renderChart(runs); }

  function buildMetricSelect() {
    const sel = $("metric");
    DATA.metrics.forEach((m) => { const o = document.createElement("option"); o.value = o.textContent = m; sel.appendChild(o); });
    sel.addEventListener("change", () => { state.metric = sel.value; update(); });
  }

  // Where the first screen's parts sit on the page (px from its top), and whether it scrolls sideways.
  function layout() {
    const box = (id) => {
      const el = $(id);
      if (!el) return null;
      const r = el.getBoundingClientRect();
      return { top: r.top + window.scrollY, bottom: r.bottom + window.scrollY, left: r.left, right: r.right };
    };
    return { inner_width: window.innerWidth, inner_height: window.innerHeight,
      scroll_width: document.documentElement.scrollWidth, answer_figure: box("answer-figure"),
      verdict_lines: box("verdict-lines"), quick_look: box("quick-look") };
  }

  function selfTest() {
    const imgs = [...document.querySelectorAll("figure img")];
    const out = { errors: window.__dashboardErrors, figures: imgs.length,
      figures_drawn: imgs.filter((i) => i.complete && i.naturalWidth > 0).length,
      chart_points: document.querySelectorAll("#chart circle.pt").length,
      rows_before: $("runs").tBodies[0].rows.length, layout: layout() };
    const cb = document.querySelector("#filters input[data-filter='attention']");
    if (cb) {
      cb.checked = false; cb.dispatchEvent(new Event("change"));
      out.rows_filtered = $("runs").tBodies[0].rows.length;
      cb.checked = true; cb.dispatchEvent(new Event("change"));
      out.rows_restored = $("runs").tBodies[0].rows.length;
    }
    $("selftest-result").textContent = JSON.stringify(out);
    out.layout.scroll_width_after = document.documentElement.scrollWidth;  // the result itself shown
    $("selftest-result").textContent = JSON.stringify(out);
  }

  buildFilters(); buildMetricSelect(); update();
  window.addEventListener("load", () => { if (location.hash === "#selftest") selfTest(); });
})();
"""
