//! Model-based tests: random sequences of operations run against a real,
//! file-backed [`Session`] and against a deliberately naive model written
//! straight from docs/architecture.md and docs/format.md (a `Vec` of entries, quadratic walks). After
//! every step the two must agree on the path to the leaf, the tree (ids and
//! children order), the resolved labels, the leaf, the entries, and — once
//! the session is on disk — on what the file holds.
//!
//! `PROPTEST_CASES` sets the number of cases (default 64).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arbor_log::{format_iso_ms, parse_iso_ms, Clock, CounterIds, EntryKind, FixedClock, SessionLog};
use arbor_tree::{Session, SessionOptions, Step, Tree, TreeError, TreeNode, LEAF_MARKER_TYPE};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;

use crate::{assistant, user};
use arbor_tree::OpenMode;

const START_MS: i64 = 1_767_225_600_000;

// ---- clocks ----

/// A clock that steps through a list of deltas, cyclically: with negative and
/// zero deltas, timestamps go backwards and repeat.
#[derive(Debug)]
struct StepClock {
    state: Mutex<(i64, usize)>,
    deltas: Vec<i64>,
}

impl Clock for StepClock {
    fn now_ms(&self) -> i64 {
        let mut st = self.state.lock().unwrap();
        let now = st.0;
        st.0 += self.deltas[st.1 % self.deltas.len()];
        st.1 += 1;
        now
    }
}

/// Wraps a clock and remembers every reading, so the model knows what "now" was.
#[derive(Debug, Clone)]
struct RecordingClock {
    inner: Arc<dyn Clock>,
    readings: Arc<Mutex<Vec<i64>>>,
}

impl Clock for RecordingClock {
    fn now_ms(&self) -> i64 {
        let t = self.inner.now_ms();
        self.readings.lock().unwrap().push(t);
        t
    }
}

#[derive(Debug, Clone)]
enum ClockPlan {
    /// `FixedClock` stepping 1 ms: timestamps strictly increase.
    Forward,
    /// Deltas in -2..=2 (at least one of them not positive): backwards and repeated timestamps.
    Wobbly(Vec<i64>),
}

fn clock_plan() -> impl Strategy<Value = ClockPlan> {
    prop_oneof![
        2 => Just(ClockPlan::Forward),
        1 => prop::collection::vec(-2i64..=2, 1..6).prop_map(|mut d| {
            if d.iter().all(|&x| x > 0) {
                d.push(0);
            }
            ClockPlan::Wobbly(d)
        }),
    ]
}

// ---- operations ----

#[derive(Debug, Clone)]
enum Op {
    User,
    Assistant,
    ThinkingLevel(u8),
    ModelChange(u8),
    Custom(u8),
    CustomMessage(bool),
    /// `None` clears with a missing label, `Some("")` clears with an empty one.
    Label(Index, Option<&'static str>),
    Branch(Index),
    ResetLeaf,
    BranchWithSummary(Option<Index>),
    CreateBranched(Index),
    PersistLeaf,
    Reopen,
    /// An operation on an id that does not exist: must fail and change nothing.
    Unknown(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::User),
        6 => Just(Op::Assistant),
        1 => (0u8..4).prop_map(Op::ThinkingLevel),
        1 => (0u8..3).prop_map(Op::ModelChange),
        1 => (0u8..3).prop_map(Op::Custom),
        1 => any::<bool>().prop_map(Op::CustomMessage),
        5 => (any::<Index>(), prop::option::of(prop::sample::select(vec!["a", "b", "keep", ""])))
            .prop_map(|(i, l)| Op::Label(i, l)),
        4 => any::<Index>().prop_map(Op::Branch),
        1 => Just(Op::ResetLeaf),
        2 => prop::option::of(any::<Index>()).prop_map(Op::BranchWithSummary),
        2 => any::<Index>().prop_map(Op::CreateBranched),
        2 => Just(Op::PersistLeaf),
        3 => Just(Op::Reopen),
        1 => (0u8..4).prop_map(Op::Unknown),
    ]
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::User => "user",
        Op::Assistant => "assistant",
        Op::ThinkingLevel(_) => "thinking_level",
        Op::ModelChange(_) => "model_change",
        Op::Custom(_) => "custom",
        Op::CustomMessage(_) => "custom_message",
        Op::Label(..) => "label",
        Op::Branch(_) => "branch",
        Op::ResetLeaf => "reset_leaf",
        Op::BranchWithSummary(_) => "branch_with_summary",
        Op::CreateBranched(_) => "create_branched_session",
        Op::PersistLeaf => "persist_leaf",
        Op::Reopen => "reopen",
        Op::Unknown(_) => "unknown_id",
    }
}

