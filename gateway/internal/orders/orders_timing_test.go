package orders

import (
	"context"
	"testing"
	"time"
)

// BenchmarkHand measures one hand-off to an in-process kfake broker: copy,
// encode, produce, wait for the ack (sequential, so linger dominates).
func BenchmarkHand(b *testing.B) {
	br := newBroker(b)
	p, err := New(Config{Brokers: br.c.ListenAddrs(), Topic: topic, Linger: time.Microsecond}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close(context.Background()) }()
	ev := event(1)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Hand(ev, 5*time.Second, false); err != nil {
			b.Fatal(err)
		}
	}
}
