-- Arbor's sessions on a PostgreSQL server, version 1.
--
-- A session is one row of `sessions` (its name, size and listing facts) and
-- one row of `lines` per physical line of its file, holding the line's bytes
-- exactly (with its newline, when it has one), ordered by `seq`. The file is
-- the concatenation of its lines: exported, it is byte for byte the file it
-- came from. `search` holds what a person would search for in each entry;
-- it is derived from `lines` and can be rebuilt. Its `tsv` is filled by the
-- first search after a write (writes stay cheap), as the local catalog
-- indexes text on its first search.

CREATE TABLE arbor.sessions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The session's name, as on disk: its directory's name (pi's encoded
    -- cwd, `--home-me-project--`) and its file name (`<time>_<id>.jsonl`).
    dir text NOT NULL,
    name text NOT NULL,
    -- Bumped when the session is replaced whole (a migration's rewrite).
    generation bigint NOT NULL DEFAULT 1,
    line_count bigint NOT NULL DEFAULT 0,
    byte_size bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- The listing facts through the last line (arbor_tree::ListingFacts):
    -- 0 no record yet, 1 a session, 2 not a session.
    kind smallint NOT NULL DEFAULT 0,
    session_id text NOT NULL DEFAULT '',
    cwd text NOT NULL DEFAULT '',
    parent_session text,
    created text NOT NULL DEFAULT '',
    version bigint NOT NULL DEFAULT 0,
    title text,
    message_count bigint NOT NULL DEFAULT 0,
    first_message text,
    newest_ms bigint,
    UNIQUE (dir, name)
);

CREATE INDEX sessions_session_id ON arbor.sessions (session_id text_pattern_ops);

CREATE TABLE arbor.lines (
    session bigint NOT NULL REFERENCES arbor.sessions (id) ON DELETE CASCADE,
    seq bigint NOT NULL,
    -- The line's byte offset in the file.
    off bigint NOT NULL,
    bytes bytea NOT NULL,
    PRIMARY KEY (session, seq)
);

CREATE TABLE arbor.search (
    session bigint NOT NULL REFERENCES arbor.sessions (id) ON DELETE CASCADE,
    seq bigint NOT NULL,
    entry_id text NOT NULL,
    entry_type text NOT NULL,
    role text,
    ts text NOT NULL,
    body text NOT NULL,
    tsv tsvector,
    PRIMARY KEY (session, seq)
);

CREATE INDEX search_tsv ON arbor.search USING gin (tsv);
CREATE INDEX search_pending ON arbor.search (session, seq) WHERE tsv IS NULL;