// ---- the naive model ----

/// What the model knows of an entry; also how a real entry is compared.
#[derive(Debug, Clone, PartialEq, Eq)]
struct View {
    id: String,
    parent: Option<String>,
    ty: String,
    ts: Option<i64>,
    target: Option<String>,
    label: Option<String>,
    assistant: bool,
}

impl View {
    fn of(e: &arbor_log::Entry) -> View {
        let (target, label) = match &e.kind {
            EntryKind::Label(l) => {
                (Some(l.target_id.clone()), l.label.as_ref().and_then(|v| v.as_str()).map(str::to_owned))
            }
            _ => (None, None),
        };
        View {
            id: e.id.clone(),
            parent: e.parent_id.clone(),
            ty: e.entry_type().to_string(),
            ts: parse_iso_ms(&e.timestamp),
            target,
            label,
            assistant: e.message_role() == Some(arbor_log::Role::Assistant),
        }
    }
}

/// Spec section 3, written the slow and obvious way.
#[derive(Debug, Default)]
struct Model {
    /// Every entry in file order.
    entries: Vec<View>,
    leaf: Option<String>,
    leaf_moved: bool,
    /// The session file exists (an assistant message arrived, or it was loaded).
    on_disk: bool,
    /// The last entry id handed out by the counter.
    counter: u64,
}

impl Model {
    fn find(&self, id: &str) -> Option<&View> {
        self.entries.iter().rev().find(|e| e.id == id)
    }

    fn ids(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.id.clone()).collect()
    }

    fn next_id(&mut self) -> String {
        self.counter += 1;
        format!("{:08x}", self.counter)
    }

    /// 3.3: a new entry under the leaf becomes the leaf.
    fn append(&mut self, ty: &str, ts: i64, assistant: bool, target: Option<String>, label: Option<String>) -> String {
        let id = self.next_id();
        self.entries.push(View {
            id: id.clone(),
            parent: self.leaf.clone(),
            ty: ty.to_owned(),
            ts: Some(ts),
            target,
            label,
            assistant,
        });
        self.leaf = Some(id.clone());
        self.leaf_moved = false;
        // 1.11: the file appears with the first assistant message.
        self.on_disk |= assistant;
        id
    }

    /// 3.5: root first; stops at a missing parent (and at a repeat, to be safe).
    fn branch(&self, from: Option<&str>) -> Vec<String> {
        let mut out: Vec<String> = vec![];
        let mut cur = from.map(str::to_owned).or_else(|| self.leaf.clone()).and_then(|id| self.find(&id));
        while let Some(e) = cur {
            if out.contains(&e.id) {
                break;
            }
            out.push(e.id.clone());
            cur = e.parent.as_deref().and_then(|p| self.find(p));
        }
        out.reverse();
        out
    }

    /// 3.7: last write wins in file order; a clear removes the key, so a later set goes to the end.
    /// Each label keeps the time of the label entry that set it.
    fn labels(&self) -> Vec<(String, String, Option<i64>)> {
        let mut map: Vec<(String, String, Option<i64>)> = vec![];
        for e in self.entries.iter().filter(|e| e.ty == "label") {
            let target = e.target.clone().unwrap_or_default();
            let pos = map.iter().position(|(t, _, _)| *t == target);
            match (e.label.as_deref().filter(|l| !l.is_empty()), pos) {
                (Some(l), Some(p)) => map[p] = (target, l.to_owned(), e.ts),
                (Some(l), None) => map.push((target, l.to_owned(), e.ts)),
                (None, Some(p)) => {
                    map.remove(p);
                }
                (None, None) => {}
            }
        }
        map
    }

    fn label_of(&self, id: &str) -> Option<String> {
        self.labels().into_iter().find(|(t, _, _)| t == id).map(|(_, l, _)| l)
    }

    /// 3.4: children in file order, not sorted.
    fn children(&self, id: &str) -> Vec<String> {
        self.entries.iter().filter(|e| e.parent.as_deref() == Some(id) && e.id != id).map(|e| e.id.clone()).collect()
    }

    /// 3.6: roots in file order (null parent, self-parent, missing parent); children
    /// sorted by timestamp, stable.
    fn tree(&self) -> String {
        let mut out = String::new();
        let roots: Vec<&View> = self
            .entries
            .iter()
            .filter(|e| match &e.parent {
                None => true,
                Some(p) => p == &e.id || self.find(p).is_none(),
            })
            .collect();
        for (n, r) in roots.iter().enumerate() {
            if n > 0 {
                out.push(' ');
            }
            self.render(r, &mut out);
        }
        out
    }

    fn render(&self, e: &View, out: &mut String) {
        out.push_str(&e.id);
        if let Some(l) = self.label_of(&e.id) {
            out.push_str(&format!("[{l}]"));
        }
        let mut kids: Vec<&View> =
            self.entries.iter().filter(|c| c.parent.as_deref() == Some(e.id.as_str()) && c.id != e.id).collect();
        kids.sort_by_key(|c| c.ts);
        if !kids.is_empty() {
            out.push('(');
            for (n, k) in kids.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                self.render(k, out);
            }
            out.push(')');
        }
    }
}

