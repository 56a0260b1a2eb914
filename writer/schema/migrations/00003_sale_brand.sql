-- +goose Up
-- The sale page's branding (sharding.Brand, and each item's image and
-- description), kept with the sale so that a preload from PostgreSQL
-- restores it in Redis. NULL and '' mean none.
ALTER TABLE sales ADD COLUMN IF NOT EXISTS brand jsonb;
ALTER TABLE items ADD COLUMN IF NOT EXISTS image text NOT NULL DEFAULT '';
ALTER TABLE items ADD COLUMN IF NOT EXISTS description text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE items DROP COLUMN IF EXISTS description;
ALTER TABLE items DROP COLUMN IF EXISTS image;
ALTER TABLE sales DROP COLUMN IF EXISTS brand;
