package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestTicketRequiredSale: over the real stack, a sale switched to
// ticketRequired refuses a purchase without a ticket or with a bad one with
// 403 and no Redis call, hands a ticket out at its endpoint (no Redis call
// either), and sells with it.
func TestTicketRequiredSale(t *testing.T) {
	s := start(t, 5, 2, nil, "")
	sale := *s.sale
	sale.TicketRequired, sale.Version = true, sale.Version+1
	if err := s.store.StoreSale(context.Background(), &sale); err != nil {
		t.Fatal(err)
	}
	if err := s.app.Catalog.Refresh(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	tok := token(t, 4242)
	if code, body := s.doTicket(tok, ""); code != 403 || body != `{"error":"TICKET_REQUIRED"}` {
		t.Fatalf("no ticket: %d %s", code, body)
	}
	if code, body := s.doTicket(tok, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"); code != 403 || body != `{"error":"TICKET_INVALID"}` {
		t.Fatalf("forged ticket: %d %s", code, body)
	}
	code, body := s.do("POST", fmt.Sprintf("/api/flash-sales/sales/%d/ticket", sale.ID), tok)
	var got struct{ Status, Ticket string }
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || got.Status != "ADMITTED" {
		t.Fatalf("ticket endpoint: %d %s", code, body)
	}
	other := token(t, 4343)
	if code, body := s.doTicket(other, got.Ticket); code != 403 || body != `{"error":"TICKET_INVALID"}` {
		t.Fatalf("another user's ticket: %d %s", code, body)
	}
	if n := s.counter.calls.Load(); n != 0 {
		t.Fatalf("%d Redis calls before a valid ticket, want 0", n)
	}
	if code, body := s.doTicket(tok, got.Ticket); code != 202 {
		t.Fatalf("with the ticket: %d %s", code, body)
	}
	if n := s.counter.calls.Load(); n != 1 {
		t.Fatalf("%d Redis calls for the purchase, want 1", n)
	}
}

// doTicket purchases with token and, when not empty, ticket.
func (s *stack) doTicket(token, ticket string) (int, string) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://" + s.app.Addr() + s.purchasePath())
	req.Header.Set("Authorization", "Bearer "+token)
	if ticket != "" {
		req.Header.Set("X-Purchase-Ticket", ticket)
	}
	if err := s.client.DoTimeout(req, resp, 15*time.Second); err != nil {
		s.t.Fatalf("purchase: %v", err)
	}
	return resp.StatusCode(), string(resp.Body())
}
