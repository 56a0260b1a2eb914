-- +goose Up
CREATE TABLE IF NOT EXISTS sales (
    id             bigint PRIMARY KEY,
    name           text NOT NULL,
    starts_at      timestamptz NOT NULL,
    ends_at        timestamptz NOT NULL,
    payment_window interval NOT NULL DEFAULT '10 minutes',
    shards         int NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (ends_at > starts_at)
);

CREATE TABLE IF NOT EXISTS items (
    id       bigint PRIMARY KEY,
    sale_id  bigint NOT NULL REFERENCES sales (id),
    name     text NOT NULL,
    price    bigint NOT NULL CHECK (price >= 0),
    currency text NOT NULL,
    quantity bigint NOT NULL CHECK (quantity > 0),
    sold     bigint NOT NULL DEFAULT 0,
    CONSTRAINT items_sold_le_quantity CHECK (sold <= quantity),
    CONSTRAINT items_sold_ge_zero CHECK (sold >= 0)
);
CREATE INDEX IF NOT EXISTS items_sale_id ON items (sale_id);

-- orders has no foreign key to items: an event for an unknown item must still
-- land as a visible FAILED row rather than abort its batch.
CREATE TABLE IF NOT EXISTS orders (
    id         uuid PRIMARY KEY,
    sale_id    bigint NOT NULL,
    item_id    bigint NOT NULL,
    user_id    bigint NOT NULL,
    status     text NOT NULL CHECK (status IN ('PENDING', 'PAID', 'EXPIRED', 'CANCELLED', 'FAILED')),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    paid_at    timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    failure    text
);
CREATE UNIQUE INDEX IF NOT EXISTS orders_one_active_per_user
    ON orders (sale_id, user_id) WHERE status IN ('PENDING', 'PAID');
CREATE INDEX IF NOT EXISTS orders_pending_expiry ON orders (expires_at) WHERE status = 'PENDING';
CREATE INDEX IF NOT EXISTS orders_sale_item_status ON orders (sale_id, item_id, status);

-- releases is the outbox of Redis effects of committed status changes: one row
-- per order that left PENDING. EXPIRED and CANCELLED rows return the unit to
-- Redis (release.lua, guarded per order); PAID and FAILED rows only record the
-- status for the gateway's GET. done_at is set once Redis has applied the row.
CREATE TABLE IF NOT EXISTS releases (
    order_id   uuid PRIMARY KEY,
    sale_id    bigint NOT NULL,
    item_id    bigint NOT NULL,
    user_id    bigint NOT NULL,
    status     text NOT NULL CHECK (status IN ('EXPIRED', 'CANCELLED', 'PAID', 'FAILED')),
    created_at timestamptz NOT NULL DEFAULT now(),
    done_at    timestamptz
);
CREATE INDEX IF NOT EXISTS releases_undone ON releases (created_at) WHERE done_at IS NULL;

-- pending_actions holds a pay or cancel that arrived before its reservation was
-- persisted; the reservation applies it when it lands.
CREATE TABLE IF NOT EXISTS pending_actions (
    order_id   uuid PRIMARY KEY,
    action     text NOT NULL CHECK (action IN ('PAID', 'CANCELLED')),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE IF EXISTS pending_actions;
DROP TABLE IF EXISTS releases;
DROP TABLE IF EXISTS orders;
DROP TABLE IF EXISTS items;
DROP TABLE IF EXISTS sales;