fn render_real(s: &Session) -> String {
    fn node(t: &Tree<'_>, n: &TreeNode<'_>, out: &mut String) {
        out.push_str(&n.entry.id);
        if let Some(l) = n.label {
            out.push_str(&format!("[{l}]"));
        }
        let kids: Vec<TreeNode<'_>> = t.children(n).map(Result::unwrap).collect();
        if !kids.is_empty() {
            out.push('(');
            for (i, k) in kids.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                node(t, k, out);
            }
            out.push(')');
        }
    }
    let t = s.get_tree();
    let mut out = String::new();
    for (i, r) in t.roots().map(Result::unwrap).enumerate() {
        if i > 0 {
            out.push(' ');
        }
        node(&t, &r, &mut out);
    }
    out
}

/// The same rendering from the tree's depth-first walk ([`Tree::walk`]).
fn render_walked(s: &Session) -> String {
    let t = s.get_tree();
    let mut out = String::new();
    // Per node entered and not left: whether its children's list is open.
    let mut open: Vec<bool> = vec![];
    for step in t.walk() {
        match step {
            Step::Enter { position, first } => {
                match open.last_mut() {
                    Some(listed) => {
                        out.push(if first { '(' } else { ',' });
                        *listed = true;
                    }
                    None if !first => out.push(' '),
                    None => {}
                }
                let n = t.node(position).unwrap();
                out.push_str(&n.entry.id);
                if let Some(l) = n.label {
                    out.push_str(&format!("[{l}]"));
                }
                open.push(false);
            }
            Step::Leave(Some(_)) => {
                if open.pop() == Some(true) {
                    out.push(')');
                }
            }
            Step::Leave(None) => assert!(open.is_empty(), "the roots are left last"),
        }
    }
    out
}

fn ids_of(entries: &[&arbor_log::Entry]) -> Vec<String> {
    entries.iter().map(|e| e.id.clone()).collect()
}

// ---- the harness ----

struct Case {
    dir: tempfile::TempDir,
    opts: SessionOptions,
    readings: Arc<Mutex<Vec<i64>>>,
    s: Option<Session>,
    file: PathBuf,
    m: Model,
}

/// Statistics over all cases, for the summary line.
#[derive(Debug, Default)]
struct Stats {
    cases: usize,
    wobbly_cases: usize,
    steps: usize,
    max_entries: usize,
    reopen_lost_unmaterialized: usize,
    reopen_from_disk: usize,
    ops: BTreeMap<&'static str, usize>,
}

impl Case {
    fn new(plan: &ClockPlan) -> Case {
        let inner: Arc<dyn Clock> = match plan {
            ClockPlan::Forward => Arc::new(FixedClock::new(START_MS, 1)),
            ClockPlan::Wobbly(deltas) => {
                Arc::new(StepClock { state: Mutex::new((START_MS, 0)), deltas: deltas.clone() })
            }
        };
        let readings = Arc::new(Mutex::new(vec![]));
        let dir = tempfile::tempdir().unwrap();
        let opts = SessionOptions { session_dir: Some(dir.path().to_owned()), ..SessionOptions::default() }
            .with_ids(CounterIds::new())
            .with_clock(RecordingClock { inner, readings: readings.clone() });
        let s = Session::create("/proj", opts.clone()).unwrap();
        let file = s.session_file().unwrap().to_owned();
        Case { dir, opts, readings, s: Some(s), file, m: Model::default() }
    }

    fn s(&mut self) -> &mut Session {
        self.s.as_mut().unwrap()
    }

    fn last_reading(&self) -> i64 {
        *self.readings.lock().unwrap().last().unwrap()
    }

