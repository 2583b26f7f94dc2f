// The reference side of `cargo xtask pi-diff`: asks pi's own SessionManager,
// buildSessionContext, convertToLlm and createBranchedSession what Arbor was
// asked, on copies of the same bytes, and compares the answers as parsed JSON.
//
// usage: node pi_diff.mjs JOB.json SUMMARY.json
//
// Where Arbor departs from pi on purpose (docs/format.md, "Arbor's decisions
// where pi is buggy or silent"), an answer that differs from pi's is checked
// against pi's answer with the decision applied; when they agree the
// difference is counted under the decision's name, not as a disagreement.
// The decisions, by the names the summary uses:
//
//   bom-mid-file         a line starting with a byte-order mark is read (pi drops it)
//   non-object-lines     a line holding JSON that is not an object is skipped (pi keeps it as an entry)
//   entries-without-id   a record without a string type or id is not an entry (pi keeps it)
//   headerless           a file without a session header is refused (pi opens it as a new session)
//   duplicate-ids        of two entries with one id the earlier leaves the tree (pi shows the later twice)
//   parent-cycles        walks stop at a repeated id and the earliest entry of a cycle is a root (pi loops)
//   fork-keeps-history   a fork re-links its entries across the label entries it leaves out
//                        (pi 0.73.1 keeps them pointing at the missing labels)
//   numbers-beyond-f64   a number beyond the f64 range reads as null (pi reads ±Infinity, which only
//                        shows where pi tests the number itself: a bash exit code, a truth test)
//
// And one difference of the command line, not of reading: `arbor path FILE ID` refuses an id the
// file does not have, where pi's getBranch answers [].

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SessionManager, buildSessionContext, convertToLlm } from "@mariozechner/pi-coding-agent";

const [jobPath, summaryPath] = process.argv.slice(2);
const job = JSON.parse(fs.readFileSync(jobPath, "utf8"));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pi-diff-"));
let serial = 0;

const ID_KEYS = new Set(["id", "parentId", "targetId", "firstKeptEntryId", "fromId", "leafId"]);

/** JSON as JSON.stringify writes it, parsed again: what a JSON answer means. */
function plain(v) {
  const text = JSON.stringify(v);
  return text === undefined ? undefined : JSON.parse(text);
}

/** The first difference between two parsed JSON values, or null. */
function difference(a, b, where = "$") {
  if (Object.is(a, b) || a === b) return null;
  const kind = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
  if (kind(a) !== kind(b)) return `${where}: ${show(a)} vs ${show(b)}`;
  if (kind(a) === "array") {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const d = difference(a[i], b[i], `${where}[${i}]`);
      if (d) return d;
    }
    return a.length === b.length ? null : `${where}: ${a.length} items vs ${b.length}`;
  }
  if (kind(a) === "object") {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      if (!(k in a)) return `${where}.${k}: absent vs ${show(b[k])}`;
      if (!(k in b)) return `${where}.${k}: ${show(a[k])} vs absent`;
      const d = difference(a[k], b[k], `${where}.${k}`);
      if (d) return d;
    }
    return null;
  }
  return `${where}: ${show(a)} vs ${show(b)}`;
}

function show(v) {
  const text = JSON.stringify(v) ?? "undefined";
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}

/** Replaces ids through `map` wherever a key names an id. */
function remap(v, map) {
  if (!map || map.size === 0) return v;
  if (Array.isArray(v)) return v.map((x) => remap(x, map));
  if (v && typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      out[k] = ID_KEYS.has(k) && typeof x === "string" && map.has(x) ? map.get(x) : remap(x, map);
    }
    return out;
  }
  return v;
}

// ---- the input as each side reads it ----

