//! The prompts a client offers its user: `recall` (what we tried for
//! something, across every session and branch) and `compare_branches`
//! (what each branch of a session did, and which worked).

use rmcp::model::{GetPromptRequestParams, GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use rmcp::ErrorData;

/// The prompts, as `prompts/list` gives them.
pub fn list() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "recall",
            Some("Recall what was tried for a topic in past sessions, on every branch, and what came of it."),
            Some(vec![
                PromptArgument::new("topic")
                    .with_description("What to recall (words, an error message, a file name).")
                    .with_required(true),
                PromptArgument::new("cwd")
                    .with_description("Only the sessions of this working directory.")
                    .with_required(false),
            ]),
        ),
        Prompt::new(
            "compare_branches",
            Some("Compare the branches of a session: what each approach did and which worked."),
            Some(vec![PromptArgument::new("session")
                .with_description("The session (id, id prefix or file name).")
                .with_required(true)]),
        ),
    ]
}

fn argument(request: &GetPromptRequestParams, name: &str) -> Result<String, ErrorData> {
    let value = request.arguments.as_ref().and_then(|a| a.get(name)).and_then(|v| v.as_str()).map(str::trim);
    match value {
        Some(v) if !v.is_empty() => Ok(v.to_owned()),
        _ => Err(ErrorData::invalid_params(format!("prompt {} needs the argument {name}", request.name), None)),
    }
}

/// The prompt `request` names, with its arguments filled in.
pub fn get(request: &GetPromptRequestParams) -> Result<GetPromptResult, ErrorData> {
    let text = match request.name.as_str() {
        "recall" => {
            let topic = argument(request, "topic")?;
            let cwd = argument(request, "cwd").ok();
            let scope =
                cwd.map_or_else(|| "every working directory".to_owned(), |c| format!("the working directory {c}"));
            format!(
                "Recall what we tried for: {topic}\n\n\
                 1. Call search_sessions with words from the topic (try a few phrasings, and an error message \
                 or file name if there is one) over {scope}. Hits off the active path (onActivePath: false) are \
                 abandoned branches: they often hold what failed, so look at them too.\n\
                 2. For the most relevant hits, call read_context at the hit's entry, and read_entries for the \
                 tool calls and results around it.\n\
                 3. Answer: what was tried, in which session and branch (entry ids), what worked, what failed and \
                 why, and what is still open. Say so plainly when nothing was found."
            )
        }
        "compare_branches" => {
            let session = argument(request, "session")?;
            format!(
                "Compare the branches of session {session}.\n\n\
                 1. Call read_tree on it with filter no-tools to see where it branches and where the leaf is.\n\
                 2. For each pair of branch tips worth comparing, call diff_branches with their entry ids.\n\
                 3. Answer: what each branch tried, what it changed (files, tool calls), what it cost, which one \
                 worked and why the others were left."
            )
        }
        other => {
            return Err(ErrorData::invalid_params(
                format!("no prompt {other:?}: the prompts are recall and compare_branches"),
                None,
            ))
        }
    };
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).with_description(
        match request.name.as_str() {
            "recall" => "Recall what was tried",
            _ => "Compare a session's branches",
        },
    ))
}
