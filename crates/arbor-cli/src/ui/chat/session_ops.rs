//! The chat's session commands (pi's `/new`, `/resume`, `/clone`,
//! `/session`, `/export`, `/copy`) and what it does when another program
//! (pi, say) appends to the file it has open: takes the new entries in and
//! continues after them.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use serde_json::Value;

use arbor_log::{MessageView, Role};
use arbor_tree::{OpenMode, Position, Session};

use super::core::Chat;
use crate::ui::tui::one_line;

/// The longest a session title (the first prompt standing for a name) is.
const TITLE_CHARS: usize = 40;

impl Chat {
    /// The session file's length on disk now (`None`: not a local file yet).
    fn disk_len_now(&self) -> Option<u64> {
        self.file().and_then(|p| std::fs::metadata(p).ok()).map(|m| m.len())
    }

    /// Remembers the file's length after the chat's own write or look.
    pub(super) fn note_disk(&mut self) {
        self.disk_len = self.disk_len_now();
    }

    /// Opens `path` for writing, after giving up the lock on the file open now.
    fn reopen(&mut self, path: &Path, restore_model: bool) -> Result<usize> {
        let before = self.session().positions().len();
        self.agent.stop_writing();
        let session = match Session::open(path, OpenMode::Write, self.session_opts.clone()) {
            Ok(s) => s,
            Err(e) => {
                // Back on the file left, writing again, so nothing typed next is lost.
                if let Some(old) = self.file().map(Path::to_owned) {
                    if let Ok(s) = Session::open(&old, OpenMode::Write, self.session_opts.clone()) {
                        self.agent.switch_session(s, false);
                    }
                }
                return Err(anyhow::Error::new(e).context(path.display().to_string()));
            }
        };
        let after = session.positions().len();
        self.agent.switch_session(session, restore_model);
        self.note_disk();
        Ok(after.saturating_sub(before))
    }

    /// Another writer: when the file grew (or was rewritten) since the
    /// chat's last look, it is read again and the chat goes on from its
    /// newest entry; the answer says so. `None` when nothing changed.
    pub fn take_in_other_writes(&mut self) -> Result<Option<String>> {
        let (Some(known), Some(now)) = (self.disk_len, self.disk_len_now()) else { return Ok(None) };
        if now == known {
            return Ok(None);
        }
        let Some(path) = self.file().map(Path::to_owned) else { return Ok(None) };
        if now > known && !ends_with_newline(&path) {
            // The other writer is still writing its line: looked at again next time.
            return Ok(None);
        }
        let added = self.reopen(&path, false)?;
        let what = if now < known {
            "The session file was rewritten by another program: read again".to_owned()
        } else {
            format!(
                "Another program wrote {added} new entr{} to the session file: shown above; the chat continues after them",
                if added == 1 { "y" } else { "ies" }
            )
        };
        Ok(Some(what))
    }

    /// `/new`: a new session in the same directory, the model kept.
    pub fn new_session(&mut self) -> Result<String> {
        let path = self.agent.new_session();
        let level = self.settings.default_thinking_level.clone();
        self.agent.record_session_start(&level)?;
        self.note_disk();
        Ok(match path {
            Some(p) => format!("New session: {}", p.display()),
            None => "New session".to_owned(),
        })
    }

    /// `/resume`: continues in the session at `path` (its model restored).
    pub fn resume(&mut self, path: &Path) -> Result<String> {
        if self.file() == Some(path) {
            return Ok("Already in this session".to_owned());
        }
        self.reopen(path, true)?;
        Ok(format!("Resumed {}", self.title()))
    }

    /// The sessions of the session's directory (where `/new` and `/clone`
    /// write, as pi lists them for `/resume`), newest first.
    pub fn sessions_here(&self) -> Result<Vec<arbor_tree::SessionListInfo>> {
        let dir = self.session().session_dir().to_owned();
        Ok(arbor_tree::list_sessions(self.session_opts.store.as_ref(), &dir)?)
    }

    /// `/clone`: the active branch copied into a new session file, continued there.
    pub fn clone_branch(&mut self) -> Result<String> {
        let path = self.agent.clone_branch()?;
        self.note_disk();
        Ok(match path {
            Some(p) => format!("Cloned the branch into a new session: {}", p.display()),
            None => "Cloned the branch into a new session".to_owned(),
        })
    }

