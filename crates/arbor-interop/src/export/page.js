// Draws the session tree of `arbor export --format html` from the JSON in
// #arbor-data. Lazy throughout: a branch's entries are made when the branch
// is first opened, a long branch CHUNK entries at a time (the next chunk when
// its "more" line scrolls into view), and the search reads the data, not the
// page, so a session of 10,000 entries opens as fast as a short one.
(function () {
  "use strict";
  var CHUNK = 150;
  var D = JSON.parse(document.getElementById("arbor-data").textContent);
  var N = D.nodes, S = D.segs;
  var parentSeg = new Array(S.length).fill(-1);
  S.forEach(function (s, i) { s.k.forEach(function (k) { parentSeg[k] = i; }); });
  var segEls = new Array(S.length);
  var shown = new Array(S.length).fill(0);
  var hits = new Set();

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function tokens(n) {
    return n >= 1e6 ? (n / 1e6).toFixed(1) + "M" : n >= 1e3 ? (n / 1e3).toFixed(1) + "k" : String(n);
  }
  function cost(c) { return "$" + c.toFixed(c >= 1 ? 2 : 4); }
  function stats(s) {
    var own = s.msgs + " msgs · " + tokens(s.tok) + " tok · " + cost(s.cost);
    return s.k.length ? own : own + " — path " + s.pmsgs + " msgs · " + tokens(s.ptok) + " tok · " + cost(s.pcost);
  }
  function line(x) {
    for (var j = 0; j < x.x.length; j++) {
      var p = x.x[j];
      if (p[0] === "t" || p[0] === "o") return x.h + ": " + p[1].replace(/\s+/g, " ").slice(0, 140);
      if (p[0] === "c") return x.h + ": → " + p[1];
    }
    return x.h;
  }
  function segTitle(s) {
    for (var j = 0; j < s.n.length; j++) if (N[s.n[j]].m) return line(N[s.n[j]]);
    return line(N[s.n[0]]);
  }
  function fold(cls, summary, body) {
    var d = el("details", cls);
    d.append(el("summary", null, summary), el("pre", null, body));
    return d;
  }

  function entry(n) {
    var x = N[n];
    var a = el("article", "entry k-" + x.k + (x.m ? "" : " quiet") + (x.e ? " error" : "") + (n === D.leaf ? " leaf" : "") + (hits.has(n) ? " hit" : ""));
    a.id = "e-" + x.i;
    a.dataset.node = n;
    var h = el("header");
    h.append(el("span", "role", x.h), el("code", "id", x.i), el("time", null, x.t));
    if (x.l) h.append(el("span", "label", x.l));
    if (n === D.leaf) h.append(el("span", "leafmark", "◀ leaf"));
    a.append(h);
    x.x.forEach(function (p) {
      if (p[0] === "t") a.append(el("div", "text", p[1]));
      else if (p[0] === "k") a.append(fold("thinking", "thinking", p[1]));
      else if (p[0] === "c") a.append(fold("call", "→ " + p[1] + " " + p[2], p[3]));
      else if (p[0] === "o") a.append(fold("out", "← " + (p[1].split("\n", 1)[0].slice(0, 100) || "(no output)"), p[1]));
      else if (p[0] === "i") a.append(el("div", "img", "[image: " + p[1] + "]"));
    });
    return a;
  }

  var observer = "IntersectionObserver" in window ? new IntersectionObserver(function (seen) {
    seen.forEach(function (o) { if (o.isIntersecting) o.target.click(); });
  }, { rootMargin: "600px" }) : null;

  function renderMore(i) {
    var s = S[i], body = segEls[i].querySelector(":scope > .seg-body");
    var old = body.querySelector(":scope > .more");
    if (old) { if (observer) observer.unobserve(old); old.remove(); }
    var end = Math.min(s.n.length, shown[i] + CHUNK), frag = document.createDocumentFragment();
    for (var j = shown[i]; j < end; j++) frag.append(entry(s.n[j]));
    shown[i] = end;
    body.append(frag);
    if (end < s.n.length) {
      var more = el("button", "more", "show " + Math.min(CHUNK, s.n.length - end) + " more of " + (s.n.length - end) + " entries");
      more.type = "button";
      more.addEventListener("click", function () { renderMore(i); });
      body.append(more);
      if (observer) observer.observe(more);
    }
  }

  function segment(i) {
    var s = S[i];
    var sec = el("section", "seg" + (s.a ? " active" : ""));
    sec.dataset.seg = i;
    var head = el("div", "seg-head");
    var labels = el("span", "seg-labels");
    s.n.forEach(function (n) { if (N[n].l) labels.append(el("span", "label", N[n].l)); });
    head.append(el("button", "toggle", "▸"), el("span", "seg-title", segTitle(s)), labels, el("span", "seg-stats", s.n.length + " entries · " + stats(s)));
    head.addEventListener("click", function () { toggle(i); });
    sec.append(head, el("div", "seg-body"), el("div", "kids"));
    segEls[i] = sec;
    if (s.a) open(i);
    return sec;
  }

  function open(i) {
    var sec = segEls[i];
    sec.classList.add("open");
    sec.querySelector(":scope > .seg-head > .toggle").textContent = "▾";
    if (shown[i] === 0) renderMore(i);
    var kids = sec.querySelector(":scope > .kids");
    if (!kids.childElementCount) S[i].k.forEach(function (k) { kids.append(segment(k)); });
  }
  function close(i) {
    segEls[i].classList.remove("open");
    segEls[i].querySelector(":scope > .seg-head > .toggle").textContent = "▸";
  }
  function toggle(i) { if (segEls[i].classList.contains("open")) close(i); else open(i); }

  function reveal(n) {
    var chain = [], s = N[n].s;
    while (s >= 0) { chain.push(s); s = parentSeg[s]; }
    chain.reverse().forEach(function (c) { if (segEls[c]) open(c); });
    var seg = N[n].s, pos = S[seg].n.indexOf(n);
    while (shown[seg] <= pos) renderMore(seg);
    var a = document.getElementById("e-" + N[n].i);
    if (!a) return;
    a.classList.add("focus");
    a.scrollIntoView({ block: "center" });
    setTimeout(function () { a.classList.remove("focus"); }, 1600);
  }

  var lower = null;
  function textOf(x) {
    return (x.h + " " + x.i + " " + (x.l || "") + " " + x.x.map(function (p) { return p.slice(1).join(" "); }).join(" ")).toLowerCase();
  }
  var input = document.getElementById("search"), count = document.getElementById("search-count"), list = document.getElementById("search-results");
  function search() {
    var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    document.querySelectorAll(".entry.hit").forEach(function (a) { a.classList.remove("hit"); });
    document.querySelectorAll(".seg-head.has-hit").forEach(function (h) { h.classList.remove("has-hit"); });
    hits = new Set();
    list.textContent = "";
    if (!terms.length) { count.textContent = ""; return; }
    if (!lower) lower = N.map(textOf);
    for (var n = 0; n < N.length; n++) {
      var t = lower[n];
      if (terms.every(function (q) { return t.indexOf(q) >= 0; })) hits.add(n);
    }
    count.textContent = hits.size + (hits.size === 1 ? " match" : " matches");
    var listed = 0, segs = new Set();
    hits.forEach(function (n) {
      segs.add(N[n].s);
      var a = document.getElementById("e-" + N[n].i);
      if (a) a.classList.add("hit");
      if (listed++ < 100) {
        var b = el("button", null, line(N[n]));
        b.type = "button";
        b.addEventListener("click", function () { reveal(n); });
        var li = el("li");
        li.append(b);
        list.append(li);
      }
    });
    segs.forEach(function (s) { if (segEls[s]) segEls[s].querySelector(":scope > .seg-head").classList.add("has-hit"); });
  }
  var timer = 0;
  input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(search, 120); });
  input.addEventListener("keydown", function (e) { if (e.key === "Enter") { clearTimeout(timer); search(); } });

  var all = S.reduce(function (t, s) { t.m += s.msgs; t.t += s.tok; t.c += s.cost; if (!s.k.length) t.b++; return t; }, { m: 0, t: 0, c: 0, b: 0 });
  var title = D.session.name || "Session " + D.session.id;
  document.title = title;
  document.getElementById("title").textContent = title;
  document.getElementById("meta").textContent = [D.session.cwd, D.session.timestamp, N.length + " entries", all.b + (all.b === 1 ? " branch" : " branches"), all.m + " messages", tokens(all.t) + " tokens", cost(all.c)].filter(Boolean).join(" · ");
  var tree = document.getElementById("tree"), frag = document.createDocumentFragment();
  D.roots.forEach(function (r) { frag.append(segment(r)); });
  tree.textContent = "";
  tree.append(frag);
  var ms = performance.now();
  document.documentElement.dataset.renderMs = ms.toFixed(1);
  if (performance.mark) performance.mark("arbor-rendered");
})();
