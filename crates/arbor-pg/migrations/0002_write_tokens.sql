-- Arbor's sessions on a PostgreSQL server, version 2: appends that can be
-- retried without doubling.
--
-- Every append carries a token, kept here in the append's own transaction.
-- A writer whose connection drops during an append reconnects and looks its
-- token up: found, the append was committed (only its acknowledgement was
-- lost); absent, nothing was written and the append is made again, with the
-- same token. Tokens older than a day are dropped by later appends of their
-- session.

CREATE TABLE arbor.writes (
    token text PRIMARY KEY,
    session bigint NOT NULL REFERENCES arbor.sessions (id) ON DELETE CASCADE,
    -- The session's line count once the append was made.
    line_count bigint NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX writes_session_time ON arbor.writes (session, written_at);