    fn pick(&self, i: &Index) -> Option<String> {
        (!self.m.entries.is_empty()).then(|| self.m.entries[i.index(self.m.entries.len())].id.clone())
    }

    /// Checks a returned id against the model's append and the entry's timestamp against the clock.
    fn appended(
        &mut self,
        got: Result<String, TreeError>,
        ty: &str,
        target: Option<String>,
        label: Option<String>,
    ) -> Result<(), TestCaseError> {
        let got = got.map_err(|e| TestCaseError::fail(format!("{ty}: {e}")))?;
        let ts = self.last_reading();
        let assistant = ty == "assistant";
        let ty = if assistant || ty == "user" { "message" } else { ty };
        let want = self.m.append(ty, ts, assistant, target, label);
        prop_assert_eq!(&got, &want, "the counter's next id");
        let e = self.s().get_entry(&got).unwrap().unwrap();
        prop_assert_eq!(&e.timestamp, &format_iso_ms(ts), "an append is stamped with the clock's now");
        Ok(())
    }

    fn apply(&mut self, op: &Op, step: usize, stats: &mut Stats) -> Result<(), TestCaseError> {
        match op {
            Op::User => {
                let r = self.s().append_message(user(&format!("u{step}")));
                self.appended(r, "user", None, None)?;
            }
            Op::Assistant => {
                let r = self.s().append_message(assistant(&format!("a{step}")));
                self.appended(r, "assistant", None, None)?;
            }
            Op::ThinkingLevel(n) => {
                let r = self.s().append_thinking_level_change(["off", "low", "medium", "high"][*n as usize % 4]);
                self.appended(r, "thinking_level_change", None, None)?;
            }
            Op::ModelChange(n) => {
                let r = self.s().append_model_change("anthropic", &format!("model-{n}"));
                self.appended(r, "model_change", None, None)?;
            }
            Op::Custom(n) => {
                let r = self.s().append_custom_entry(&format!("ext.{n}"), Some(json!({"step": step})));
                self.appended(r, "custom", None, None)?;
            }
            Op::CustomMessage(display) => {
                let r = self.s().append_custom_message_entry("ext.msg", json!(format!("m{step}")), *display, None);
                self.appended(r, "custom_message", None, None)?;
            }
            Op::Label(i, label) => {
                let Some(target) = self.pick(i) else {
                    return self.unknown(0);
                };
                let r = self.s().append_label_change(&target, *label);
                let stored = label.filter(|l| !l.is_empty()).map(str::to_owned);
                self.appended(r, "label", Some(target), stored)?;
            }
            Op::Branch(i) => {
                let Some(to) = self.pick(i) else {
                    return self.unknown(1);
                };
                self.s().branch(&to).map_err(|e| TestCaseError::fail(e.to_string()))?;
                self.m.leaf = Some(to);
                self.m.leaf_moved = true;
            }
            Op::ResetLeaf => {
                self.s().reset_leaf();
                self.m.leaf = None;
                self.m.leaf_moved = true;
            }
            Op::BranchWithSummary(i) => {
                let from = match i {
                    Some(i) => match self.pick(i) {
                        Some(id) => Some(id),
                        None => return self.unknown(2),
                    },
                    None => None,
                };
                let r = self.s().branch_with_summary(from.as_deref(), &format!("summary {step}"), None, Some(false));
                self.m.leaf = from.clone();
                self.appended(r, "branch_summary", None, None)?;
                let e = self.s().leaf_entry().unwrap().unwrap();
                let EntryKind::BranchSummary(b) = &e.kind else { panic!("{e:?}") };
                prop_assert_eq!(b.from_id.as_str(), from.as_deref().unwrap_or("root"));
            }
            Op::CreateBranched(i) => {
                let Some(leaf) = self.pick(i) else {
                    return self.unknown(3);
                };
                self.create_branched(&leaf)?;
            }
            Op::PersistLeaf => {
                let r = self.s().persist_leaf().map_err(|e| TestCaseError::fail(e.to_string()))?;
                if self.m.leaf_moved {
                    let leaf = self.m.leaf.clone();
                    let Some(id) = r else {
                        return Err(TestCaseError::fail("persist_leaf after a move wrote nothing"));
                    };
                    self.appended(Ok(id.clone()), "custom", None, None)?;
                    let e = self.s().get_entry(&id).unwrap().unwrap();
                    let EntryKind::Custom(c) = &e.kind else { panic!("{e:?}") };
                    prop_assert_eq!(c.custom_type.as_str(), LEAF_MARKER_TYPE);
                    prop_assert_eq!(c.data.clone(), Some(json!({ "leafId": leaf })));
                } else {
                    prop_assert_eq!(r, None, "persist_leaf without a move");
                }
            }
            Op::Reopen => {
                let old_id = self.s().session_id().to_owned();
                drop(self.s.take());
                let s = Session::open(&self.file, OpenMode::WriteOrCreate, self.opts.clone())
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert!(s.diagnostics().is_empty(), "diagnostics on reopen: {:?}", s.diagnostics());
                prop_assert_eq!(s.session_file(), Some(self.file.as_path()));
                if self.m.on_disk {
                    prop_assert_eq!(s.session_id(), old_id.as_str(), "the header is read back");
                }
                self.s = Some(s);
                if self.m.on_disk {
                    stats.reopen_from_disk += 1;
                    // 3.2: the leaf after a load is the last entry of the file.
                    self.m.leaf = self.m.entries.last().map(|e| e.id.clone());
                } else {
                    // 1.11: nothing reached the disk before the first assistant message.
                    stats.reopen_lost_unmaterialized += 1;
                    self.m.entries.clear();
                    self.m.leaf = None;
                }
                self.m.leaf_moved = false;
            }
            Op::Unknown(n) => self.unknown(*n)?,
        }
        Ok(())
    }

