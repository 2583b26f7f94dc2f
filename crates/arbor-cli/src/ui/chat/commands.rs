//! What a line typed into `arbor chat` means: a prompt for the model or one
//! of the slash commands.

/// A parsed input line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Nothing (an empty or blank line).
    Empty,
    /// Text for the model.
    Prompt(String),
    /// `/tree`: the tree selector.
    Tree,
    /// `/fork`: the user-message selector (pi's `/fork`).
    Fork,
    /// `/branch`: the tree selector with `doubleEscapeAction=tree` (the default), else the user-message selector.
    Branch,
    /// `/label [TEXT]`: label the current entry, or clear its label.
    Label(Option<String>),
    /// `/name [TEXT]`: name the session, or show its name.
    Name(Option<String>),
    /// `/compact [INSTRUCTIONS]`.
    Compact(Option<String>),
    /// `/model [PROVIDER/MODEL]`: switch model, or show it.
    Model(Option<String>),
    /// `/thinking [LEVEL]`: set the thinking level, or show it.
    Thinking(Option<String>),
    /// `/context`: the token estimate of the context.
    Context,
    /// `/resume`: pick another session of this directory.
    Resume,
    /// `/new`: a new session.
    New,
    /// `/session`: the session's file, id, messages, tokens and cost.
    Session,
    /// `/clone`: the active branch copied into a new session.
    Clone,
    /// `/export [FILE]`: the session as one HTML page.
    Export(Option<String>),
    /// `/copy`: the last reply to the clipboard.
    Copy,
    /// `/settings`: thinking level, tree filter, double-Escape action.
    Settings,
    /// `/hotkeys`: every key.
    Hotkeys,
    /// `!COMMAND` (its output goes to the model with the next prompt) or
    /// `!!COMMAND` (kept out of the context), run by the shell.
    Shell {
        /// The command line.
        command: String,
        /// `!!`: recorded but never sent to the model.
        exclude: bool,
    },
    /// `/help`.
    Help,
    /// `/quit` (or `/exit`).
    Quit,
    /// A slash command that does not exist.
    Unknown(String),
}

/// The commands and what they do, for `/help`.
pub const HELP: &[(&str, &str)] = &[
    ("/tree", "go back to any point of the session tree (optionally summarizing the branch left)"),
    ("/fork", "pick one of your messages and continue from before it in a new session file"),
    ("/branch", "the tree selector when doubleEscapeAction is tree (the default), else as /fork"),
    ("/label [TEXT]", "label the last message (no text: clear its label)"),
    ("/name [TEXT]", "name the session (no text: show the name)"),
    ("/compact [TEXT]", "summarize older messages now, with optional instructions"),
    ("/model [PROVIDER/MODEL]", "switch the model (no argument: show it)"),
    ("/thinking [LEVEL]", "set the thinking level: off, minimal, low, medium, high, xhigh"),
    ("/context", "estimate the tokens of the context sent to the model"),
    ("/resume", "continue another session of this directory (newest first)"),
    ("/new", "start a new session (the model is kept)"),
    ("/session", "the session's file, id, name, messages, tokens and cost"),
    ("/clone", "copy the current branch into a new session and continue there"),
    ("/export [FILE]", "write the session as one HTML page (default: the session file's name, .html)"),
    ("/copy", "copy the last reply to the clipboard"),
    ("/settings", "thinking level, tree filter, double-Escape action (for this chat)"),
    ("/hotkeys", "every key, beside pi's"),
    ("!CMD, !!CMD", "run CMD in the shell; its output goes with the next prompt (!!: kept out)"),
    ("/quit", "leave (also /exit, Ctrl+D, Ctrl+C twice)"),
];

/// Every command name, for completion.
const NAMES: [&str; 20] = [
    "/tree",
    "/fork",
    "/branch",
    "/label",
    "/name",
    "/compact",
    "/model",
    "/thinking",
    "/context",
    "/resume",
    "/new",
    "/session",
    "/clone",
    "/export",
    "/copy",
    "/settings",
    "/hotkeys",
    "/help",
    "/quit",
    "/exit",
];

/// The command names a partly typed command could become (`/` alone: all of
/// them); none once the name is complete or an argument is being typed.
pub fn completions(input: &str) -> Vec<&'static str> {
    if !input.starts_with('/') || input.starts_with("//") || input.contains(char::is_whitespace) {
        return vec![];
    }
    let matches: Vec<&'static str> = NAMES.iter().copied().filter(|n| n.starts_with(input)).collect();
    if matches == [input] {
        return vec![];
    }
    matches
}

