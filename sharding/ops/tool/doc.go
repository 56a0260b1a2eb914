// Package tool is what every flashctl command stands on: the stores it runs
// over (Tool: a Redis Cluster client, its stock.Store and a PostgreSQL pool,
// opened with sharding/config's settings by Connect), a sale's description
// read with a message an operator can act on (Tool.LoadSale, SaleState), the
// report every command returns and how it renders (Report, Write, Table),
// and the errors that pick flashctl's exit code (UsageError: 2,
// ConnectError: 3). It also holds the little that several commands share: an
// operator's act recorded for the closing ledger (Tool.RecordAct), when a
// sale's access keys expire (AccessExpiry), where a shard's keys live
// (Placement), and where `--file -` reads (Stdin).
package tool
