package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
)

// ClaimHas reports whether the claims of token, which Verify accepted,
// carry claim name with one of values: a string claim equal to one, or an
// array of strings holding one. A claim of another type holds none. It
// decodes the claims, so it allocates; callers cache its answer.
func ClaimHas(token []byte, name string, values []string) bool {
	i := bytes.IndexByte(token, '.')
	if i < 0 {
		return false
	}
	rest := token[i+1:]
	j := bytes.IndexByte(rest, '.')
	if j < 0 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(string(rest[:j]))
	if err != nil {
		return false
	}
	var claims map[string]json.RawMessage
	if json.Unmarshal(payload, &claims) != nil {
		return false
	}
	raw, ok := claims[name]
	if !ok {
		return false
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return contains(values, one)
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return false
	}
	for _, v := range many {
		if contains(values, v) {
			return true
		}
	}
	return false
}

func contains(values []string, v string) bool {
	for _, w := range values {
		if w == v {
			return true
		}
	}
	return false
}
