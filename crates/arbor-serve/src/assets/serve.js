// What `arbor serve` adds to a session's page: the way back to the list,
// live updates (the entries appended to the session arrive as server-sent
// events and are added in place through window.arbor.append; a session
// replaced whole draws the page anew) and, when the server allows writes,
// editing labels and the session's name (a POST of JSON; the new entry
// comes back through the events like any other process's).
(function () {
  "use strict";
  var A = window.arbor, $ = function (id) { return document.getElementById(id); };
  var C = JSON.parse($("arbor-served").textContent);
  var base = "/s/" + encodeURIComponent(C.dir) + "/" + encodeURIComponent(C.file);
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  var bar = el("div"), live = el("span", "live", "connecting…"), note = el("span");
  bar.id = "serve-bar"; note.id = "serve-note";
  var back = el("a", null, "← all sessions");
  back.href = "/";
  bar.append(back, live, note);
  $("head").insertBefore(bar, $("head").firstChild);
  function say(text) { note.textContent = text || ""; }

  // ---- live ----
  // A browser keeps six connections to a server: a page in a hidden tab
  // lets its stream go and catches up (from the last event's id) when shown.
  var events = null, have = C.have;
  function connect() {
    events = new EventSource(base + "/events?have=" + have);
    events.addEventListener("open", function () { live.textContent = "● live"; live.className = "live on"; });
    events.addEventListener("error", function () { live.textContent = "○ reconnecting…"; live.className = "live off"; });
    events.addEventListener("entries", function (e) {
      if (e.lastEventId) have = +e.lastEventId;
      if (!A.append(JSON.parse(e.data))) location.reload();
    });
    events.addEventListener("replaced", function () { location.reload(); });
    events.addEventListener("gone", function () { say("This session is no longer there."); });
    events.addEventListener("failed", function (e) { say("Following the session failed: " + e.data); });
  }
  document.addEventListener("visibilitychange", function () {
    if (document.hidden && events) { events.close(); events = null; live.textContent = "○ paused"; live.className = "live off"; }
    else if (!document.hidden && !events) connect();
  });
  if (document.hidden) { live.textContent = "○ paused"; live.className = "live off"; } else connect();

  if (!C.writes) return;

  // ---- writes ----
  function post(what, body) {
    return fetch(base + "/" + what, {
      method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    }).then(function (r) {
      return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || String(r.status)); return j; });
    });
  }
  function editLabel(card, id, button) {
    var head = card.querySelector("header"), old = head.querySelector(".label"), input = el("input", "label-input");
    input.value = old ? old.textContent : "";
    input.placeholder = "label (empty: clear)";
    input.setAttribute("aria-label", "Label of " + id);
    button.replaceWith(input);
    input.focus();
    var done = false;
    function finish(save) {
      if (done) return;
      done = true;
      input.replaceWith(button);
      if (!save) return;
      say("");
      post("label", { entry: id, label: input.value.trim() || null }).catch(function (e) { say("Label not written: " + e.message); });
    }
    input.addEventListener("keydown", function (e) {
      if (e.key === "Enter") finish(true);
      else if (e.key === "Escape") finish(false);
      e.stopPropagation();
    });
    input.addEventListener("blur", function () { finish(false); });
  }
  A.decorate(function (card, id) {
    var head = card.querySelector("header");
    if (!head || head.querySelector(".edit-label")) return;
    var b = el("button", "edit-label", "label");
    b.type = "button";
    b.title = "Set or clear this entry's label";
    b.addEventListener("click", function (e) { e.stopPropagation(); editLabel(card, id, b); });
    head.insertBefore(b, head.querySelector("time"));
  });
  var rename = el("button", null, "Rename");
  rename.type = "button";
  rename.id = "rename";
  rename.title = "Name this session";
  rename.addEventListener("click", function () {
    var name = prompt("Session name", document.title);
    if (name == null || !name.trim()) return;
    post("name", { name: name.trim() }).catch(function (e) { say("Name not written: " + e.message); });
  });
  document.querySelector("#head .tools").append(rename);
})();
