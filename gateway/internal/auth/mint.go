package auth

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

// MintHS256 returns a compact HS256 JWT with sub (decimal), exp and the extra
// claims (which may override sub and exp), signed with secret. It exists for
// tests, benchmarks, the load generator and the development sign-in of a
// gateway started with -dev; otherwise the gateway never mints tokens.
func MintHS256(secret []byte, sub uint64, exp time.Time, extra map[string]any) (string, error) {
	tok := jwt.New()
	if err := tok.Set(jwt.SubjectKey, strconv.FormatUint(sub, 10)); err != nil {
		return "", fmt.Errorf("setting sub: %w", err)
	}
	if err := tok.Set(jwt.ExpirationKey, exp.Unix()); err != nil {
		return "", fmt.Errorf("setting exp: %w", err)
	}
	for k, v := range extra {
		if err := tok.Set(k, v); err != nil {
			return "", fmt.Errorf("setting %s: %w", k, err)
		}
	}
	b, err := jwt.Sign(tok, jwt.WithKey(jwa.HS256, secret))
	if err != nil {
		return "", fmt.Errorf("signing token: %w", err)
	}
	return string(b), nil
}
