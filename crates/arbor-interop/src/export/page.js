// The session page of `arbor export --format html` (and `arbor serve`).
// Data: #arbor-rows holds every entry's row ([parent, kind, flags, id,
// title, extra?]) in the sidebar's order; #arbor-first the bodies of the
// end of the leaf's path; after this script, one element per chunk of
// entries holds their cards' cleaned HTML, deflated, in base64, inflated
// only when an entry is shown or searched (and only once the page is read).
// The sidebar is a virtual list (only the rows in view exist), the
// transcript a window of one path that grows as it scrolls: a session of
// 100,000 entries opens as fast as a short one. A program that serves the
// page and follows the session (`arbor serve`) adds what is appended in
// place through window.arbor.append.
(function () {
  "use strict";
  var ROW = 22, WINDOW = 40, MORE = 40;
  var $ = function (id) { return document.getElementById(id); };
  var D = JSON.parse($("arbor-data").textContent), S = D.session, CHUNK = S.chunk;
  var P = [], K = [], F = [], I = [], H = [], X = new Map(), byId = new Map();
  function push(r) {
    var n = P.length;
    if (r[5]) X.set(n, r[5]);
    P.push(r[0]); K.push(r[1]); F.push(r[2]); I.push(r[3]); H.push(r[4]);
    byId.set(r[3], n);
  }
  JSON.parse($("arbor-rows").textContent).forEach(push);
  var first = new Map(), pre0 = JSON.parse($("arbor-first").textContent);
  (pre0.n || []).forEach(function (n, i) { first.set(n, pre0.b[i]); });
  var N = P.length, ERROR = 1, ABORTED = 2, TOOLS_ONLY = 4, decorators = [];
  var kidStart, kids, end, leaves, isLeaf, sumM, sumT, sumC;
  // What follows from the rows: children in order (the one that carries on
  // is last), each subtree's end, and each branch's totals from the root
  // (parents come before their children).
  function derive() {
    var n, j;
    N = P.length;
    kidStart = new Int32Array(N + 1); kids = new Int32Array(N); end = new Int32Array(N);
    for (n = 0; n < N; n++) if (P[n] >= 0) kidStart[P[n] + 1]++;
    for (n = 0; n < N; n++) kidStart[n + 1] += kidStart[n];
    var fill = kidStart.slice(0, N);
    for (n = 0; n < N; n++) { if (P[n] >= 0) kids[fill[P[n]]++] = n; end[n] = n + 1; }
    for (n = N - 1; n >= 0; n--) if (P[n] >= 0 && end[n] > end[P[n]]) end[P[n]] = end[n];
    leaves = 0; isLeaf = new Uint8Array(N); sumM = new Int32Array(N); sumT = new Float64Array(N); sumC = new Float64Array(N);
    for (n = 0; n < N; n++) {
      var up = P[n], x = X.get(n);
      sumM[n] = (up >= 0 ? sumM[up] : 0) + ("uarbsm".indexOf(K[n]) >= 0 ? 1 : 0);
      sumT[n] = (up >= 0 ? sumT[up] : 0) + (x && x.u ? x.u[0] : 0);
      sumC[n] = (up >= 0 ? sumC[up] : 0) + (x && x.u ? x.u[1] : 0);
      if (K[n] === "K") continue;
      var bare = true;
      for (j = kidStart[n]; j < kidStart[n + 1]; j++) if (K[kids[j]] !== "K") bare = false;
      if (bare) { leaves++; isLeaf[n] = 1; }
    }
  }
  derive();
  // Arbor's bookkeeping entries are never shown: the leaf is the entry they hang from.
  while (D.leaf >= 0 && K[D.leaf] === "K") D.leaf = P[D.leaf];

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function tokens(t) { return t >= 1e6 ? (t / 1e6).toFixed(1) + "M" : t >= 1e3 ? (t / 1e3).toFixed(1) + "k" : String(t); }
  function money(c) { return "$" + c.toFixed(c >= 1 ? 2 : 4); }
  function group(x) { return String(x).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  function label(n) { var x = X.get(n); return x && x.l; }
  function lastKid(n) { return kidStart[n + 1] > kidStart[n] ? kids[kidStart[n + 1] - 1] : -1; }

  // ---- bodies: inflated a chunk at a time, on demand, once the page is read ----
  var zs = document.getElementsByClassName("arbor-z"), bodies = new Map();
  var read = new Promise(function (done) {
    if (document.readyState !== "loading") done(); else document.addEventListener("DOMContentLoaded", done);
  });
  function chunkOf(n) { return Math.floor(n / CHUNK); }
  function inflate(c) {
    if (!bodies.has(c)) {
      bodies.set(c, read.then(function () {
        var bin = atob(zs[c].textContent), u = new Uint8Array(bin.length);
        for (var i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
        var stream = new Blob([u]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
        return new Response(stream).text().then(JSON.parse);
      }));
    }
    return bodies.get(c);
  }
  function need(list) {
    var cs = new Set(list.filter(function (n) { return !first.has(n); }).map(chunkOf));
    return Promise.all(Array.from(cs).map(function (c) { return inflate(c).then(function (b) { return [c, b]; }); }))
      .then(function (got) {
        var m = new Map(got);
        return function (n) { return first.has(n) ? first.get(n) : m.get(chunkOf(n))[n - chunkOf(n) * CHUNK]; };
      });
  }

  // ---- what the tree shows ----
  var KIND = { u: "user", a: "assistant", r: "tool", b: "bash", c: "compaction", s: "branch summary", m: "message",
    M: "model", T: "thinking", L: "label", N: "name", X: "custom", K: "arbor", O: "entry" };
  var SETTINGS = "MTLNXKO";
  var filter = "default", hits = null, folded = new Set();
  function passes(n) {
    var k = K[n];
    if (k === "K") return false;
    if (hits) return hits.has(n);
    var quietReply = k === "a" && (F[n] & TOOLS_ONLY) && !(F[n] & (ERROR | ABORTED));
    switch (filter) {
      case "all": return true;
      case "user": return k === "u";
      case "labeled": return !!label(n);
      case "no-tools": return SETTINGS.indexOf(k) < 0 && k !== "r" && !quietReply;
      default: return SETTINGS.indexOf(k) < 0 && !quietReply;
    }
  }
  var rows = [], pre = [], rowOf = new Int32Array(N).fill(-1), foldable = new Uint8Array(N);
  function layout() {
    var vis = new Uint8Array(N), up = new Int32Array(N), count = new Int32Array(N), last = new Int32Array(N).fill(-1);
    for (var n = 0; n < N; n++) {
      if (folded.has(n)) {
        // A side branch folds whole; a fork folds its side branches.
        var m, f = P[n] >= 0 && lastKid(P[n]) !== n ? [] : sideKidsOf(n);
        if (!f.length) for (m = n + 1; m < end[n]; m++) vis[m] = 2;
        for (var j = 0; j < f.length; j++) for (m = f[j]; m < end[f[j]]; m++) vis[m] = 2;
      }
      if (vis[n] === 2) continue;
      vis[n] = passes(n) || n === target || n === D.leaf ? 1 : 0;
    }
    rows = []; rowOf.fill(-1);
    var cont = new Array(N);
    for (n = 0; n < N; n++) {
      var p = P[n];
      up[n] = p < 0 ? -1 : vis[p] === 1 ? p : up[p];
      if (vis[n] !== 1) continue;
      if (up[n] >= 0) { count[up[n]]++; last[up[n]] = n; }
    }
    for (n = 0; n < N; n++) {
      if (vis[n] !== 1) continue;
      var v = up[n], base = v < 0 ? "" : cont[v];
      if (v >= 0 && count[v] > 1 && last[v] !== n) { pre[n] = base + "├─ "; cont[n] = base + "│  "; }
      else { pre[n] = base; cont[n] = base; }
      if (cont[n].length > 45) cont[n] = "┆ " + cont[n].slice(-42);
      foldable[n] = count[n] > 1 || sideKidsOf(n).length > 0 || pre[n].slice(-3) === "├─ " ? 1 : 0;
      rowOf[n] = rows.length;
      rows.push(n);
    }
    $("tree-space").style.height = rows.length * ROW + "px";
    status();
    drawTree(true);
  }
  function sideKidsOf(n) {
    var out = [];
    for (var i = kidStart[n]; i < kidStart[n + 1] - 1; i++) out.push(kids[i]);
    return out;
  }

  // ---- the sidebar: only the rows in view are made ----
  var tree = $("tree"), space = $("tree-space"), onPath = new Uint8Array(N), drawn = [-1, -1];
  function drawTree(force) {
    var first = Math.max(0, Math.floor(tree.scrollTop / ROW) - 10);
    var last = Math.min(rows.length, first + Math.ceil(tree.clientHeight / ROW) + 20);
    if (!force && first === drawn[0] && last === drawn[1]) return;
    drawn = [first, last];
    var frag = document.createDocumentFragment();
    for (var r = first; r < last; r++) frag.append(treeRow(rows[r], r));
    space.textContent = "";
    space.append(frag);
  }
  function treeRow(n, r) {
    var d = el("div", "row k-" + K[n] + (onPath[n] ? " on" : "") + (n === target ? " sel" : "") + (F[n] & ERROR ? " error" : "") + (F[n] & ABORTED ? " aborted" : ""));
    d.style.top = r * ROW + "px";
    d.dataset.n = n;
    d.setAttribute("role", "treeitem");
    d.append(el("span", "pre", pre[n]));
    var t = el("span", "fold", foldable[n] ? (isFolded(n) ? "▸" : "▾") : "");
    d.append(t);
    if (n === D.leaf) d.append(el("span", "leafmark", "●"));
    var l = label(n);
    if (l) d.append(el("span", "label", l));
    d.append(el("span", "role", KIND[K[n]] + (F[n] & ERROR ? " ✗" : F[n] & ABORTED ? " ⊘" : "")), el("span", "t", H[n]));
    d.title = KIND[K[n]] + " " + I[n] + ": " + H[n];
    if (isLeaf[n]) {
      var sum = sumM[n] + " msgs · " + tokens(sumT[n]) + " tok · " + money(sumC[n]);
      d.append(el("span", "sum", sum));
      d.title += " (this branch: " + sum + ")";
    }
    return d;
  }
  function isFolded(n) { return folded.has(n); }
  tree.addEventListener("scroll", function () { drawTree(false); });
  window.addEventListener("resize", function () { drawTree(true); });
  tree.addEventListener("click", function (ev) {
    var row = ev.target.closest(".row");
    if (!row) return;
    var n = +row.dataset.n;
    if (ev.target.classList.contains("fold") && foldable[n]) {
      if (folded.has(n)) folded.delete(n); else folded.add(n);
      layout();
      return;
    }
    if (comparing) { comparing = false; compare(path.length ? path[path.length - 1] : target, n); return; }
    open(n, true);
  });
  function status(text) {
    var shown = rows.length, what = hits ? group(hits.size) + " matches" : filter === "default" ? "" : filter;
    $("side-status").textContent = text || [group(shown) + " of " + group(N) + " entries", what].filter(Boolean).join(" · ");
  }
  document.querySelectorAll(".filters button").forEach(function (b) {
    b.addEventListener("click", function () {
      filter = b.dataset.filter;
      document.querySelectorAll(".filters button").forEach(function (o) { o.classList.toggle("on", o === b); });
      layout();
      scrollTreeTo(target);
    });
  });
  function scrollTreeTo(n) {
    var r = rowOf[n];
    if (r < 0) return;
    var top = r * ROW;
    if (top < tree.scrollTop || top > tree.scrollTop + tree.clientHeight - ROW) tree.scrollTop = Math.max(0, top - tree.clientHeight / 2);
    drawTree(true);
  }

  // ---- the transcript of one path ----
  var target = D.leaf >= 0 ? D.leaf : N - 1, path = [], from = 0, to = 0, view = $("view");
  function shownInPath(n) { return "KLX".indexOf(K[n]) < 0; }
  function open(n, fromTree) {
    if (n < 0 || n >= N) return Promise.resolve();
    target = n;
    var tip = repath();
    var at = path.indexOf(n);
    from = Math.max(0, at - WINDOW);
    to = Math.min(path.length, at + 8);
    if (rowOf[n] < 0) layout();
    if (!fromTree) scrollTreeTo(n); else drawTree(true);
    history.replaceState(null, "", "#" + I[n]);
    pathbar();
    return draw().then(function () {
      var card = $("e-" + I[n]);
      if (card) {
        card.classList.add("focus");
        card.scrollIntoView({ block: n === tip ? "end" : "center" });
      }
    });
  }
  // The path through the target (to the end of the branch it is on); its tip.
  function repath() {
    var tip = target, up = [];
    while (lastKid(tip) >= 0) tip = lastKid(tip);
    for (var m = tip; m >= 0; m = P[m]) up.push(m);
    up.reverse();
    onPath.fill(0);
    up.forEach(function (m) { onPath[m] = 1; });
    path = up.filter(function (m) { return shownInPath(m) || m === target; });
    return tip;
  }
  function pathbar() {
    var m = 0, t = 0, c = 0, calls = 0;
    path.forEach(function (n) {
      if ("uarbsm".indexOf(K[n]) >= 0) m++;
      var x = X.get(n);
      if (x && x.u) { t += x.u[0]; c += x.u[1]; }
      if (x && x.c) calls += x.c.length;
    });
    var bar = $("pathbar");
    bar.textContent = "";
    bar.append(el("span", null, "This path: " + group(path.length) + " entries · " + group(m) + " messages · " + group(calls) + " tool calls · " + tokens(t) + " tokens · " + money(c)));
    var top = el("button", null, "⤒ start"), bottom = el("button", null, "⤓ end");
    top.type = bottom.type = "button";
    top.onclick = function () { from = 0; to = Math.min(path.length, WINDOW); draw().then(function () { $("main").scrollTop = 0; }); };
    bottom.onclick = function () { to = path.length; from = Math.max(0, to - WINDOW); draw().then(function () { $("main").scrollTop = 1e9; }); };
    bar.append(top, bottom);
  }
  function card(n, body) {
    var k = K[n], a = el("article", "card k-" + k + (F[n] & ERROR ? " error" : "") + (F[n] & ABORTED ? " aborted" : "") + (n === D.leaf ? " leaf" : "") + (hits && hits.has(n) ? " hit" : ""));
    a.id = "e-" + I[n];
    a.dataset.n = n;
    var h = el("header");
    var x = X.get(n) || {};
    var role = k === "r" || k === "b" ? H[n] : KIND[k];
    h.append(el("span", "role", role));
    if (x.m && k === "a") h.append(el("span", "model", x.m));
    if (x.l) h.append(el("span", "label", x.l));
    if (n === D.leaf) h.append(el("span", "leafmark", "● leaf"));
    h.append(el("time", null, body[0]), el("code", "id", I[n]));
    if (x.u) h.append(el("span", "usage", tokens(x.u[0]) + " tok · " + money(x.u[1])));
    a.append(h);
    if ("MTN".indexOf(k) >= 0 || !body[1]) { a.classList.add("quiet"); if (!body[1]) a.append(el("div", "plain", H[n])); }
    var b = el("div", "body");
    b.innerHTML = body[1];
    if (showThinking) b.querySelectorAll("details.thinking").forEach(function (d) { d.open = true; });
    a.append(b);
    decorators.forEach(function (f) { f(a, I[n]); });
    return a;
  }
  function draw() {
    var list = path.slice(from, to);
    return need(list).then(function (get) {
      view.textContent = "";
      if (from > 0) view.append(sentinel("top", from + " earlier entries on this path"));
      var frag = document.createDocumentFragment();
      list.forEach(function (n) { frag.append(card(n, get(n))); });
      view.append(frag);
      if (to < path.length) view.append(sentinel("bottom", path.length - to + " later entries on this path"));
    });
  }
  var watcher = "IntersectionObserver" in window ? new IntersectionObserver(function (seen) {
    seen.forEach(function (o) { if (o.isIntersecting) grow(o.target.dataset.side); });
  }, { root: $("main"), rootMargin: "400px" }) : null;
  function sentinel(side, text) {
    var b = el("button", "more", text + " — show " + MORE + " more");
    b.type = "button";
    b.dataset.side = side;
    b.onclick = function () { grow(side); };
    if (watcher) watcher.observe(b);
    return b;
  }
  var growing = false;
  function grow(side) {
    if (growing) return;
    growing = true;
    var old = view.querySelector(".more[data-side=" + side + "]");
    if (watcher && old) watcher.unobserve(old);
    var lo = side === "top" ? Math.max(0, from - MORE) : to, hi = side === "top" ? from : Math.min(path.length, to + MORE);
    var list = path.slice(lo, hi);
    need(list).then(function (get) {
      var frag = document.createDocumentFragment();
      list.forEach(function (n) { frag.append(card(n, get(n))); });
      if (side === "top") {
        var anchor = view.querySelector(".card"), before = anchor ? anchor.getBoundingClientRect().top : 0;
        if (old) old.remove();
        from = lo;
        if (from > 0) frag.prepend(sentinel("top", from + " earlier entries on this path"));
        view.prepend(frag);
        if (anchor) $("main").scrollTop += anchor.getBoundingClientRect().top - before;
      } else {
        if (old) old.remove();
        to = hi;
        if (to < path.length) frag.append(sentinel("bottom", path.length - to + " later entries on this path"));
        view.append(frag);
      }
      growing = false;
    });
  }
  view.addEventListener("click", function (ev) {
    var out = ev.target.closest("pre.clip");
    if (out && !window.getSelection().toString()) out.classList.toggle("open");
  });

  // ---- search: every entry of every branch, errors included ----
  var lower = null, building = null;
  function index() {
    if (building) return building;
    lower = new Array(N);
    var c = 0;
    building = new Promise(function (done) {
      (function next() {
        if (c >= zs.length) { done(); return; }
        var at = c;
        inflate(at).then(function (b) {
          for (var i = 0; i < b.length; i++) {
            lower[at * CHUNK + i] = searchText(at * CHUNK + i, b[i][1]);
          }
          if (at > 64) bodies.delete(at);
          c++;
          if (c % 50 === 0) status("indexing for search: " + Math.round(100 * c / zs.length) + "%");
          next();
        });
      })();
    });
    return building;
  }
  function searchText(n, html) {
    var x = X.get(n), text = html.replace(/<[^>]*>/g, " ").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, "\"").replace(/&#39;/g, "'").replace(/&amp;/g, "&");
    return (I[n] + " " + KIND[K[n]] + " " + H[n] + " " + (x && x.l || "") + " " + text).toLowerCase();
  }
  var input = $("search"), timer = 0, hitList = [], hitAt = -1;
  function search() {
    var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    if (!terms.length) { hits = null; hitList = []; layout(); scrollTreeTo(target); return Promise.resolve(); }
    return index().then(function () {
      var found = new Set();
      hitList = [];
      for (var n = 0; n < N; n++) {
        // Entries added after the page was made are indexed when first searched.
        if (lower[n] === undefined && first.has(n)) lower[n] = searchText(n, first.get(n)[1]);
        var t = lower[n] || "";
        if (K[n] !== "K" && terms.every(function (q) { return t.indexOf(q) >= 0; })) { found.add(n); hitList.push(n); }
      }
      hits = found;
      hitAt = -1;
      layout();
      tree.scrollTop = 0;
      drawTree(true);
    });
  }
  input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(search, 150); });
  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter") {
      clearTimeout(timer);
      search().then(function () {
        if (!hitList.length) return;
        hitAt = (hitAt + (e.shiftKey ? hitList.length - 1 : 1)) % hitList.length;
        open(hitList[hitAt], false);
      });
    } else if (e.key === "Escape") { input.value = ""; search(); input.blur(); }
  });

  // ---- compare two paths (what `arbor diff` computes) ----
  var comparing = false;
  function side(pathOf, shared, n) {
    var added = pathOf.slice(shared), counts = {}, tools = {}, read = new Set(), changed = new Set(), t = 0, c = 0, pt = 0, pc = 0;
    pathOf.forEach(function (m, i) {
      var x = X.get(m);
      if (x && x.u) { pt += x.u[0]; pc += x.u[1]; if (i >= shared) { t += x.u[0]; c += x.u[1]; } }
    });
    added.forEach(function (m) {
      if ("uarbcsm".indexOf(K[m]) >= 0) counts[KIND[K[m]]] = (counts[KIND[K[m]]] || 0) + 1;
      var x = X.get(m);
      if (!x) return;
      (x.c || []).forEach(function (name) { tools[name] = (tools[name] || 0) + 1; });
      (x.r || []).forEach(function (f) { read.add(f); });
      (x.w || []).forEach(function (f) { changed.add(f); });
    });
    changed.forEach(function (f) { read.delete(f); });
    var col = el("section", "side");
    col.append(el("h3", null, (hits && hits.has(n) ? "" : "") + KIND[K[n]] + " " + I[n] + ": " + H[n]));
    var facts = el("ul", "facts");
    var li = function (t) { facts.append(el("li", null, t)); };
    li(added.length + " entries after the fork: " + (Object.keys(counts).map(function (k) { return counts[k] + " " + k; }).join(", ") || "none"));
    li("tool calls: " + (Object.keys(tools).map(function (k) { return tools[k] + "× " + k; }).join(", ") || "none"));
    li("files read: " + (Array.from(read).join(", ") || "none"));
    li("files changed: " + (Array.from(changed).join(", ") || "none"));
    li("added: " + tokens(t) + " tokens · " + money(c) + "; the whole path: " + tokens(pt) + " tokens · " + money(pc));
    col.append(facts);
    var list = el("ol", "added");
    added.slice(0, 500).forEach(function (m) {
      if (K[m] === "K") return;
      var b = el("button", "k-" + K[m] + (F[m] & ERROR ? " error" : ""), KIND[K[m]] + ": " + H[m]);
      b.type = "button";
      b.onclick = function () { open(m, false); };
      var item = el("li"); item.append(b); list.append(item);
    });
    col.append(list);
    return col;
  }
  function compare(a, b) {
    var pa = [], pb = [], m;
    for (m = a; m >= 0; m = P[m]) pa.push(m);
    for (m = b; m >= 0; m = P[m]) pb.push(m);
    pa.reverse(); pb.reverse();
    var shared = 0;
    while (shared < pa.length && shared < pb.length && pa[shared] === pb[shared]) shared++;
    view.textContent = "";
    var box = el("div", "compare");
    var top = el("div", "compare-head");
    var ancestor = shared ? pa[shared - 1] : -1;
    top.append(el("h2", null, "Compare"), el("p", null, ancestor >= 0 ? "The paths part after " + KIND[K[ancestor]] + " " + I[ancestor] + ": " + H[ancestor] : "The paths start at different roots."));
    var close = el("button", null, "Close"); close.type = "button"; close.onclick = function () { open(target, false); };
    top.append(close);
    box.append(top);
    var cols = el("div", "columns");
    cols.append(side(pa, shared, a), side(pb, shared, b));
    box.append(cols);
    view.append(box);
    status();
  }
  $("compare").addEventListener("click", function () { comparing = true; status("Compare: pick an entry in the tree (Esc to cancel)"); });

  // ---- toggles, keys, theme ----
  var showThinking = false;
  function toggleThinking() {
    showThinking = !showThinking;
    view.querySelectorAll("details.thinking").forEach(function (d) { d.open = showThinking; });
    $("toggle-thinking").classList.toggle("on", showThinking);
  }
  function toggleOutput() { $("toggle-output").classList.toggle("on", view.classList.toggle("show-output")); }
  $("toggle-thinking").onclick = toggleThinking;
  $("toggle-output").onclick = toggleOutput;
  $("theme").onclick = function () {
    var root = document.documentElement, dark = root.dataset.theme ? root.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    root.dataset.theme = dark ? "light" : "dark";
  };
  document.addEventListener("keydown", function (e) {
    if (e.target === input || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "/") { e.preventDefault(); input.focus(); input.select(); }
    else if (e.key === "t" || e.key === "T") toggleThinking();
    else if (e.key === "o" || e.key === "O") toggleOutput();
    else if (e.key === "c" || e.key === "C") $("compare").click();
    else if (e.key === "Escape") { comparing = false; status(); }
    else if (e.key === "ArrowDown" || e.key === "j" || e.key === "ArrowUp" || e.key === "k") {
      var r = rowOf[target] + (e.key === "ArrowDown" || e.key === "j" ? 1 : -1);
      if (r >= 0 && r < rows.length) { e.preventDefault(); open(rows[r], false); }
    }
  });

  // ---- the header, then the first drawing ----
  function drawFacts() {
    var facts = [S.timestamp, group(N) + " entries", leaves + (leaves === 1 ? " branch" : " branches"), group(S.messages) + " messages",
      group(S.calls) + " tool calls", tokens(S.tokens) + " tokens", money(S.cost)];
    if (S.models.length) facts.push(S.models.join(", "));
    if (S.cwd) facts.push(S.cwd);
    var head = $("facts");
    head.textContent = "";
    head.append(el("span", null, facts.join(" · ")));
    if (S.errors) head.append(el("span", "bad", " · " + S.errors + (S.errors === 1 ? " error" : " errors")));
    if (S.aborted) head.append(el("span", "bad", " · " + S.aborted + " aborted"));
    if (S.cut) head.append(el("span", "note", " · " + S.cut + " tool outputs over " + group(S.maxOutput) + " bytes are cut in this page"));
    document.title = S.name || "Session " + S.id;
    $("title").textContent = document.title;
  }
  drawFacts();
  var start = location.hash && byId.get(decodeURIComponent(location.hash.slice(1)));
  layout();
  open(start != null && start !== "" ? start : target, false).then(function () {
    document.documentElement.dataset.renderMs = performance.now().toFixed(1);
    if (performance.mark) performance.mark("arbor-rendered");
  });

  // ---- growing: entries appended after the page was made (from a server that follows the session) ----
  // True when a new entry under `p` (-1: a new root) goes at the end of the
  // sidebar's order: `p` is on the path to the last entry.
  function endsOrder(p) {
    if (p < 0) return true;
    for (var m = P.length - 1; m >= 0; m = P[m]) if (m === p) return true;
    return false;
  }
  function tallyOne(n) {
    var x = X.get(n) || {};
    if ("uarbsm".indexOf(K[n]) >= 0) S.messages++;
    S.calls += (x.c || []).length;
    if (x.u) { S.tokens += x.u[0]; S.cost += x.u[1]; }
    if (F[n] & ERROR) S.errors++;
    if (F[n] & ABORTED) S.aborted++;
    if (x.m && S.models.indexOf(x.m) < 0) S.models.push(x.m);
  }
  function relabel(id, text) {
    var t = byId.get(id);
    if (t == null) return;
    var x = X.get(t) || {};
    if (text == null) delete x.l; else x.l = text;
    if (Object.keys(x).length) X.set(t, x); else X.delete(t);
    var c = $("e-" + id), h = c && c.querySelector("header"), s = h && h.querySelector(".label");
    if (!h) return;
    if (text == null) { if (s) s.remove(); } else if (s) s.textContent = text;
    else h.insertBefore(el("span", "label", text), h.querySelector(".leafmark") || h.querySelector("time"));
  }
  // Adds appended entries (items: {id, parent, row, body, label?, name?}, in
  // file order). False when one does not go at the end of the sidebar's
  // order (a branch grew elsewhere, an unknown parent): draw the page anew.
  function append(items) {
    var before = N, oldLeaf = D.leaf, main = $("main");
    // The reader sees the end of the path (the leaf's card is in view): the page follows it.
    var leafCard = oldLeaf >= 0 && $("e-" + I[oldLeaf]);
    var following = target === oldLeaf && !comparing && !!leafCard && leafCard.getBoundingClientRect().top < main.getBoundingClientRect().bottom;
    for (var i = 0; i < items.length; i++) {
      var it = items[i];
      if (byId.has(it.id)) continue;
      var p = it.parent == null ? -1 : byId.get(it.parent);
      if (p === undefined || !endsOrder(p)) return false;
      push([p].concat(it.row));
      first.set(P.length - 1, it.body);
      if (it.label) relabel(it.label[0], it.label[1]);
      if (it.name) S.name = it.name;
      tallyOne(P.length - 1);
    }
    if (P.length === before) return true;
    derive();
    rowOf = new Int32Array(N).fill(-1); foldable = new Uint8Array(N); onPath = new Uint8Array(N);
    D.leaf = N - 1;
    while (D.leaf >= 0 && K[D.leaf] === "K") D.leaf = P[D.leaf];
    // The old leaf's card is marked no more (the sidebar is drawn anew below).
    var mark = oldLeaf !== D.leaf && leafCard && leafCard.querySelector("header .leafmark");
    if (mark) mark.remove();
    drawFacts();
    if (following) { open(D.leaf, false); return true; }
    var ended = to === path.length;
    repath();
    if (ended && to < path.length && !view.querySelector(".more[data-side=bottom]")) view.append(sentinel("bottom", path.length - to + " later entries on this path"));
    layout();
    pathbar();
    return true;
  }
  // Calls f(card, id) for every card drawn, now and from now on.
  function decorate(f) {
    decorators.push(f);
    view.querySelectorAll(".card").forEach(function (c) { f(c, I[+c.dataset.n]); });
  }
  window.arbor = { open: function (id) { return open(byId.get(id), false); }, compare: function (a, b) { compare(byId.get(a), byId.get(b)); }, search: function (q) { input.value = q; return search(); },
    append: append, decorate: decorate, entries: function () { return N; }, leaf: function () { return D.leaf >= 0 ? I[D.leaf] : null; } };
})();