    /// 3.12: every operation on an id that is not there fails with `Entry <id> not found`
    /// and changes nothing.
    fn unknown(&mut self, which: u8) -> Result<(), TestCaseError> {
        let before = (self.s().len(), self.s().leaf_id().map(str::to_owned), self.s().leaf_moved());
        let s = self.s();
        let err = match which % 4 {
            0 => s.append_label_change("nope", Some("x")).err(),
            1 => s.branch("nope").err(),
            2 => s.branch_with_summary(Some("nope"), "s", None, None).err(),
            _ => s.create_branched_session("nope").err(),
        };
        prop_assert_eq!(err.map(|e| e.to_string()), Some("Entry nope not found".to_owned()));
        let after = (self.s().len(), self.s().leaf_id().map(str::to_owned), self.s().leaf_moved());
        prop_assert_eq!(before, after);
        Ok(())
    }

    /// 3.9 in the model: the path without labels, each kept entry whose parent
    /// was a label re-linked to the kept entry before it (the fork keeps the
    /// whole history), then the resolved labels of the kept entries re-created
    /// in label-map order, chained after the last kept entry.
    fn create_branched(&mut self, leaf: &str) -> Result<(), TestCaseError> {
        let old_file = self.file.clone();
        let path: Vec<View> = self.m.branch(Some(leaf)).iter().filter_map(|id| self.m.find(id).cloned()).collect();
        let mut kept: Vec<View> = vec![];
        for (k, e) in path.iter().enumerate() {
            if e.ty == "label" {
                continue;
            }
            let mut e = e.clone();
            if k > 0 && path[k - 1].ty == "label" {
                e.parent = kept.last().map(|p| p.id.clone());
            }
            kept.push(e);
        }
        let to_write: Vec<(String, String, Option<i64>)> =
            self.m.labels().into_iter().filter(|(t, _, _)| kept.iter().any(|k| &k.id == t)).collect();
        let new_path = self
            .s()
            .create_branched_session(leaf)
            .map_err(|e| TestCaseError::fail(e.to_string()))?
            .ok_or_else(|| TestCaseError::fail("a persistent session returns the new path"))?;
        prop_assert!(new_path != old_file);
        prop_assert_eq!(self.s().session_file(), Some(new_path.as_path()));
        let old_name = old_file.to_string_lossy().into_owned();
        prop_assert_eq!(
            self.s().header().parent_session.as_deref(),
            Some(old_name.as_str()),
            "the header names the old file"
        );
        let mut entries = kept;
        let mut parent = entries.last().map(|e| e.id.clone());
        for (target, label, ts) in to_write {
            let id = self.m.next_id();
            // A re-created label keeps the time it was set (pi 0.73.1).
            entries.push(View {
                id: id.clone(),
                parent: parent.clone(),
                ty: "label".into(),
                ts,
                target: Some(target),
                label: Some(label),
                assistant: false,
            });
            parent = Some(id);
        }
        self.m.on_disk = entries.iter().any(|e| e.assistant);
        self.m.leaf = entries.last().map(|e| e.id.clone());
        self.m.entries = entries;
        self.m.leaf_moved = false;
        self.file = new_path;
        Ok(())
    }

