-- Arbor's sessions on a PostgreSQL server, version 6: the lines' bytes
-- compressed with lz4 instead of pglz, where the server has it (PostgreSQL
-- 14 or later built with lz4: `pg_config --configure` shows --with-lz4).
-- A read of a session's lines is mostly the server decompressing them
-- (docs/performance.md, "Sessions on a PostgreSQL server"): lz4 does that
-- several times faster than pglz, at about the same size on disk.
--
-- Only lines written from now on are compressed so: the rows already there
-- keep pglz (PostgreSQL reads both; nothing is rewritten here, so this
-- migration takes a moment whatever the table's size). docs/postgres.md
-- says how to recompress an existing session, in bounded batches.
--
-- A server without lz4 (older, or built without it) keeps pglz: the
-- migration is recorded all the same and changes nothing.

DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 140000 THEN
        BEGIN
            EXECUTE 'ALTER TABLE arbor.lines ALTER COLUMN bytes SET COMPRESSION lz4';
        EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
            -- Built without lz4: pglz stays.
            NULL;
        END;
    END IF;
END
$$;
