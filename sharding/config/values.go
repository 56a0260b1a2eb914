package config

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// The flag.Value types of settings. Each takes a pointer to the field it
// fills, so the field keeps its plain type in the binary's Config struct.

// String is a string setting.
func String(p *string) *StringValue { return (*StringValue)(p) }

// StringValue is the flag.Value of String.
type StringValue string

func (v *StringValue) String() string      { return string(*v) }
func (v *StringValue) Set(s string) error  { *v = StringValue(s); return nil }
func (v *StringValue) Placeholder() string { return "string" }

// File is a string setting that names a file (the file is read later).
func File(p *string) *FileValue { return (*FileValue)(p) }

// FileValue is the flag.Value of File.
type FileValue string

func (v *FileValue) String() string      { return string(*v) }
func (v *FileValue) Set(s string) error  { *v = FileValue(s); return nil }
func (v *FileValue) Placeholder() string { return "file" }

// List is a comma-separated list; blanks around items and empty items are
// dropped.
func List(p *[]string) *ListValue { return (*ListValue)(p) }

// ListValue is the flag.Value of List.
type ListValue []string

func (v *ListValue) String() string      { return strings.Join(*v, ",") }
func (v *ListValue) Set(s string) error  { *v = SplitList(s); return nil }
func (v *ListValue) Placeholder() string { return "a,b,..." }

// SplitList splits s at commas, trimming blanks and dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Duration is a Go duration ("250ms", "1m30s").
func Duration(p *time.Duration) *DurationValue { return (*DurationValue)(p) }

// DurationValue is the flag.Value of Duration.
type DurationValue time.Duration

func (v *DurationValue) String() string      { return time.Duration(*v).String() }
func (v *DurationValue) Placeholder() string { return "duration" }
func (v *DurationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration like 250ms or 30s, not %q", s)
	}
	*v = DurationValue(d)
	return nil
}

// Int is a decimal integer.
func Int(p *int) *IntValue { return (*IntValue)(p) }

// IntValue is the flag.Value of Int.
type IntValue int

func (v *IntValue) String() string      { return strconv.Itoa(int(*v)) }
func (v *IntValue) Placeholder() string { return "int" }
func (v *IntValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want an integer, not %q", s)
	}
	*v = IntValue(n)
	return nil
}

// Float is a decimal number.
func Float(p *float64) *FloatValue { return (*FloatValue)(p) }

// FloatValue is the flag.Value of Float.
type FloatValue float64

func (v *FloatValue) String() string      { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }
func (v *FloatValue) Placeholder() string { return "number" }
func (v *FloatValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("want a number, not %q", s)
	}
	*v = FloatValue(f)
	return nil
}

// Bool is true or false; as a flag it may be given bare (-migrate).
func Bool(p *bool) *BoolValue { return (*BoolValue)(p) }

// BoolValue is the flag.Value of Bool.
type BoolValue bool

func (v *BoolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *BoolValue) IsBoolFlag() bool { return true }
func (v *BoolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, not %q", s)
	}
	*v = BoolValue(b)
	return nil
}

// IDs is a comma-separated list of positive ids (sale ids).
func IDs(p *[]int64) *IDsValue { return (*IDsValue)(p) }

// IDsValue is the flag.Value of IDs.
type IDsValue []int64

func (v *IDsValue) Placeholder() string { return "id,id,..." }
func (v *IDsValue) String() string {
	parts := make([]string, len(*v))
	for i, id := range *v {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ",")
}

func (v *IDsValue) Set(s string) error {
	var out []int64
	for _, p := range SplitList(s) {
		id, err := strconv.ParseInt(p, 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("sale id %q: want a positive integer", p)
		}
		out = append(out, id)
	}
	*v = out
	return nil
}

// Prefixes is a comma-separated list of CIDRs; a bare address is its /32 or
// /128.
func Prefixes(p *[]netip.Prefix) *PrefixesValue { return (*PrefixesValue)(p) }

// PrefixesValue is the flag.Value of Prefixes.
type PrefixesValue []netip.Prefix

func (v *PrefixesValue) Placeholder() string { return "cidr,cidr,..." }
func (v *PrefixesValue) String() string {
	s := make([]string, len(*v))
	for i, p := range *v {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func (v *PrefixesValue) Set(s string) error {
	var out []netip.Prefix
	for _, p := range SplitList(s) {
		if !strings.Contains(p, "/") {
			a, err := netip.ParseAddr(p)
			if err != nil {
				return fmt.Errorf("want CIDRs like 10.0.0.0/8: %w", err)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		pr, err := netip.ParsePrefix(p)
		if err != nil {
			return fmt.Errorf("want CIDRs like 10.0.0.0/8: %w", err)
		}
		out = append(out, pr.Masked())
	}
	*v = out
	return nil
}

// Level is a log level: debug, info, warn or error.
func Level(p *slog.Level) *LevelValue { return (*LevelValue)(p) }

// LevelValue is the flag.Value of Level.
type LevelValue slog.Level

func (v *LevelValue) String() string      { return strings.ToLower(slog.Level(*v).String()) }
func (v *LevelValue) Placeholder() string { return "level" }
func (v *LevelValue) Set(s string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("want debug, info, warn or error, not %q", s)
	}
	*v = LevelValue(l)
	return nil
}

// OneOf is a string that must be one of choices.
func OneOf(p *string, choices ...string) *OneOfValue { return &OneOfValue{p: p, choices: choices} }

// OneOfValue is the flag.Value of OneOf.
type OneOfValue struct {
	p       *string
	choices []string
}

func (v *OneOfValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return *v.p
}
func (v *OneOfValue) Placeholder() string { return strings.Join(v.choices, "|") }
func (v *OneOfValue) Set(s string) error {
	for _, c := range v.choices {
		if s == c {
			*v.p = s
			return nil
		}
	}
	return fmt.Errorf("want one of %s, not %q", strings.Join(v.choices, ", "), s)
}

// redacted stands for a non-empty secret wherever one would be shown.
const redacted = "[redacted]"

// Secret is a secret string (a password read from a file). Every formatting
// of it, by fmt with any verb, by log/slog and as JSON, shows "[redacted]";
// Reveal returns the value for the client that needs it.
type Secret string

// Reveal returns the secret itself.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// Format makes every fmt verb (%v, %s, %q, %x, %#v) print String.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// LogValue makes log/slog show String.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON shows String.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(s.String())), nil }

// SecretString is a secret given as a value (a flag or variable), not a
// file: its usage and errors never show it.
func SecretString(p *string) *SecretValue { return (*SecretValue)(p) }

// SecretValue is the flag.Value of SecretString.
type SecretValue string

func (v *SecretValue) String() string {
	if *v == "" {
		return ""
	}
	return redacted
}
func (v *SecretValue) Set(s string) error  { *v = SecretValue(s); return nil }
func (v *SecretValue) Placeholder() string { return "secret" }