/** The file's text with the decisions that change what is read applied (Arbor's reading). */
function arborsReading(text) {
  const found = new Set();
  const lines = text.split("\n");
  let header = null;
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    // pi's content.trim() drops a mark at the start of the file, as Arbor does.
    let line = i === 0 ? lines[i].replace(/^\uFEFF/, "") : lines[i];
    if (i > 0 && /^\uFEFF|\uFEFF\r?$/.test(line)) {
      found.add("bom-mid-file");
      line = line.replace(/^[\s\uFEFF]+|[\s\uFEFF]+$/g, "");
    }
    let value;
    try {
      value = JSON.parse(line);
    } catch {
      out.push(line);
      continue;
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      found.add("non-object-lines");
      continue;
    }
    if (holdsInfinity(value)) {
      found.add("numbers-beyond-f64");
      // A header's infinite version is compared as pi compares it (Arbor does
      // too), so it stays as written: null would make a current file a v1 one.
      const version = header === null && !Number.isFinite(value.version) ? value.version : undefined;
      if (typeof version === "number") value.version = "@@version@@";
      line = JSON.stringify(value);
      if (typeof version === "number") line = line.replace('"@@version@@"', version > 0 ? "1e400" : "-1e400");
    }
    if (header === null) {
      header = value;
    } else if (
      value.type !== "session" &&
      // Outside a file pi migrates as version 1 (whose migration gives every record an id);
      // a version that reads as NaN is not one, so `!(v < 2)` and not `v >= 2`.
      (typeof value.type !== "string" || (!((header.version ?? 1) < 2) && typeof value.id !== "string"))
    ) {
      found.add("entries-without-id");
      continue;
    }
    out.push(line);
  }
  return { text: out.join("\n"), found };
}

/** True when pi finds a session header: its first parsed line is `type: "session"` with a string id. */
function hasHeader(text) {
  for (const line of text.trim().split("\n")) {
    if (!line.trim()) continue;
    let v;
    try {
      v = JSON.parse(line);
    } catch {
      continue;
    }
    return v?.type === "session" && typeof v.id === "string";
  }
  return false;
}

/** True when a parsed value holds ±Infinity (a number beyond the f64 range in the text). */
function holdsInfinity(v) {
  const stack = [v];
  while (stack.length) {
    const x = stack.pop();
    if (typeof x === "number" && !Number.isFinite(x)) return true;
    if (x && typeof x === "object") stack.push(...Object.values(x));
  }
  return false;
}

function copyOf(text) {
  const dir = path.join(tmp, `s${serial++}`);
  fs.mkdirSync(dir);
  const file = path.join(dir, "session.jsonl");
  fs.writeFileSync(file, text, "latin1");
  return { dir, file };
}

/** Opens pi's SessionManager on a copy of `bytes`. */
function open(bytes) {
  const { dir, file } = copyOf(bytes);
  return SessionManager.open(file, dir);
}

/** A walk from `start` up the parents, as pi walks, that reports a loop instead of looping. */
function walk(sm, start) {
  const seen = new Set();
  const path = [];
  let current = start ? sm.byId.get(start) : undefined;
  while (current) {
    if (seen.has(current.id)) return { path: path.reverse(), looped: true };
    seen.add(current.id);
    path.push(current);
    current = current.parentId ? sm.byId.get(current.parentId) : undefined;
  }
  return { path: path.reverse(), looped: false };
}

function repeatsIds(sm) {
  const entries = sm.getEntries();
  return new Set(entries.map((e) => e.id)).size !== entries.length;
}

/** An id map for buildSessionContext whose walk stops at a repeated id. */
function stoppingAtRepeats(byId) {
  const seen = new Set();
  return {
    get(id) {
      if (seen.has(id)) return undefined;
      seen.add(id);
      return byId.get(id);
    },
  };
}

// ---- pi's answers ----

/** Runs `f`, turning a throw into {error}. */
function attempt(f) {
  try {
    return { value: plain(f()) };
  } catch (e) {
    return { error: String(e?.message ?? e) };
  }
}

/** pi's answers on one reading of the file; `arbor` applies the structural decisions. */
function piAnswers(bytes, arbor) {
  const sm = open(bytes);
  const found = new Set();
  const leafOf = (id) => (id === null ? sm.getLeafId() : id);
  const looped = (id) => {
    const start = leafOf(id);
    return start != null && walk(sm, start).looped;
  };
  const answers = {
    sm,
    found,
    dump: () => attempt(() => ({ header: sm.getHeader(), entries: sm.getEntries(), leafId: sm.getLeafId() })),
    // With a repeated id pi's getTree can reach a node from itself and fill memory until it fails.
    tree: () => (arbor ? attempt(() => arborsTree(sm, found)) : repeatsIds(sm) ? { hang: true } : attempt(() => sm.getTree())),
    path: (id) => {
      if (looped(id)) {
        if (!arbor) return { hang: true };
        found.add("parent-cycles");
        return attempt(() => walk(sm, leafOf(id)).path);
      }
      return attempt(() => sm.getBranch(id ?? undefined));
    },
    context: (id, llm) => {
      if (looped(id) && !arbor) return { hang: true };
      return attempt(() => {
        if (id !== null) sm.branch(id);
        if (looped(null)) found.add("parent-cycles");
        const ctx = buildSessionContext(sm.getEntries(), sm.getLeafId(), looped(null) ? stoppingAtRepeats(sm.byId) : sm.byId);
        return llm ? convertToLlm(ctx.messages) : ctx;
      });
    },
    fork: (id) => {
      if (looped(id) && !arbor) return { hang: true };
      // A copy of the file as pi left it (migrated files keep the ids this reading gave them).
      const { dir, file } = copyOf(fs.readFileSync(sm.getSessionFile(), "latin1"));
      const fresh = SessionManager.open(file, dir);
      return attempt(() => {
        if (walk(fresh, id).looped) {
          found.add("parent-cycles");
          fresh.getBranch = (from) => walk(fresh, from).path;
        }
        const labelled = new Set(walk(fresh, id).path.filter((e) => e.type === "label").map((e) => e.id));
        fresh.createBranchedSession(id);
        const [header, ...entries] = fresh.fileEntries;
        if (arbor) relink(entries, labelled, found);
        return { header, entries };
      });
    },
  };
  return answers;
}

