"""Type hints of the extension module ``arbor_sessions._native`` (re-exported by ``arbor_sessions``)."""

import os
from types import TracebackType
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Union

from typing_extensions import NotRequired, TypedDict

StrPath = Union[str, "os.PathLike[str]"]
OpenMode = Literal["read", "write", "create"]

# pi's agent message: a dict with a "role" ("user", "assistant", "toolResult",
# "bashExecution", "custom", "branchSummary", "compactionSummary", …) and the
# role's fields, as pi stores it (see docs/format.md).
Message = Dict[str, Any]

class ModelRef(TypedDict):
    provider: str
    modelId: str

class Context(TypedDict):
    """pi's ``buildSessionContext()`` (``arbor context --json``)."""

    messages: List[Message]
    thinkingLevel: str
    model: Optional[ModelRef]
    # oh-my-pi's sessions add "models", "injectedTtsrRules" and "mode".

class TreeNode(TypedDict):
    """A node of pi's ``getTree()`` (``arbor tree --json``)."""

    entry: Dict[str, Any]
    children: List["TreeNode"]
    label: NotRequired[str]
    labelTimestamp: NotRequired[str]

class SessionInfo(TypedDict):
    """pi's ``SessionInfo`` (``arbor ls --json``)."""

    path: str
    id: str
    cwd: str
    name: NotRequired[str]
    parentSessionPath: NotRequired[str]
    created: str
    modified: str
    messageCount: int
    firstMessage: str
    allMessagesText: str

class PathLabel(TypedDict):
    entryId: str
    label: str

class Hit(TypedDict):
    """One entry a search found (``arbor search --json``)."""

    path: str
    sessionId: str
    sessionName: NotRequired[str]
    cwd: str
    entryId: str
    type: str
    role: Optional[str]
    timestamp: str
    snippet: str
    marks: List[List[int]]
    onActivePath: bool
    labels: List[PathLabel]
    relevance: Literal["exact", "prefix", "fuzzy"]

class ArborError(Exception):
    """What Arbor could not do: the base of every exception of the package."""

class LockedError(ArborError):
    """Another process holds the session's write lock."""

    pid: Optional[int]
    host: Optional[str]
    path: str

class NotFoundError(ArborError):
    """A session file, an entry id or a session name that does not exist."""

class AmbiguousError(ArborError):
    """A name that several sessions have."""

    count: int
    candidates: List[str]

class ReadOnlyError(ArborError):
    """A write to a session opened read-only."""

class NotASessionError(ArborError):
    """A file that exists but is not a pi session (no usable header)."""

class QueryError(ArborError):
    """A search query that does not parse."""

class Entry:
    """One entry of a session, as stored, with the fields the tree model decided."""

    @property
    def id(self) -> str: ...
    @property
    def parent_id(self) -> Optional[str]:
        """The parent's id; ``None`` for a root (a ``parentId`` that is not a string is no parent)."""
    @property
    def type(self) -> str:
        """``message``, ``compaction``, ``branch_summary``, ``label``, ``custom``, …"""
    @property
    def timestamp(self) -> str:
        """The ISO timestamp (empty when the line has none)."""
    @property
    def message(self) -> Optional[Message]:
        """The message of a ``message`` entry, else ``None``."""
    @property
    def role(self) -> Optional[str]:
        """The message's role of a ``message`` entry, else ``None``."""
    def to_dict(self) -> Dict[str, Any]:
        """The entry as pi stores it (the same dict on every call)."""

class Session:
    """One pi session; a writer holds the file's lock until ``close()``."""

    @property
    def file(self) -> Optional[str]: ...
    @property
    def id(self) -> str: ...
    @property
    def cwd(self) -> str: ...
    @property
    def name(self) -> Optional[str]: ...
    @property
    def header(self) -> Dict[str, Any]: ...
    @property
    def read_only(self) -> bool: ...
    @property
    def diagnostics(self) -> List[str]:
        """``FILE:LINE: reason`` for each line pi would skip or misread."""
    @property
    def leaf_id(self) -> Optional[str]: ...
    @property
    def leaf(self) -> Optional[Entry]: ...
    def entry(self, id: str) -> Entry:
        """The entry with this id (``NotFoundError`` when there is none)."""
    def entries(self) -> List[Entry]:
        """Every entry, in file order."""
    def children(self, id: str) -> List[Entry]:
        """The direct children of an entry, in file order."""
    def path(self, to: Optional[str] = None) -> List[Entry]:
        """Root → ``to`` (default: the leaf), every type included (``arbor path --json``)."""
    def tree(self) -> List[TreeNode]:
        """pi's ``getTree()`` (``arbor tree --json``), nested as deep as the
        longest path: walk it with a stack (``json.dumps`` and ``==`` recurse)."""
    def context(self, at: Optional[str] = None) -> Context:
        """pi's ``buildSessionContext()`` at ``at`` (default: the leaf); the leaf stays."""
    def llm_messages(self, at: Optional[str] = None) -> List[Message]:
        """pi's ``convertToLlm()`` of that context (``arbor context --llm --json``)."""
    def label(self, id: str) -> Optional[str]: ...
    def labels(self) -> Dict[str, str]:
        """Every label by entry id, in the order the entries got theirs."""
    def append_message(self, message: Mapping[str, Any]) -> str:
        """Appends a message after the leaf; the new entry's id."""
    def set_label(self, id: str, label: Optional[str]) -> str:
        """Sets (``None`` or blank: clears) an entry's label; the label entry's id."""
    def close(self) -> None:
        """Releases a writer's lock; later calls raise ``ArborError``."""
    def __enter__(self) -> "Session": ...
    def __exit__(
        self,
        exc_type: Optional[type],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...
    def __len__(self) -> int: ...
    def __contains__(self, id: object) -> bool: ...

class Sessions:
    """The sessions under a sessions root in pi's layout, through a catalog."""

    def __init__(self, root: StrPath, *, cache_dir: Optional[StrPath] = None) -> None: ...
    @property
    def root(self) -> str: ...
    def listing(self, cwd: Optional[str] = None) -> List[SessionInfo]:
        """Every session of ``cwd`` (default: all), newest first (``arbor ls --json``)."""
    def search(self, query: str, *, cwd: Optional[str] = None, limit: int = 20) -> List[Hit]:
        """The best hits of ``query`` on every branch (``arbor search --json``)."""
    def resolve(self, name: str) -> str:
        """The file a path, ``DIR/FILE``, file name, session id or id prefix means."""
    def open(self, name: str, mode: OpenMode = "read") -> Session: ...
    def warnings(self) -> List[str]: ...

def open(path: StrPath, mode: OpenMode = "read") -> Session:
    """Opens a session file: ``"read"`` (no lock), ``"write"`` or ``"create"``."""

def user_message(text: str, *, timestamp: Optional[int] = None) -> Message: ...
def assistant_message(
    text: str = "",
    *,
    provider: str,
    model: str,
    api: Optional[str] = None,
    thinking: Optional[str] = None,
    tool_calls: Optional[Sequence[Mapping[str, Any]]] = None,
    usage: Optional[Mapping[str, Any]] = None,
    stop_reason: Optional[Literal["stop", "length", "toolUse", "error", "aborted"]] = None,
    error_message: Optional[str] = None,
    timestamp: Optional[int] = None,
) -> Message: ...
def tool_result(
    call_id: str,
    tool_name: str,
    text: str,
    *,
    is_error: bool = False,
    details: Any = None,
    timestamp: Optional[int] = None,
) -> Message: ...
