(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("dashboard-data").textContent);
  // One condition (task, optimizer) at a time: the primary one first, the others one click away;
  // the chart's lines never join runs of two tasks or optimizers. It opens on the runs the figures
  // draw (each cell at its best lr); "every rate" draws a line per rate instead.
  const FILTER_KEYS = ["attention", "d_k", "status"];
  const diverged = (r) => r.status === "diverged";
  const state = { sortKey: "run_id", sortDir: 1, metric: DATA.metrics[0], condition: 0, everyRate: false };
  const seriesKey = (r) => state.everyRate ? r.attention + " lr=" + r.lr : r.attention;
  const inCondition = (r) => { const c = DATA.conditions[state.condition]; return r.task === c[0] && r.optimizer === c[1]; };
  const conditionName = (c) => c[0] + ", " + c[1];
  const $ = (id) => document.getElementById(id);
  const colour = (v) => DATA.colours[v] || "#7f7f7f";
  const fmt = (x) => (x === null || x === undefined) ? "—" :
    (typeof x === "number" ? String(Number.isInteger(x) ? x : Number(x.toPrecision(4))) : String(x));  // 0.001, not 0.001000

  function uniques(key) {
    const vals = [...new Set(DATA.runs.map((r) => r[key]))];
    return vals.sort((a, b) => (typeof a === "number" ? a - b : String(a).localeCompare(String(b))));
  }

  // A fieldset of radio buttons, the first one chosen: [text, what choosing it sets] per button.
  function radios(id, title, choices) {
    const fs = document.createElement("fieldset");
    fs.id = id;
    fs.innerHTML = "<legend>" + title + "</legend>";
    choices.forEach(([text, choose], i) => {
      const lab = document.createElement("label");
      const rb = document.createElement("input");
      rb.type = "radio"; rb.name = id; rb.checked = i === 0;
      rb.addEventListener("change", () => { choose(); update(); });
      lab.append(rb, text + " ");
      fs.appendChild(lab);
    });
    $("filters").appendChild(fs);
  }

  function buildChoices() {
    radios("condition", "task, optimizer", DATA.conditions.map((c, i) => {
      const n = DATA.runs.filter((r) => r.task === c[0] && r.optimizer === c[1]).length;
      return [conditionName(c) + (i === 0 ? " (primary)" : "") + " — " + n + " runs", () => { state.condition = i; }];
    }));
    radios("rates", "learning rate", [["each cell's best (as the figures)", () => { state.everyRate = false; }],
      ["every rate (a line per rate)", () => { state.everyRate = true; }]]);
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
    const shown = (r) => inCondition(r) && (state.everyRate || r.at_best);
    return DATA.runs.filter((r) => shown(r) && Object.keys(allowed).every((k) => allowed[k].has(String(r[k]))));
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
    const all = DATA.runs.filter(inCondition).length;
    $("count").textContent = runs.length + " of the " + all + " runs of " + conditionName(DATA.conditions[state.condition]) +
      " shown" + (nDiv ? " (" + nDiv + " diverged, highlighted)" : "");
  }

  function svgEl(name, attrs, parent) {
    const el = document.createElementNS("http://www.w3.org/2000/svg", name);
    Object.entries(attrs).forEach(([k, v]) => el.setAttribute(k, v));
    if (parent) parent.appendChild(el);
    return el;
  }

  const G = { W: 720, H: 360, L: 64, R: 150, T: 30, B: 44 };  // the chart's size and margins (px)

  // Round ticks (1, 2 or 5 times a power of ten) covering [lo, hi], and their decimals.
  function niceTicks(lo, hi) {
    const raw = (hi - lo) / 4, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((f) => f * p).find((s) => s >= raw * (1 - 1e-9));
    const first = Math.floor(lo / step + 1e-9), last = Math.ceil(hi / step - 1e-9);
    const values = Array.from({ length: last - first + 1 }, (_, i) => (first + i) * step);
    return { values, digits: Math.max(0, -Math.floor(Math.log10(step) + 1e-9)) };
  }

  // A point per run (an x where it diverged), its details on hover.
  function drawPoints(svg, runs, X, Y) {
    runs.forEach((r) => {
      const x = X(r.d_k), y = Y(r[state.metric]), c = colour(r.attention);
      const mark = diverged(r)
        ? svgEl("path", { d: "M" + (x - 4) + "," + (y - 4) + "l8,8m0,-8l-8,8", stroke: c, "stroke-width": 2, class: "pt-diverged" }, svg)
        : svgEl("circle", { cx: x, cy: y, r: 3.5, fill: c, "fill-opacity": 0.55, class: "pt" }, svg);
      mark.addEventListener("mousemove", (e) => showTip(e, r));
      mark.addEventListener("mouseleave", () => { $("tip").style.display = "none"; });
    });
  }

  // One line per variant (per variant and rate: every rate) of the condition shown: the seed
  // mean of its completed runs per d_k. The legend names the variants.
  function drawSeries(svg, pts, dks, X, Y) {
    const m = state.metric;
    [...new Set(pts.map(seriesKey))].forEach((key) => {
      const rs = pts.filter((r) => seriesKey(r) === key), v = rs[0].attention;
      const done = rs.filter((r) => !diverged(r));
      const means = dks.map((d) => { const s = done.filter((r) => r.d_k === d); return s.length ? [d, s.reduce((a, r) => a + r[m], 0) / s.length] : null; }).filter(Boolean);
      const line = svgEl("polyline", { points: means.map(([d, y]) => X(d) + "," + Y(y)).join(" "), fill: "none", stroke: colour(v), "stroke-width": state.everyRate ? 1 : 2, class: "series" }, svg);
      line.dataset.series = JSON.stringify({ tasks: [...new Set(rs.map((r) => r.task))],
        optimizers: [...new Set(rs.map((r) => r.optimizer))], attention: v, lrs: [...new Set(rs.map((r) => r.lr))],
        d_ks: means.map(([d]) => d) });
      drawPoints(svg, rs, X, Y);
    });
    [...new Set(pts.map((r) => r.attention))].forEach((v, i) => {
      svgEl("rect", { x: G.W - G.R + 12, y: G.T + i * 18, width: 10, height: 10, fill: colour(v) }, svg);
      svgEl("text", { x: G.W - G.R + 28, y: G.T + i * 18 + 9, "font-size": 12 }, svg).textContent = v;
    });
  }

  // The x axis at the condition's d_ks (log2), the y axis on round ticks covering the values.
  function drawAxes(svg, pts, dks) {
    const { W, H, L, R, T, B } = G, m = state.metric;
    const lx = dks.map(Math.log2), x0 = Math.min(...lx), x1 = Math.max(...lx) + 1e-9;
    let lo = Math.min(...pts.map((r) => r[m])), hi = Math.max(...pts.map((r) => r[m]));
    if (hi - lo < 1e-12) { lo -= 0.5; hi += 0.5; }
    const ticks = niceTicks(lo, hi), y0 = ticks.values[0], y1 = ticks.values[ticks.values.length - 1];
    const X = (d) => L + (Math.log2(d) - x0) / (x1 - x0) * (W - L - R);
    const Y = (v) => H - B - (v - y0) / (y1 - y0) * (H - T - B);
    svgEl("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#444" }, svg);
    svgEl("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#444" }, svg);
    dks.forEach((d) => { svgEl("text", { x: X(d), y: H - B + 16, "text-anchor": "middle", "font-size": 11 }, svg).textContent = d; });
    ticks.values.forEach((v) => {
      svgEl("text", { x: L - 6, y: Y(v) + 4, "text-anchor": "end", "font-size": 11, class: "y-tick" }, svg).textContent = v.toFixed(ticks.digits);
    });
    svgEl("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", "font-size": 12 }, svg).textContent = "d_k (log2 scale)";
    svgEl("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", "font-size": 12,
      transform: "rotate(-90 14 " + (T + H - B) / 2 + ")" }, svg).textContent = m;
    return [X, Y];
  }

  function renderChart(runs) {
    const svg = $("chart");
    svg.innerHTML = "";
    const { W, H, L, R } = G, m = state.metric;
    svgEl("text", { x: (L + W - R) / 2, y: 14, "text-anchor": "middle", "font-size": 13, "font-weight": 600, id: "chart-title" },
      svg).textContent = m + " — " + conditionName(DATA.conditions[state.condition]);
    const pts = runs.filter((r) => typeof r[m] === "number" && typeof r.d_k === "number" && r.d_k > 0);
    const dks = [...new Set(DATA.runs.filter(inCondition).map((r) => r.d_k))].filter((d) => d > 0).sort((a, b) => a - b);
    if (!pts.length || !dks.length) {
      svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, svg).textContent = "no runs with " + m;
      return;
    }
    drawSeries(svg, pts, dks, ...drawAxes(svg, pts, dks));
  }

  function showTip(e, r) {
    const tip = $("tip");
    tip.textContent = r.run_id + " | " + r.task + ", " + r.optimizer + " | " + r.attention + " d_k=" + r.d_k + " lr=" + r.lr + " seed=" + r.seed + " | " + state.metric + " = " + fmt(r[state.metric]) +
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

  // What the chart draws: its lines (tasks, optimizers, variant, d_ks) and its y tick labels.
  function chartShown() {
    return { title: $("chart-title").textContent,
      series: [...document.querySelectorAll("#chart polyline.series")].map((l) => JSON.parse(l.dataset.series)),
      y_ticks: [...document.querySelectorAll("#chart text.y-tick")].map((t) => t.textContent) };
  }

  // The chart after each radio button of a fieldset is clicked, as a reader would; then its first again.
  function chartsOf(fieldset) {
    const click = (rb) => { rb.checked = true; rb.dispatchEvent(new Event("change")); return chartShown(); };
    const buttons = [...document.querySelectorAll("#" + fieldset + " input")];
    const charts = buttons.map(click);
    if (buttons.length) click(buttons[0]);
    return charts;
  }

  function selfTest() {
    const imgs = [...document.querySelectorAll("figure img")];
    const out = { errors: window.__dashboardErrors, figures: imgs.length,
      figures_drawn: imgs.filter((i) => i.complete && i.naturalWidth > 0).length,
      chart_points: document.querySelectorAll("#chart circle.pt").length,
      rows_before: $("runs").tBodies[0].rows.length, layout: layout(), opened: chartShown(),
      conditions: DATA.conditions, charts: chartsOf("condition"), rate_charts: chartsOf("rates") };
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

  if (DATA.conditions.length) { buildChoices(); buildFilters(); buildMetricSelect(); update(); }
  window.addEventListener("load", () => { if (location.hash === "#selftest") selfTest(); });
})();
