package journal

// Hooks for the external tests.
var (
	ParseRound   = parseRound
	ParseEntries = parseEntries
)