/** getTree as Arbor decides: the earlier of duplicate ids left out, each cycle rooted at its earliest entry. */
function arborsTree(sm, found) {
  const entries = sm.getEntries();
  const last = new Map();
  entries.forEach((e, i) => last.set(e.id, i));
  const live = entries.filter((e, i) => last.get(e.id) === i);
  if (live.length !== entries.length) found.add("duplicate-ids");
  // The earliest entry (file order) of every parent cycle becomes a root.
  const position = new Map(live.map((e, i) => [e.id, i]));
  const state = new Map();
  const roots = new Set();
  for (const start of live) {
    const walkIds = [];
    let cur = start;
    while (cur && !state.has(cur.id)) {
      state.set(cur.id, 1);
      walkIds.push(cur.id);
      const p = cur.parentId;
      cur = typeof p === "string" && p !== cur.id ? sm.byId.get(p) : undefined;
      if (cur && state.get(cur.id) === 1) {
        const members = walkIds.slice(walkIds.indexOf(cur.id));
        roots.add(members.reduce((a, b) => (position.get(a) < position.get(b) ? a : b)));
        break;
      }
    }
    for (const id of walkIds) state.set(id, 2);
  }
  const original = new Map();
  const view = live.map((e) => {
    if (!roots.has(e.id)) return e;
    found.add("parent-cycles");
    const copy = { ...e, parentId: null };
    original.set(copy, e);
    return copy;
  });
  const self = Object.create(sm);
  self.getEntries = () => view;
  const tree = SessionManager.prototype.getTree.call(self);
  const stack = [...tree];
  while (stack.length) {
    const node = stack.pop();
    node.entry = original.get(node.entry) ?? node.entry;
    stack.push(...node.children);
  }
  return tree;
}

/** Re-links a fork's kept entries across the label entries it left out (every label entry of a fork is a new one). */
function relink(entries, labelled, found) {
  let previous = null;
  for (const e of entries) {
    if (e.type === "label") continue;
    if (labelled.has(e.parentId)) {
      e.parentId = previous;
      found.add("fork-keeps-history");
    }
    previous = e.id;
  }
}

// ---- comparing ----

/** Arbor's answer to a run, parsed (`{error}` when it refused). */
function arborAnswer(run) {
  if (run.code !== 0) return { error: run.err.trim().split("\n").pop() };
  try {
    if (run.cmd === "fork") {
      const file = JSON.parse(run.out).path;
      const lines = fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim());
      const [header, ...entries] = lines.map((l) => JSON.parse(l));
      return { value: { header, entries } };
    }
    return { value: JSON.parse(run.out) };
  } catch (e) {
    return { error: `unreadable answer: ${e.message}` };
  }
}

/** pi's answer to a run. */
function piAnswer(pi, run, id) {
  switch (run.cmd) {
    case "dump":
      return pi.dump();
    case "tree":
      return pi.tree();
    case "path":
      return pi.path(id);
    case "context":
      return pi.context(id, false);
    case "llm":
      return pi.context(id, true);
    default:
      return pi.fork(id);
  }
}

/** Makes the two sides comparable: pi's migration ids and a fork's new ids mapped to Arbor's, headers of forks masked. */
function align(cmd, a, p, ids) {
  let pv = remap(p.value, ids);
  let av = a.value;
  if (cmd === "fork" && pv && av) {
    const mask = (h) => ({ ...h, id: "<id>", timestamp: "<time>", parentSession: "<file>" });
    pv = { ...pv, header: mask(pv.header) };
    av = { ...av, header: mask(av.header) };
    // Label entries made by the fork have fresh ids on each side: map them by position.
    const fresh = new Map();
    (pv.entries ?? []).forEach((e, i) => {
      const other = av.entries?.[i];
      if (e?.type === "label" && other?.type === "label" && !ids.known.has(e.id)) fresh.set(e.id, other.id);
    });
    pv = remap(pv, fresh);
  }
  return { av, pv };
}

