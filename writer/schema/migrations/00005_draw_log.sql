-- +goose Up
-- draw_log is a copy of each drawn sale's draw log (package sharding/draw's
-- Log: commitment, freeze, beacon, reveal, aborts with their reasons), kept
-- so that the log outlives the Redis key it is written to, which expires a
-- day after the sale. The writer copies the entries PostgreSQL lacks from
-- Redis once the whole log there checks (draw.CheckLog); hash is the
-- entry's chained hash (64 lower-case hex) and body its JSON text exactly as
-- hashed. Rows are only ever inserted: an entry offered again with another
-- hash at a (sale, seq) held is refused, never written over
-- (schema.InsertDrawLog). The rows go with their sale (tests drop theirs).
CREATE TABLE IF NOT EXISTS draw_log (
    sale_id     bigint NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
    seq         int NOT NULL CHECK (seq >= 0),
    hash        text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
    body        text NOT NULL CHECK (body LIKE '{%'),
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (sale_id, seq)
);

-- +goose Down
DROP TABLE IF EXISTS draw_log;
