-- +goose Up
-- The secret key that signs a sealed draw's tree head (issue 59), kept with
-- the seed so that a preload from PostgreSQL alone (Redis lost the sale)
-- restores it: without it the gateways could not sign the head at the
-- freeze. NULL: a sale without one.
ALTER TABLE sales ADD COLUMN IF NOT EXISTS draw_head_key text;

-- +goose Down
ALTER TABLE sales DROP COLUMN IF EXISTS draw_head_key;
