//! pi's `getTree()` as a flat list a binding links up without recursion:
//! the nested JSON of a long session is as deep as its longest path, deeper
//! than a recursive reader such as Python's `json.loads` goes (about a
//! thousand levels), while this list is one level whatever the shape.

use arbor_tree::{Position, Session, Step};

use super::{json_text, Failure, BATCH};

/// `[{"entry": …, "parent": K, "label": …, "labelTimestamp": …}, …]`: the
/// nodes of pi's `getTree()` in its order (depth first, roots in file
/// order, children oldest first), `parent` the index in this list of the
/// node's parent (`null` for a root), `label` and `labelTimestamp` absent
/// when none. Nesting each node into its parent's `children`, in this
/// order, gives what `arbor tree --json` prints.
pub fn tree_flat_json(s: &Session) -> Result<String, Failure> {
    let tree = s.get_tree();
    let mut positions: Vec<Position> = Vec::new();
    let mut parents: Vec<Option<usize>> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for step in tree.walk() {
        match step {
            Step::Enter { position, .. } => {
                parents.push(open.last().copied());
                open.push(positions.len());
                positions.push(position);
            }
            Step::Leave(Some(_)) => {
                open.pop();
            }
            Step::Leave(None) => {}
        }
    }
    let labelled = s.labels().map_err(super::changed(s))?.next().is_some();
    let mut out = String::from("[");
    for (k, batch) in positions.chunks(BATCH).enumerate() {
        let texts = s.map_json_many(batch, |_, j| j.to_owned()).map_err(super::changed(s))?;
        for (i, (&position, text)) in batch.iter().zip(texts).enumerate() {
            let index = k * BATCH + i;
            if index > 0 {
                out.push(',');
            }
            out.push_str("{\"entry\":");
            out.push_str(text.as_deref().unwrap_or("null"));
            out.push_str(",\"parent\":");
            match parents[index] {
                Some(p) => out.push_str(&p.to_string()),
                None => out.push_str("null"),
            }
            let label = match labelled {
                true => {
                    s.label(&tree.node(position).map_err(super::changed(s))?.entry.id).map_err(super::changed(s))?
                }
                false => None,
            };
            if let Some(label) = label {
                out.push_str(",\"label\":");
                out.push_str(&json_text(&label.value)?);
                if let Some(ts) = &label.timestamp {
                    out.push_str(",\"labelTimestamp\":");
                    out.push_str(&json_text(ts)?);
                }
            }
            out.push('}');
        }
    }
    out.push(']');
    Ok(out)
}
