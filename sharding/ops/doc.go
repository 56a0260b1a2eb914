// Package ops is flashctl's command tree: the operator's tool for a flash
// sale, one thin layer over the packages below it, one per concern (each
// package's doc says what it owns):
//
//	saleops     a sale's life: sale create, brand, list, show, pause, resume, end, presale load
//	drawverify  sale draw verify: a queue's or raffle's published draw, checked as anyone can
//	ledger      sale report: the closing ledger, its text, JSON and HTML page
//	funnel      the gateways' funnel counters in the closing report, from them or from Prometheus
//	plan        plan: shard count and placement from a target rate
//	preload     preload: stock from PostgreSQL into Redis
//	status      status: per shard and per item, against PostgreSQL
//	reshard     reshard: change the shard count, before or during a sale
//	reconcile   reconcile: compare Redis with PostgreSQL and repair by compare-and-set
//	toolbox     toolbox: the ops pod's check that Redis, PostgreSQL and Kafka answer
//	tool        what they share: the stores, a sale read, reports and their tables, exit errors
//
// The commands are one table (commands.go): each row has a name, a summary,
// its required flags and a function that registers the command's flags and
// returns the function that runs it. The synopsis and `--help` of every
// command are generated from those flags (help.go). A command checks its
// flags, connects (tool.Connect) and calls its package, which returns a
// report value (tool.Report); the report renders itself as aligned tables for
// people or as JSON for scripts (--json). Main parses a command line and runs
// one command, so a test drives the whole tool without a process.
//
// The tree stays on package flag rather than alecthomas/kong: the global
// settings are sharding/config's (one naming rule for flags and environment,
// files for secrets, shared with the other binaries), which kong would
// define a second time in struct tags, and the help text the runbook quotes
// is the table's own; kong would save the table's forty lines of plumbing
// and cost both.
//
// The one import of writer code from sharding is writer/schema: the tables
// and the migrations belong to the writer, which owns PostgreSQL, and every
// command that writes or reads them does so through that package's
// functions (a leaf package that imports only sharding and sharding/sale);
// no SQL is written here. Everything else crosses the other way:
// the order event's wire format is sharding/orderevent, below both ends
// (TestShardingImportsNoWriterCode in package sharding keeps it so).
//
// Exit codes: 0 success (and, for reconcile, a clean sale); 1 the command ran
// and failed: drift or an audit failure found, a draw that does not verify,
// a refusal, an error; 2 bad command line, nothing done; 3 Redis or
// PostgreSQL could not be reached, nothing done.
package ops
