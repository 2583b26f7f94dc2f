// The session list of `arbor serve`: the sessions from /api/sessions (newest
// first), narrowed by directory and by name or first prompt; search across
// sessions from /api/search (each hit opens its session's page at the
// entry); /api/events says when the listing changed, and the list is read again.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var all = [], known = null, shown = 200, PAGE = 200;
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function pageUrl(dir, file, entry) {
    return "/s/" + encodeURIComponent(dir) + "/" + encodeURIComponent(file) + (entry ? "#" + encodeURIComponent(entry) : "");
  }
  function when(iso) {
    var d = new Date(iso);
    if (isNaN(d)) return iso || "";
    var pad = function (x) { return String(x).padStart(2, "0"); };
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" + pad(d.getMinutes());
  }
  function status(text, bad) { var s = $("status"); s.textContent = text; s.classList.toggle("bad", !!bad); }
  function get(url) {
    return fetch(url, { credentials: "same-origin" }).then(function (r) {
      return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || r.status); return j; });
    });
  }

  // ---- the list ----
  function draw() {
    var cwd = $("cwd").value, words = $("filter").value.toLowerCase().split(/\s+/).filter(Boolean);
    var list = all.filter(function (s) {
      if (cwd && s.cwd !== cwd) return false;
      var text = ((s.name || "") + " " + s.first).toLowerCase();
      return words.every(function (w) { return text.indexOf(w) >= 0; });
    });
    var body = document.querySelector("#list tbody"), frag = document.createDocumentFragment();
    list.slice(0, shown).forEach(function (s) {
      var tr = el("tr"), key = s.dir + "/" + s.file;
      tr.dataset.key = key;
      if (known && !known.has(key)) tr.className = "new";
      tr.append(el("td", "when", when(s.modified)));
      var td = el("td", "s"), a = el("a");
      a.href = pageUrl(s.dir, s.file);
      if (s.name) a.append(el("span", "name", s.name), document.createTextNode(" — "));
      a.append(document.createTextNode(s.first));
      a.title = (s.name ? s.name + "\n" : "") + s.first;
      td.append(a);
      tr.append(td, el("td", "cwd", s.cwd), el("td", "n", String(s.messages)));
      tr.lastChild.previousSibling.title = s.cwd;
      frag.append(tr);
    });
    body.textContent = "";
    body.append(frag);
    $("more").hidden = list.length <= shown;
    status(list.length + (list.length === 1 ? " session" : " sessions") + (list.length < all.length ? " of " + all.length : ""));
  }
  function cwds() {
    var sel = $("cwd"), keep = sel.value, seen = new Set();
    all.forEach(function (s) { seen.add(s.cwd); });
    while (sel.options.length > 1) sel.remove(1);
    Array.from(seen).sort().forEach(function (c) { var o = el("option", null, c || "(none)"); o.value = c; sel.append(o); });
    sel.value = seen.has(keep) ? keep : "";
  }
  function load() {
    return get("/api/sessions").then(function (j) {
      var before = all.length ? new Set(all.map(function (s) { return s.dir + "/" + s.file; })) : null;
      all = j.sessions;
      known = before;
      $("where").textContent = j.location + (j.writes ? " · writes allowed" : " · read-only");
      cwds();
      draw();
    }).catch(function (e) { status("The sessions could not be listed: " + e.message, true); });
  }
  $("cwd").addEventListener("change", function () { shown = PAGE; draw(); });
  $("filter").addEventListener("input", function () { shown = PAGE; draw(); });
  $("more").addEventListener("click", function () { shown += PAGE; draw(); });

  // ---- search across sessions ----
  var input = $("search"), timer = 0, asked = 0;
  function snippet(text, marks) {
    // Marks count characters (code points), not UTF-16 units.
    var chars = Array.from(text), out = el("span", "snip"), at = 0;
    marks.forEach(function (m) {
      if (m[0] < at) return;
      out.append(document.createTextNode(chars.slice(at, m[0]).join("")), el("mark", null, chars.slice(m[0], m[1]).join("")));
      at = m[1];
    });
    out.append(document.createTextNode(chars.slice(at).join("")));
    return out;
  }
  function hitsOf(j) {
    var box = $("hits");
    box.textContent = "";
    if (!j.hits.length) { box.append(el("p", null, "No entry matches.")); return; }
    j.hits.forEach(function (h) {
      var a = el("a", "hit");
      a.href = pageUrl(h.dir, h.file, h.entryId);
      var meta = el("span", "meta");
      meta.append(el("span", null, h.sessionName || h.file), el("span", null, h.cwd), el("span", null, (h.role || h.type) + " " + h.entryId),
        el("span", h.onActivePath ? "on" : "off", h.onActivePath ? "on the active path" : "off the active path"), el("span", null, when(h.timestamp)));
      h.labels.forEach(function (l) { meta.append(el("span", "lab", l.label)); });
      a.append(meta, snippet(h.snippet, h.marks));
      box.append(a);
    });
  }
  function search() {
    var q = input.value.trim(), box = $("hits"), me = ++asked;
    if (!q) { box.hidden = true; draw(); return; }
    status("Searching…");
    var cwd = $("cwd").value;
    get("/api/search?q=" + encodeURIComponent(q) + (cwd ? "&cwd=" + encodeURIComponent(cwd) : "")).then(function (j) {
      if (me !== asked) return;
      box.hidden = false;
      hitsOf(j);
      status(j.hits.length + (j.hits.length === 1 ? " hit" : " hits") + " for " + q);
    }).catch(function (e) { if (me === asked) status(e.message, true); });
  }
  input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(search, 250); });
  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter") { clearTimeout(timer); search(); }
    else if (e.key === "Escape") { input.value = ""; search(); }
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "/" && document.activeElement.tagName !== "INPUT") { e.preventDefault(); input.focus(); }
  });
  $("theme").onclick = function () {
    var root = document.documentElement, dark = root.dataset.theme ? root.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    root.dataset.theme = dark ? "light" : "dark";
  };

  // ---- live: the list is read again when it changed ----
  // A hidden tab lets its stream go (a browser keeps six connections to a
  // server) and reads the list again when shown.
  var events = null;
  function listen() {
    events = new EventSource("/api/events");
    events.addEventListener("sessions", function () { load(); });
  }
  document.addEventListener("visibilitychange", function () {
    if (document.hidden && events) { events.close(); events = null; }
    else if (!document.hidden && !events) load().then(listen);
  });
  load().then(function () {
    if (!document.hidden) listen();
    document.documentElement.dataset.ready = "1";
  });
})();
