//! `arbor usage branch FILE`: every leaf's branch and what it cost.
//!
//! Each leaf (an entry without children) has a path from the root; the
//! branches share their beginnings. So that the branches add up to the
//! session, each entry belongs to one branch: the active leaf's branch owns
//! its whole path, and every other leaf (in file order) owns the entries of
//! its path that no branch before it owns, from where it parts from them.

use std::collections::HashMap;

use arbor_tree::{Position, Session, TreeError};

use crate::model::{Agent, Tokens};
use crate::price::PriceTable;
use crate::read::read_session;
use crate::report::Amount;

/// One leaf's branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// The leaf's id.
    pub leaf: String,
    /// True for the session's leaf.
    pub active: bool,
    /// The label nearest the leaf on the part the branch owns, if any.
    pub label: Option<String>,
    /// The last entry the branch shares with the branches before it (`None`: it starts at a root).
    pub parts_at: Option<String>,
    /// Entries on the branch's own part.
    pub entries: usize,
    /// The replies of its own part.
    pub own: Amount,
    /// The replies of its whole path from the root.
    pub path: Amount,
    /// The time of its leaf.
    pub time: String,
}

/// The branches of `s`, the active one first, then the others in file
/// order; replies without a recorded cost priced from `prices`.
pub fn branches(s: &Session, prices: &PriceTable) -> Result<Vec<Branch>, TreeError> {
    let usage = read_session(s, Agent::Pi, String::new())?;
    let mut amounts: HashMap<&str, (Tokens, f64)> = HashMap::new();
    for r in &usage.replies {
        let model = usage.model_of(r);
        let cost = r.recorded_cost.or_else(|| prices.cost(model, &r.tokens)).unwrap_or(0.0);
        amounts.insert(r.entry.as_str(), (r.tokens, cost));
    }
    let positions: Vec<Position> = s.positions().filter(|&p| s.is_live_at(p)).collect();
    let mut ids: Vec<String> = vec![String::new(); s.len()];
    s.for_each_id(positions.iter().copied(), |p, id| ids[p.get()] = id.to_owned());
    let mut has_child = vec![false; s.len()];
    for &p in &positions {
        if let Some(parent) = s.parent_at(p) {
            has_child[parent.get()] = true;
        }
    }
    let leaf = s.leaf_id().and_then(|id| s.position_of(id));
    let mut leaves: Vec<Position> = leaf.into_iter().collect();
    leaves.extend(positions.iter().copied().filter(|p| !has_child[p.get()] && Some(*p) != leaf));
    let reply = |p: Position| amounts.get(ids[p.get()].as_str()).copied();
    let mut owned = vec![false; s.len()];
    let mut out = Vec::new();
    for l in leaves {
        let mut own = Amount::default();
        let mut entries = 0;
        let mut label = None;
        let mut at = Some(l);
        while let Some(p) = at.filter(|p| !owned[p.get()]) {
            owned[p.get()] = true;
            entries += 1;
            if let Some((t, c)) = reply(p) {
                add(&mut own, &t, c);
            }
            if label.is_none() {
                label = s.get_label(&ids[p.get()])?.map(str::to_owned);
            }
            at = s.parent_at(p);
        }
        let mut path = own;
        let mut up = at;
        while let Some(p) = up {
            if let Some((t, c)) = reply(p) {
                add(&mut path, &t, c);
            }
            up = s.parent_at(p);
        }
        let time = s.entry_at(l)?.map(|e| e.timestamp.clone()).unwrap_or_default();
        out.push(Branch {
            leaf: ids[l.get()].clone(),
            active: Some(l) == leaf,
            label,
            parts_at: at.map(|p| ids[p.get()].clone()),
            entries,
            own,
            path,
            time,
        });
    }
    Ok(out)
}

fn add(a: &mut Amount, t: &Tokens, cost: f64) {
    a.replies += 1;
    a.tokens += *t;
    a.cost += cost;
}
