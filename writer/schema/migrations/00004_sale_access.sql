-- +goose Up
-- The sale's front door and fair access (ticketRequired, waitingRoom,
-- powDifficulty, access, raffle, presale, the draw's commitment) as JSON,
-- and the draw's secret seed, kept with the sale so that a preload from
-- PostgreSQL alone (Redis lost the sale) restores them. NULL means none.
ALTER TABLE sales ADD COLUMN IF NOT EXISTS front_door jsonb;
ALTER TABLE sales ADD COLUMN IF NOT EXISTS draw_seed text;

-- +goose Down
ALTER TABLE sales DROP COLUMN IF EXISTS draw_seed;
ALTER TABLE sales DROP COLUMN IF EXISTS front_door;
