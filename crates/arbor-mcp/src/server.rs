//! The MCP server: its tools, resources and prompts over one `dyn Sessions`.
//! Each tool parses its arguments (typed, with a JSON Schema the client
//! sees), runs the library on a blocking thread, and answers text within
//! its budget; every failure is a tool error with a clear message.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData, RoleServer, ServerHandler};

use arbor_tree::sessions::Sessions;
use arbor_tree::SessionOptions;

use crate::context::ContextArgs;
use crate::diff::DiffArgs;
use crate::entries::EntriesArgs;
use crate::error::ToolError;
use crate::list::ListArgs;
use crate::progress::{Indexer, Reporter, Sink};
use crate::search::SearchArgs;
use crate::tree::TreeArgs;
use crate::write::{LabelArgs, NameArgs};

/// Whether the server may write to sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Writes {
    /// Read-only: the write tools are not offered (the default).
    #[default]
    Refused,
    /// `label_entry` and `set_session_name` are offered.
    Allowed,
}

/// What the server needs: the sessions, how to open them, and whether it may write.
#[derive(Debug, Clone)]
pub struct Options {
    /// The options sessions are opened with (name an index directory here
    /// for big sessions: `SessionOptions::with_index_dir`).
    pub open: SessionOptions,
    /// Whether the write tools are offered.
    pub writes: Writes,
    /// Whether the first search index is built in the background when the
    /// server starts (true), or by the first search (false).
    pub index_at_start: bool,
}

impl Options {
    /// Read-only, sessions opened with `open`, the index built at start.
    pub fn new(open: SessionOptions) -> Options {
        Options { open, writes: Writes::Refused, index_at_start: true }
    }

    /// With the write tools.
    pub fn allow_writes(mut self) -> Options {
        self.writes = Writes::Allowed;
        self
    }
}

struct Shared {
    sessions: Arc<dyn Sessions>,
    open: SessionOptions,
    indexer: Indexer,
}

/// The server: clone it for each connection (they share the sessions and the index).
#[derive(Clone)]
pub struct ArborMcp {
    shared: Arc<Shared>,
    tools: ToolRouter<ArborMcp>,
}

impl std::fmt::Debug for ArborMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArborMcp").field("sessions", &self.shared.sessions.location()).finish_non_exhaustive()
    }
}

/// Runs `f` on a blocking thread: its answer, or its error as the tool's error text.
async fn blocking(f: impl FnOnce() -> Result<String, ToolError> + Send + 'static) -> Result<String, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(format!("the call failed inside the server: {e}")),
    }
}

impl ArborMcp {
    /// A server over `sessions` (call inside a tokio runtime: the first
    /// index starts building at once when `options.index_at_start`).
    pub fn new(sessions: Arc<dyn Sessions>, options: Options) -> ArborMcp {
        let indexer = if options.index_at_start { Indexer::start(sessions.clone()) } else { Indexer::ready() };
        let mut tools = Self::read_tools();
        if options.writes == Writes::Allowed {
            tools += Self::write_tools();
        }
        ArborMcp { shared: Arc::new(Shared { sessions, open: options.open, indexer }), tools }
    }

    fn sessions(&self) -> Arc<dyn Sessions> {
        self.shared.sessions.clone()
    }

    fn open(&self) -> SessionOptions {
        self.shared.open.clone()
    }

    /// The sessions the server answers for.
    pub fn location(&self) -> String {
        self.shared.sessions.location()
    }
}

fn sink(ctx: &RequestContext<RoleServer>) -> Option<Sink> {
    Sink::of(&ctx.peer, ctx.meta.get_progress_token())
}

