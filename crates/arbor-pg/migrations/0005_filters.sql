-- Arbor's sessions on a PostgreSQL server, version 5: the gram filters of
-- the sessions' bytes, so that a search reads only the ranges that may hold
-- its words (arbor_search::grams; docs/performance.md, "Search at
-- ripgrep's speed"), and no more `search` table.
--
-- A row of `filters` says which byte trigrams (ASCII case folded) the bytes
-- [start_off, end_off) of a session hold: `bits` is the filter's bitmap
-- (2^log bits, 64-bit words little-endian), for the session's `generation`
-- (a session replaced whole gets new filters; rows of another generation are
-- never read) and the filter `format` of the client that built it (a
-- fingerprint of arbor-search's gram hash: a filter of another format is
-- read as absent, so a changed hash never hides a hit). Every write adds the
-- filters of the bytes it writes in its own transaction (about a MiB each;
-- an append leaves fewer than 64 KiB of new lines without one until more
-- come); a search that read a range without a filter adds it, when its role
-- may insert. Ranges need not touch: bytes no filter covers are read.
--
-- `search` (each entry's text and tsvector, written by every write since
-- migration 1) has been read by no search since the server ran arbor-search's
-- engine over `lines`: it is dropped with its indexes.

CREATE TABLE arbor.filters (
    session bigint NOT NULL REFERENCES arbor.sessions (id) ON DELETE CASCADE,
    generation bigint NOT NULL,
    start_off bigint NOT NULL,
    end_off bigint NOT NULL,
    format bigint NOT NULL,
    log smallint NOT NULL,
    bits bytea NOT NULL,
    PRIMARY KEY (session, generation, format, start_off, end_off)
);

-- A filter's bits are nearly random bytes: kept out of line without trying to compress them.
ALTER TABLE arbor.filters ALTER COLUMN bits SET STORAGE EXTERNAL;

DROP TABLE arbor.search;
