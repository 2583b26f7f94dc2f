//! Terminal keys → selector inputs (docs/cli.md, "arbor tui", in pi's order of checks).

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::selector::{FilterMode, Input};

/// Decodes one key press; `None` for keys the selector ignores (and releases).
pub fn decode(ev: &KeyEvent) -> Option<Input> {
    if ev.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    let alt = ev.modifiers.contains(KeyModifiers::ALT);
    let shift = ev.modifiers.contains(KeyModifiers::SHIFT);
    Some(match ev.code {
        KeyCode::Up => Input::Up,
        KeyCode::Down => Input::Down,
        KeyCode::Left if ctrl || alt => Input::FoldOrUp,
        KeyCode::Right if ctrl || alt => Input::UnfoldOrDown,
        KeyCode::Left | KeyCode::PageUp => Input::PageUp,
        KeyCode::Right | KeyCode::PageDown => Input::PageDown,
        KeyCode::Home => Input::Home,
        KeyCode::End => Input::End,
        KeyCode::Enter => Input::Enter,
        KeyCode::Esc => Input::Escape,
        KeyCode::Backspace => Input::Backspace,
        KeyCode::Char(c) if ctrl => match c.to_ascii_lowercase() {
            'b' => Input::PageUp,
            'f' => Input::PageDown,
            'c' => Input::Escape,
            'd' => Input::FilterDefault,
            't' => Input::ToggleFilter(FilterMode::NoTools),
            'u' => Input::ToggleFilter(FilterMode::UserOnly),
            'l' => Input::ToggleFilter(FilterMode::LabeledOnly),
            'a' => Input::ToggleFilter(FilterMode::All),
            'o' => Input::CycleFilter { forward: !shift && c != 'O' },
            _ => return None,
        },
        KeyCode::Char(_) if alt => return None,
        KeyCode::Char(c) => Input::Char(c),
        _ => return None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(code: KeyCode, m: KeyModifiers) -> Option<Input> {
        decode(&KeyEvent::new(code, m))
    }

    #[test]
    fn the_pi_bindings() {
        let c = KeyModifiers::CONTROL;
        let n = KeyModifiers::NONE;
        assert_eq!(key(KeyCode::Left, c), Some(Input::FoldOrUp));
        assert_eq!(key(KeyCode::Left, KeyModifiers::ALT), Some(Input::FoldOrUp));
        assert_eq!(key(KeyCode::Right, c), Some(Input::UnfoldOrDown));
        assert_eq!(key(KeyCode::Left, n), Some(Input::PageUp));
        assert_eq!(key(KeyCode::Char('f'), c), Some(Input::PageDown));
        assert_eq!(key(KeyCode::Char('c'), c), Some(Input::Escape));
        assert_eq!(key(KeyCode::Char('u'), c), Some(Input::ToggleFilter(FilterMode::UserOnly)));
        assert_eq!(key(KeyCode::Char('o'), c), Some(Input::CycleFilter { forward: true }));
        assert_eq!(key(KeyCode::Char('o'), c | KeyModifiers::SHIFT), Some(Input::CycleFilter { forward: false }));
        assert_eq!(key(KeyCode::Char('L'), KeyModifiers::SHIFT), Some(Input::Char('L')));
        assert_eq!(key(KeyCode::F(2), n), None);
    }
}
