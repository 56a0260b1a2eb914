package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// EnvPrefix starts every environment variable name.
const EnvPrefix = "FLASHSALE_"

// EnvName returns the environment variable of flag name: FLASHSALE_ and the
// name in upper case with '-' as '_' ("redis-tls-ca" -> FLASHSALE_REDIS_TLS_CA).
func EnvName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ErrVersion is returned by Parse after it printed the version for -version.
var ErrVersion = errors.New("version printed")

// ErrHelp is returned by Parse after it printed the usage for -h or -help.
var ErrHelp = flag.ErrHelp

// Setting is one flag and its environment variables.
type Setting struct {
	Name  string     // flag name; its environment variable is EnvName(Name)
	Usage string     // what it means, one line
	Value flag.Value // holds the default until parsed
	// Env lists further environment names read, like DATABASE_URL.
	Env []string
	// FlagOnly settings (a subcommand's arguments) read no environment.
	FlagOnly bool
	// Secret settings never show their value in errors or usage.
	Secret bool

	def string
}

// Set is one binary's settings. Build it with NewSet and Add (or Common's
// Register), then Parse once.
type Set struct {
	program  string
	usage    string
	settings []*Setting
	names    map[string]*Setting
	args     []string
	out      io.Writer
}

// NewSet returns an empty Set for program; usage is the text printed before
// the flag table by -h (a synopsis and the commands).
func NewSet(program, usage string) *Set {
	return &Set{program: program, usage: usage, names: map[string]*Setting{}}
}

// Add registers st; a name used twice is a programming error and panics.
func (s *Set) Add(st Setting) {
	st.def = st.Value.String()
	n := st.Name
	if _, dup := s.names[n]; dup || n == "version" || n == "h" || n == "help" {
		panic("config: flag -" + n + " registered twice")
	}
	s.names[n] = &st
	s.settings = append(s.settings, &st)
}

// SetOutput sets where a caller that has no writer of its own at hand sends
// the usage (see Output).
func (s *Set) SetOutput(w io.Writer) { s.out = w }

// Output returns the writer of SetOutput, io.Discard when none was set.
func (s *Set) Output() io.Writer {
	if s.out == nil {
		return io.Discard
	}
	return s.out
}

// Lookup returns the value of the setting with flag name, nil when there is
// none (-h, -help and -version are Parse's own, not settings).
func (s *Set) Lookup(name string) flag.Value {
	if st := s.names[name]; st != nil {
		return st.Value
	}
	return nil
}

// Args returns the arguments left after the flags.
func (s *Set) Args() []string { return s.args }

// envNames returns st's environment names: the canonical one, then the
// further ones.
func (st *Setting) envNames() []string {
	if st.FlagOnly {
		return nil
	}
	return append([]string{EnvName(st.Name)}, st.Env...)
}

// Parse reads args (without the program name), then, for every setting no
// flag gave, the environment through getenv. -h prints the usage to out and
// returns ErrHelp; -version prints the version and returns ErrVersion.
// Errors name the flag or variable and never quote a secret.
func (s *Set) Parse(args []string, getenv func(string) string, out io.Writer) error {
	fs := flag.NewFlagSet(s.program, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	version := fs.Bool("version", false, "print the version and exit")
	given := map[*Setting]bool{}
	var errs []error
	for name, st := range s.names {
		fs.Var(&flagValue{st: st, name: name, given: given, errs: &errs}, name, st.Usage)
	}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		s.PrintUsage(out)
		return ErrHelp
	}
	if err != nil {
		return err
	}
	if *version {
		fmt.Fprintln(out, VersionLine(s.program))
		return ErrVersion
	}
	s.args = fs.Args()
	for _, st := range s.settings {
		if !given[st] {
			errs = append(errs, fromEnv(st, getenv))
		}
	}
	return errors.Join(errs...)
}

// fromEnv sets st from the first of its environment names that is set and
// refuses two that disagree.
func fromEnv(st *Setting, getenv func(string) string) error {
	var from, val string
	for _, n := range st.envNames() {
		v := getenv(n)
		if v == "" {
			continue
		}
		if from != "" && v != val {
			return fmt.Errorf("environment %s and %s disagree: set one", from, n)
		}
		if from != "" {
			continue
		}
		from, val = n, v
	}
	if from == "" {
		return nil
	}
	if err := st.Value.Set(val); err != nil {
		if st.Secret {
			return fmt.Errorf("environment %s: not a valid value (not shown: it is a secret)", from)
		}
		return fmt.Errorf("environment %s=%q: %w", from, val, err)
	}
	return nil
}

// flagValue is a Setting as seen by package flag. It records that a flag
// set it, so the environment is not read for it.
type flagValue struct {
	st    *Setting
	name  string
	given map[*Setting]bool
	errs  *[]error
}

func (f *flagValue) String() string {
	if f == nil || f.st == nil || f.st.Secret {
		return ""
	}
	return f.st.Value.String()
}

func (f *flagValue) IsBoolFlag() bool {
	b, ok := f.st.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func (f *flagValue) Set(v string) error {
	f.given[f.st] = true
	err := f.st.Value.Set(v)
	if err != nil && f.st.Secret {
		// package flag quotes the value in its error; keep it out.
		*f.errs = append(*f.errs, fmt.Errorf("flag -%s: not a valid value (not shown: it is a secret)", f.name))
		return nil
	}
	return err
}

// PrintUsage writes the usage text and the table of flags with their
// environment variables and defaults.
func (s *Set) PrintUsage(w io.Writer) {
	fmt.Fprint(w, s.usage)
	fmt.Fprintf(w, "\nflags (each -name is also the environment variable %sNAME, '-' as '_'; a flag wins):\n", EnvPrefix)
	for _, st := range s.settings {
		fmt.Fprintf(w, "  -%s%s\n    \t%s\n", st.Name, placeholder(st), st.Usage)
		var notes []string
		if names := st.envNames(); len(names) > 0 {
			notes = append(notes, "env "+strings.Join(names, ", "))
		} else {
			notes = append(notes, "no env")
		}
		if st.def != "" && !st.Secret {
			notes = append(notes, "default "+st.def)
		}
		fmt.Fprintf(w, "    \t(%s)\n", strings.Join(notes, "; "))
	}
	fmt.Fprintf(w, "  -version\n    \tprint the version and exit\n")
}

// Markdown writes the settings as a Markdown table (flag, environment,
// default, meaning), for a README.
func (s *Set) Markdown(w io.Writer) {
	fmt.Fprintln(w, "| flag | environment | default | meaning |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, st := range s.settings {
		var live []string
		for _, n := range st.envNames() {
			live = append(live, "`"+n+"`")
		}
		env := strings.Join(live, ", ")
		if env == "" {
			env = "—"
		}
		def := st.def
		if st.Secret {
			def = ""
		}
		fmt.Fprintf(w, "| `-%s` | %s | `%s` | %s |\n", st.Name, env, def, st.Usage)
	}
}

// Names returns every flag name registered, sorted.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.names))
	for n := range s.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func placeholder(st *Setting) string {
	if b, ok := st.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	if p, ok := st.Value.(interface{ Placeholder() string }); ok {
		return " " + p.Placeholder()
	}
	return " value"
}
