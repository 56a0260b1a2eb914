// Package sale is the description of a flash sale: the model a sale file is
// read into, that `flashctl sale create` writes to PostgreSQL and, as JSON, to
// Redis under sharding.SaleKey, and that gateways, writers and the ops tool
// read back. It owns the fields and their JSON names (sale.go: the sale, its
// items, its payment window and the operator's state; brand.go: how the sale
// page looks; access.go: fair access, its modes, raffle window, presale and
// draw commitment; room.go: the waiting room's settings) and Validate, which
// refuses a bad description with the field named as the sale file spells it.
//
// Where the sale's stock lives is package sharding's: its keys, hash tags,
// placement and slots. This package imports sharding for two bounds only
// (MaxSaleID, which order ids carry, and MaxShards); sharding imports nothing
// of it.
package sale
