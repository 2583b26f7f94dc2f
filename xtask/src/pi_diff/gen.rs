//! Random session files for the differential test: trees with every entry
//! type and the damage and oddities pi's reader takes in its stride.
//!
//! A file is built as JSON values (serialized by serde_json), in which
//! placeholder strings stand for what serde_json cannot write: `@@U:d800@@`
//! becomes the escape `\ud800` inside a string, `"@@N:1e400@@"` a raw number,
//! `"@@D:300@@"` a value nested 300 levels deep, `@@B:ff@@` a raw byte.
//! Everything is drawn from one seeded generator per file, so a file is
//! reproduced from `(seed, index)` alone.

use serde_json::{json, Map, Value};

/// `gen-session`'s splitmix64 on its own stream, with the draws the
/// differential test needs (the stream of a seed is what it always was, so a
/// printed `--seed` still reproduces a run).
#[derive(Debug, Clone)]
pub struct Rng(crate::gen::Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(crate::gen::Rng::from_state(seed ^ 0x9E37_79B9_7F4A_7C15))
    }

    pub fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// One of `words`.
    pub fn word(&mut self, words: &[&'static str]) -> &'static str {
        words[self.below(words.len())]
    }
}

/// One generated file: its bytes and what the runs may ask about.
#[derive(Debug, Clone)]
pub struct Generated {
    pub bytes: Vec<u8>,
    /// 1, 2 or 3.
    pub version: u8,
    /// The ids the entries were written with (v2 and v3), as JSON text.
    pub ids: Vec<String>,
    /// The ids of user messages, as JSON text.
    pub user_ids: Vec<String>,
    /// Entries in file order (v1: positions are what a run may name).
    pub entries: usize,
    /// The oddities drawn for this file (for the report).
    pub features: Vec<&'static str>,
}

/// What a file may contain; each is drawn once per file.
#[derive(Debug, Default)]
struct Features {
    surrogates: bool,
    pua: bool,
    big_numbers: bool,
    deep: bool,
    bad_parents: bool,
    odd_labels: bool,
    degenerate: bool,
    bad_timestamps: bool,
    duplicates: bool,
    cycles: bool,
    orphans: bool,
    odd_ids: bool,
    invalid_utf8: bool,
    crlf: bool,
    mid_bom: bool,
    junk_lines: bool,
    non_objects: bool,
    idless: bool,
    torn: bool,
    odd_versions: bool,
}

impl Features {
    fn draw(rng: &mut Rng, names: &mut Vec<&'static str>) -> Features {
        let mut on = |p: f64, name: &'static str| {
            let yes = rng.chance(p);
            if yes {
                names.push(name);
            }
            yes
        };
        Features {
            surrogates: on(0.2, "lone-surrogates"),
            pua: on(0.05, "pua-b"),
            big_numbers: on(0.12, "big-numbers"),
            deep: on(0.06, "deep"),
            bad_parents: on(0.08, "non-string-parent"),
            odd_labels: on(0.25, "non-string-labels"),
            degenerate: on(0.2, "degenerate-entries"),
            bad_timestamps: on(0.06, "bad-timestamps"),
            duplicates: on(0.05, "duplicate-ids"),
            cycles: on(0.03, "cycles"),
            orphans: on(0.1, "orphans"),
            odd_ids: on(0.1, "odd-ids"),
            invalid_utf8: on(0.04, "invalid-utf8"),
            crlf: on(0.06, "crlf"),
            mid_bom: on(0.03, "bom-mid-file"),
            junk_lines: on(0.1, "junk-lines"),
            non_objects: on(0.03, "non-object-lines"),
            idless: on(0.03, "entries-without-id"),
            torn: on(0.08, "torn-tail"),
            odd_versions: on(0.1, "odd-header-versions"),
        }
    }
}

const WORDS: &[&str] = &[
    "the",
    "tree",
    "branch",
    "leaf",
    "fix",
    "bug",
    "café",
    "naïve",
    "中文",
    "😀",
    "résumé",
    "line\nbreak",
    "tab\there",
    "quote\"d",
    "back\\slash",
    "ctl\u{1}",
    "e\u{301}",
    "zero\u{0}byte",
    "   ",
    "",
];

