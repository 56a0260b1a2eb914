package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"flashsale/gateway/internal/ticket"
	"flashsale/sharding/sale"
)

const ticketPath = "/api/flash-sales/sales/77/ticket"

// TestTicketEndpoint walks the ticket endpoint's answers; none of them
// touches Redis.
func TestTicketEndpoint(t *testing.T) {
	now := time.Now()
	early := newEnv(t, envOpt{stockPerShard: 1, start: now.Add(time.Hour), end: now.Add(2 * time.Hour)})
	c := early.serve("10.0.0.1")
	startsAt := early.sale.StartsAt.UTC().Format(rfc3339Milli)
	want(t, do(t, c, "POST", ticketPath, early.token(1)), 403, `{"error":"SALE_NOT_STARTED","startsAt":"`+startsAt+`"}`)

	ended := newEnv(t, envOpt{stockPerShard: 1, start: now.Add(-2 * time.Hour), end: now.Add(-time.Hour)})
	want(t, do(t, ended.serve("10.0.0.1"), "POST", ticketPath, ended.token(1)), 410, `{"error":"SALE_ENDED"}`)

	sold := newEnv(t, envOpt{stockPerShard: 0})
	want(t, do(t, sold.serve("10.0.0.1"), "POST", ticketPath, sold.token(1)), 410, `{"error":"SOLD_OUT"}`)

	e := newEnv(t, envOpt{stockPerShard: 1})
	c = e.serve("10.0.0.1")
	want(t, do(t, c, "POST", "/api/flash-sales/sales/78/ticket", e.token(1)), 404, `{"error":"SALE_NOT_FOUND"}`)
	want(t, do(t, c, "POST", "/api/flash-sales/sales/x7/ticket", e.token(1)), 404, `{"error":"SALE_NOT_FOUND"}`)
	want(t, do(t, c, "GET", ticketPath, e.token(1)), 405, `{"error":"METHOD_NOT_ALLOWED"}`)
	want(t, do(t, c, "POST", ticketPath, ""), 401, `{"error":"UNAUTHORIZED"}`)
	want(t, do(t, c, "POST", ticketPath, "not.a.token"), 401, `{"error":"UNAUTHORIZED"}`)

	at := time.Now()
	r := do(t, c, "POST", ticketPath, e.token(42))
	want(t, r, 200, "")
	var got struct{ Status, Ticket, ExpiresAt string }
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	exp, err := time.Parse(time.RFC3339, got.ExpiresAt)
	if got.Status != "ADMITTED" || len(got.Ticket) != ticket.TextLen || err != nil ||
		exp.Before(at.Add(ticket.DefaultLifetime-time.Second)) || exp.After(time.Now().Add(ticket.DefaultLifetime)) {
		t.Fatalf("answer %s (expiry %v, %v)", r.body, exp, err)
	}
	if r.header["Cache-Control"] != "no-store" {
		t.Fatalf("Cache-Control %q", r.header["Cache-Control"])
	}
	if err := e.tickets.Verify([]byte(got.Ticket), 42, 77, e.cat.Snapshot().Sale(77).Start, time.Now()); err != nil {
		t.Fatalf("issued ticket: %v", err)
	}
	for _, env := range []*env{early, ended, sold, e} {
		if n := env.st.redisCalls(); n != 0 {
			t.Fatalf("the ticket endpoint made %d Redis calls", n)
		}
	}
}

