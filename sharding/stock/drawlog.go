package stock

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/draw"
)

// A sale's draw log and tree-head key in Redis (package draw): the log is a
// list of "<hash hex> <body>" on the room's slot, appended by draw_log.lua
// once per sequence number; the head key is written once by `flashctl sale
// create` (SET NX) and read by the gateways at the freeze.

var drawLogScript = rueidis.NewLuaScript(lua.DrawLog)

// DrawLog reads sale saleID's log, every entry parsed (not yet checked:
// draw.CheckLog does that).
func (s *Store) DrawLog(ctx context.Context, saleID int64) ([]draw.Entry, error) {
	k := sharding.RoomLogKey(saleID)
	v, err := s.c.Do(ctx, s.c.B().Lrange().Key(k).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("reading the draw log of sale %d (%s): %w", saleID, k, err)
	}
	out := make([]draw.Entry, len(v))
	for i, e := range v {
		if out[i], err = ParseLogEntry(e); err != nil {
			return nil, fmt.Errorf("the draw log of sale %d (%s), entry %d: %w", saleID, k, i, err)
		}
	}
	return out, nil
}

// ParseLogEntry parses one stored entry, "<hash hex> <body>".
func ParseLogEntry(e string) (draw.Entry, error) {
	h, body, ok := strings.Cut(e, " ")
	if !ok || !strings.HasPrefix(body, "{") {
		return draw.Entry{}, fmt.Errorf("%.40q… is not \"<hash> <json>\"", e)
	}
	hash, err := draw.ParseHash(h)
	if err != nil {
		return draw.Entry{}, err
	}
	return draw.Entry{Body: []byte(body), Hash: hash}, nil
}

// LogDrawEvent reads sale saleID's log, checks it, and appends e to it
// (AppendDrawEvent); when another writer appended first, e is not appended
// and false is returned with the log as it is now. A log that does not
// check is an error, and nothing is appended to it.
func (s *Store) LogDrawEvent(ctx context.Context, saleID int64, e *draw.Event, expire time.Time) ([]draw.Entry, bool, error) {
	log, err := s.DrawLog(ctx, saleID)
	if err != nil {
		return nil, false, err
	}
	if _, err := draw.CheckLog(saleID, log); err != nil {
		return nil, false, fmt.Errorf("sale %d: %w", saleID, err)
	}
	return s.AppendDrawEvent(ctx, saleID, log, e, expire)
}

// AppendDrawEvent appends e to sale saleID's log right after after, the log
// as the caller read it and decided on; if the log has changed since (another
// writer appended), nothing is appended and false is returned with the log
// as it is now, for the caller to decide again: a step two writers saw
// missing is logged once.
func (s *Store) AppendDrawEvent(ctx context.Context, saleID int64, after []draw.Entry, e *draw.Event, expire time.Time) ([]draw.Entry, bool, error) {
	var prev draw.Hash
	if len(after) > 0 {
		prev = after[len(after)-1].Hash
	}
	e.Seq, e.Sale = len(after), saleID
	en, err := draw.NewEntry(prev, e)
	if err != nil {
		return nil, false, err
	}
	k := sharding.RoomLogKey(saleID)
	v, err := drawLogScript.Exec(ctx, s.c, []string{k},
		[]string{fmt.Sprint(e.Seq), prev.String(), en.Hash.String() + " " + string(en.Body), fmt.Sprint(expire.UnixMilli())}).AsIntSlice()
	if err != nil || len(v) != 2 {
		return nil, false, fmt.Errorf("appending %s to the draw log of sale %d (%s): %v %w", e.Event, saleID, k, v, err)
	}
	if v[0] == 1 {
		return append(after[:len(after):len(after)], en), true, nil
	}
	log, err := s.DrawLog(ctx, saleID) // another writer was first: theirs stands
	return log, false, err
}

