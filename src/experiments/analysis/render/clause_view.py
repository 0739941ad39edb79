"""The clause table in the dashboard: every row of clauses.parquet, sortable by any column (click its
head) and filtered by cell, sub-claim, d_k and answer, and by words in the clause (a variant's name:
"additive", "mup"). Its own small script, beside the runs explorer's; `#selftest` writes what it
did into <pre id="clause-selftest">."""
from __future__ import annotations

import pandas as pd

SHOWN = ["cell", "sub_claim", "clause", "d_k", "n_seeds", "estimate", "lo", "hi", "p", "permutation_p", "power",
         "answer", "look", "verdict"]
FILTERS = ["cell", "sub_claim", "d_k", "answer"]

CSS = ("#clause-filters label{margin-right:12px}#clauses-wrap{max-height:480px;overflow:auto}"
       "#clauses th{cursor:pointer;position:sticky;top:0;background:#f4f4f4}#clauses td{padding:1px 6px}")

JS = r"""
(function () {
  const rows = JSON.parse(document.getElementById("clause-data").textContent);
  const cols = JSON.parse(document.getElementById("clause-cols").textContent);
  const filters = JSON.parse(document.getElementById("clause-filter-cols").textContent);
  const st = { key: cols[0], dir: 1 };
  const $ = (id) => document.getElementById(id);
  const cmp = (a, b) => (a === null) - (b === null) ||
    (typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b)));
  function build() {
    const box = $("clause-filters");
    filters.forEach((c) => {
      const values = [...new Set(rows.map((r) => r[c]).filter((v) => v !== null))].sort(cmp);
      const label = document.createElement("label");
      label.textContent = c + " ";
      const sel = document.createElement("select");
      sel.dataset.col = c;
      sel.add(new Option("all", ""));
      values.forEach((v) => sel.add(new Option(String(v), String(v))));
      sel.addEventListener("change", draw);
      label.appendChild(sel); box.appendChild(label);
    });
    const label = document.createElement("label");
    label.textContent = "clause contains ";
    const text = document.createElement("input");
    text.id = "clause-text"; text.addEventListener("input", draw);
    label.appendChild(text); box.appendChild(label);
    const head = $("clauses").tHead.rows[0];
    cols.forEach((c) => {
      const th = document.createElement("th");
      th.textContent = c; th.dataset.col = c;
      th.addEventListener("click", () => { st.dir = st.key === c ? -st.dir : 1; st.key = c; draw(); });
      head.appendChild(th);
    });
  }
  function shown() {
    const picks = [...document.querySelectorAll("#clause-filters select")].filter((s) => s.value !== "");
    const words = $("clause-text").value.toLowerCase();
    return rows.filter((r) => picks.every((s) => String(r[s.dataset.col]) === s.value) &&
      String(r.clause).toLowerCase().includes(words))
      .sort((a, b) => (a[st.key] === null) - (b[st.key] === null) || st.dir * cmp(a[st.key], b[st.key]));
  }
  function cell(v) { return v === null ? "—" : typeof v === "number" && !Number.isInteger(v) ? v.toPrecision(3) : String(v); }
  function draw() {
    const body = $("clauses").tBodies[0], list = shown();
    body.replaceChildren(...list.map((r) => {
      const tr = document.createElement("tr");
      cols.forEach((c) => { const td = tr.insertCell(); td.textContent = cell(r[c]); });
      return tr;
    }));
    $("clause-count").textContent = list.length + " of " + rows.length + " clauses";
  }
  function selfTest() {
    const n = () => $("clauses").tBodies[0].rows.length;
    const out = { rows: n(), total: rows.length };
    const sel = document.querySelector("#clause-filters select[data-col='cell']");
    if (sel && sel.options.length > 1) {
      sel.value = sel.options[1].value; sel.dispatchEvent(new Event("change"));
      out.cell = sel.value; out.rows_cell = n();
      sel.value = ""; sel.dispatchEvent(new Event("change"));
    }
    $("clause-text").value = "additive"; $("clause-text").dispatchEvent(new Event("input"));
    out.rows_additive = n(); $("clause-text").value = ""; $("clause-text").dispatchEvent(new Event("input"));
    const th = document.querySelector("#clauses th[data-col='estimate']");
    th.click();
    const est = [...$("clauses").tBodies[0].rows].map((tr) => tr.cells[cols.indexOf("estimate")].textContent)
      .filter((t) => t !== "—").map(Number);
    out.ascending = est.every((v, i) => i === 0 || est[i - 1] <= v);
    th.click();
    out.first_descending = $("clauses").tBodies[0].rows[0].cells[cols.indexOf("estimate")].textContent;
    out.restored = n();
    $("clause-selftest").textContent = JSON.stringify(out);
  }
  let built = false;
  function ensure() { if (!built) { built = true; build(); draw(); } }  // drawn when first opened
  $("clause-section").addEventListener("toggle", () => { if ($("clause-section").open) ensure(); });
  window.addEventListener("load", () => {
    if (location.hash === "#selftest") { $("clause-section").open = true; ensure(); selfTest(); }
  });
})();
"""


def payload(clauses: pd.DataFrame) -> list[dict]:
    """The rows as JSON-ready dicts: numbers as numbers, missing values as null."""
    frame = clauses[[c for c in SHOWN if c in clauses]].astype(object)
    return frame.where(frame.notna(), None).to_dict("records")


def html(clauses: pd.DataFrame | None, script_json) -> str:
    """The section, or '' where the folder has no clause table."""
    if clauses is None or clauses.empty:
        return ""
    cols = [c for c in SHOWN if c in clauses]
    return (f"<h2>Every clause</h2><details id='clause-section'><summary>{len(clauses)} clauses, each a row of "
            f"clauses.parquet: open to sort (click a column's head) and filter (a cell, sub-claim, d_k or answer, "
            f"or a variant's name)</summary>"
            f"<div id='clause-filters'></div><p id='clause-count'></p>"
            f"<div id='clauses-wrap'><table id='clauses'><thead><tr></tr></thead><tbody></tbody></table></div>"
            f"</details><pre id='clause-selftest'></pre>"
            f"<script type='application/json' id='clause-data'>{script_json(payload(clauses))}</script>"
            f"<script type='application/json' id='clause-cols'>{script_json(cols)}</script>"
            f"<script type='application/json' id='clause-filter-cols'>"
            f"{script_json([c for c in FILTERS if c in cols])}</script>"
            f"<style>{CSS}</style><script>{JS}</script>")