function same(a, p, ids, cmd) {
  // `arbor path` refuses an id the file does not have; pi's getBranch answers [].
  if (cmd === "path" && /Entry .* not found/.test(a.error ?? "") && Array.isArray(p.value) && !p.value.length) return true;
  if (a.error !== undefined || p.error !== undefined) return a.error !== undefined && p.error !== undefined;
  const { av, pv } = align(cmd, a, p, ids);
  return difference(av, pv) === null;
}

function describe(a, p, ids, cmd) {
  if (a.error !== undefined || p.error !== undefined) return `arbor: ${a.error ?? "answered"}; pi: ${p.error ?? "answered"}`;
  const { av, pv } = align(cmd, a, p, ids);
  return `arbor vs pi at ${difference(av, pv)}`;
}

/** pi's migration ids → Arbor's, by position in the dump (v1 files get fresh ids on each side). */
function idMap(pi, arborDump) {
  const map = new Map();
  map.known = new Set();
  const piEntries = pi.sm.getEntries();
  for (const e of piEntries) map.known.add(e.id);
  const entries = arborDump?.value?.entries;
  if (!entries || entries.length !== piEntries.length) return map;
  piEntries.forEach((e, i) => {
    if (e.id !== entries[i].id) map.set(e.id, entries[i].id);
  });
  return map;
}

const summary = { comparisons: 0, agree: 0, documented: 0, byDecision: {}, piFailures: 0, disagreements: 0 };
const shown = [];

for (const file of job.files) {
  const bytes = fs.readFileSync(file.path, "latin1");
  const raw = piAnswers(bytes, false);
  const reading = arborsReading(Buffer.from(bytes, "latin1").toString("utf8"));
  const norm = piAnswers(Buffer.from(reading.text, "utf8").toString("latin1"), true);
  const dumpRun = file.runs.find((r) => r.cmd === "dump");
  const ids = file.version === 1 ? idMap(raw, dumpRun && arborAnswer(dumpRun)) : Object.assign(new Map(), { known: new Set(raw.sm.getEntries().map((e) => e.id)) });
  const normIds = file.version === 1 ? idMap(norm, dumpRun && arborAnswer(dumpRun)) : ids;
  const headerless = !hasHeader(Buffer.from(bytes, "latin1").toString("utf8"));
  for (const run of file.runs) {
    summary.comparisons++;
    const a = arborAnswer(run);
    // The entry asked about, as each side names it.
    const at = (sm) => {
      if (run.atId !== null) return JSON.parse(run.atId);
      if (run.atPos !== null) return sm.getEntries()[run.atPos]?.id ?? null;
      return null;
    };
    const p = piAnswer(raw, run, at(raw.sm));
    if (!p.hang && same(a, p, ids, run.cmd)) {
      summary.agree++;
      continue;
    }
    const n = piAnswer(norm, run, at(norm.sm));
    const names = new Set([...reading.found, ...norm.found]);
    if (headerless && a.error !== undefined) names.add("headerless");
    if (names.size && (headerless ? a.error !== undefined : same(a, n, normIds, run.cmd))) {
      summary.documented++;
      for (const name of names) summary.byDecision[name] = (summary.byDecision[name] ?? 0) + 1;
      continue;
    }
    if (p.error !== undefined && a.error === undefined && n.error !== undefined) {
      summary.piFailures++;
      continue;
    }
    summary.disagreements++;
    const why = p.hang ? describe(a, n, normIds, run.cmd) : describe(a, p, ids, run.cmd);
    const at_ = run.atId ?? (run.atPos !== null ? `#${run.atPos}` : "leaf");
    shown.push(`${file.name} [${file.features.join(",")}] ${run.cmd} @${at_}: ${why}`);
  }
}

fs.writeFileSync(path.join(path.dirname(jobPath), "disagreements.txt"), shown.map((l) => `${l.toWellFormed()}\n`).join(""));
for (const line of shown.slice(0, 40)) console.log(line.toWellFormed());
if (shown.length > 40) console.log(`… ${shown.length - 40} more`);
fs.writeFileSync(summaryPath, JSON.stringify(summary));
fs.rmSync(tmp, { recursive: true, force: true });
