/* Silva run view. Draws one tree per idea from the inline forest table (stages as bands, nodes
   coloured by status, shaped by operator), shows each idea's claims, decisions, budgets and spend, and loads a node's
   details from nodes/<id>.js only when it is clicked. Served over http (`silva view --serve`),
   it polls version.json and redraws when the run changes. No network beyond its own files. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("forest-data").textContent);
  var served = location.protocol === "http:" || location.protocol === "https:";
  var zoom = 1, selected = null, cache = {};
  var BEST = 1, SPECULATIVE = 2, HELDOUT = 4, LOST = 8;
  var $ = function (id) { return document.getElementById(id); };

  function esc(s) {
    return String(s == null ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function fmt(v) {
    if (v == null) return "-";
    if (typeof v !== "number") return esc(v);
    var a = Math.abs(v);
    return a !== 0 && (a < 1e-3 || a >= 1e6) ? v.toExponential(3) : String(+v.toPrecision(4));
  }
  function money(v) { return "$" + (v || 0).toFixed(4); }
  function dur(s) {
    if (s == null) return "-";
    if (s < 60) return s.toFixed(1) + " s";
    if (s < 3600) return (s / 60).toFixed(1) + " min";
    return (s / 3600).toFixed(2) + " h";
  }
  function when(ts) { return ts ? new Date(ts * 1000).toLocaleString() : "-"; }
  function nid(id) { return id ? '<a class="nid" data-id="' + esc(id) + '">' + esc(id) + "</a>" : "-"; }
  function table(head, rows) {
    return "<table><tr>" + head.map(function (h) { return "<th>" + h + "</th>"; }).join("") + "</tr>" +
      rows.map(function (r) { return "<tr>" + r.map(function (c) { return "<td>" + c + "</td>"; }).join("") + "</tr>"; }).join("") +
      "</table>";
  }
  function kv(pairs) {
    return '<table class="kv">' + pairs.filter(function (p) { return p[1] !== undefined; }).map(function (p) {
      return "<tr><td>" + esc(p[0]) + "</td><td>" + p[1] + "</td></tr>";
    }).join("") + "</table>";
  }
  function bar(frac) {
    if (frac == null || !isFinite(frac)) return "";
    var w = Math.max(1, Math.min(1, frac) * 120);
    return '<span class="bar' + (frac > 1 ? " over" : "") + '" style="width:' + w.toFixed(0) + 'px"></span>';
  }

  // -- code: Python highlighted when shown, diffs coloured by line ------------------------------
  var KEYWORDS = new Set(("False None True and as assert async await break case class continue def del elif else " +
    "except finally for from global if import in is lambda match nonlocal not or pass raise return try while with yield").split(" "));
  var BUILTINS = new Set(("abs all any bool dict enumerate filter float int isinstance len list map max min open " +
    "print range round set sorted str sum super tuple type zip").split(" "));
  // comment | string (triple-quoted first, with prefixes) | decorator | number | name
  var TOKEN = /(#[^\n]*)|([rRbBfFuU]{0,2}(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?))|(@[\w.]+)|(\b\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?j?|\.\d+)|([A-Za-z_]\w*)/g;
  function python(code) {
    var out = "", last = 0, prev = "", m;
    TOKEN.lastIndex = 0;
    while ((m = TOKEN.exec(code))) {
      var t = m[0], cls = m[1] ? "c" : m[2] ? "s" : m[3] ? "d" : m[4] ? "n" :
        KEYWORDS.has(t) ? "k" : BUILTINS.has(t) ? "b" : prev === "def" || prev === "class" ? "f" : "";
      out += esc(code.slice(last, m.index)) + (cls ? '<span class="' + cls + '">' + esc(t) + "</span>" : esc(t));
      if (m[5]) prev = t;
      last = TOKEN.lastIndex;
    }
    return out + esc(code.slice(last));
  }
  function diffLines(text) {
    return text.split("\n").map(function (ln) {
      var c = ln.startsWith("+++") || ln.startsWith("---") || ln[0] === "@" ? "dh" : ln[0] === "+" ? "da" : ln[0] === "-" ? "dr" : "";
      return c ? '<span class="' + c + '">' + esc(ln) + "</span>" : esc(ln);
    }).join("\n");
  }

  // -- shapes ------------------------------------------------------------------------------------
  function shape(s, x, y, r, attrs) {
    x = Math.round(x * 10) / 10; y = Math.round(y * 10) / 10;
    var d;
    if (s === "circle") return '<circle cx="' + x + '" cy="' + y + '" r="' + r + '" ' + attrs + "/>";
    var k = r * 1.15;
    if (s === "square") d = "M" + (x - r) + " " + (y - r) + "h" + 2 * r + "v" + 2 * r + "h" + -2 * r + "z";
    else if (s === "diamond") d = "M" + x + " " + (y - k) + "L" + (x + k) + " " + y + "L" + x + " " + (y + k) + "L" + (x - k) + " " + y + "z";
    else if (s === "triangle") d = "M" + x + " " + (y - k) + "L" + (x + k) + " " + (y + r) + "L" + (x - k) + " " + (y + r) + "z";
    else if (s === "down") d = "M" + x + " " + (y + k) + "L" + (x + k) + " " + (y - r) + "L" + (x - k) + " " + (y - r) + "z";
    else if (s === "star") {
      d = "";
      for (var j = 0; j < 10; j++) {
        var u = Math.PI / 5 * j - Math.PI / 2, rr = j % 2 ? k * 0.5 : k * 1.15;
        d += (j ? "L" : "M") + (x + rr * Math.cos(u)).toFixed(1) + " " + (y + rr * Math.sin(u)).toFixed(1);
      }
      d += "z";
    } else if (s === "hexagon") {
      d = "";
      for (var a = 0; a < 6; a++) {
        var t = Math.PI / 3 * a;
        d += (a ? "L" : "M") + (x + k * Math.cos(t)).toFixed(1) + " " + (y + k * Math.sin(t)).toFixed(1);
      }
      d += "z";
    } else {
      var h = r * 0.45;
      d = "M" + (x - h) + " " + (y - k) + "h" + 2 * h + "v" + (k - h) + "h" + (k - h) + "v" + 2 * h + "h" + (h - k) +
        "v" + (k - h) + "h" + -2 * h + "v" + (h - k) + "h" + (h - k) + "v" + -2 * h + "h" + (k - h) + "z";
    }
    return '<path d="' + d + '" ' + attrs + "/>";
  }

  // -- layout: one tidy tree per idea, stages as horizontal bands -------------------------------
  function layout(members) {
    var N = data.nodes, P = N.p, S = N.s, I = N.i;
    var kids = {}, roots = [], depth = {}, rows = {}, x = {};
    members.forEach(function (n) {
      var p = P[n];
      var linked = p >= 0 && I[p] === I[n] && depth[p] !== undefined;
      if (linked) (kids[p] = kids[p] || []).push(n); else roots.push(n);
      depth[n] = linked && S[p] === S[n] ? depth[p] + 1 : 0;
      rows[S[n]] = Math.max(rows[S[n]] || 0, depth[n] + 1);
    });
    roots.sort(function (a, b) { return S[a] - S[b] || a - b; });
    var next = 0, stack = [];
    for (var r = roots.length - 1; r >= 0; r--) stack.push([roots[r], false]);
    while (stack.length) {  // iterative post-order: a debug chain may be thousands deep
      var top = stack.pop(), n = top[0], ch = kids[n];
      if (!top[1]) {
        stack.push([n, true]);
        if (ch) for (var c = ch.length - 1; c >= 0; c--) stack.push([ch[c], false]);
      } else {
        x[n] = ch ? (x[ch[0]] + x[ch[ch.length - 1]]) / 2 : next++;
      }
    }
    return { kids: kids, depth: depth, rows: rows, x: x, width: next };
  }

  function drawIdea(ideaIndex, members) {
    var N = data.nodes, L = layout(members);
    var dx = 14 * zoom, rowH = 24, r = zoom >= 1.5 ? 6 : 5, left = 150, top = 6;
    var bandTop = {}, y = top, bands = "";
    data.stages.forEach(function (stage, s) {
      if (!L.rows[s]) return;
      bandTop[s] = y;
      var h = L.rows[s] * rowH + 18, ops = {};
      members.forEach(function (n) { if (N.s[n] === s) ops[data.kinds[N.k[n]]] = (ops[data.kinds[N.k[n]]] || 0) + 1; });
      var opText = Object.keys(ops).map(function (k) { return k + " " + ops[k]; }).join(" · ");
      bands += '<rect class="band" x="0" y="' + y + '" width="100%" height="' + (h - 4) + '"/>' +
        '<text class="band-label" x="6" y="' + (y + 13) + '"><tspan font-weight="600">' + esc(stage) + "</tspan></text>" +
        '<text class="band-ops" x="6" y="' + (y + 26) + '">' + esc(opText).slice(0, 60) + "</text>";
      y += h;
    });
    var pos = function (n) { return [left + L.x[n] * dx + dx / 2, bandTop[N.s[n]] + 16 + L.depth[n] * rowH]; };
    var edges = "", nodes = "", rings = "", labels = "";
    members.forEach(function (n) {
      var q = pos(n), p = N.p[n];
      if (p >= 0 && L.x[p] !== undefined) {
        var a = pos(p);
        edges += "M" + a[0].toFixed(1) + " " + a[1] + "L" + q[0].toFixed(1) + " " + q[1];
      }
      var f = N.f[n], cls = "node " + data.statuses[N.st[n]] + (f & SPECULATIVE ? " spec" : "") + (n === selected ? " sel" : "");
      nodes += shape(data.shapes[N.k[n]], q[0], q[1], r, 'class="' + cls + '" data-i="' + n + '"');
      if (f & BEST) rings += '<circle class="ring" cx="' + q[0].toFixed(1) + '" cy="' + q[1] + '" r="' + (r + 3) + '"/>';
      if (f & HELDOUT) rings += '<circle class="ring heldout" cx="' + q[0].toFixed(1) + '" cy="' + q[1] + '" r="' + (r + 6) + '"/>';
      if (zoom >= 2) labels += '<text class="oplabel" x="' + (q[0] + r + 1).toFixed(1) + '" y="' + (q[1] - r) + '">' + esc(data.kinds[N.k[n]]) + "</text>";
    });
    var width = left + L.width * dx + 40;
    return '<svg xmlns="http://www.w3.org/2000/svg" width="' + width + '" height="' + (y + 4) + '">' + bands +
      '<path class="edges" d="' + edges + '"/>' + rings + nodes + labels + "</svg>";
  }

  // -- the page ------------------------------------------------------------------------------------
  function renderHead() {
    var run = data.run, N = data.nodes, counts = {};
    N.st.forEach(function (s) { counts[data.statuses[s]] = (counts[data.statuses[s]] || 0) + 1; });
    document.title = "Silva · " + run.name;
    $("run-name").textContent = run.name;
    $("run-state").textContent = run.state + " · " + dur(run.elapsed_s) + " · " + run.mode + " mode" +
      (run.metric ? " · primary metric " + run.metric.name + " (" + run.metric.direction + ")" : "") +
      (run.ideation ? " · " + run.ideation : "");
    $("run-counts").textContent = N.id.length + " nodes: " + data.statuses.map(function (s) {
      return (counts[s] || 0) + " " + s;
    }).join(", ");
    $("live").hidden = !(served && run.live);
    var legend = data.statuses.map(function (s) {
      return '<span><svg width="12" height="12"><circle class="node ' + s + '" cx="6" cy="6" r="5"/></svg> ' + s + "</span>";
    });
    legend = legend.concat(data.kinds.map(function (k, i) {
      return '<span><svg width="14" height="14">' + shape(data.shapes[i], 7, 7, 5, 'fill="#667085"') + "</svg> " + esc(k) + "</span>";
    }));
    legend.push('<span><svg width="16" height="16"><circle class="ring" cx="8" cy="8" r="6"/></svg> stage best</span>');
    legend.push('<span><svg width="16" height="16"><circle class="node good spec" cx="8" cy="8" r="5"/></svg> speculative (started before the decision it depends on)</span>');
    if (data.heldout.length) legend.push('<span><svg width="18" height="18"><circle class="ring heldout" cx="9" cy="9" r="7"/></svg> held-out choice</span>');
    $("legend").innerHTML = legend.join("");
  }

  function renderForest() {
    var keep = {};
    document.querySelectorAll(".tree").forEach(function (t) { keep[t.dataset.idea] = [t.scrollLeft, t.scrollTop]; });
    var byIdea = data.ideas.map(function () { return []; });
    data.nodes.i.forEach(function (idea, n) { byIdea[idea].push(n); });
    var html = "";
    data.ideas.forEach(function (idea, k) {
      var members = byIdea[k], good = 0, buggy = 0, running = 0;
      members.forEach(function (n) {
        var s = data.statuses[data.nodes.st[n]];
        good += s === "good"; buggy += s === "buggy"; running += s === "running";
      });
      var stopped = data.idea_stopped[idea] ? " · stopped: " + esc(data.idea_stopped[idea]) : "";
      if ((data.idea_published || []).indexOf(idea) >= 0) stopped += " · published";
      html += '<div class="idea" data-idea="' + esc(idea) + '"><h2>' + esc(idea) + "<small>" + members.length +
        " nodes · " + good + " good · " + buggy + " buggy · " + running + " running" +
        (data.run.idea_metrics[idea] ? " · deciding on " + esc(data.run.idea_metrics[idea]) : "") + stopped +
        '</small></h2><div class="tree" data-idea="' + esc(idea) + '">' +
        (members.length ? drawIdea(k, members) : '<p class="muted">no nodes yet</p>') + "</div></div>";
    });
    $("forest").innerHTML = html;
    document.querySelectorAll(".tree").forEach(function (t) {
      var s = keep[t.dataset.idea];
      if (s) { t.scrollLeft = s[0]; t.scrollTop = s[1]; }
    });
  }

  function renderSummary() {
    var rows = data.decisions.map(function (d) {
      var sel = d.selection || {}, how = sel.by && d.reason.indexOf(sel.by) < 0 ? esc(sel.by) : "";
      if (sel.llm_reason) how += '<div class="muted">LLM: ' + esc(sel.llm_reason) + "</div>";
      if (sel.candidates && sel.candidates.length) how += '<div class="muted">candidates: ' + sel.candidates.map(nid).join(", ") + "</div>";
      return [esc(d.idea), esc(d.stage), nid(d.node), esc(d.metric || "") + " " + fmt(d.value), esc(d.reason) +
        (how ? "<div>" + how + "</div>" : ""), d.ended ? "ended" + (d.aggregate ? " · aggregate " + nid(d.aggregate) : "") : "replicating / open",
        nid(d.root)];
    });
    var html = rows.length ? table(["idea", "stage", "best node", "value", "why", "stage", "grew from"], rows)
      : '<p class="muted">no stage has decided its best node yet</p>';
    data.heldout.forEach(function (h) {
      html += "<p>Held-out choice for <b>" + esc(h.idea) + "</b>: " + nid(h.node_id) + " (" + esc(h.metric) + " held-out " +
        fmt(h.heldout_value) + ", search " + fmt(h.search_value) + "); " + esc(h.reason) + "</p>";
    });
    $("decisions").innerHTML = html;
    $("budgets").innerHTML = table(["budget", "used", "limit", ""], data.budgets.map(function (b) {
      var u = b.unit === "$" ? money(b.used) : b.unit === "s" ? dur(b.used) : fmt(b.used);
      var l = b.limit == null ? "-" : b.unit === "$" ? money(b.limit) : b.unit === "s" ? dur(b.limit) : fmt(b.limit);
      return [esc(b.name), u, l, b.limit ? bar(b.used / b.limit) : ""];
    }));
    var sp = data.spend, total = sp.total;
    var html2 = "<p>" + money(total.dollars) + " over " + total.calls + " LLM calls (" + total.cache_hits +
      " cache hits saved " + money(total.saved) + "; " + total.errors + " failed), " + total.input_tokens + " in / " +
      total.output_tokens + " out tokens</p>" + data.throughput_text.map(function (t) { return '<p class="muted">' + esc(t) + "</p>"; }).join("");
    html2 += '<div class="spend-groups">';
    ["role", "stage", "idea", "model"].forEach(function (g) {
      var rows2 = (sp.groups[g] || []).map(function (r) {
        return [esc(r.key), '<span class="num">' + r.calls + "</span>", money(r.dollars),
          total.dollars ? bar(r.dollars / total.dollars) : bar(total.calls ? r.calls / total.calls : 0)];
      });
      html2 += "<div><b>by " + g + "</b>" + (rows2.length ? table([g, "calls", "dollars", "share"], rows2) : '<p class="muted">no LLM calls</p>') + "</div>";
    });
    $("spend").innerHTML = html2 + "</div>";
  }

  // -- claims: each idea's claim ledger. Every string (figures, verdict, sentence) is computed in
  // Python by the writers' own code (silva/view/claims.py); the page decides no verdict. --------
  function groupCell(g) {
    // The readable name first; the label beside it where it differs, to find the node in the forest.
    var label = g.label.toLowerCase() === g.name.toLowerCase() ? "" : ' <span class="muted">(' + esc(g.label) + ")</span>";
    return esc(g.name) + label + '<div class="muted">n = ' + g.n + " · " + esc(g.value) + (g.budget ? " · " + esc(g.budget) : "") + "</div>";
  }
  function verdictPill(v) { return '<span class="verdict ' + esc(v.replace(/ /g, "-")) + '">' + esc(v) + "</span>"; }
  function renderClaims() {
    var ideas = data.claims || [];
    $("claims").innerHTML = ideas.length ? ideas.map(function (c) {
      var h = '<div class="idea-claims" data-idea="' + esc(c.idea) + '"><h3>' + esc(c.idea) + "</h3>";
      if (!c.claims.length) return h + '<p class="muted no-claims">' + esc(c.note) + "</p></div>";
      var main = c.claims[0].headline ? c.claims[0] : null;
      if (main) h += '<p class="headline">' + verdictPill(main.verdict) + " " + esc(main.sentence) + "</p>" +
        (c.caveats ? '<p class="caveats">' + esc(c.caveats) + "</p>" : "");
      h += '<p class="muted">' + esc(c.note) + "</p>";
      var head = ["claim", "metric", "subject", "reference", "difference [95% CI]", "test", "p", "Hedges' g [95% CI]",
        "budgets", "verdict"];
      // Each claim's row, then the writer's sentence about it across the table.
      return h + '<table class="claims-table"><tr>' + head.map(function (x) { return "<th>" + esc(x) + "</th>"; }).join("") + "</tr>" +
        c.claims.map(function (k) {
          var cells = [esc(k.id) + '<div class="muted">' + esc(k.stage) + (k.headline ? " · headline" : "") +
              (k.repeats ? " · repeats " + esc(k.repeats) : "") + "</div>",
            esc(k.metric) + '<div class="muted">' + esc(k.role_text) + "</div>",
            groupCell(k.subject), groupCell(k.reference), '<span class="num">' + esc(k.diff) + "</span>",
            esc(k.test) + '<div class="muted">' + esc(k.statistic) + "</div>", '<span class="num">' + esc(k.p) + "</span>",
            '<span class="num">' + esc(k.effect) + "</span>", esc(k.budgets), verdictPill(k.verdict)];
          return '<tr class="claim">' + cells.map(function (x) { return "<td>" + x + "</td>"; }).join("") + "</tr>" +
            '<tr class="sentence"><td></td><td colspan="' + (head.length - 1) + '">' + esc(k.sentence) + "</td></tr>";
        }).join("") + "</table></div>";
    }).join("") : '<p class="muted no-claims">no idea has nodes yet: nothing to compare</p>';
  }

  function renderAll() { renderHead(); renderForest(); renderClaims(); renderSummary(); }

  // -- details -----------------------------------------------------------------------------------
  function indexOf(id) { return data.nodes.id.indexOf(id); }

  function select(n) {
    if (n < 0) return;
    var prev = document.querySelector(".node.sel");
    if (prev) prev.classList.remove("sel");
    selected = n;
    var el = document.querySelector('[data-i="' + n + '"]');
    if (el) el.classList.add("sel");
    var N = data.nodes, id = N.id[n];
    $("details").hidden = false;
    $("details-body").innerHTML = "<h3>" + esc(id) + " · " + esc(data.kinds[N.k[n]]) + ' <span class="status-pill ' +
      data.statuses[N.st[n]] + '">' + data.statuses[N.st[n]] + '</span></h3><p class="muted">loading details…</p>';
    var hit = cache[id];
    if (hit && hit.rev === N.r[n]) { showDetails(hit); return; }
    var k = Math.floor(n / data.chunk), s = document.createElement("script");
    s.src = "nodes/c" + k + ".js" + (served ? "?v=" + encodeURIComponent(data.version) : "");
    s.onload = function () { s.remove(); };
    s.onerror = function () {
      s.remove();
      if (selected === n) $("details-body").innerHTML += '<p class="muted">no details file for ' + esc(id) + " (run `silva view` again)</p>";
    };
    document.head.appendChild(s);
  }

  // A details chunk (nodes/c<k>.js) calls this with the details of up to `data.chunk` nodes.
  window.silvaNodes = function (k, chunk) {
    Object.keys(chunk).forEach(function (id) { cache[id] = chunk[id]; });
    if (selected !== null && chunk[data.nodes.id[selected]]) showDetails(chunk[data.nodes.id[selected]]);
  };

  function showDetails(d) {
    var h = "<h3>" + esc(d.id) + " · " + esc(d.operator) + ' <span class="status-pill ' + esc(d.status) + '">' + esc(d.status) + "</span></h3>";
    h += kv([["idea · stage", esc(d.idea) + " · " + esc(d.stage)], ["parent", nid(d.parent)],
      ["children", d.children.length ? d.children.map(nid).join(", ") : "-"],
      ["refs", d.refs.length ? d.refs.map(nid).join(", ") : undefined],
      ["tried", d.variant ? esc(d.variant) : undefined], ["seed", d.seed == null ? undefined : esc(d.seed)],
      ["origin", Object.keys(d.origin).length ? esc(JSON.stringify(d.origin)) : undefined],
      ["status reason", d.reason ? esc(d.reason) : undefined]]);
    d.decisions.forEach(function (x) {
      var role = x.node === d.id ? "best node of" : x.aggregate === d.id ? "aggregate of" : "root of";
      h += "<p><b>" + role + " " + esc(x.idea) + " · " + esc(x.stage) + "</b>" + (x.node === d.id ? ": " + esc(x.reason) : "") + "</p>";
    });
    h += "<h4>Plan</h4>" + (d.plan ? '<div class="prose">' + esc(d.plan) + "</div>" : '<p class="muted">none</p>');
    h += "<h4>Metrics</h4>" + (d.metrics.length ? table(["metric", "value", "direction"], d.metrics.map(function (m) {
      return [esc(m.name), '<span class="num">' + fmt(m.value) + "</span>", esc(m.direction || "")];
    })) : '<p class="muted">none</p>');
    if (d.judgement) h += "<h4>Judgement</h4>" + kv(Object.keys(d.judgement).map(function (k) { return [k, esc(d.judgement[k])]; }));
    if (d.critique) h += "<h4>Plot critique</h4>" + kv(Object.keys(d.critique).map(function (k) {
      var v = d.critique[k];
      return [k, Array.isArray(v) ? v.map(esc).join("<br>") : esc(v)];
    }));
    if (d.plots.length) h += '<h4>Plots</h4><div class="plots">' + d.plots.map(function (p) {
      return '<img alt="' + esc(p) + '" src="' + esc(p) + '">';
    }).join("") + "</div>";
    if (d.code) h += "<h4>Code (" + d.code.split("\n").length + " lines)</h4><pre class=\"hl code\">" + python(d.code) + "</pre>";
    if (d.diff) h += "<h4>Diff against " + nid(d.diff.parent) + " (+" + d.diff.added + " −" + d.diff.removed + ")</h4>" +
      (d.diff.text ? '<pre class="hl diff">' + diffLines(d.diff.text) + "</pre>" : '<p class="muted">same code as its parent</p>');
    if (d.plot_code) h += "<details><summary>plot script</summary><pre class=\"hl\">" + python(d.plot_code) + "</pre></details>";
    var c = d.cost;
    h += "<h4>Cost</h4>" + kv([["LLM dollars", money(c.usd)], ["LLM calls", c.calls + " (" + c.cache_hits + " from cache)"],
      ["tokens", c.input_tokens + " in / " + c.output_tokens + " out"],
      ["by role", Object.keys(c.by_role).map(function (k) { return esc(k) + ": " + c.by_role[k].calls + " calls, " + money(c.by_role[k].dollars); }).join("<br>") || "-"]]);
    var t = d.timings;
    h += "<h4>Timings</h4>" + kv([["created", when(t.created)], ["first started", when(t.started)], ["finished", when(t.finished)],
      ["queued", dur(t.queued_s)], ["created → finished", dur(t.total_s)], ["experiment wall", dur(t.experiment_s)]]);
    h += "<h4>Worker and attempts</h4>" + kv([["workers", d.workers.length ? d.workers.map(esc).join(", ") : "-"],
      ["lost attempts", String(d.lost_attempts)]]) +
      (d.attempts.length ? table(["attempt", "started", "ended", "how", "worker", "status", "experiment"], d.attempts.map(function (a) {
        return [a.attempt, when(a.start), when(a.end), esc(a.ended || "running"), esc(a.worker), esc(a.status), dur(a.wall_s)];
      })) : '<p class="muted">not started</p>');
    if (d.execution) {
      var e = d.execution;
      h += "<h4>Execution</h4>" + kv([["exit code", esc(e.exit_code)], ["timed out", esc(e.timed_out)], ["out of memory", esc(e.oom_killed)],
        ["cpu", dur(e.cpu_s)]]);
      if (e.stdout_tail) h += "<details><summary>stdout (tail)</summary><pre>" + esc(e.stdout_tail) + "</pre></details>";
      if (e.stderr_tail) h += "<details" + (d.status === "buggy" ? " open" : "") + "><summary>stderr (tail)</summary><pre>" + esc(e.stderr_tail) + "</pre></details>";
    }
    var keys = Object.keys(d.outcome);
    if (keys.length) h += "<h4>Outcome" + (d.outcome_family ? " (" + esc(d.outcome_family) + ")" : "") + "</h4>" +
      kv(keys.map(function (k) {
        var v = d.outcome[k];
        return [k, typeof v === "object" ? "<pre>" + esc(JSON.stringify(v, null, 1)) + "</pre>" : esc(v)];
      }));
    if (Object.keys(d.params).length) h += "<h4>Parameters</h4><pre>" + esc(JSON.stringify(d.params, null, 1)) + "</pre>";
    if (d.artifacts.length) h += "<h4>Artifacts</h4>" + d.artifacts.map(function (a) {
      return '<div><a href="' + esc(a.href) + '">' + esc(a.path) + "</a></div>";
    }).join("");
    $("details-body").innerHTML = h;
  }

  // -- interaction -------------------------------------------------------------------------------
  document.addEventListener("click", function (ev) {
    var t = ev.target.closest ? ev.target.closest("[data-i],a.nid") : null;
    if (!t) return;
    if (t.dataset.i !== undefined) select(+t.dataset.i);
    else { var n = indexOf(t.dataset.id); select(n); reveal(n); }
  });
  function reveal(n) {
    var el = document.querySelector('[data-i="' + n + '"]');
    if (el && el.scrollIntoView) el.scrollIntoView({ block: "center", inline: "center" });
  }
  $("close-details").onclick = function () {
    $("details").hidden = true;
    var prev = document.querySelector(".node.sel");
    if (prev) prev.classList.remove("sel");
    selected = null;
  };
  $("find").addEventListener("keydown", function (ev) {
    if (ev.key !== "Enter") return;
    var n = indexOf(this.value.trim());
    if (n >= 0) { select(n); reveal(n); }
  });
  $("zoom-in").onclick = function () { zoom = Math.min(zoom * 1.5, 6); renderForest(); };
  $("zoom-out").onclick = function () { zoom = Math.max(zoom / 1.5, 0.2); renderForest(); };
  var tip = $("tip");
  $("forest").addEventListener("mousemove", function (ev) {
    var t = ev.target.closest ? ev.target.closest("[data-i]") : null;
    if (!t) { tip.hidden = true; return; }
    var n = +t.dataset.i, N = data.nodes, f = N.f[n];
    tip.innerHTML = "<b>" + esc(N.id[n]) + "</b> " + esc(data.kinds[N.k[n]]) + " · " + data.statuses[N.st[n]] +
      " · " + esc(data.stages[N.s[n]]) + (N.v[n] != null ? " · " + fmt(N.v[n]) : "") + (N.t[n] ? "<br>" + esc(N.t[n]) : "") +
      (f & BEST ? "<br>stage best" : "") + (f & SPECULATIVE ? "<br>speculative" : "") + (f & LOST ? "<br>an attempt was lost or cancelled" : "");
    tip.style.left = ev.clientX + 12 + "px"; tip.style.top = ev.clientY + 12 + "px"; tip.hidden = false;
  });
  $("forest").addEventListener("mouseleave", function () { tip.hidden = true; });

  // -- live refresh (served over http only: a page opened from disk cannot fetch) ----------------
  function poll() {
    fetch("version.json", { cache: "no-store" }).then(function (r) { return r.ok ? r.json() : null; }).then(function (v) {
      if (!v || v.version === data.version) return null;
      return fetch("forest.json", { cache: "no-store" }).then(function (r) { return r.ok ? r.json() : null; });
    }).then(function (fresh) {
      if (!fresh) return;
      var id = selected !== null ? data.nodes.id[selected] : null;
      data = fresh;
      selected = id !== null ? indexOf(id) : null;
      renderAll();
      // Reload the open details only if that node changed; otherwise leave them as they are.
      if (selected !== null && selected >= 0 && !(cache[id] && cache[id].rev === data.nodes.r[selected])) select(selected);
    }).catch(function () { /* the server went away with the run: keep showing the last state */ });
  }

  renderAll();
  document.body.dataset.ready = "1";
  if (served) setInterval(poll, 2000);
})();
