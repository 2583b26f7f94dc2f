//! Migrations v1 → v2 → v3 (docs/format.md, "Migrations"), one step per version, on JSON values.
//!
//! The input is every parsed record of a file in file order, header included
//! (pi's `fileEntries`). Each step is idempotent: it runs only when the version
//! read from the first header is below its target, and it says what it changed.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::header::CURRENT_VERSION;
use crate::ids::IdGenerator;
use crate::version::version_of;

/// What one migration step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationStep {
    /// The version migrated from.
    pub from: u64,
    /// The version migrated to.
    pub to: u64,
    /// Human-readable changes, one per kind of change.
    pub changes: Vec<String>,
}

/// What a migration run did: the steps, and which records it changed.
///
/// ```
/// use arbor_log::ids::CounterIds;
/// use arbor_log::SessionLog;
///
/// // A v1 file: no version, entries without ids.
/// let v1 = b"{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n";
/// let mut log = SessionLog::read(&v1[..])?;
/// let report = log.migrate(&mut CounterIds::default());
/// assert_eq!(report.from_version, Some(1));
/// assert!(report.migrated());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MigrationReport {
    /// The version of the input (`version ?? 1` of the first header), or `None` without a header.
    pub from_version: Option<u64>,
    /// The steps that ran, in order.
    pub steps: Vec<MigrationStep>,
    /// Indexes (into the input) of the records that were modified.
    pub changed: BTreeSet<usize>,
}

impl MigrationReport {
    /// True when any step ran.
    pub fn migrated(&self) -> bool {
        !self.steps.is_empty()
    }
}

/// Runs every step the records need. See the module docs.
pub fn migrate(records: &mut [Value], ids: &mut dyn IdGenerator) -> MigrationReport {
    let version = records.iter().find(|r| is_session(r)).map(|h| version_of(h.get("version")));
    migrate_from(records, version, ids)
}

/// [`migrate`] from `version` ([`crate::records::version_of`] of the first session
/// record, `None` without one), for a caller that read it from the line.
pub(crate) fn migrate_from(records: &mut [Value], version: Option<u64>, ids: &mut dyn IdGenerator) -> MigrationReport {
    let mut report = MigrationReport::default();
    let Some(version) = version else {
        return report;
    };
    report.from_version = Some(version);
    if version < 2 {
        report.steps.push(v1_to_v2(records, ids, &mut report.changed));
    }
    if version < CURRENT_VERSION {
        report.steps.push(v2_to_v3(records, &mut report.changed));
    }
    report
}

pub(crate) fn is_session(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("session")
}

/// v1 → v2: fresh ids, a linear `parentId` chain, and `firstKeptEntryIndex` turned
/// into `firstKeptEntryId` (the index counts records, header included).
pub fn v1_to_v2(records: &mut [Value], ids: &mut dyn IdGenerator, changed: &mut BTreeSet<usize>) -> MigrationStep {
    // pi passes a fresh, never-filled set to the generator here; we check the
    // new ids against each other (the counter used for the reference outputs
    // never collides, so the results are the same).
    let mut used: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut prev: Option<String> = None;
    let mut n_ids = 0usize;
    let mut anchored = 0usize;
    let mut unanchored = 0usize;
    for i in 0..records.len() {
        if is_session(&records[i]) {
            if let Some(h) = records[i].as_object_mut() {
                h.insert("version".into(), Value::from(2));
                changed.insert(i);
            }
            continue;
        }
        if !records[i].is_object() {
            continue;
        }
        let id = ids.entry_id(&|s| used.contains(s));
        used.insert(id.clone());
        if let Some(obj) = records[i].as_object_mut() {
            obj.insert("id".into(), Value::String(id.clone()));
            obj.insert("parentId".into(), prev.map_or(Value::Null, Value::String));
        }
        prev = Some(id);
        n_ids += 1;
        changed.insert(i);
        let is_compaction = records[i].get("type").and_then(Value::as_str) == Some("compaction");
        let index = records[i].get("firstKeptEntryIndex").and_then(|v| v.as_number().map(|n| n.as_f64()));
        let Some(index) = index.filter(|_| is_compaction) else { continue };
        // A target that comes later in the file has no new id yet: its old id
        // (normally none) is what the reference records.
        let target_id = index
            .filter(|f| *f >= 0.0 && f.fract() == 0.0)
            .and_then(|f| records.get(f as usize))
            .filter(|t| !is_session(t))
            .and_then(|t| t.get("id").cloned());
        if let Some(obj) = records[i].as_object_mut() {
            obj.shift_remove("firstKeptEntryIndex");
            match target_id {
                Some(tid) => {
                    obj.insert("firstKeptEntryId".into(), tid);
                    anchored += 1;
                }
                None => {
                    obj.shift_remove("firstKeptEntryId");
                    unanchored += 1;
                }
            }
        }
    }
    let mut changes = vec![format!("assigned {n_ids} new ids and a linear parent chain")];
    if anchored > 0 {
        changes.push(format!("turned {anchored} firstKeptEntryIndex anchors into firstKeptEntryId"));
    }
    if unanchored > 0 {
        changes.push(format!(
            "dropped {unanchored} firstKeptEntryIndex anchors that pointed at the header, out of range or ahead"
        ));
    }
    MigrationStep { from: 1, to: 2, changes }
}

