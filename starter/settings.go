package starter

import (
	"maps"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/devserver"
)

// serverSettings are the settings a local server's worker runs tasks
// with, by key name (config.Config.Fingerprint): those a task's model
// calls, sandbox runs and store depend on, whether from the environment or
// the configuration file. The server writes them to its address file so
// that a client can tell whether its own would run its task the same way.
type serverSettings map[string]string

// serverNeed is what a command needs of the local server's settings.
type serverNeed int

const (
	// needReads: any server will do; one started for it is settings-less.
	needReads serverNeed = iota
	// needWorker: a server whose worker runs tasks (resume, which follows
	// a task on whatever settings the server has).
	needWorker
	// needOwnSettings: a server with this shell's settings (run).
	needOwnSettings
)

// differing names the variables whose values differ between s and other,
// sorted, leaving out those named in ignored (which the command sets
// another way, as --model does model).
func (s serverSettings) differing(other serverSettings, ignored ...string) []string {
	var names []string
	for k, v := range s {
		if other[k] != v && !slices.Contains(ignored, k) {
			names = append(names, k)
		}
	}
	for k := range other {
		if _, ok := s[k]; !ok && !slices.Contains(ignored, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// differPhrase says which settings differ, for a message: "its A differs",
// "its A and B differ", "its A, B and C differ"; no names: all of them.
func differPhrase(names []string) string {
	switch len(names) {
	case 0:
		return "its settings differ"
	case 1:
		return "its " + names[0] + " differs"
	}
	return "its " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " differ"
}

// describeSettings is a server's settings for `dev status`.
func describeSettings(a devserver.Address) string {
	if a.Settingsless {
		return "none (started by a command that only reads; the next run or resume replaces it)"
	}
	names := slices.Sorted(maps.Keys(a.Settings))
	if len(names) == 0 {
		return "none set (the defaults)"
	}
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + "=" + a.Settings[k]
	}
	return strings.Join(parts, " ")
}
