//! The write tools (`--allow-writes` only): a label on an entry, a
//! session's name. Each opens the session for writing, which takes its
//! single-writer lock: while another writer (pi, `arbor chat`) holds it the
//! call is refused with the holder's pid, and nothing is written.

use serde::Deserialize;
use serde_json::json;

use arbor_tree::sessions::Sessions;
use arbor_tree::{OpenMode, Session, SessionOptions};

use crate::error::ToolError;
use crate::session::{entry, id_at, resolve};

/// `label_entry`'s arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct LabelArgs {
    /// The session: its id, id prefix, file name or path.
    pub session: String,
    /// The entry to label (id or id prefix).
    pub entry: String,
    /// The label; absent or empty clears the entry's label.
    #[serde(default)]
    pub label: Option<String>,
}

/// `set_session_name`'s arguments.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct NameArgs {
    /// The session: its id, id prefix, file name or path.
    pub session: String,
    /// The new name.
    pub name: String,
}

/// The longest label or name taken (characters).
const LONGEST: usize = 200;

fn checked(what: &str, text: &str) -> Result<(), ToolError> {
    if text.chars().count() > LONGEST {
        return Err(ToolError::Argument(format!("the {what} is over {LONGEST} characters")));
    }
    if text.chars().any(char::is_control) {
        return Err(ToolError::Argument(format!("the {what} holds a control character (a newline, an escape)")));
    }
    Ok(())
}

/// Sets or clears an entry's label, as `arbor label` does.
pub fn label_entry(sessions: &dyn Sessions, opts: &SessionOptions, args: &LabelArgs) -> Result<String, ToolError> {
    let label = args.label.as_deref().map(str::trim).filter(|l| !l.is_empty());
    if let Some(l) = label {
        checked("entry label", l)?;
    }
    let path = resolve(sessions, &args.session)?;
    let mut s = Session::open(&path, OpenMode::Write, opts.clone())?;
    let target = id_at(&s, entry(&s, &path, &args.entry)?);
    let new_id = s.append_label_change(&target, label)?;
    Ok(json!({"session": s.session_id(), "entryId": target, "label": label, "labelEntryId": new_id}).to_string())
}

/// Names a session, as pi's `/name` does (a `session_info` entry).
pub fn set_session_name(sessions: &dyn Sessions, opts: &SessionOptions, args: &NameArgs) -> Result<String, ToolError> {
    let name = args.name.trim();
    if name.is_empty() {
        return Err(ToolError::Argument("the name is empty".into()));
    }
    checked("name", name)?;
    let path = resolve(sessions, &args.session)?;
    let mut s = Session::open(&path, OpenMode::Write, opts.clone())?;
    let new_id = s.append_session_info(name)?;
    Ok(json!({"session": s.session_id(), "name": name, "entryId": new_id}).to_string())
}