    /// What the status bar calls the session: its name, else its first
    /// prompt (one line), else `new session`; never the file's name.
    pub fn title(&self) -> String {
        let changed = || "(the session's file changed on disk)".to_owned();
        match self.session().session_name() {
            Ok(Some(n)) => return n.to_owned(),
            Ok(None) => {}
            Err(_) => return changed(),
        }
        let s = self.session();
        let first = match s.positions().find(|&p| s.role_at(p) == Some(&Role::User)).map(|p| first_text(s, p)) {
            Some(Err(_)) => return changed(),
            Some(Ok(t)) => t,
            None => None,
        };
        match first {
            Some(t) if t.chars().count() > TITLE_CHARS => {
                format!("{}…", t.chars().take(TITLE_CHARS - 1).collect::<String>())
            }
            Some(t) => t,
            None => "new session".to_owned(),
        }
    }

    /// `/session`: the file, id, name, messages, tokens and cost.
    pub fn session_info(&self) -> Result<Vec<String>> {
        let s = self.session();
        let (mut user, mut assistant, mut other, mut cost) = (0usize, 0usize, 0usize, 0.0f64);
        let (mut input, mut output) = (0u64, 0u64);
        for m in self.agent().messages()? {
            match MessageView::new(m).role() {
                Some(Role::User) => user += 1,
                Some(Role::Assistant) => {
                    assistant += 1;
                    let u = &m["usage"];
                    input += u["input"].as_u64().unwrap_or(0) + u["cacheRead"].as_u64().unwrap_or(0);
                    output += u["output"].as_u64().unwrap_or(0);
                    cost += u["cost"]["total"].as_f64().unwrap_or(0.0);
                }
                _ => other += 1,
            }
        }
        let file = self.file().map_or_else(|| "(not written yet)".to_owned(), |p| p.display().to_string());
        Ok(vec![
            format!("Session: {file}"),
            format!("Id: {}", s.session_id()),
            format!("Name: {}", s.session_name()?.unwrap_or("(none; /name sets one)")),
            format!(
                "Entries: {} in the file; on this branch {user} user, {assistant} assistant, {other} other messages",
                s.positions().len()
            ),
            format!(
                "Tokens: {input} in, {output} out (this branch's replies); context ~{} of {}",
                self.agent().context_tokens()?,
                self.agent().context_window()
            ),
            format!("Cost: ${cost:.4}"),
            format!("Model: {}, thinking {}", self.model_name(), self.agent().thinking_level()?),
        ])
    }

    /// `/export [FILE]`: the whole tree as one HTML page, written to a new
    /// file (never over one that exists, never through a link).
    pub fn export(&self, file: Option<&str>) -> Result<String> {
        let path = match file {
            Some(f) => PathBuf::from(f),
            None => {
                let stem = self.file().and_then(|p| p.file_stem()).map_or_else(
                    || format!("session-{}", self.session().session_id()),
                    |s| s.to_string_lossy().into_owned(),
                );
                PathBuf::from(format!("{stem}.html"))
            }
        };
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path).with_context(|| {
            format!("{}: cannot create (it may exist already; /export FILE names another)", path.display())
        })?;
        // Streamed into the file (the page is written a batch of entries at
        // a time); a failed export leaves no half page behind.
        let mut out = std::io::BufWriter::new(file);
        let written = arbor_interop::export_html(self.session(), &arbor_interop::HtmlOptions::default(), &mut out)
            .map_err(anyhow::Error::from)
            .and_then(|()| out.into_inner().map_err(|e| e.into_error().into()))
            .and_then(|f| f.sync_all().map_err(anyhow::Error::from));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&path);
            return Err(e.context(format!("writing {}", path.display())));
        }
        Ok(format!("Exported to {}", path.display()))
    }

    /// `/copy`: the text of the last assistant reply on the branch.
    pub fn last_reply_text(&self) -> Result<String> {
        let last = self.agent().messages()?.iter().rev().find(|m| MessageView::new(m).role() == Some(Role::Assistant));
        let Some(m) = last else { bail!("No reply to copy yet") };
        let text = arbor_log::content_text(m.get("content"), "\n");
        if text.trim().is_empty() {
            bail!("The last reply has no text to copy");
        }
        Ok(text)
    }
}

/// True when the file's last byte is a newline (no line is half written).
fn ends_with_newline(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return false };
    let mut last = [0u8; 1];
    f.seek(SeekFrom::End(-1)).is_ok() && f.read_exact(&mut last).is_ok() && last[0] == b'\n'
}

/// The text of the user message at `p`, on one line.
fn first_text(s: &Session, p: Position) -> Result<Option<String>, arbor_tree::TreeError> {
    let Some(e) = s.entry_at(p)? else { return Ok(None) };
    let arbor_log::EntryKind::Message(m) = &e.kind else { return Ok(None) };
    let text = arbor_log::content_text(m.message.get("content").filter(|c| !matches!(c, Value::Null)), " ");
    let line = one_line(&text);
    Ok((!line.trim().is_empty()).then(|| line.trim().to_owned()))
}
