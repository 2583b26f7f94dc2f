-- Arbor's sessions on a PostgreSQL server, version 4: the session index on
-- the server, maintained by every write in its own transaction, so that the
-- first open of a session on a machine reads what the command needs, not the
-- session (arbor_tree::stored_index; docs/format.md, "An index a store
-- keeps").
--
-- `index_parts` holds the index's four growing parts (0 parents, 1 kinds,
-- 2 records, 3 strings) in chunks of 4 KiB at aligned offsets: chunk `off`
-- holds bytes [off, off + 4096) of its part, the last one fewer. An append
-- fills the last chunk and adds new ones. `index_ids` holds the id table:
-- each entry's id with its position, and each parent id no entry held with
-- its child's position (`names_parent`). The `ix_*` columns say how far the
-- index reaches; NULL when the session is not indexed (a line an index
-- cannot hold, a session written before this migration): it then stays
-- unindexed until it is replaced whole. A new session starts with the index
-- of nothing (zeros).

CREATE TABLE arbor.index_parts (
    session bigint NOT NULL REFERENCES arbor.sessions (id) ON DELETE CASCADE,
    part smallint NOT NULL,
    off bigint NOT NULL,
    bytes bytea NOT NULL,
    PRIMARY KEY (session, part, off)
);

CREATE TABLE arbor.index_ids (
    session bigint NOT NULL REFERENCES arbor.sessions (id) ON DELETE CASCADE,
    -- The id's bytes (an id may hold characters text cannot).
    entry_id bytea NOT NULL,
    position integer NOT NULL,
    names_parent boolean NOT NULL
);

CREATE INDEX index_ids_lookup ON arbor.index_ids (session, entry_id);

-- Added without a default, so that the sessions already here read as not indexed.
ALTER TABLE arbor.sessions
    ADD COLUMN ix_entries bigint,
    ADD COLUMN ix_strings bigint,
    ADD COLUMN ix_header bigint,
    ADD COLUMN ix_lines bigint,
    ADD COLUMN ix_bytes bigint;

ALTER TABLE arbor.sessions
    ALTER COLUMN ix_entries SET DEFAULT 0,
    ALTER COLUMN ix_strings SET DEFAULT 0,
    ALTER COLUMN ix_header SET DEFAULT 0,
    ALTER COLUMN ix_lines SET DEFAULT 0,
    ALTER COLUMN ix_bytes SET DEFAULT 0;
