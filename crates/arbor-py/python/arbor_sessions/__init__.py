"""pi coding agent sessions from Python, through Arbor's Rust library.

Open a session read-only or for writing (the same single-writer lock as the
``arbor`` command), read its tree, the path to any entry and the context a
model sees there (pi's shapes, as dicts), list and search every session
under a sessions root, append messages and labels::

    from pathlib import Path

    import arbor_sessions as arbor

    with arbor.open("session.jsonl") as s:      # read-only: no lock, nothing written
        for e in s.path():                      # root -> leaf
            print(e.id, e.type, e.role)
        context = s.context()                   # pi's buildSessionContext()

    sessions = arbor.Sessions(Path.home() / ".pi/agent/sessions")
    for hit in sessions.search("connection refused", limit=5):
        print(hit["path"], hit["entryId"], hit["snippet"])

Every failure is an ``ArborError`` (``LockedError``, ``NotFoundError``,
``AmbiguousError``, ``ReadOnlyError``, ``NotASessionError``,
``QueryError``); a bad argument is a ``ValueError`` or ``TypeError``.
"""

from importlib.metadata import PackageNotFoundError, version

from ._native import (
    AmbiguousError,
    ArborError,
    Entry,
    LockedError,
    NotASessionError,
    NotFoundError,
    QueryError,
    ReadOnlyError,
    Session,
    Sessions,
    assistant_message,
    open,
    tool_result,
    user_message,
)

try:
    __version__ = version("arbor-sessions")
except PackageNotFoundError:  # imported from a build tree, not installed
    __version__ = "0+unknown"

__all__ = [
    "AmbiguousError",
    "ArborError",
    "Entry",
    "LockedError",
    "NotASessionError",
    "NotFoundError",
    "QueryError",
    "ReadOnlyError",
    "Session",
    "Sessions",
    "assistant_message",
    "open",
    "tool_result",
    "user_message",
]