/// Tab on a partly typed command: the one name it can become (with a space
/// after it), or the longest start all candidates share; `None` when that
/// adds nothing.
pub fn complete(input: &str) -> Option<String> {
    let matches = completions(input);
    match matches.as_slice() {
        [] => None,
        [one] => Some(format!("{one} ")),
        [first, rest @ ..] => {
            let common = rest
                .iter()
                .fold(first.len(), |n, m| first.bytes().zip(m.bytes()).take(n).take_while(|(a, b)| a == b).count());
            (common > input.len()).then(|| first[..common].to_owned())
        }
    }
}

fn arg(rest: &str) -> Option<String> {
    let t = rest.trim();
    (!t.is_empty()).then(|| t.to_owned())
}

/// Parses one line. A line that starts with `/` is a command; `//text` sends
/// `/text` to the model.
pub fn parse(line: &str) -> Input {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Input::Empty;
    }
    if let Some(escaped) = trimmed.strip_prefix("//") {
        return Input::Prompt(format!("/{escaped}"));
    }
    // pi's shell commands: `!!` keeps the output out of the context.
    if let Some(rest) = trimmed.strip_prefix('!') {
        let (exclude, command) = match rest.strip_prefix('!') {
            Some(c) => (true, c.trim()),
            None => (false, rest.trim()),
        };
        if !command.is_empty() {
            return Input::Shell { command: command.to_owned(), exclude };
        }
    }
    let Some(command) = trimmed.strip_prefix('/') else {
        return Input::Prompt(line.trim_end_matches(['\r', '\n']).to_owned());
    };
    let (name, rest) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
    match name {
        "tree" => Input::Tree,
        "fork" => Input::Fork,
        "branch" => Input::Branch,
        "label" => Input::Label(arg(rest)),
        "name" => Input::Name(arg(rest)),
        "compact" => Input::Compact(arg(rest)),
        "model" => Input::Model(arg(rest)),
        "thinking" => Input::Thinking(arg(rest)),
        "context" => Input::Context,
        "resume" => Input::Resume,
        "new" => Input::New,
        "session" => Input::Session,
        "clone" => Input::Clone,
        "export" => Input::Export(arg(rest)),
        "copy" => Input::Copy,
        "settings" => Input::Settings,
        "hotkeys" => Input::Hotkeys,
        "help" | "?" => Input::Help,
        "quit" | "exit" | "q" => Input::Quit,
        _ => Input::Unknown(format!("/{name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_and_commands() {
        assert_eq!(parse("   "), Input::Empty);
        assert_eq!(parse("hello there"), Input::Prompt("hello there".into()));
        assert_eq!(parse("  keep  inner  spaces\n"), Input::Prompt("  keep  inner  spaces".into()));
        assert_eq!(parse("//mode"), Input::Prompt("/mode".into()));
        assert_eq!(parse("/tree"), Input::Tree);
        assert_eq!(parse("/branch"), Input::Branch);
        assert_eq!(parse("/fork"), Input::Fork);
        assert_eq!(parse("/label  good point "), Input::Label(Some("good point".into())));
        assert_eq!(parse("/label"), Input::Label(None));
        assert_eq!(parse("/name"), Input::Name(None));
        assert_eq!(parse("/compact keep the API names"), Input::Compact(Some("keep the API names".into())));
        assert_eq!(parse("/model openai/gpt-4o"), Input::Model(Some("openai/gpt-4o".into())));
        assert_eq!(parse("/thinking high"), Input::Thinking(Some("high".into())));
        assert_eq!(parse("/context"), Input::Context);
        assert_eq!(parse("/quit"), Input::Quit);
        assert_eq!(parse("/exit"), Input::Quit);
        assert_eq!(parse("/mode x"), Input::Unknown("/mode".into()));
        assert_eq!(parse("/export out.html"), Input::Export(Some("out.html".into())));
        assert_eq!(parse("/resume"), Input::Resume);
        assert_eq!(parse("!ls -la"), Input::Shell { command: "ls -la".into(), exclude: false });
        assert_eq!(parse("!! git status"), Input::Shell { command: "git status".into(), exclude: true });
        assert_eq!(parse("!"), Input::Prompt("!".into()), "nothing to run: a prompt");
    }

    #[test]
    fn command_names_complete() {
        assert_eq!(completions("/co"), ["/compact", "/context", "/copy"]);
        assert_eq!(complete("/co"), None);
        assert_eq!(complete("/com").as_deref(), Some("/compact "));
        assert_eq!(complete("/cont").as_deref(), Some("/context "));
        assert_eq!(complete("/t"), None);
        assert_eq!(completions("/t"), ["/tree", "/thinking"]);
        assert_eq!(completions("/se"), ["/session", "/settings"]);
        assert_eq!(complete("/e").as_deref(), Some("/ex"));
        assert_eq!(complete("/exi").as_deref(), Some("/exit "));
        assert_eq!(completions("/"), NAMES);
        assert!(completions("/context").is_empty() && completions("/label x").is_empty());
        assert!(completions("hello").is_empty() && completions("//x").is_empty());
    }
}