// PutDrawHeadKey writes the secret key of sale saleID's tree head unless
// the key holds one already, and returns the one it holds.
func (s *Store) PutDrawHeadKey(ctx context.Context, saleID int64, key ed25519.PrivateKey, expireAt time.Time) (ed25519.PrivateKey, error) {
	k := sharding.RoomHeadKeyKey(saleID)
	v := hex.EncodeToString(key.Seed())
	old, err := s.doAck(ctx, s.c.B().Set().Key(k).Value(v).Nx().Get().Exat(expireAt).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return key, nil
	case err != nil:
		return nil, fmt.Errorf("writing the tree-head key of sale %d (%s): %w", saleID, k, err)
	}
	return parseHeadKey(saleID, old)
}

// DrawHeadKey reads the secret key of sale saleID's tree head.
func (s *Store) DrawHeadKey(ctx context.Context, saleID int64) (ed25519.PrivateKey, error) {
	k := sharding.RoomHeadKeyKey(saleID)
	v, err := s.c.Do(ctx, s.c.B().Get().Key(k).Build()).ToString()
	if err != nil {
		return nil, fmt.Errorf("reading the tree-head key of sale %d (%s): %w", saleID, k, err)
	}
	return parseHeadKey(saleID, v)
}

func parseHeadKey(saleID int64, v string) (ed25519.PrivateKey, error) {
	b, err := hex.DecodeString(v)
	if err != nil || len(b) != ed25519.SeedSize {
		return nil, fmt.Errorf("sale %d: %s holds %.16q…, not a tree-head key (64 hex digits)", saleID, sharding.RoomHeadKeyKey(saleID), v)
	}
	return ed25519.NewKeyFromSeed(b), nil
}

// PutDrawBeacon records sig as the signature of sale saleID's beacon round
// in its room state unless one is recorded already, and returns the one
// recorded (hex). The caller verified sig; the gateways verify what they
// read all the same.
func (s *Store) PutDrawBeacon(ctx context.Context, saleID int64, sig []byte, expireAt time.Time) (string, error) {
	k := sharding.RoomStateKey(saleID)
	v := hex.EncodeToString(sig)
	res := s.doAckAll(ctx, rueidis.Commands{
		s.c.B().Hsetnx().Key(k).Field("beacon").Value(v).Build(),
		s.c.B().Pexpireat().Key(k).MillisecondsTimestamp(expireAt.UnixMilli()).Nx().Build(),
	})
	if res != nil {
		return "", fmt.Errorf("recording the beacon of sale %d (%s): %w", saleID, k, res)
	}
	held, err := s.c.Do(ctx, s.c.B().Hget().Key(k).Field("beacon").Build()).ToString()
	if err != nil {
		return "", fmt.Errorf("reading the beacon of sale %d (%s): %w", saleID, k, err)
	}
	return held, nil
}

// RestoreDrawLog writes entries, a log PostgreSQL kept, back as sale
// saleID's log in Redis, entry by entry through draw_log.lua, after checking
// them; a log Redis holds already is left as it is, and the one held is
// returned.
func (s *Store) RestoreDrawLog(ctx context.Context, saleID int64, entries []draw.Entry, expire time.Time) ([]draw.Entry, error) {
	if _, err := draw.CheckLog(saleID, entries); err != nil {
		return nil, fmt.Errorf("sale %d: the log to restore: %w", saleID, err)
	}
	k := sharding.RoomLogKey(saleID)
	var prev draw.Hash
	for i, en := range entries {
		v, err := drawLogScript.Exec(ctx, s.c, []string{k},
			[]string{fmt.Sprint(i), prev.String(), en.Hash.String() + " " + string(en.Body), fmt.Sprint(expire.UnixMilli())}).AsIntSlice()
		if err != nil || len(v) != 2 {
			return nil, fmt.Errorf("restoring entry %d of the draw log of sale %d (%s): %v %w", i, saleID, k, v, err)
		}
		if v[0] == 0 {
			break // Redis holds a log already
		}
		prev = en.Hash
	}
	return s.DrawLog(ctx, saleID)
}
