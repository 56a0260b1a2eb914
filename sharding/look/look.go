// Package look is the look of the project's reports: the stylesheet the
// bench report (bench/internal/report) and flashctl's sale report
// (sharding/ops/ledger) both inline, and the way both write a count (Commas,
// Count), so that an operator reads the two the same way. Each page stays
// self-contained: no file to fetch, no CDN.
package look

import (
	_ "embed"
	"html/template"
)

//go:embed look.css
var css string

// CSS is the stylesheet, for a page's <style> element. Its classes: cards
// (.cards, .card), tables (.scroll around a table, caption), figures (.chart,
// .plot, .legend, .note), warnings (.warn), verdicts (.pass, .fail), bars
// (.bar in a table.bars), key-value lists (dl.meta) and the skip link (.skip).
var CSS = template.CSS(css)