/// A generated file's state while its entries are drawn.
struct Builder<'r> {
    rng: &'r mut Rng,
    f: Features,
    version: u8,
    /// Entry ids written so far (JSON text of the id value, ready to embed).
    ids: Vec<Value>,
    user_ids: Vec<Value>,
    /// The id of the entry new ones attach to by default.
    current: Option<usize>,
    lines: Vec<Vec<u8>>,
    /// Milliseconds since the session start.
    clock: i64,
    counter: u64,
}

/// 2026-01-01T00:00:00Z.
const T0_MS: i64 = 1_767_225_600_000;

/// Generates file number `index` of the run seeded `seed`.
pub fn generate(seed: u64, index: u64) -> Generated {
    let mut rng = Rng::new(seed.wrapping_mul(0x1000_0000_01B3) ^ index.wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut features = vec![];
    let f = Features::draw(&mut rng, &mut features);
    let version = match rng.below(20) {
        0..=1 => 1,
        2..=3 => 2,
        _ => 3,
    };
    let n = match rng.below(10) {
        0 => rng.below(3),
        1..=7 => 2 + rng.below(30),
        _ => 30 + rng.below(90),
    };
    let mut b = Builder {
        rng: &mut rng,
        f,
        version,
        ids: vec![],
        user_ids: vec![],
        current: None,
        lines: vec![],
        clock: 0,
        counter: 0,
    };
    b.header();
    for _ in 0..n {
        b.entry();
    }
    let entries = b.ids.len();
    let text = |v: &Value| {
        String::from_utf8_lossy(&expand(serde_json::to_string(v).unwrap_or_default().as_bytes())).into_owned()
    };
    let ids = b.ids.iter().map(text).collect();
    let user_ids = b.user_ids.iter().map(text).collect();
    let bytes = b.finish();
    Generated { bytes, version, ids, user_ids, entries, features }
}

impl Builder<'_> {
    fn header(&mut self) {
        let id = format!("{:08x}-0000-4000-8000-{:012x}", self.rng.next() as u32, self.rng.next() >> 16);
        let mut h = Map::new();
        h.insert("type".into(), "session".into());
        if self.f.odd_versions {
            if let Some(v) = self.odd_version() {
                h.insert("version".into(), v);
            }
        } else if self.version > 1 {
            h.insert("version".into(), self.version.into());
        }
        h.insert("id".into(), id.into());
        h.insert("timestamp".into(), iso(T0_MS).into());
        h.insert("cwd".into(), "/work/proj".into());
        if self.version == 1 && self.rng.chance(0.5) {
            h.insert("provider".into(), "anthropic".into());
            h.insert("modelId".into(), "claude-sonnet-4-5".into());
        }
        self.push(Value::Object(h));
    }

    /// The header's `version` written another way that pi reads as the
    /// same version (`Number(x)` compared with 2 and 3); `None`: absent.
    fn odd_version(&mut self) -> Option<Value> {
        let forms = match self.version {
            1 => vec![
                json!(null),
                json!(0),
                json!(1),
                json!(1.5),
                json!(-7),
                json!("1"),
                json!(""),
                json!(" "),
                json!("0b1"),
                json!("-Infinity"),
                json!(false),
                json!(true),
                json!([]),
                json!([null]),
                json!("@@N:-1e400@@"),
            ],
            2 => vec![
                json!(2),
                json!(2.5),
                json!("2"),
                json!(" 2 "),
                json!("2.5"),
                json!("0x2"),
                json!([2]),
                json!(["2.9"]),
            ],
            _ => vec![
                json!(3),
                json!(3.5),
                json!(7),
                json!("3"),
                json!("0x3"),
                json!("3e0"),
                json!("Infinity"),
                json!("abc"),
                json!("NaN"),
                json!("1_0"),
                json!([3]),
                json!([true]),
                json!([1, 2]),
                json!({}),
                json!("@@N:1e400@@"),
            ],
        };
        let pick = self.rng.below(forms.len() + usize::from(self.version == 1));
        forms.get(pick).cloned()
    }

    fn push(&mut self, v: Value) {
        self.lines.push(serde_json::to_string(&v).unwrap_or_default().into_bytes());
    }

    /// A fresh entry id (as a JSON value).
    fn fresh_id(&mut self) -> Value {
        self.counter += 1;
        if self.f.odd_ids && self.rng.chance(0.3) {
            let forms = ["user-{}", "{}", "id é {}", "x@@U:d800@@{}", "{}😀", "@@U:DC01@@{}"];
            let form = *self.rng.pick(&forms);
            if form.contains("@@") && !self.f.surrogates {
                return Value::String(format!("n{}", self.counter));
            }
            return Value::String(form.replace("{}", &self.counter.to_string()));
        }
        Value::String(format!("{:08x}", (self.rng.next() as u32) ^ self.counter as u32))
    }

    /// Text of a few words, with the file's string oddities.
    fn text(&mut self) -> String {
        let mut s = String::new();
        for _ in 0..1 + self.rng.below(5) {
            if !s.is_empty() {
                s.push(' ');
            }
            let word = self.rng.word(WORDS);
            s.push_str(word);
        }
        if self.f.surrogates && self.rng.chance(0.3) {
            let odd = [
                "@@U:d800@@",
                "@@U:DC00@@",
                "x@@U:d83d@@",
                "@@U:d83d@@@@U:d83d@@",
                "@@U:de00@@@@U:d83d@@",
                "@@U:d83d@@@@U:de00@@",
                "@@U:DBFF@@@@U:DFFF@@",
                "@@U:dbfe@@@@U:dc00@@",
            ];
            let odd = self.rng.word(&odd);
            s.push_str(odd);
        }
        if self.f.pua && self.rng.chance(0.3) {
            let pua = self.rng.word(&["\u{10F800}", "\u{10FFFD}", "\u{10FC00}x", "\u{10FFFF}"]);
            s.push_str(pua);
        }
        if self.f.invalid_utf8 && self.rng.chance(0.2) {
            s.push_str("@@B:ff@@");
        }
        s
    }

    /// A number, sometimes one outside the f64 range.
    fn number(&mut self, normal: i64) -> Value {
        if self.f.big_numbers && self.rng.chance(0.3) {
            let n = [
                "1e400",
                "-1e400",
                "1e309",
                "1.7976931348623159e308",
                "1e-400",
                "-0",
                "123456789012345678901234567890",
            ];
            return Value::String(format!("@@N:{}@@", self.rng.pick(&n)));
        }
        normal.into()
    }

    /// Any JSON value, maybe deep.
    fn data(&mut self) -> Value {
        if self.f.deep && self.rng.chance(0.4) {
            return Value::String(format!("@@D:{}@@", 100 + self.rng.below(2000)));
        }
        match self.rng.below(6) {
            0 => Value::Null,
            1 => json!({ "k": self.text(), "n": self.number(3), "list": [1, 2.5, true] }),
            2 => json!([self.text(), { "nested": { "deeper": [self.number(7)] } }]),
            3 => self.number(42),
            4 => Value::String(self.text()),
            _ => json!({}),
        }
    }

    fn timestamp(&mut self) -> Value {
        if self.f.bad_timestamps && self.rng.chance(0.2) {
            return self.rng.pick(&[json!("not a date"), json!(""), json!("2026-13-45T99:00:00Z")]).clone();
        }
        // Ties are common: many entries share a millisecond.
        if !self.rng.chance(0.3) {
            self.clock += 1 + self.rng.below(5000) as i64;
        }
        Value::String(iso(T0_MS + self.clock))
    }

    /// The parent of a new entry: mostly the current one, sometimes elsewhere.
    fn parent(&mut self) -> Value {
        let r = self.rng.below(100);
        if self.f.bad_parents && r < 6 {
            return self.rng.pick(&[json!(0), json!(true), json!([]), json!({}), json!(1.5), json!(false)]).clone();
        }
        if self.f.orphans && r < 12 {
            return json!(format!("missing{}", self.rng.below(5)));
        }
        if self.ids.is_empty() || r < 15 {
            return Value::Null;
        }
        let k = if r < 35 { self.rng.below(self.ids.len()) } else { self.current.unwrap_or(self.ids.len() - 1) };
        self.ids[k].clone()
    }

    fn entry(&mut self) {
        if self.version == 1 {
            return self.v1_entry();
        }
        if self.f.junk_lines && self.rng.chance(0.08) {
            let junk: &[&[u8]] = &[b"", b"   ", b"{not json", b"\t", b"{\"type\":\"message\",", b"}"];
            let j = *self.rng.pick(junk);
            self.lines.push(j.to_vec());
        }
        if self.f.non_objects && self.rng.chance(0.08) {
            let j = *self.rng.pick(&["42", "[1,2]", "\"text\"", "true"]);
            self.lines.push(j.as_bytes().to_vec());
        }
        let mut id = self.fresh_id();
        if self.f.duplicates && !self.ids.is_empty() && self.rng.chance(0.1) {
            id = self.ids[self.rng.below(self.ids.len())].clone();
        }
        let parent = self.parent();
        let ts = self.timestamp();
        let (kind, mut body) = self.body();
        let mut e = Map::new();
        e.insert("type".into(), kind.into());
        if self.f.idless && self.rng.chance(0.08) {
            e.insert("id".into(), self.rng.pick(&[json!(7), Value::Null]).clone());
        } else {
            e.insert("id".into(), id.clone());
        }
        e.insert("parentId".into(), parent);
        e.insert("timestamp".into(), ts);
        e.append(&mut body);
        let is_entry = e.get("id").is_some_and(Value::is_string);
        if is_entry && kind == "message" && e.get("message").and_then(|m| m.get("role")) == Some(&json!("user")) {
            self.user_ids.push(id.clone());
        }
        self.push(Value::Object(e));
        if is_entry {
            self.ids.push(id);
            // Mostly continue from the new entry; a label or a side entry sometimes does not move on.
            if kind != "label" || self.rng.chance(0.5) {
                self.current = Some(self.ids.len() - 1);
            }
        }
        if self.f.cycles && self.ids.len() > 3 && self.rng.chance(0.05) {
            self.cycle();
        }
    }

    /// Two entries naming each other as parent (written after both ids exist).
    fn cycle(&mut self) {
        let a = self.fresh_id();
        let b = self.fresh_id();
        let ts = self.timestamp();
        let msg = json!({"role": "user", "content": self.text(), "timestamp": 1});
        self.push(json!({"type": "message", "id": a, "parentId": b, "timestamp": ts, "message": msg}));
        self.push(json!({"type": "message", "id": b, "parentId": a, "timestamp": ts, "message": msg}));
        self.ids.push(a);
        self.ids.push(b);
    }

    /// An entry's type and the fields after the base ones.
    fn body(&mut self) -> (&'static str, Map<String, Value>) {
        let r = self.rng.below(100);
        match r {
            0..=54 => ("message", obj(json!({ "message": self.message() }))),
            55..=59 => self.thinking(),
            60..=64 => self.model_change(),
            65..=69 => self.compaction(),
            70..=74 => self.branch_summary(),
            75..=78 => ("custom", obj(json!({"customType": "ext", "data": self.data()}))),
            79..=84 => self.custom_message(),
            85..=93 => self.label(),
            94..=96 => ("session_info", obj(json!({"name": self.text()}))),
            _ => ("future_type", obj(json!({"payload": self.data()}))),
        }
    }

    fn thinking(&mut self) -> (&'static str, Map<String, Value>) {
        if self.f.degenerate && self.rng.chance(0.4) {
            let b = self.rng.pick(&[json!({}), json!({"thinkingLevel": null}), json!({"thinkingLevel": 3})]).clone();
            return ("thinking_level_change", obj(b));
        }
        let level = *self.rng.pick(&["off", "low", "medium", "high", "xhigh"]);
        ("thinking_level_change", obj(json!({ "thinkingLevel": level })))
    }

    fn model_change(&mut self) -> (&'static str, Map<String, Value>) {
        if self.f.degenerate && self.rng.chance(0.4) {
            let b = self
                .rng
                .pick(&[
                    json!({}),
                    json!({"provider": "openai"}),
                    json!({"modelId": "gpt"}),
                    json!({"provider": null, "modelId": 5}),
                ])
                .clone();
            return ("model_change", obj(b));
        }
        let model = self.text();
        ("model_change", obj(json!({"provider": "anthropic", "modelId": model})))
    }

    fn compaction(&mut self) -> (&'static str, Map<String, Value>) {
        let first = match self.rng.below(4) {
            // On the path (an ancestor of the current entry), elsewhere, missing, absent.
            0 | 1 if !self.ids.is_empty() => {
                let k = self.current.unwrap_or(0).min(self.ids.len() - 1);
                Some(self.ids[self.rng.below(k + 1)].clone())
            }
            2 => Some(json!("nowhere")),
            _ => None,
        };
        let mut b = obj(json!({"summary": self.text(), "tokensBefore": self.number(1234)}));
        if let Some(first) = first {
            b.insert("firstKeptEntryId".into(), first);
        }
        if self.rng.chance(0.3) {
            b.insert("details".into(), json!({"readFiles": ["a.rs"], "modifiedFiles": []}));
            b.insert("fromHook".into(), json!(false));
        }
        ("compaction", b)
    }

    fn branch_summary(&mut self) -> (&'static str, Map<String, Value>) {
        let summary = if self.rng.chance(0.2) { String::new() } else { self.text() };
        let from = match self.current {
            Some(k) if self.rng.chance(0.8) => self.ids[k].clone(),
            _ => json!("root"),
        };
        ("branch_summary", obj(json!({"fromId": from, "summary": summary})))
    }

    fn custom_message(&mut self) -> (&'static str, Map<String, Value>) {
        let mut b = Map::new();
        b.insert("customType".into(), "ext-note".into());
        let degenerate = self.f.degenerate && self.rng.chance(0.5);
        if !degenerate || self.rng.chance(0.3) {
            let content =
                if self.rng.chance(0.5) { json!(self.text()) } else { json!([{"type": "text", "text": self.text()}]) };
            b.insert("content".into(), content);
        }
        if !degenerate || self.rng.chance(0.5) {
            b.insert("display".into(), self.rng.chance(0.5).into());
        }
        if self.rng.chance(0.3) {
            b.insert("details".into(), self.data());
        }
        ("custom_message", b)
    }

    fn label(&mut self) -> (&'static str, Map<String, Value>) {
        let target = if self.ids.is_empty() || self.rng.chance(0.05) {
            json!("nowhere")
        } else {
            self.ids[self.rng.below(self.ids.len())].clone()
        };
        let mut b = obj(json!({ "targetId": target }));
        let label = match self.rng.below(10) {
            0 => None,
            1 => Some(json!("")),
            2..=3 if self.f.odd_labels => Some(
                self.rng
                    .pick(&[json!(42), json!(true), json!({}), json!([]), json!(0), json!(null), json!(false)])
                    .clone(),
            ),
            _ => Some(json!(self.text())),
        };
        if let Some(l) = label {
            b.insert("label".into(), l);
        }
        ("label", b)
    }

    /// An agent message of any role.
    fn message(&mut self) -> Value {
        let ts = self.number(1_767_225_600_000 + self.clock);
        match self.rng.below(20) {
            0..=6 => {
                let content = if self.rng.chance(0.5) {
                    json!(self.text())
                } else {
                    json!([{"type": "text", "text": self.text()}, {"type": "image", "data": "aGk=", "mimeType": "image/png"}])
                };
                json!({"role": "user", "content": content, "timestamp": ts})
            }
            7..=12 => self.assistant(ts),
            13..=14 => json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
                "content": [{"type": "text", "text": self.text()}], "details": self.data(), "isError": false, "timestamp": ts}),
            15 => {
                let mut m = json!({"role": "bashExecution", "command": self.text(), "output": self.text(),
                    "exitCode": self.number(1), "cancelled": false, "truncated": self.rng.chance(0.3),
                    "fullOutputPath": "/tmp/out.txt", "timestamp": ts});
                if self.rng.chance(0.3) {
                    m["excludeFromContext"] = true.into();
                }
                m
            }
            16 => json!({"role": if self.version == 2 { "hookMessage" } else { "custom" }, "customType": "ext",
                "content": self.text(), "display": true, "timestamp": ts}),
            17 => json!({"role": "somethingNew", "content": self.text(), "timestamp": ts}),
            18 => json!({"role": "branchSummary", "summary": self.text(), "fromId": "x", "timestamp": ts}),
            _ => json!({"role": "compactionSummary", "summary": self.text(), "tokensBefore": 5, "timestamp": ts}),
        }
    }

    fn assistant(&mut self, ts: Value) -> Value {
        let args = if self.f.deep && self.rng.chance(0.3) { self.data() } else { json!({"path": "src/main.rs"}) };
        json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": self.text()},
                {"type": "text", "text": self.text()},
                {"type": "toolCall", "id": "call_1", "name": "read", "arguments": args}],
            "api": "anthropic-messages", "provider": "anthropic", "model": self.text(),
            "usage": {"input": self.number(10), "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003}},
            "stopReason": "toolUse", "timestamp": ts})
    }

    /// A v1 entry: no id or parentId; compactions name a kept entry by index.
    fn v1_entry(&mut self) {
        let ts = self.timestamp();
        let (kind, mut body) = match self.rng.below(10) {
            0 => self.thinking(),
            1 => self.model_change(),
            2 => {
                let index = self
                    .rng
                    .pick(&[json!(0), json!(1), json!(2), json!(5), json!(-1), json!(2.5), json!("1"), json!(999)])
                    .clone();
                ("compaction", obj(json!({"summary": self.text(), "firstKeptEntryIndex": index, "tokensBefore": 100})))
            }
            _ => ("message", obj(json!({ "message": self.message() }))),
        };
        let mut e = Map::new();
        e.insert("type".into(), kind.into());
        e.insert("timestamp".into(), ts);
        e.append(&mut body);
        self.push(Value::Object(e));
        self.ids.push(Value::Null);
    }

    /// The lines joined, with the placeholders written out and the file-level oddities.
    fn finish(self) -> Vec<u8> {
        let Builder { rng, f, lines, .. } = self;
        let mut out = Vec::new();
        let n = lines.len();
        for (i, line) in lines.into_iter().enumerate() {
            // A mark at the start of the file (pi's trim() drops it too), or in the middle.
            if (i == 0 && rng.chance(0.03)) || (f.mid_bom && i > 0 && rng.chance(0.2)) {
                out.extend_from_slice("\u{feff}".as_bytes());
            }
            out.extend(expand(&line));
            let last = i + 1 == n;
            if last && f.torn && rng.chance(0.5) {
                // A line cut short by a crash, or a complete last line without its newline.
                if rng.chance(0.5) {
                    out.push(b'\n');
                    out.extend_from_slice(b"{\"type\":\"message\",\"id\":\"torn\",\"par");
                }
                return out;
            }
            if f.crlf && rng.chance(0.7) {
                out.push(b'\r');
            }
            out.push(b'\n');
        }
        out
    }
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Writes out the placeholders of a serialized line (see the module docs).
fn expand(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        let quoted = line[i] == b'"' && line[i + 1..].starts_with(b"@@");
        let start = if quoted { i + 1 } else { i };
        if line[start..].starts_with(b"@@") {
            if let Some(len) = line[start + 2..].windows(2).position(|w| w == b"@@") {
                let token = String::from_utf8_lossy(&line[start + 2..start + 2 + len]).into_owned();
                let end = start + 2 + len + 2;
                let closes = quoted && line.get(end) == Some(&b'"');
                match token.split_once(':') {
                    Some(("U", hex)) => {
                        if quoted {
                            out.push(b'"');
                        }
                        out.extend_from_slice(format!("\\u{hex}").as_bytes());
                        i = end;
                        continue;
                    }
                    Some(("B", hex)) => {
                        if quoted {
                            out.push(b'"');
                        }
                        out.push(u8::from_str_radix(hex, 16).unwrap_or(0xff));
                        i = end;
                        continue;
                    }
                    Some(("N", num)) if closes => {
                        out.extend_from_slice(num.as_bytes());
                        i = end + 1;
                        continue;
                    }
                    Some(("D", depth)) if closes => {
                        let depth: usize = depth.parse().unwrap_or(1);
                        for k in 0..depth {
                            out.extend_from_slice(if k % 2 == 0 { b"[" } else { b"{\"a\":" });
                        }
                        out.extend_from_slice(b"\"bottom\"");
                        for k in (0..depth).rev() {
                            out.extend_from_slice(if k % 2 == 0 { b"]" } else { b"}" });
                        }
                        i = end + 1;
                        continue;
                    }
                    _ => {}
                }
            }
        }
        out.push(line[i]);
        i += 1;
    }
    out
}

/// Epoch milliseconds as JavaScript's `toISOString()`.
pub fn iso(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_expand() {
        let line = br#"{"a":"x@@U:d800@@y","n":"@@N:1e400@@","d":"@@D:3@@","b":"@@B:ff@@"}"#;
        assert_eq!(
            expand(line),
            b"{\"a\":\"x\\ud800y\",\"n\":1e400,\"d\":[{\"a\":[\"bottom\"]}],\"b\":\"\xff\"}".to_vec()
        );
    }

    #[test]
    fn iso_is_javascripts() {
        assert_eq!(iso(T0_MS), "2026-01-01T00:00:00.000Z");
        assert_eq!(iso(T0_MS + 86_400_000 * 59 + 1), "2026-03-01T00:00:00.001Z");
    }

    #[test]
    fn the_same_seed_gives_the_same_file() {
        for i in 0..50 {
            assert_eq!(generate(7, i).bytes, generate(7, i).bytes);
        }
    }
}
