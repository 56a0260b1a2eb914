// Package opstest holds what the tests of flashctl's packages share: an
// environment on the local stack (a Tool over its Redis and PostgreSQL), sales
// planted in PostgreSQL and preloaded, then dropped; a shopper that buys as a
// gateway does; the writer's part played (an order row, the sold count, a
// consumer lag to read); flashctl's Main run with the stack's addresses; and
// sale files to parse. Only tests import it: like test files, it plants rows
// the writer would never write, with SQL of its own (writer/schema's
// TestNoSQLOutsideTheWriter exempts it for that reason).
package opstest

// QueuePresaleYAML is a waiting room (a drawn sale, as a raffle is) with a
// presale phase open to a claim and to a list, capped at 3 of its 10 units
// (a raffle cannot have a presale: its draw promises every unit).
const QueuePresaleYAML = `
id: 42
name: Winter queue
startsAt: 2026-12-01T10:00:00Z
endsAt: 2026-12-01T11:00:00Z
ticketRequired: true
access: queue
waitingRoom: {preQueue: 10m}
presale: {startsAt: 2026-12-01T09:30:00Z, claim: tier, values: [gold, silver], list: true, cap: 3}
items:
  - {id: 4201, name: Sneaker, price: 12900, currency: EUR, quantity: 10}
`
