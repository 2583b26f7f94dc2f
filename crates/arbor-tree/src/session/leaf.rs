//! Moving the leaf (docs/architecture.md, "Moving the leaf"): a move writes
//! nothing; [`Session::persist_leaf`] makes it durable in a way pi reads.

use super::{Session, LEAF_MARKER_TYPE};
use crate::error::TreeError;

impl Session {
    /// Moves the leaf to `id` without writing anything.
    pub fn branch(&mut self, id: &str) -> Result<(), TreeError> {
        if !self.has_id(id) {
            return Err(TreeError::NotFound(id.to_owned()));
        }
        self.state.leaf = Some(id.to_owned());
        self.state.leaf_moved = true;
        Ok(())
    }

    /// Moves the leaf before the first entry: the next append is a new root.
    pub fn reset_leaf(&mut self) {
        self.state.leaf = None;
        self.state.leaf_moved = true;
    }

    /// True when the leaf was moved since the last append.
    pub fn leaf_moved(&self) -> bool {
        self.state.leaf_moved
    }

    /// Makes a leaf move durable: when the leaf moved since the last append,
    /// appends a hidden `custom` entry (`customType: "arbor.leaf"`) as a child
    /// of the new position, so that pi and Arbor both resume there.
    pub fn persist_leaf(&mut self) -> Result<Option<String>, TreeError> {
        if !self.state.leaf_moved || !self.persist || self.read_only {
            return Ok(None);
        }
        let data = serde_json::json!({ "leafId": self.state.leaf });
        self.append_custom_entry(LEAF_MARKER_TYPE, Some(data)).map(Some)
    }
}
