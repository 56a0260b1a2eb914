package ops

import (
	"context"
	"flag"
	"fmt"
	"strings"
)

// command is one row of flashctl's command table. flags registers the
// command's own flags on fs and returns the function that checks and runs
// them once parsed; the synopsis line and --help are generated from the same
// flags, so they cannot drift from what the command accepts.
type command struct {
	name     string   // "status", or "sale pause" inside a group
	summary  string   // one line
	required []string // flags the command cannot run without (shown without brackets)
	flags    func(fs *flag.FlagSet) func(ctx context.Context, e *cmdEnv) (int, error)
}

// groups are command names that only hold subcommands.
var groups = map[string]string{"sale": "a sale's life: create, list, show, pause, resume, end"}

func isGroup(name string) bool { _, ok := groups[name]; return ok }

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// synopsis renders the command's flags: "--sale ID [--watch DURATION]".
func (c *command) synopsis() string {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fs)
	var req, opt []string
	fs.VisitAll(func(f *flag.Flag) {
		arg := "--" + f.Name
		if name, _ := flag.UnquoteUsage(f); name != "" {
			arg += " " + strings.ToUpper(name)
		}
		if c.isRequired(f.Name) {
			req = append(req, arg)
		} else {
			opt = append(opt, "["+arg+"]")
		}
	})
	return strings.Join(append(req, opt...), " ")
}

func (c *command) isRequired(flagName string) bool {
	for _, r := range c.required {
		if r == flagName {
			return true
		}
	}
	return false
}

// help is the text of --help for the invocation: the whole tool, a group, or
// one command with its flags and their defaults.
func (inv *invocation) help() string {
	var b strings.Builder
	switch {
	case inv.cmd != nil:
		c := inv.cmd
		fmt.Fprintf(&b, "usage: flashctl [global flags] %s %s\n\n%s\n\nflags:\n", c.name, c.synopsis(), c.summary)
		printFlags(&b, c)
		b.WriteString(globalHelp)
	case inv.group != "":
		fmt.Fprintf(&b, "usage: flashctl [global flags] %s <command> [flags]\n\n%s\n\ncommands:\n", inv.group, groups[inv.group])
		listCommands(&b, inv.group+" ")
		fmt.Fprintf(&b, "\n`flashctl %s <command> --help` shows a command's flags.\n", inv.group)
		b.WriteString(globalHelp)
	default:
		b.WriteString("usage: flashctl [global flags] <command> [flags]\n\ncommands:\n")
		listCommands(&b, "")
		b.WriteString("\n`flashctl <command> --help` (or `flashctl help <command>`) shows a command's flags.\n")
		b.WriteString(globalHelp)
	}
	return b.String()
}

// printFlags writes each flag of c with its usage and default.
func printFlags(b *strings.Builder, c *command) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		name, usage := flag.UnquoteUsage(f)
		arg := "--" + f.Name
		if name != "" {
			arg += " " + strings.ToUpper(name)
		}
		fmt.Fprintf(b, "  %s\n        %s", arg, usage)
		switch {
		case c.isRequired(f.Name):
			b.WriteString(" (required)")
		case f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "0s":
			fmt.Fprintf(b, " (default %s)", f.DefValue)
		}
		b.WriteString("\n")
	})
	if n == 0 {
		b.WriteString("  (none)\n")
	}
}

// listCommands writes the commands whose name starts with prefix.
func listCommands(b *strings.Builder, prefix string) {
	for i := range commands {
		c := &commands[i]
		if !strings.HasPrefix(c.name, prefix) {
			continue
		}
		fmt.Fprintf(b, "  %-13s %s\n  %-13s %s\n", c.name, c.synopsis(), "", c.summary)
	}
}

const globalHelp = `
global flags (also accepted after the command):
  --redis ADDRS        Redis Cluster seeds, comma separated (FLASHSALE_REDIS; default 127.0.0.1:7001-7006)
  --database-url URL   PostgreSQL URL (DATABASE_URL)
  --json               JSON output for scripts

exit codes:
  0  success (reconcile: the sale is clean)
  1  the command failed: drift or an audit failure found (reconcile), a refusal, an error
  2  bad command line, nothing done
  3  Redis or PostgreSQL could not be reached, nothing done
`
