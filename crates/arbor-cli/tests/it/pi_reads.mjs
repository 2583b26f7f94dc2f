// How pi reads a session: its SessionManager on a copy of FILE (pi rewrites
// files it migrates), the context it builds and the messages it converts for
// the model, as JSON on stdout.
//
// usage: node pi_reads.mjs PACKAGE_ENTRY FILE
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [entry, file] = process.argv.slice(2);
const { SessionManager, convertToLlm } = await import(pathToFileURL(entry).href);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-reads-"));
const copy = path.join(dir, path.basename(file));
fs.copyFileSync(file, copy);
const context = SessionManager.open(copy, dir).buildSessionContext();
process.stdout.write(JSON.stringify({ context, llm: convertToLlm(context.messages) }));
fs.rmSync(dir, { recursive: true, force: true });
