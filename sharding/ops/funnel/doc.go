// Package funnel reads a sale's funnel as the gateways counted it (the
// api.Funnel* counters: page loads, tickets, admissions, purchases by
// answer), from each gateway's admin /metrics (ReadGateways) or from
// Prometheus, which keeps a sale's counters after the gateways drop them
// (ReadPrometheus), and renders it for the closing report. The counts are
// of answers, not of people, and not exact.
package funnel
