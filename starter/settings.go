package starter

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/llm"
)

// serverSettings are the settings a local server's worker takes from the
// environment of the command that started it, by variable name: those a
// task's model calls, sandbox runs and store depend on. The server writes
// them to its address file so that a client can tell whether its own
// would run its task the same way. A secret is kept as a hash, never its
// value: the address file is only a fingerprint. Unset variables are left
// out, so that unset and empty compare equal.
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

// Variables of the settings; secretSettings are hashed.
var (
	plainSettings = []string{
		llm.EnvModel, llm.EnvOpenAIBaseURL, llm.EnvAnthropicBaseURL, llm.EnvOllamaHost,
		llm.EnvFirstByteTimeout, llm.EnvIdleTimeout, llm.EnvMaxAnswer, activities.EnvMinFreeSpace,
		envSandbox, "AUTOCODER_IMAGE_PYTHON", "AUTOCODER_IMAGE_GO",
	}
	secretSettings = []string{llm.EnvOpenAIKey, llm.EnvAnthropicKey, envDatabaseURL}
)

// settingsFrom reads the settings through getenv (os.Getenv).
func settingsFrom(getenv func(string) string) serverSettings {
	s := serverSettings{}
	for _, k := range plainSettings {
		if v := getenv(k); v != "" {
			s[k] = v
		}
	}
	for _, k := range secretSettings {
		if v := getenv(k); v != "" {
			sum := sha256.Sum256([]byte(v))
			s[k] = "sha256:" + hex.EncodeToString(sum[:8])
		}
	}
	// The sandbox's default, spelled out or not, is one setting.
	if s[envSandbox] == "auto" {
		delete(s, envSandbox)
	}
	return s
}

// differing names the variables whose values differ between s and other,
// sorted, leaving out those named in ignored (which the command sets
// another way, as --model does AUTOCODER_MODEL).
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
