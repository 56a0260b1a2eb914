// Package config is the configuration every flash-sale binary shares: the
// gateway, the writer, bench and flashctl register the common settings
// (Common: Redis, Kafka, PostgreSQL, admin address, logging, shutdown and
// their TLS and authentication) and their own settings on one Set, which reads
// command-line flags and the environment with one naming rule:
//
//	flag -some-name  <->  environment FLASHSALE_SOME_NAME
//
// A flag wins over the environment. Two settings also read the conventional
// names the tools around them use: -database-url reads DATABASE_URL and
// -kafka-brokers reads KAFKA_BROKERS (beside FLASHSALE_DATABASE_URL and
// FLASHSALE_KAFKA_BROKERS; two of them set to different values is an error).
// A setting has one name: the project keeps no aliases for old spellings
// (it has never been released), so an old flag is an unknown flag.
//
// Secrets (Redis, Kafka and PostgreSQL passwords) are read from files only
// (-redis-password-file and so on, say a mounted Kubernetes Secret), never
// from a flag, which any local user can read in ps. They are held as Secret,
// whose every formatting is redacted.
//
// The defaults of the common settings are written here once (DefaultRedis,
// DefaultKafka, DefaultDatabaseURL); a binary passes its own admin address
// and shutdown grace to NewCommon.
//
// No library: the flag package plus this file's table do what is needed
// (conventional names, secrets, per-binary help), and peterbourgon/ff (only
// v3 is available here) maps environment names by a prefix alone, with no
// conventional names and no redaction.
package config