// TestTicketRequired: a sale with ticketRequired refuses purchases without a
// valid ticket with 403 and no Redis call, and buys with one.
func TestTicketRequired(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 5, ticketRequired: true})
	c := e.serve("10.0.0.1")
	now := time.Now()
	start := e.sale.StartsAt
	otherKeys, _ := ticket.New([]byte("another-ticket-key-012345"), nil, 0)
	forged, _ := otherKeys.Append(nil, 42, 77, now)
	otherSale, _ := e.tickets.Append(nil, 42, 78, now)
	valid := e.ticket(42, now)
	tampered := []byte(valid)
	tampered[20] ^= 'A' ^ 'B'
	cases := []struct {
		name, ticket, want string
		header             string
	}{
		{"none", "", "TICKET_REQUIRED", "X-Purchase-Ticket"},
		{"forged (another key)", string(forged), "TICKET_INVALID", "X-Purchase-Ticket"},
		{"tampered", string(tampered), "TICKET_INVALID", "X-Purchase-Ticket"},
		{"expired", e.ticket(42, now.Add(-ticket.DefaultLifetime-time.Second)), "TICKET_INVALID", "X-Purchase-Ticket"},
		{"another user's", e.ticket(43, now), "TICKET_INVALID", "X-Purchase-Ticket"},
		{"another sale's", string(otherSale), "TICKET_INVALID", "X-Purchase-Ticket"},
		{"issued before the start", e.ticket(42, start.Add(-time.Second)), "TICKET_INVALID", "X-Purchase-Ticket"},
		{"malformed: short", valid[:20], "TICKET_INVALID", "x-purchase-ticket"},
		{"malformed: not base64", strings.Repeat("!", ticket.TextLen), "TICKET_INVALID", "X-Purchase-Ticket"},
		{"malformed: the bearer token", e.token(42), "TICKET_INVALID", "X-Purchase-Ticket"},
	}
	for _, tc := range cases {
		var hdr []string
		if tc.ticket != "" {
			hdr = []string{tc.header, tc.ticket}
		}
		want(t, do(t, c, "POST", purchasePath, e.token(42), hdr...), 403, `{"error":"`+tc.want+`"}`)
		if n := e.st.redisCalls(); n != 0 {
			t.Fatalf("%s: %d Redis calls, want none", tc.name, n)
		}
	}
	// Token first: a bad token with a good ticket is 401.
	want(t, do(t, c, "POST", purchasePath, "", "X-Purchase-Ticket", valid), 401, `{"error":"UNAUTHORIZED"}`)
	r := do(t, c, "POST", purchasePath, e.token(42), "x-purchase-ticket", valid)
	want(t, r, 202, "")
	if n := e.st.redisCalls(); n != 1 {
		t.Fatalf("a valid ticket made %d Redis calls, want 1 (the reservation)", n)
	}
}

// TestTicketRotation: gateways that rotated (new key signs, old key still
// verifies) accept tickets of the old key until they expire.
func TestTicketRotation(t *testing.T) {
	old, _ := ticket.New(testTicketKey, nil, 0)
	rotated, _ := ticket.New([]byte("the-new-ticket-key-9876543"), testTicketKey, 0)
	e := newEnv(t, envOpt{stockPerShard: 5, ticketRequired: true, tickets: rotated})
	c := e.serve("10.0.0.1")
	issued, _ := old.Append(nil, 42, 77, time.Now())
	want(t, do(t, c, "POST", purchasePath, e.token(42), "X-Purchase-Ticket", string(issued)), 202, "")
	fresh, _ := rotated.Append(nil, 43, 77, time.Now())
	want(t, do(t, c, "POST", purchasePath, e.token(43), "X-Purchase-Ticket", string(fresh)), 202, "")
	if err := old.Verify(fresh, 43, 77, 0, time.Now()); err == nil {
		t.Fatal("the old key alone accepts a ticket of the new key")
	}
	stale, _ := old.Append(nil, 44, 77, time.Now().Add(-ticket.DefaultLifetime))
	want(t, do(t, c, "POST", purchasePath, e.token(44), "X-Purchase-Ticket", string(stale)), 403, `{"error":"TICKET_INVALID"}`)
}

// TestNoTicketNeededByDefault: ticketRequired is off unless the sale says so.
func TestNoTicketNeededByDefault(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 1})
	want(t, do(t, e.serve("10.0.0.1"), "POST", purchasePath, e.token(42)), 202, "")
}

// TestPresaleTicket: in a presale phase, a token without the claim is told
// PRESALE_ONLY with the general start; a token with it gets its ticket at
// once, but not around the proof of work the sale asks for (a presale
// ticket once skipped it).
func TestPresaleTicket(t *testing.T) {
	now := time.Now()
	o := envOpt{stockPerShard: 1, start: now.Add(time.Hour), end: now.Add(2 * time.Hour), ticketRequired: true,
		presale: &sale.Presale{StartsAt: now.Add(-time.Minute), Claim: "tier", Values: []string{"gold"}}}
	e := newEnv(t, o)
	c := e.serve("10.0.0.1")
	startsAt := e.sale.StartsAt.UTC().Format(rfc3339Milli)
	want(t, do(t, c, "POST", ticketPath, e.token(1)), 403, `{"error":"PRESALE_ONLY","startsAt":"`+startsAt+`"}`)
	want(t, do(t, c, "POST", ticketPath, e.tierToken(2, "gold")), 200, "")

	o.powDifficulty = 12
	p := newEnv(t, o)
	r := do(t, p.serve("10.0.0.1"), "POST", ticketPath, p.tierToken(2, "gold"))
	if r.status != 428 || !strings.HasPrefix(r.body, `{"error":"PROOF_REQUIRED"`) {
		t.Fatalf("a presale buyer's ticket without the proof the sale asks for: %d %s", r.status, r.body)
	}
}
