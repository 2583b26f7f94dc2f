//! Rebuilding the LLM context from a session tree (work in progress).
//!
//! `arbor-context` will own `build_session_context` (the root-to-leaf path,
//! the latest compaction, thinking level and model state), the mapping of
//! agent messages to model input (`convert_to_llm`) and token estimation. It
//! knows nothing of files, models or async runtimes.
