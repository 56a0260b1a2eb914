-- +goose Up
-- order_history is the life of every order, one row per status it reached,
-- written by the writer in the transaction that made the change (so a row
-- exists exactly when the change was committed). cause says what made it:
-- reserve (the reservation persisted), pay, cancel, expiry, failure (refused
-- by PostgreSQL; detail is the reason, orders.failure) and ghost-sweep (a
-- reservation the writer's sweep found in Redis with no journal entry and no
-- order; recorded FAILED and its unit returned). A status is reached at most
-- once, hence the key; a retried batch writes nothing twice. The key, led by
-- the sale, is the table's only index: the report reads a sale's rows, and
-- the writer's batch pays for one index per row, not two. There is no
-- foreign key to orders on purpose: an order row deleted by hand leaves its
-- history, and `flashctl sale report` names it.
CREATE TABLE IF NOT EXISTS order_history (
    order_id uuid NOT NULL,
    sale_id  bigint NOT NULL,
    item_id  bigint NOT NULL,
    user_id  bigint NOT NULL,
    status   text NOT NULL CHECK (status IN ('PENDING', 'PAID', 'EXPIRED', 'CANCELLED', 'FAILED')),
    cause    text NOT NULL CHECK (cause IN ('reserve', 'pay', 'cancel', 'expiry', 'failure', 'ghost-sweep')),
    detail   text,
    at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (sale_id, order_id, status)
);

-- sale_events are the operator's acts on a sale, written by flashctl after
-- Redis took them: pause, resume, end (detail {}) and reshard (detail
-- {"from":N,"to":M,"units":{"<item>":units}}). The kill switch never waits on
-- PostgreSQL: an act whose row could not be written is still in force, and
-- flashctl says the row is missing.
CREATE TABLE IF NOT EXISTS sale_events (
    id      bigserial PRIMARY KEY,
    sale_id bigint NOT NULL,
    kind    text NOT NULL CHECK (kind IN ('pause', 'resume', 'end', 'reshard')),
    detail  jsonb NOT NULL DEFAULT '{}',
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS sale_events_sale ON sale_events (sale_id, at);

-- +goose Down
DROP TABLE IF EXISTS sale_events;
DROP TABLE IF EXISTS order_history;
