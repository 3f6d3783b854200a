"""`write_html`: a recorded replay as one self-contained HTML page.

Nothing is fetched: the style, the script and the data are inside the file, so it opens
offline and can be mailed. The data goes in a `<script type="application/json">` block
with `<`, `>`, `&` and the line separators written as JSON escapes (`embed_json`), so no
text of the session can end the block or change how it parses, and the script builds the
page from it with DOM calls that set text, never markup: a session's text cannot inject
HTML into the report.
"""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.report.recorder import Recording

__all__ = ["embed_json", "render_html", "write_html"]

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
header{padding:14px 20px;background:#1d232b;color:#fff}
header h1{font-size:17px;margin:0 0 6px}
.totals{display:flex;flex-wrap:wrap;gap:6px 18px;font-size:13px;color:#cfd6df}
.totals b{color:#fff}
main{display:grid;grid-template-columns:minmax(320px,1fr) minmax(360px,1.2fr);gap:14px;
padding:14px 20px}
section{background:#fff;border:1px solid #dde2e8;border-radius:6px;padding:10px 12px;
min-width:0}
h2{font-size:14px;margin:0 0 8px}
h2 .scale{float:right;font-size:11px;cursor:pointer}
#chart svg{width:100%;height:240px;display:block}
.legend{font-size:12px;color:#55606d}
.legend i{display:inline-block;width:14px;height:3px;vertical-align:middle;margin:0 4px 0 10px}
table{border-collapse:collapse;width:100%;font-size:12.5px;table-layout:fixed}
td,th{padding:3px 6px;border-bottom:1px solid #eef1f4;text-align:right;white-space:nowrap}
td:first-child,th:first-child{text-align:left}
td.text,th.text{white-space:normal;overflow-wrap:break-word;text-align:left}
header h1,.message .role,#request h2,#request p{overflow-wrap:anywhere}
.piece button{max-width:100%;white-space:normal;overflow-wrap:anywhere;text-align:left}
tr.call{cursor:pointer}
tr.call:hover{background:#f0f5ff}
tr.call.selected{background:#dbe8ff}
tr.refused td{color:#b42318}
.calls{max-height:420px;overflow:auto}
.message{border:1px solid #e3e7ec;border-radius:5px;margin:6px 0;padding:6px 8px}
.message .role{font-size:11px;font-weight:600;text-transform:uppercase;color:#55606d}
.message pre,.original pre{white-space:pre-wrap;word-break:break-word;margin:4px 0 0;
font:12px/1.4 ui-monospace,monospace;max-height:360px;overflow:auto}
.piece{margin-top:6px;border-left:3px solid #d97706;padding-left:8px}
.piece button{font-size:12px;cursor:pointer}
.original{display:none;background:#fff8eb;border-radius:4px;padding:4px 6px;margin-top:4px}
.original.open{display:block}
.shared{opacity:.55}
.empty{color:#55606d;font-style:italic}
"""

_SCRIPT = r"""
(function () {
  const data = JSON.parse(document.getElementById("replay-data").textContent);
  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const n = (v) => (v === null || v === undefined ? "-" : Number(v).toLocaleString("en"));
  const t = data.totals;
  const totals = document.getElementById("totals");
  const facts = [
    ["calls", n(t.calls)], ["raw tokens", n(t.raw)], ["sent tokens", n(t.sent)],
    ["compactions", n(t.compactions)], ["tokens saved", n(t.saved)],
    ["refused", n(t.refused)], ["invalid", n(t.invalid)],
    ["cache hits", (100 * t.hit_share).toFixed(1) + "%"],
    ["compacted requests fill",
      t.fill === null ? "-" : (100 * t.fill).toFixed(0) + "% of the budget"],
    ["input cost (" + data.provider + ")", "$" + t.dollars.toFixed(2)],
  ];
  // What the recorded session's provider reported, when its log kept usage.
  const u = data.usage;
  if (u) {
    facts.push(
      ["recorded calls with usage", n(u.calls)],
      ["recorded prompt tokens", n(u.prompt_tokens)],
      ["recorded completion tokens", n(u.completion_tokens)],
      ["recorded cache hit rate",
        u.cache_hit_rate === null ? "-" : (100 * u.cache_hit_rate).toFixed(1) + "%"],
    );
  }
  for (const [label, value] of facts) {
    const span = el("span", {}, label + ": ");
    span.appendChild(el("b", {}, value));
    totals.appendChild(span);
  }

  // The sawtooth: raw against sent tokens per call, the budget, and each compaction.
  // The raw history is often ten times the budget, so the axis can be logarithmic.
  const svgNS = "http://www.w3.org/2000/svg";
  const W = 600, H = 240, L = 54, B = 22;
  const calls = data.calls;
  const top = Math.max(1, data.budget || 0, ...calls.map((c) => c.raw));
  const x = (i) => L + (calls.length > 1 ? (i * (W - L - 8)) / (calls.length - 1) : 0);
  const chart = document.getElementById("chart");
  const toggle = document.getElementById("scale-toggle");
  function draw(scale) {
    const svg = document.createElementNS(svgNS, "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("data-scale", scale);
    const span = Math.log10(Math.max(10, top));
    const y = scale === "log"
      ? (v) => H - B - (Math.log10(Math.max(1, v)) * (H - B - 10)) / span
      : (v) => H - B - (v * (H - B - 10)) / top;
    const line = (values, color, dash) => {
      const path = document.createElementNS(svgNS, "polyline");
      path.setAttribute("points", values.map((v, i) => x(i) + "," + y(v)).join(" "));
      path.setAttribute("fill", "none");
      path.setAttribute("stroke", color);
      path.setAttribute("stroke-width", "1.6");
      if (dash) path.setAttribute("stroke-dasharray", dash);
      svg.appendChild(path);
    };
    const ticks = scale === "log"
      ? Array.from({ length: Math.floor(span) + 1 }, (_, k) => Math.pow(10, k))
      : [0, 0.5, 1].map((frac) => Math.round(top * frac));
    for (const tick of ticks) {
      const label = document.createElementNS(svgNS, "text");
      label.setAttribute("class", "tick");
      label.setAttribute("x", 2);
      label.setAttribute("y", y(tick) + 4);
      label.setAttribute("font-size", "10");
      label.textContent = n(tick);
      svg.appendChild(label);
    }
    line(calls.map((c) => c.raw), "#98a2b3");
    line(calls.map((c) => (c.sent === null ? 0 : c.sent)), "#2563eb");
    if (data.budget) line(calls.map(() => data.budget), "#b42318", "4 3");
    for (const c of data.compactions) {
      const mark = document.createElementNS(svgNS, "line");
      mark.setAttribute("x1", x(c.call));
      mark.setAttribute("x2", x(c.call));
      mark.setAttribute("y1", H - B);
      mark.setAttribute("y2", H - B + 7);
      mark.setAttribute("stroke", "#d97706");
      mark.setAttribute("stroke-width", "2");
      const title = document.createElementNS(svgNS, "title");
      title.textContent = c.processor + " at call " + c.call + " (" + c.trigger + "): " +
        n(c.saved) + " tokens saved";
      mark.appendChild(title);
      svg.appendChild(mark);
    }
    chart.replaceChildren(svg);
    toggle.textContent = scale === "log" ? "linear scale" : "log scale";
    toggle.setAttribute("aria-pressed", String(scale === "log"));
  }
  let scale = "linear";
  toggle.addEventListener("click", () => {
    scale = scale === "log" ? "linear" : "log";
    draw(scale);
  });
  draw(scale);

  // The calls, one row each; a click shows that request.
  const body = document.getElementById("call-rows");
  const rows = [];
  calls.forEach((c, i) => {
    const row = el("tr", { class: "call" + (c.sent === null ? " refused" : ""), "data-call": i });
    for (const v of [
      "#" + c.index, n(c.event), n(c.raw), c.sent === null ? "refused" : n(c.sent),
      c.processors.join(", ") || "", n(c.cached), "$" + c.dollars.toFixed(4),
    ]) row.appendChild(el("td", {}, v));
    row.children[4].className = "text";
    row.addEventListener("click", () => show(i));
    body.appendChild(row);
    rows.push(row);
  });

  const request = document.getElementById("request");
  function show(i) {
    rows.forEach((r, k) => r.classList.toggle("selected", k === i));
    const c = calls[i];
    const previous = i > 0 ? calls[i - 1].messages : [];
    request.replaceChildren();
    request.appendChild(el("h2", {}, "Request of call #" + c.index + " (" +
      (c.sent === null ? "refused" : n(c.sent) + " tokens") + ")"));
    if (c.error) request.appendChild(el("p", { class: "empty" }, c.error));
    for (const problem of c.errors) request.appendChild(el("p", { class: "empty" }, problem));
    c.messages.forEach((number, k) => {
      const m = data.messages[number];
      const box = el("div", { class: "message" + (previous[k] === number ? " shared" : "") });
      box.appendChild(el("div", { class: "role" }, m.role + " - " + n(m.tokens) + " tokens"));
      box.appendChild(el("pre", {}, m.text));
      for (const id of m.pieces) {
        const piece = data.pieces[id];
        const holder = el("div", { class: "piece", "data-piece": id });
        const button = el("button", { type: "button" },
          "compacted by " + piece.processor + ": show the original (" +
          n(piece.original_chars) + " characters)");
        const original = el("div", { class: "original" });
        original.appendChild(el("pre", {}, piece.original));
        button.addEventListener("click", () => original.classList.toggle("open"));
        holder.appendChild(button);
        holder.appendChild(original);
        box.appendChild(holder);
      }
      request.appendChild(box);
    });
    if (!c.messages.length) request.appendChild(el("p", { class: "empty" }, "Nothing was sent."));
  }

  const list = document.getElementById("compaction-rows");
  for (const c of data.compactions) {
    const row = el("tr", { class: "compaction" });
    row.appendChild(el("td", {}, "#" + c.call));
    row.appendChild(el("td", { class: "text" }, c.processor));
    row.appendChild(el("td", { class: "text trigger", title: c.reason }, c.trigger));
    for (const v of [c.removed, c.added.length, c.saved]) row.appendChild(el("td", {}, n(v)));
    row.appendChild(el("td", { class: "text" }, c.note));
    list.appendChild(row);
  }
  if (!data.compactions.length) {
    const row = el("tr");
    row.appendChild(el("td", { colspan: "7", class: "empty" }, "No compaction ran."));
    list.appendChild(row);
  }
  const compacted = (c) => c.messages.some((m) => data.messages[m].pieces.length);
  const firstCompacted = calls.findIndex(compacted);
  show(firstCompacted >= 0 ? firstCompacted : calls.length - 1);
})();
"""

_BODY = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>context-graph replay</title><style>{style}</style></head>
<body>
<header><h1>context-graph replay: {title}</h1><div class="totals" id="totals"></div></header>
<main>
<div>
<section><h2>Tokens per call <button type="button" id="scale-toggle" class="scale"
aria-pressed="false">log scale</button></h2><div id="chart"></div>
<div class="legend"><i style="background:#98a2b3"></i>raw history<i style="background:#2563eb">
</i>sent<i style="background:#b42318"></i>budget<i style="background:#d97706"></i>compaction</div>
</section>
<section><h2>Calls (click one to see its request)</h2><div class="calls"><table>
<colgroup><col style="width:9%"><col style="width:10%"><col style="width:13%">
<col style="width:12%"><col style="width:30%"><col style="width:12%"><col style="width:14%">
</colgroup><thead><tr><th>call</th><th>events</th><th>raw</th><th>sent</th>
<th class="text">compacted by</th><th>cached</th><th>input cost</th></tr></thead>
<tbody id="call-rows"></tbody></table></div>
</section>
<section><h2>Compactions</h2><table>
<colgroup><col style="width:8%"><col style="width:14%"><col style="width:16%">
<col style="width:11%"><col style="width:9%"><col style="width:11%"><col style="width:31%">
</colgroup><thead><tr><th>call</th><th class="text">processor</th>
<th class="text">trigger</th><th>removed</th><th>added</th><th>saved</th><th class="text">note</th>
</tr></thead>
<tbody id="compaction-rows"></tbody></table></section>
</div>
<section id="request"></section>
</main>
<script type="application/json" id="replay-data">{data}</script>
<script>{script}</script>
</body></html>
"""


#: What session text could use to change how the page parses, as JSON escapes that read
#: the same: `</script` ends the data block, `<!--` starts the script data's escaped state
#: (in which `<script` makes a later `</script>` not end it), `&` and `>` for good measure,
#: and the two line separators older JavaScript parsers end a line at.
_INERT = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def embed_json(value: object) -> str:
    """`value` as JSON text that no string inside it can make an HTML parser read otherwise."""
    return json.dumps(value, ensure_ascii=False).translate(_INERT)


def render_html(recording: Recording, title: str) -> str:
    """The page's text; every session text in it, the title too, through the recording's screen."""
    data = embed_json(recording.to_json())
    title = recording.screen.text(title)
    safe_title = (
        title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )
    return _BODY.format(style=_STYLE, script=_SCRIPT, data=data, title=safe_title)


def write_html(recording: Recording, path: Path, *, title: str) -> None:
    """Write the page to `path` (UTF-8).

    Raises:
        OSError: the file cannot be written.
    """
    path.write_text(render_html(recording, title), encoding="utf-8")