/// v2 → v3: the message role `hookMessage` becomes `custom`.
pub fn v2_to_v3(records: &mut [Value], changed: &mut BTreeSet<usize>) -> MigrationStep {
    let mut renamed = 0usize;
    for (i, r) in records.iter_mut().enumerate() {
        if is_session(r) {
            if let Some(h) = r.as_object_mut() {
                h.insert("version".into(), Value::from(3));
                changed.insert(i);
            }
            continue;
        }
        if r.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        if let Some(m) = r.get_mut("message").and_then(Value::as_object_mut) {
            if m.get("role").and_then(Value::as_str) == Some("hookMessage") {
                m.insert("role".into(), Value::String("custom".into()));
                renamed += 1;
                changed.insert(i);
            }
        }
    }
    let mut changes = vec!["set version 3".to_owned()];
    if renamed > 0 {
        changes.push(format!("renamed role hookMessage to custom in {renamed} messages"));
    }
    MigrationStep { from: 2, to: 3, changes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::CounterIds;
    use serde_json::json;

    #[test]
    fn v1_gets_a_linear_chain_and_anchors() {
        let mut recs = vec![
            json!({"type":"session","id":"s","timestamp":"t","cwd":"/","provider":"p"}),
            json!({"type":"message","timestamp":"t","message":{"role":"user","content":"a"}}),
            json!({"type":"message","timestamp":"t","message":{"role":"assistant","content":[]}}),
            json!({"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}),
            json!({"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":0,"tokensBefore":5}),
            json!({"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":9,"tokensBefore":5}),
        ];
        let report = migrate(&mut recs, &mut CounterIds::new());
        assert_eq!(report.from_version, Some(1));
        assert_eq!(report.steps.len(), 2);
        assert_eq!(recs[0]["version"], json!(3));
        assert_eq!(recs[0]["provider"], json!("p"));
        assert_eq!(recs[1]["id"], json!("00000001"));
        assert_eq!(recs[1]["parentId"], Value::Null);
        assert_eq!(recs[2]["parentId"], json!("00000001"));
        assert_eq!(recs[3]["firstKeptEntryId"], json!("00000002"));
        assert!(recs[3].get("firstKeptEntryIndex").is_none());
        assert!(recs[4].get("firstKeptEntryId").is_none(), "index 0 is the header");
        assert!(recs[5].get("firstKeptEntryId").is_none(), "out of range");
        assert_eq!(report.changed.len(), 6);
    }

    #[test]
    fn forward_anchor_gets_the_old_id() {
        let mut recs = vec![
            json!({"type":"session","id":"s"}),
            json!({"type":"compaction","summary":"s","firstKeptEntryIndex":2}),
            json!({"type":"message","message":{"role":"user","content":"a"}}),
        ];
        migrate(&mut recs, &mut CounterIds::new());
        assert!(recs[1].get("firstKeptEntryId").is_none());
    }

    #[test]
    fn v2_keeps_ids_and_renames_hook_messages_and_is_idempotent() {
        let mut recs = vec![
            json!({"type":"session","version":2,"id":"s"}),
            json!({"type":"message","id":"abc12345","parentId":null,"message":{"role":"hookMessage","customType":"x","content":"c","display":true}}),
            json!({"type":"message","id":"def67890","parentId":"abc12345","message":{"role":"user","content":"u"}}),
        ];
        let report = migrate(&mut recs, &mut CounterIds::new());
        assert_eq!(report.steps.len(), 1);
        assert_eq!(recs[1]["id"], json!("abc12345"));
        assert_eq!(recs[2]["parentId"], json!("abc12345"));
        assert_eq!(recs[1]["message"]["role"], json!("custom"));
        assert_eq!(report.changed.iter().copied().collect::<Vec<_>>(), vec![0, 1]);
        let before = recs.clone();
        let again = migrate(&mut recs, &mut CounterIds::new());
        assert!(!again.migrated());
        assert_eq!(recs, before);
    }

    #[test]
    fn no_header_no_migration() {
        let mut recs = vec![json!({"type":"message"})];
        assert_eq!(migrate(&mut recs, &mut CounterIds::new()), MigrationReport::default());
    }
}
