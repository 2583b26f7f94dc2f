-- Arbor's sessions on a PostgreSQL server, version 3: lines found by their
-- byte offset, so that a reader fetches the bytes a command needs (one
-- entry, the index's edges, the appended tail) instead of the whole session.

CREATE INDEX lines_offset ON arbor.lines (session, off);
