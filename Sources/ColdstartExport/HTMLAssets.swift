/// The HTML report's inline style and script. They are part of the page
/// (no file beside it, nothing fetched), so they are Swift strings. The
/// script uses only block comments and no address of any kind: the report's
/// test checks the page has no `//` and no `http` at all.
enum HTMLAssets {
    static let style = #"""
:root { --fg: #1d2430; --dim: #5d6776; --line: #d9dee5; --bg: #fff; --band: #f4f6f9; --hi: #d6249f; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1260px; padding: 12px 18px 40px; font: 13px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 19px; margin: 4px 0 2px; }
h2 { font-size: 15px; margin: 22px 0 6px; border-bottom: 1px solid var(--line); padding-bottom: 3px; }
h3 { font-size: 13px; margin: 14px 0 4px; }
h2 .dim, h1 .dim { font-weight: normal; font-size: 12px; }
p { margin: 3px 0; }
.dim, .caption { color: var(--dim); }
.caption { font-size: 12px; }
.ok { color: #17663a; font-weight: 600; }
.bad { color: #b3261e; font-weight: 600; }
.warn { color: #8a5a00; }
.note { background: #fff7dc; border: 1px solid #f0dc9a; padding: 4px 8px; border-radius: 4px; }
nav { margin: 8px 0 4px; display: flex; flex-wrap: wrap; gap: 4px 12px; }
nav a { color: #2457a6; text-decoration: none; }
nav a:hover { text-decoration: underline; }
code { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; }
svg.waterfall { width: 100%; height: auto; display: block; font-size: 12px; }
svg .grid { stroke: var(--line); stroke-width: 1; }
svg .tick { fill: var(--dim); text-anchor: middle; font-size: 11px; }
svg .label { fill: var(--fg); text-anchor: end; }
svg .fig { fill: var(--fg); font-variant-numeric: tabular-nums; }
svg .fig.in { fill: #fff; font-weight: 600; }
svg .fig.end, svg .tick.end { text-anchor: end; }
svg .phase rect { fill: #5b8def; }
svg .phase.k-loader rect { fill: #7a8699; }
svg .phase.k-initializers rect { fill: #e08a2c; }
svg .phase.k-app.p2 rect { fill: #3f9b5f; }
svg .phase.k-app.p3 rect { fill: #2f8f8f; }
svg .phase.k-app.p4 rect { fill: #6a5acd; }
svg .phase.k-app.p5 rect { fill: #b0508f; }
svg .phase:hover rect, svg .span:hover rect { opacity: .8; }
svg .mark line { stroke: #b3261e; stroke-dasharray: 3 3; }
svg .mark path { fill: #b3261e; }
svg .span rect { fill: #9aa7ba; }
svg .span.unfinished rect { fill: #e3a5a0; }
table { border-collapse: collapse; width: 100%; margin: 4px 0; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 7px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--band); font-weight: 600; white-space: nowrap; position: sticky; top: 0; }
table.sortable th { cursor: pointer; user-select: none; }
th[aria-sort="descending"]::after { content: " \25BE"; }
th[aria-sort="ascending"]::after { content: " \25B4"; }
th.num, td.num { text-align: right; white-space: nowrap; }
.wrap { overflow-x: auto; }
td.fn, td.name { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; }
td.fn { white-space: nowrap; }
td.name { min-width: 24ch; max-width: 90ch; overflow-wrap: anywhere; }
tbody tr:hover { background: #f7f9fc; }
table.meta th { width: 280px; position: static; }
details.phase { margin: 3px 0; border: 1px solid var(--line); border-radius: 4px; padding: 3px 8px; }
details.phase summary { cursor: pointer; }
details.phase[disabled] summary { cursor: default; color: var(--dim); }
.search { position: sticky; top: 0; z-index: 2; background: var(--bg); padding: 6px 0; border-bottom: 1px solid var(--line); margin-top: 14px; }
.search input { width: 320px; padding: 3px 6px; font: inherit; }
.flame canvas { display: block; width: 100%; cursor: pointer; border: 1px solid var(--line); }
.flame .bar { margin: 2px 0 4px; }
.flame button { font: inherit; padding: 1px 8px; }
.tip { position: fixed; z-index: 5; pointer-events: none; max-width: 560px; background: #1d2430; color: #fff; padding: 5px 8px; border-radius: 4px; font-size: 12px; box-shadow: 0 2px 8px rgba(0,0,0,.25); }
.tip b { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-weight: 600; word-break: break-all; }
footer { margin-top: 26px; color: var(--dim); font-size: 12px; }
"""#

    static let script = #"""
(function () {
  "use strict";

  /* Sortable tables: numbers sort by their exact value (data-v). */
  function sortBy(table, column, th) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    if (rows.length < 2) { return; }
    var numeric = th.classList.contains("num");
    var current = th.getAttribute("aria-sort");
    var descending = current ? current === "ascending" : numeric;
    function key(row) {
      var cell = row.cells[column];
      if (!cell) { return numeric ? -Infinity : ""; }
      return numeric ? parseFloat(cell.getAttribute("data-v")) : cell.textContent.toLowerCase();
    }
    var keyed = rows.map(function (row, index) { return [key(row), index, row]; });
    keyed.sort(function (a, b) {
      if (a[0] < b[0]) { return descending ? 1 : -1; }
      if (a[0] > b[0]) { return descending ? -1 : 1; }
      return a[1] - b[1];
    });
    keyed.forEach(function (entry) { body.appendChild(entry[2]); });
    Array.prototype.forEach.call(th.parentNode.cells, function (cell) { cell.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(table, column, th); });
      th.addEventListener("keydown", function (event) { if (event.key === "Enter") { sortBy(table, column, th); } });
    });
  });

  var node = document.getElementById("coldstart-data");
  if (!node) { return; }
  var D = JSON.parse(node.textContent);
  var FN = D.functions, MODS = D.modules;
  var tip = document.getElementById("tip");
  var query = "";
  var matches = new Uint8Array(FN.length);

  function hash(text) {
    var h = 2166136261;
    for (var i = 0; i < text.length; i++) { h = Math.imul(h ^ text.charCodeAt(i), 16777619); }
    return h >>> 0;
  }
  var colors = [];
  function color(fn) {
    var c = colors[fn];
    if (c) { return c; }
    var m = hash(MODS[FN[fn][1]] || "?"), n = hash(FN[fn][0]);
    c = "hsl(" + (m % 360) + "," + (42 + n % 22) + "%," + (66 + (n >>> 8) % 14) + "%)";
    colors[fn] = c;
    return c;
  }
  function esc(text) {
    return String(text).replace(/[&<>"]/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;" }[c]; });
  }
  function ms(value) { return value.toFixed(value < 10 ? 3 : 2) + " ms"; }
  function sampled(n) { return n + (n === 1 ? " sample = " : " samples = ") + ms(n * D.msPerSample); }

  /* A flame view: intervals [x0, x1) at integer depths, drawn on a canvas.
     Intervals at one depth never overlap, and both inputs come in start
     order (runs by start, the call tree in pre-order), so per depth they are
     sorted by both ends and found by binary search. */
  function View(root, x0, x1, depth, fn, full, topRows, describe) {
    this.root = root;
    this.canvas = root.querySelector("canvas");
    this.range = root.querySelector(".range");
    this.x0 = x0; this.x1 = x1; this.depth = depth; this.fn = fn;
    this.full = full; this.v0 = full[0]; this.v1 = full[1];
    this.topRows = topRows;
    this.describe = describe;
    this.rowHeight = 17;
    var maxDepth = 0, i;
    for (i = 0; i < depth.length; i++) { if (depth[i] > maxDepth) { maxDepth = depth[i]; } }
    this.rows = (depth.length ? maxDepth + 1 : 1) + topRows;
    var counts = new Int32Array(maxDepth + 1);
    for (i = 0; i < depth.length; i++) { counts[depth[i]]++; }
    this.byDepth = [];
    for (i = 0; i <= maxDepth; i++) { this.byDepth.push(new Int32Array(counts[i])); }
    var fill = new Int32Array(maxDepth + 1);
    for (i = 0; i < depth.length; i++) { this.byDepth[depth[i]][fill[depth[i]]++] = i; }
    var self = this;
    this.canvas.addEventListener("mousemove", function (event) { self.hover(event); });
    this.canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
    this.canvas.addEventListener("click", function (event) { self.click(event); });
    root.querySelector("button").addEventListener("click", function () { self.zoom(self.full[0], self.full[1]); });
  }
  /* The name as it fits `room` px: whole, else without its module and
     arguments ("computeWhileOthersCompete"), else that cut short; nothing
     when not even four characters fit. */
  function fitName(ctx, name, room) {
    if (room < ctx.measureText("Abc\u2026").width) { return ""; }
    if (ctx.measureText(name).width <= room) { return name; }
    var bare = name.replace(/\(.*$/, "").replace(/\s+$/, ""), dot = bare.lastIndexOf(".");
    var short = dot >= 0 && dot < bare.length - 1 ? bare.slice(dot + 1) : bare || name;
    if (ctx.measureText(short).width <= room) { return short; }
    var n = Math.floor(short.length * room / ctx.measureText(short).width);
    while (n > 3 && ctx.measureText(short.slice(0, n - 1) + "\u2026").width > room) { n--; }
    return n > 3 ? short.slice(0, n - 1) + "\u2026" : "";
  }
  View.prototype.first = function (list, v) {
    var lo = 0, hi = list.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (this.x1[list[mid]] <= v) { lo = mid + 1; } else { hi = mid; } }
    return lo;
  };
  View.prototype.draw = function () {
    var canvas = this.canvas, ratio = window.devicePixelRatio || 1;
    var width = canvas.clientWidth || 1000, height = this.rows * this.rowHeight;
    canvas.style.height = height + "px";
    canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio);
    var ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    var v0 = this.v0, v1 = this.v1, scale = width / (v1 - v0), h = this.rowHeight;
    if (this.background) { this.background(ctx, width, height, v0, scale); }
    var searching = query.length > 0;
    /* A name is written once over a group of slices of one function at one
       depth with gaps under GAP px between them (a thread sampled by its
       CPU clock leaves such gaps while it waits), so a function that ran
       in many short runs still reads at the launch's full width. */
    var GAP = 6, labels = [];
    for (var d = 0; d < this.byDepth.length; d++) {
      var list = this.byDepth[d], y = (d + this.topRows) * h, dust = -1, group = null;
      for (var j = this.first(list, v0); j < list.length; j++) {
        var k = list[j];
        if (this.x0[k] >= v1) { break; }
        var p0 = (Math.max(this.x0[k], v0) - v0) * scale, p1 = (Math.min(this.x1[k], v1) - v0) * scale, w = p1 - p0;
        var hit = searching && matches[this.fn[k]] === 1;
        if (group && group.fn === this.fn[k] && p0 - group.p1 < GAP) { group.p1 = Math.max(group.p1, p1); }
        else { if (group) { labels.push(group); } group = { fn: this.fn[k], p0: p0, p1: p1, y: y, hit: hit }; }
        if (w < 1) {
          if (p0 >= dust) { ctx.fillStyle = hit ? "#d6249f" : "#c3cad4"; ctx.fillRect(p0, y + 1, 1, h - 2); dust = p0 + 1; }
          continue;
        }
        ctx.fillStyle = hit ? "#d6249f" : (searching ? "#e6e9ee" : color(this.fn[k]));
        ctx.fillRect(p0, y + 1, w - 0.5, h - 2);
      }
      if (group) { labels.push(group); }
    }
    labels.forEach(function (g) {
      var text = fitName(ctx, FN[g.fn][0], g.p1 - g.p0 - 6);
      if (text) { ctx.fillStyle = g.hit ? "#fff" : "#1d2430"; ctx.fillText(text, g.p0 + 3, g.y + h / 2); }
    });
    if (this.range) { this.range.textContent = this.rangeText(v0, v1); }
  };
  View.prototype.at = function (event) {
    var box = this.canvas.getBoundingClientRect();
    var d = Math.floor((event.clientY - box.top) / this.rowHeight) - this.topRows;
    if (d < 0 || d >= this.byDepth.length) { return -1; }
    var v = this.v0 + (event.clientX - box.left) / box.width * (this.v1 - this.v0);
    var list = this.byDepth[d], j = this.first(list, v);
    if (j < list.length && this.x0[list[j]] <= v) { return list[j]; }
    return -1;
  };
  View.prototype.hover = function (event) {
    var k = this.at(event);
    if (k < 0) { tip.hidden = true; return; }
    tip.innerHTML = this.describe(k);
    tip.hidden = false;
    var x = event.clientX + 14, y = event.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 8) { x = Math.max(4, event.clientX - tip.offsetWidth - 14); }
    if (y + tip.offsetHeight > window.innerHeight - 8) { y = Math.max(4, event.clientY - tip.offsetHeight - 14); }
    tip.style.left = x + "px"; tip.style.top = y + "px";
  };
  View.prototype.click = function (event) {
    var k = this.at(event);
    if (k < 0) { this.zoom(this.full[0], this.full[1]); return; }
    this.zoom(this.x0[k], this.x1[k]);
  };
  View.prototype.zoom = function (a, b) {
    if (b <= a) { b = a + 1e-6; }
    this.v0 = a; this.v1 = b;
    this.draw();
  };

  var views = [];

  /* The flame chart: runs of one thread in time order, ms from process start. */
  var chartRoot = document.getElementById("flamechart");
  if (chartRoot) {
    var C = D.chart, n = C.length / 5;
    var cx0 = new Float64Array(n), cx1 = new Float64Array(n), cd = new Int32Array(n), cf = new Int32Array(n), cn = new Int32Array(n);
    var end = D.total;
    for (var i = 0; i < n; i++) {
      cf[i] = C[5 * i]; cd[i] = C[5 * i + 1];
      cx0[i] = C[5 * i + 2] / 1000; cx1[i] = (C[5 * i + 2] + C[5 * i + 3]) / 1000; cn[i] = C[5 * i + 4];
      if (cx1[i] > end) { end = cx1[i]; }
    }
    var chart = new View(chartRoot, cx0, cx1, cd, cf, [0, end], 1, function (k) {
      var f = FN[cf[k]];
      return "<b>" + esc(f[0]) + "</b><br>" + esc(MODS[f[1]] || "no module") + "<br>" + cx0[k].toFixed(3) + " \u2192 " +
        cx1[k].toFixed(3) + " ms (" + ms(cx1[k] - cx0[k]) + " wall)<br>" + sampled(cn[k]);
    });
    chart.rangeText = function (a, b) { return "showing " + a.toFixed(2) + " \u2192 " + b.toFixed(2) + " ms of " + end.toFixed(2) + " ms"; };
    chart.background = function (ctx, width, height, v0, scale) {
      var h = this.rowHeight;
      D.phases.forEach(function (phase, index) {
        var a = (phase[1] - v0) * scale, b = (phase[2] - v0) * scale;
        if (b < 0 || a > width) { return; }
        ctx.fillStyle = index % 2 ? "#f4f6f9" : "#fbfcfd";
        ctx.fillRect(a, 0, b - a, height);
        ctx.fillStyle = "#5d6776";
        var label = phase[0], room = Math.floor((b - a - 6) / 6.2);
        if (room > 3) { ctx.fillText(label.length > room ? label.slice(0, room - 1) + "\u2026" : label, Math.max(a, 0) + 3, h / 2); }
        ctx.fillStyle = "#c3cad4";
        ctx.fillRect(a, 0, 1, height);
      });
    };
    views.push(chart);
  }

  /* The flame graph: the call tree in pre-order, width = samples. */
  var graphRoot = document.getElementById("flamegraph");
  var G = D.graph, gn = G.length / 4;
  var gx0 = new Float64Array(gn), gx1 = new Float64Array(gn), gd = new Int32Array(gn), gf = new Int32Array(gn);
  var gself = new Int32Array(gn), gend = new Int32Array(gn), total = 0;
  (function () {
    var fill = [], open = [];
    for (var i = 0; i < gn; i++) {
      var d = G[4 * i + 1], count = G[4 * i + 2];
      gf[i] = G[4 * i]; gd[i] = d; gself[i] = G[4 * i + 3];
      var start = d === 0 ? total : fill[d - 1];
      if (d === 0) { total += count; } else { fill[d - 1] += count; }
      fill[d] = start;
      gx0[i] = start; gx1[i] = start + count;
      while (open.length > d) { gend[open.pop()] = i; }
      open.push(i);
    }
    while (open.length) { gend[open.pop()] = gn; }
  })();
  if (graphRoot) {
    var graph = new View(graphRoot, gx0, gx1, gd, gf, [0, Math.max(total, 1)], 0, function (k) {
      var f = FN[gf[k]], count = gx1[k] - gx0[k];
      return "<b>" + esc(f[0]) + "</b><br>" + esc(MODS[f[1]] || "no module") + "<br>total " + sampled(count) + ", " +
        (count * 100 / Math.max(D.samples, 1)).toFixed(2) + "% of the selected samples<br>self " + sampled(gself[k]);
    });
    graph.rangeText = function (a, b) {
      return a <= 0 && b >= total ? "all " + total + " samples" : "zoomed: " + (b - a) + " of " + total + " samples";
    };
    views.push(graph);
  }

  /* Search: highlight matching functions; count the samples under a match once. */
  var input = document.getElementById("search"), matchText = document.getElementById("match");
  function search() {
    query = input.value.trim().toLowerCase();
    var i;
    for (i = 0; i < FN.length; i++) { matches[i] = query && FN[i][0].toLowerCase().indexOf(query) >= 0 ? 1 : 0; }
    if (query) {
      var covered = 0;
      for (i = 0; i < gn;) {
        if (matches[gf[i]]) { covered += gx1[i] - gx0[i]; i = gend[i]; } else { i++; }
      }
      matchText.textContent = "matching: " + sampled(covered) + " (" + (covered * 100 / Math.max(D.samples, 1)).toFixed(2) + "% of the selected samples)";
    } else {
      matchText.textContent = "";
    }
    views.forEach(function (view) { view.draw(); });
  }
  if (input) { input.addEventListener("input", search); }

  var pending = 0;
  window.addEventListener("resize", function () {
    if (pending) { return; }
    pending = window.requestAnimationFrame(function () { pending = 0; views.forEach(function (view) { view.draw(); }); });
  });
  views.forEach(function (view) { view.draw(); });
})();
"""#
}
