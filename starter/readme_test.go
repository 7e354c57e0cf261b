package starter

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// readmeCommands reads the README's command table: for each command path
// its rows name ("lessons list"), the flags they give it.
func readmeCommands(t *testing.T, root *cobra.Command) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n## Commands\n")
	if start < 0 {
		t.Fatal("README has no ## Commands section")
	}
	text = text[start:]
	if end := strings.Index(text, "\nExit codes:"); end >= 0 {
		text = text[:end]
	}
	span := regexp.MustCompile("`([^`]+)`")
	flag := regexp.MustCompile(`--[a-z][a-z-]*`)
	out := map[string][]string{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line[1:], " | ", 2)[0]
		for _, m := range span.FindAllStringSubmatch(first, -1) {
			form := strings.ReplaceAll(m[1], `\|`, "|")
			paths := commandPaths(root, strings.Fields(form))
			if len(paths) == 0 {
				t.Errorf("README's command table names %q, which is no command", m[1])
			}
			for _, p := range paths {
				out[p] = append(out[p], flag.FindAllString(form, -1)...)
			}
		}
	}
	return out
}

// commandPaths reads the command words at the start of a usage form:
// "lessons list|show" names two commands, "run … [--json]" one.
func commandPaths(root *cobra.Command, words []string) []string {
	paths := []string{""}
	cmds := []*cobra.Command{root}
	for _, w := range words {
		var nextPaths []string
		var nextCmds []*cobra.Command
		for i, c := range cmds {
			for _, name := range strings.Split(w, "|") {
				if sub := findSub(c, name); sub != nil {
					nextPaths = append(nextPaths, strings.TrimSpace(paths[i]+" "+name))
					nextCmds = append(nextCmds, sub)
				}
			}
		}
		if len(nextCmds) == 0 {
			break
		}
		paths, cmds = nextPaths, nextCmds
	}
	if len(paths) == 1 && paths[0] == "" {
		return nil
	}
	return paths
}

func findSub(c *cobra.Command, name string) *cobra.Command {
	for _, sub := range c.Commands() {
		if sub.Name() == name {
			return sub
		}
	}
	return nil
}

// visibleCommands lists every command a person can run, by path.
func visibleCommands(c *cobra.Command, path string, out map[string]*cobra.Command) {
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		p := strings.TrimSpace(path + " " + sub.Name())
		out[p] = sub
		if sub.Name() != "completion" { // its shells are listed as one form
			visibleCommands(sub, p, out)
		}
	}
}

// TestREADMECommandTableMatchesHelp: every command --help knows is in the
// README's command table with every flag it takes, and the table names no
// command or flag that does not exist.
func TestREADMECommandTableMatchesHelp(t *testing.T) {
	root := newRootCmd(NewFactory(config{}, IOStreams{}))
	root.InitDefaultCompletionCmd() // cobra adds it when the command runs
	documented := readmeCommands(t, root)
	commands := map[string]*cobra.Command{}
	visibleCommands(root, "", commands)
	var names []string
	for p := range commands {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		cmd := commands[p]
		flags, ok := documented[p]
		if !ok {
			if cmd.Runnable() {
				t.Errorf("README's command table lacks `%s`", p)
			}
			continue
		}
		cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && f.Name != "help" && !slices.Contains(flags, "--"+f.Name) {
				t.Errorf("README's command table lacks `%s --%s`", p, f.Name)
			}
		})
		for _, f := range flags {
			if cmd.Flags().Lookup(strings.TrimPrefix(f, "--")) == nil {
				t.Errorf("README's command table gives `%s` the flag %s, which it does not take", p, f)
			}
		}
	}
}

// TestHelpShowsPlainFlagTypes: pflag takes a back-quoted word in a flag's
// usage for the name of its value, so help would print "--to autocoder
// status"; usages quote with plain quotes instead.
func TestHelpShowsPlainFlagTypes(t *testing.T) {
	commands := map[string]*cobra.Command{}
	root := newRootCmd(NewFactory(config{}, IOStreams{}))
	visibleCommands(root, "", commands)
	commands[""] = root
	for p, cmd := range commands {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				name, _ := pflag.UnquoteUsage(f)
				t.Errorf("autocoder %s --%s: help shows its value as %q", p, f.Name, name)
			}
		})
		if cmd.Runnable() && cmd.Short == "" {
			t.Errorf("autocoder %s has no description", p)
		}
	}
}
