// For each session file given after the output path: pi's SessionManager
// opens a copy, and buildSessionContext gives the context at the file's
// leaf and at every entry. Written as JSON to the output path:
// {FILE: {"leafId", "header", "entries": N, "contexts": {"(leaf)": ctx, ID: ctx, …}}}.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SessionManager, buildSessionContext } from "@mariozechner/pi-coding-agent";

const [out, ...files] = process.argv.slice(2);
const work = fs.mkdtempSync(path.join(os.tmpdir(), "arbor-pi-"));
const result = {};
for (const file of files) {
  const copy = path.join(work, path.basename(file));
  fs.copyFileSync(file, copy);
  const sm = SessionManager.open(copy, work);
  const entries = sm.getEntries();
  const contexts = { "(leaf)": buildSessionContext(entries, sm.getLeafId()) };
  for (const e of entries) contexts[e.id] = buildSessionContext(entries, e.id);
  result[file] = { leafId: sm.getLeafId(), header: sm.getHeader(), entries: entries.length, contexts };
}
fs.writeFileSync(out, JSON.stringify(result));
fs.rmSync(work, { recursive: true, force: true });
