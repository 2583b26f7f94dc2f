//! The prompt line's editing, as pi's editor does it (pi's
//! `keybindings.md`, "TUI Editor"): characters and words, what is deleted
//! going to a kill ring that Ctrl+Y yanks back, pasted text taken whole.
//! A word is a run of letters, digits and `_`; moving or deleting by word
//! first skips the spaces and punctuation next to the cursor.

use super::view::ChatView;

/// The most deleted texts kept for Ctrl+Y.
const KILL_RING: usize = 16;

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl ChatView {
    /// The byte offset of character `chars`.
    pub(super) fn byte_at(&self, chars: usize) -> usize {
        self.input.char_indices().nth(chars).map_or(self.input.len(), |(i, _)| i)
    }

    fn len_chars(&self) -> usize {
        self.input.chars().count()
    }

    /// Inserts `c` at the cursor.
    pub(super) fn insert(&mut self, c: char) {
        let at = self.byte_at(self.cursor);
        self.input.insert(at, c);
        self.cursor += 1;
    }

    /// Inserts `text` at the cursor (a paste: newlines kept, other control characters left out).
    pub fn insert_text(&mut self, text: &str) {
        let text: String = text.replace("\r\n", "\n").replace('\r', "\n");
        let clean: String = text.chars().filter(|c| *c == '\n' || *c == '\t' || !c.is_control()).collect();
        let at = self.byte_at(self.cursor);
        self.input.insert_str(at, &clean);
        self.cursor += clean.chars().count();
    }

    /// Where a move one word left from the cursor lands.
    fn word_left(&self) -> usize {
        let chars: Vec<char> = self.input.chars().collect();
        let mut i = self.cursor.min(chars.len());
        while i > 0 && !is_word(chars[i - 1]) {
            i -= 1;
        }
        while i > 0 && is_word(chars[i - 1]) {
            i -= 1;
        }
        i
    }

    /// Where a move one word right from the cursor lands.
    fn word_right(&self) -> usize {
        let chars: Vec<char> = self.input.chars().collect();
        let mut i = self.cursor.min(chars.len());
        while i < chars.len() && !is_word(chars[i]) {
            i += 1;
        }
        while i < chars.len() && is_word(chars[i]) {
            i += 1;
        }
        i
    }

    /// The start of the line the cursor is on (a prompt may hold several).
    fn line_start(&self) -> usize {
        let before: Vec<char> = self.input.chars().take(self.cursor).collect();
        before.iter().rposition(|&c| c == '\n').map_or(0, |i| i + 1)
    }

    /// The end of the line the cursor is on.
    fn line_end(&self) -> usize {
        let after = self.input.chars().skip(self.cursor).position(|c| c == '\n');
        after.map_or(self.len_chars(), |n| self.cursor + n)
    }

    /// Removes the characters `from..to` and keeps them for Ctrl+Y.
    fn kill(&mut self, from: usize, to: usize) {
        if from >= to {
            return;
        }
        let (a, b) = (self.byte_at(from), self.byte_at(to));
        let gone: String = self.input[a..b].to_owned();
        self.input.replace_range(a..b, "");
        self.cursor = from;
        self.kill_ring.push(gone);
        if self.kill_ring.len() > KILL_RING {
            self.kill_ring.remove(0);
        }
    }

    pub(super) fn move_word_left(&mut self) {
        self.cursor = self.word_left();
    }

    pub(super) fn move_word_right(&mut self) {
        self.cursor = self.word_right();
    }

    /// Ctrl+W, Alt+Backspace.
    pub(super) fn delete_word_backward(&mut self) {
        let to = self.cursor;
        self.kill(self.word_left(), to);
    }

    /// Alt+D.
    pub(super) fn delete_word_forward(&mut self) {
        let from = self.cursor;
        self.kill(from, self.word_right());
    }

    /// Ctrl+U: to the start of the line.
    pub(super) fn delete_to_line_start(&mut self) {
        let to = self.cursor;
        self.kill(self.line_start(), to);
    }

    /// Ctrl+K: to the end of the line (the newline itself when at the end).
    pub(super) fn delete_to_line_end(&mut self) {
        let from = self.cursor;
        let end = self.line_end();
        let end = if end == from && end < self.len_chars() { end + 1 } else { end };
        self.kill(from, end);
    }

    /// Ctrl+Y: the text deleted last, at the cursor.
    pub(super) fn yank(&mut self) {
        if let Some(text) = self.kill_ring.last().cloned() {
            self.insert_text(&text);
        }
    }

    pub(super) fn delete_backward(&mut self) {
        if self.cursor > 0 {
            let at = self.byte_at(self.cursor - 1);
            self.input.remove(at);
            self.cursor -= 1;
        }
    }

    pub(super) fn delete_forward(&mut self) {
        if self.cursor < self.len_chars() {
            let at = self.byte_at(self.cursor);
            self.input.remove(at);
        }
    }

    pub(super) fn line_home(&mut self) {
        self.cursor = self.line_start();
    }

    pub(super) fn line_end_move(&mut self) {
        self.cursor = self.line_end();
    }

    pub(super) fn left(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    pub(super) fn right(&mut self) {
        self.cursor = (self.cursor + 1).min(self.len_chars());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, cursor: usize) -> ChatView {
        let mut v = ChatView::default();
        v.set_input(text);
        v.cursor = cursor;
        v
    }

    #[test]
    fn words_move_and_delete_as_in_pi() {
        let mut v = at("git commit -m 'fix it'", 22);
        v.move_word_left();
        assert_eq!(v.cursor, 19);
        v.move_word_left();
        assert_eq!(v.cursor, 15);
        v.move_word_right();
        assert_eq!(v.cursor, 18);
        let mut v = at("git commit -m 'fix it'", 13);
        v.delete_word_backward();
        assert_eq!((v.input.as_str(), v.cursor), ("git commit - 'fix it'", 12));
        v.delete_word_backward();
        assert_eq!((v.input.as_str(), v.cursor), ("git  'fix it'", 4));
        v.yank();
        assert_eq!((v.input.as_str(), v.cursor), ("git commit - 'fix it'", 12));
        let mut v = at("héllo wörld", 0);
        v.delete_word_forward();
        assert_eq!(v.input, " wörld");
    }

    #[test]
    fn lines_are_killed_and_yanked() {
        let mut v = at("first line\nsecond line", 17);
        v.delete_to_line_end();
        assert_eq!(v.input, "first line\nsecond");
        v.delete_to_line_start();
        assert_eq!((v.input.as_str(), v.cursor), ("first line\n", 11));
        v.yank();
        assert_eq!(v.input, "first line\nsecond");
        let mut v = at("a\nb", 1);
        v.delete_to_line_end();
        assert_eq!(v.input, "ab", "at a line's end Ctrl+K joins the next");
        let mut v = at("", 0);
        v.insert_text("pasted\r\nlines\x1b[31m");
        assert_eq!((v.input.as_str(), v.cursor), ("pasted\nlines[31m", 16));
    }
}