    /// Everything the brief asks to agree after every step.
    fn check(&mut self, after: &str) -> Result<(), TestCaseError> {
        let m = &self.m;
        let s = self.s.as_ref().unwrap();
        let real: Vec<View> = s.entries().map(Result::unwrap).map(View::of).collect();
        prop_assert_eq!(&real, &m.entries, "entries after {}", after);
        prop_assert_eq!(s.len(), m.entries.len());
        prop_assert_eq!(s.leaf_id(), m.leaf.as_deref(), "leaf after {}", after);
        prop_assert_eq!(s.leaf_moved(), m.leaf_moved, "leaf_moved after {}", after);
        prop_assert_eq!(ids_of(&s.get_branch(None).unwrap()), m.branch(None), "get_branch(None) after {}", after);
        for id in m.ids() {
            prop_assert_eq!(
                ids_of(&s.get_branch(Some(&id)).unwrap()),
                m.branch(Some(&id)),
                "get_branch({}) after {}",
                id,
                after
            );
            prop_assert_eq!(
                ids_of(&s.get_children(&id).unwrap()),
                m.children(&id),
                "get_children({}) after {}",
                id,
                after
            );
            prop_assert_eq!(s.get_label(&id).unwrap().map(str::to_owned), m.label_of(&id));
        }
        prop_assert_eq!(render_real(s), m.tree(), "tree after {}", after);
        prop_assert_eq!(render_walked(s), m.tree(), "walk after {}", after);
        let labels: Vec<(String, String, Option<i64>)> = s
            .labels()
            .unwrap()
            .map(|(t, l)| {
                let ts = s
                    .label(t)
                    .unwrap()
                    .and_then(|l| l.timestamp.as_ref())
                    .and_then(|v| v.as_str())
                    .and_then(parse_iso_ms);
                (t.to_owned(), l.to_owned(), ts)
            })
            .collect();
        prop_assert_eq!(labels, m.labels(), "labels after {}", after);
        prop_assert_eq!(s.is_materialized(), m.on_disk, "materialized after {}", after);
        prop_assert_eq!(self.file.exists(), m.on_disk, "file exists after {}", after);
        if m.on_disk {
            let (file_entries, diags) = read_file(&self.file);
            prop_assert!(diags.is_empty(), "file diagnostics after {}: {:?}", after, diags);
            prop_assert_eq!(&file_entries, &m.entries, "file after {}", after);
        }
        Ok(())
    }
}

/// The entries of a session file, read from scratch, and every diagnostic.
fn read_file(path: &Path) -> (Vec<View>, Vec<String>) {
    let log = SessionLog::read_path(path).unwrap();
    let (entries, diags) = log.entries_with_diagnostics();
    let mut all: Vec<String> = log.diagnostics().iter().chain(&diags).map(|d| d.to_string()).collect();
    if !log.has_header() {
        all.push("no header".into());
    }
    (entries.iter().map(|(_, e)| View::of(e)).collect(), all)
}

fn run_case(plan: &ClockPlan, ops: &[Op], stats: &mut Stats) -> Result<(), TestCaseError> {
    let mut c = Case::new(plan);
    stats.cases += 1;
    stats.wobbly_cases += usize::from(matches!(plan, ClockPlan::Wobbly(_)));
    c.check("create")?;
    for (step, op) in ops.iter().enumerate() {
        c.apply(op, step, stats)?;
        stats.steps += 1;
        *stats.ops.entry(op_name(op)).or_default() += 1;
        stats.max_entries = stats.max_entries.max(c.m.entries.len());
        c.check(&format!("step {step} {op:?}"))?;
    }
    // One last reopen: the file alone gives back the same state.
    c.apply(&Op::Reopen, ops.len(), stats)?;
    c.check("the final reopen")?;
    drop(c.s.take());
    drop(c.dir);
    Ok(())
}

#[test]
fn session_agrees_with_the_naive_model() {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let stats = RefCell::new(Stats::default());
    let strategy = (clock_plan(), prop::collection::vec(op(), 0..=40));
    let result = runner.run(&strategy, |(plan, ops)| run_case(&plan, &ops, &mut stats.borrow_mut()));
    let st = stats.borrow();
    eprintln!(
        "model: {} cases run ({} with backwards/repeating clocks, shrinking included), {} steps, \
         at most {} entries; reopens from disk {}, reopens before materialization {}; ops {:?}",
        st.cases, st.wobbly_cases, st.steps, st.max_entries, st.reopen_from_disk, st.reopen_lost_unmaterialized, st.ops
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}
