package auth

import (
	"bytes"
	"slices"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The member names verify and checkClaims decode from the JOSE header and
// the claims set.
var (
	headerFields = newFieldSet("alg", "kid", "crit", "b64")
	claimFields  = newFieldSet("sub", "exp", "nbf", "iat", "iss", "aud")
)

// fieldSet is a list of struct field names with the hashes of their folded
// forms (see nameHashes).
type fieldSet struct {
	names  []string
	folded []uint64
}

func newFieldSet(names ...string) fieldSet {
	fs := fieldSet{names: names}
	for _, n := range names {
		_, f := nameHashes([]byte(n))
		fs.folded = append(fs.folded, f)
	}
	return fs
}

// stackMembers is how many member names ambiguous tracks before it
// allocates; real headers have three or four members and claim sets a dozen.
const stackMembers = 32

// member is one top-level member name of an object: its raw bytes between
// the quotes, obj[start:end], and the hash of its unescaped runes.
type member struct {
	hash       uint64
	start, end int
}

// ambiguous reports whether the JSON object obj, which json.Unmarshal has
// already accepted, could be read differently by another parser, because
//
//   - two top-level members have the same name once unescaped (so
//     {"exp":1,"exp":2000000000} and {"sub":"1","s\u0075b":"2"} count), or
//   - a member's name matches one of fields only case-insensitively, under
//     the Unicode folding encoding/json uses to fill struct fields ("SUB",
//     "ſub" and "\u017fub" all fill the Sub field).
//
// RFC 7515 section 4 (header parameters) and RFC 7519 section 4 (claims)
// let a parser either refuse duplicate names or keep the last one;
// encoding/json keeps the last and matches field names case-insensitively,
// and that is exactly how one token names one user to us and another user to
// every other parser, the kind of disagreement RFC 8725 (the JWT BCP) asks
// verifiers to close by validating strictly. So such a token is refused.
//
// Members of nested values are not looked at: nothing nested is decoded.
// Anything but an object is not ambiguous (the caller has refused it already
// or reads it as absent claims). The header is scanned before its signature
// is checked, so the cost stays linear in the object's length (past eight
// members the names are sorted by hash rather than compared pairwise), and
// nothing is allocated for objects of up to stackMembers members.
func ambiguous(obj []byte, fields fieldSet) bool {
	var stack [stackMembers]member
	ms := stack[:0]
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	for i++; ; {
		i = skipSpace(obj, i)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			break // '}' of valid JSON
		}
		end := stringEnd(obj, i)
		if end < 0 {
			return true // not valid JSON after all
		}
		m := member{start: i + 1, end: end}
		name := obj[m.start:m.end]
		var folded uint64
		m.hash, folded = nameHashes(name)
		for k, f := range fields.folded {
			if f == folded && !exactEqual(name, fields.names[k]) && foldEqual(name, fields.names[k]) {
				return true
			}
		}
		ms = append(ms, m)
		i = skipSpace(obj, end+1)
		if i >= len(obj) || obj[i] != ':' {
			return true
		}
		if i = skipValue(obj, skipSpace(obj, i+1)); i < 0 {
			return true
		}
	}
	if len(ms) > 8 {
		slices.SortFunc(ms, func(a, b member) int {
			switch {
			case a.hash < b.hash:
				return -1
			case a.hash > b.hash:
				return 1
			}
			return 0
		})
	}
	for a := range ms {
		for b := a + 1; b < len(ms); b++ {
			if ms[a].hash != ms[b].hash {
				if len(ms) > 8 {
					break // sorted: no later b shares a's hash
				}
				continue
			}
			if sameName(obj[ms[a].start:ms[a].end], obj[ms[b].start:ms[b].end]) {
				return true
			}
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index of the quote closing the string that opens at
// b[i], or -1: the next quote not escaped by an odd run of backslashes.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		odd := false
		for k := i - 1; b[k] == '\\'; k-- {
			odd = !odd
		}
		if !odd {
			return i
		}
	}
	return -1
}

// skipValue returns the index just past the JSON value starting at b[i], or
// -1 if it does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		if i = stringEnd(b, i); i < 0 {
			return -1
		}
		return i + 1
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				if i = stringEnd(b, i); i < 0 {
					return -1
				}
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// nextRune decodes the character at s[i] of a JSON string's raw contents
// exactly as encoding/json unquotes it (escapes, surrogate pairs, U+FFFD for
// invalid UTF-8 and lone surrogates) and returns it with the index of the
// next one.
func nextRune(s []byte, i int) (rune, int) {
	c := s[i]
	if c < utf8.RuneSelf && c != '\\' {
		return rune(c), i + 1
	}
	if c != '\\' {
		r, n := utf8.DecodeRune(s[i:])
		return r, i + n
	}
	if i+1 >= len(s) {
		return utf8.RuneError, len(s)
	}
	switch s[i+1] {
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	case 'u':
		r := hex4(s[i:])
		if r < 0 {
			return utf8.RuneError, len(s)
		}
		if !utf16.IsSurrogate(r) {
			return r, i + 6
		}
		if dec := utf16.DecodeRune(r, hex4(s[i+6:])); dec != unicode.ReplacementChar {
			return dec, i + 12
		}
		return unicode.ReplacementChar, i + 6
	}
	return rune(s[i+1]), i + 2 // \" \\ \/
}

// hex4 returns the code unit of a \uXXXX escape at the start of s, or -1.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		v := hexDigit(c)
		if v < 0 {
			return -1
		}
		r = r<<4 | v
	}
	return r
}

func hexDigit(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

// nameHashes returns FNV-1a hashes of the unescaped runes of a raw member
// name and of their folded forms (see fold).
func nameHashes(s []byte) (exact, folded uint64) {
	const prime = 1099511628211
	exact, folded = 14695981039346656037, 14695981039346656037
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf && c != '\\' {
			exact = (exact ^ uint64(c)) * prime
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			folded = (folded ^ uint64(c)) * prime
			i++
			continue
		}
		var r rune
		r, i = nextRune(s, i)
		exact = (exact ^ uint64(r)) * prime
		folded = (folded ^ uint64(fold(r))) * prime
	}
	return exact, folded
}

// sameName reports whether two raw member names unescape to the same runes.
func sameName(a, b []byte) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		var ra, rb rune
		ra, i = nextRune(a, i)
		rb, j = nextRune(b, j)
		if ra != rb {
			return false
		}
	}
	return i == len(a) && j == len(b)
}

// exactEqual reports whether the raw member name s unescapes to f.
func exactEqual(s []byte, f string) bool {
	i, j := 0, 0
	for i < len(s) && j < len(f) {
		var r rune
		r, i = nextRune(s, i)
		rf, n := utf8.DecodeRuneInString(f[j:])
		if r != rf {
			return false
		}
		j += n
	}
	return i == len(s) && j == len(f)
}

// foldEqual reports whether the raw member name s unescapes to a string that
// encoding/json matches to the field name f: equal under its folding, which
// upper-cases ASCII and maps any other rune r to ToUpper(ToLower(r)), the
// relation of bytes.EqualFold.
func foldEqual(s []byte, f string) bool {
	i, j := 0, 0
	for i < len(s) && j < len(f) {
		var r rune
		r, i = nextRune(s, i)
		rf, n := utf8.DecodeRuneInString(f[j:])
		if fold(r) != fold(rf) {
			return false
		}
		j += n
	}
	return i == len(s) && j == len(f)
}

func fold(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	return unicode.ToUpper(unicode.ToLower(r))
}