#[tool_router(router = read_tools)]
impl ArborMcp {
    /// Search the text of every entry of every session, on every branch.
    #[tool(
        description = "Search every past session (all branches, abandoned ones included) for text. Query: words that must all match (fuzzily only when nothing matches exactly), \"quoted phrases\", or re:REGEX. Each hit: session, entryId, role, snippet, onActivePath, time. Read more with read_context or read_entries.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn search_sessions(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let sink = sink(&ctx);
        self.shared.indexer.wait(sink.as_ref()).await;
        let sessions = self.sessions();
        blocking(move || crate::search::search(sessions.as_ref(), &args, &Reporter::new(sink))).await
    }

    /// List sessions, newest first.
    #[tool(
        description = "List past sessions newest first: id, name, cwd, message count, first prompt, size, times. Filter by cwd and by time (since/until).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_sessions(
        &self,
        Parameters(args): Parameters<ListArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let (sessions, open, sink) = (self.sessions(), self.open(), sink(&ctx));
        blocking(move || {
            let size = |i: &arbor_tree::listing::SessionListInfo| open.store.stamp(&i.path).map(|s| s.size);
            crate::list::list(sessions.as_ref(), &size, &args, &Reporter::new(sink))
        })
        .await
    }

    /// What the model saw at an entry.
    #[tool(
        description = "Read what the model saw at an entry of a session (default: its leaf), as text, newest messages kept when over budget (the compaction summary always kept). A cursor pages to older messages.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn read_context(&self, Parameters(args): Parameters<ContextArgs>) -> Result<String, String> {
        let (sessions, open) = (self.sessions(), self.open());
        blocking(move || crate::context::read_context(sessions.as_ref(), &open, &args)).await
    }

    /// The tree around an entry.
    #[tool(
        description = "Draw a session's tree as `arbor tree` does (branches, • on the active path, [labels], ◀ leaf), the rows around an entry (default: the leaf). Each row starts with its entry id.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn read_tree(&self, Parameters(args): Parameters<TreeArgs>) -> Result<String, String> {
        let (sessions, open) = (self.sessions(), self.open());
        blocking(move || crate::tree::read_tree(sessions.as_ref(), &open, &args)).await
    }

    /// Entries by id, whole.
    #[tool(
        description = "Read entries of a session by id or id prefix, each with its whole text (tool calls and results included), type, role, parent, label and time.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn read_entries(&self, Parameters(args): Parameters<EntriesArgs>) -> Result<String, String> {
        let (sessions, open) = (self.sessions(), self.open());
        blocking(move || crate::entries::read_entries(sessions.as_ref(), &open, &args)).await
    }

    /// Two branches compared.
    #[tool(
        description = "Compare two entries of a session (e.g. the leaves of two branches): their common ancestor, what each side adds (messages, tool calls, files read and modified, context size, cost) and the messages of each side.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn diff_branches(&self, Parameters(args): Parameters<DiffArgs>) -> Result<String, String> {
        let (sessions, open) = (self.sessions(), self.open());
        blocking(move || crate::diff::diff_branches(sessions.as_ref(), &open, &args)).await
    }
}

#[tool_router(router = write_tools)]
impl ArborMcp {
    /// Labels an entry.
    #[tool(
        description = "Set the label of an entry of a session (empty or absent: clear it), as `arbor label` does. Refused while another program writes the session.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn label_entry(&self, Parameters(args): Parameters<LabelArgs>) -> Result<String, String> {
        let (sessions, open) = (self.sessions(), self.open());
        blocking(move || crate::write::label_entry(sessions.as_ref(), &open, &args)).await
    }

    /// Names a session.
    #[tool(
        description = "Set a session's name (pi's /name). Refused while another program writes the session.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn set_session_name(&self, Parameters(args): Parameters<NameArgs>) -> Result<String, String> {
        let (sessions, open) = (self.sessions(), self.open());
        blocking(move || crate::write::set_session_name(sessions.as_ref(), &open, &args)).await
    }
}

/// What the server tells a client about itself.
const INSTRUCTIONS: &str = "Arbor: every past coding-agent session (pi, and Claude Code or Codex sessions imported), \
on every branch. Start with search_sessions (or list_sessions), then read_context, read_entries, read_tree or \
diff_branches on what you found. Every tool answers within `budget` characters; pass `nextCursor` back as `cursor` for more.";

impl ServerHandler for ArborMcp {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder().enable_tools().enable_resources().enable_prompts().build();
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("arbor", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tcc = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        self.tools.call(tcc).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.list_all()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.get(name).cloned()
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let (sessions, open) = (self.sessions(), self.open());
        let cursor = request.and_then(|r| r.cursor);
        run(move || crate::resources::list(sessions.as_ref(), &open, cursor.as_deref())).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(crate::resources::templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let (sessions, open) = (self.sessions(), self.open());
        run(move || crate::resources::read(sessions.as_ref(), &open, &request.uri)).await.map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(crate::prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        crate::prompts::get(&request).map(Into::into)
    }
}

/// Runs `f` on a blocking thread; its error as an MCP error.
async fn run<T: Send + 'static>(f: impl FnOnce() -> Result<T, ErrorData> + Send + 'static) -> Result<T, ErrorData> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(ErrorData::internal_error(format!("the request failed inside the server: {e}"), None)),
    }
}
