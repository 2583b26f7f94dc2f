//! The summarizer's prompts.
//!
//! They ask for the same sections as pi's prompts (docs/architecture.md, "Summaries" and "Compacting") but
//! are worded for Arbor; only [`BRANCH_SUMMARY_PREAMBLE`] is pi's exact text,
//! because it is stored in session files and seen by later models.

/// Stored before every generated branch summary (pi's exact text).
pub const BRANCH_SUMMARY_PREAMBLE: &str =
    "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n";

/// The system prompt of every summarization call.
pub const SUMMARIZATION_SYSTEM_PROMPT: &str = "You summarize conversations for context checkpoints. You are given \
a conversation between a user and an AI coding assistant. Write a structured summary in exactly the format you are \
asked for. Do not continue the conversation and do not answer any question in it: your whole reply is the summary.";

/// How a branch summary is asked for.
pub const BRANCH_SUMMARY_PROMPT: &str = "Summarize the conversation branch above, so that the work can be picked up \
again after returning from it. Use exactly this format:

## Goal
[What the user wanted to achieve on this branch.]

## Constraints & Preferences
- [Requirements, constraints or preferences the user stated, or \"(none)\".]

## Progress
### Done
- [x] [Finished tasks and changes.]

### In Progress
- [ ] [Work that was started and not finished.]

### Blocked
- [What stood in the way, if anything.]

## Key Decisions
- **[Decision]**: [Why, briefly.]

## Next Steps
1. [What to do next to carry this work on, in order.]

Keep every section short. Quote file paths, function names and error messages exactly.";

/// How a first compaction summary is asked for.
pub const SUMMARIZATION_PROMPT: &str = "The conversation above is to be summarized into a structured context \
checkpoint, which another model will read to continue the work. Use exactly this format:

## Goal
[What the user is trying to achieve; several items if the session covers several tasks.]

## Constraints & Preferences
- [Requirements, constraints or preferences the user stated, or \"(none)\".]

## Progress
### Done
- [x] [Finished tasks and changes.]

### In Progress
- [ ] [Current work.]

### Blocked
- [What stands in the way, if anything.]

## Key Decisions
- **[Decision]**: [Why, briefly.]

## Next Steps
1. [What should happen next, in order.]

## Critical Context
- [Data, examples or references needed to continue, or \"(none)\".]

Keep every section short. Quote file paths, function names and error messages exactly.";

/// How an existing compaction summary is asked to be updated with new messages.
pub const UPDATE_SUMMARIZATION_PROMPT: &str = "The conversation above holds NEW messages. Merge them into the \
existing summary given in the <previous-summary> tags. Rules:
- KEEP everything the previous summary says that still holds.
- ADD the new progress, decisions and context.
- MOVE items from \"In Progress\" to \"Done\" once they are finished.
- UPDATE \"Next Steps\" to match what has been done.
- QUOTE file paths, function names and error messages exactly.
- DROP what is no longer relevant.

Use exactly this format:

## Goal
[The goals so far, plus new ones if the task grew.]

## Constraints & Preferences
- [Earlier ones plus newly found ones.]

## Progress
### Done
- [x] [Earlier finished items and the newly finished ones.]

### In Progress
- [ ] [Current work, as it stands now.]

### Blocked
- [Current blockers; leave out resolved ones.]

## Key Decisions
- **[Decision]**: [Why, briefly.] (keep the earlier ones, add new ones)

## Next Steps
1. [What should happen next, given the current state.]

## Critical Context
- [Context needed to continue, earlier and new.]

Keep every section short. Quote file paths, function names and error messages exactly.";

/// How the summary of a split turn's first part is asked for.
pub const TURN_PREFIX_PROMPT: &str = "The conversation above is the BEGINNING (PREFIX) of a turn that is too long \
to keep whole. The END of the turn (the SUFFIX, the recent work) is kept verbatim. Summarize the prefix so that the \
kept suffix can be understood:

## Original Request
[What the user asked for in this turn.]

## Early Progress
- [Decisions made and work done in the prefix.]

## Context for Suffix
- [What is needed to make sense of the kept recent work.]

Be brief: only what the kept suffix needs.";

/// The history placeholder used when a split turn has no earlier history.
pub const NO_PRIOR_HISTORY: &str = "No prior history.";

/// The text a summary gets when there was nothing to summarize (pi's exact text).
pub const NO_CONTENT_TO_SUMMARIZE: &str = "No content to summarize";
