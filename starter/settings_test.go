package starter

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// TestSettingsNameWhatDiffers: the settings compare by variable, a secret
// by its hash (never written as itself), and `auto` is the unset sandbox.
func TestSettingsNameWhatDiffers(t *testing.T) {
	server := settingsFrom(envOf(map[string]string{
		"OPENAI_API_KEY": "sk-server-secret", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "AUTOCODER_SANDBOX": "auto",
		"AUTOCODER_MODEL": "openai:gpt-4.1",
	}))
	b, err := json.Marshal(server)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "sk-server-secret") {
		t.Fatalf("a secret is written as itself: %s", b)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		ignored []string
		want    []string
	}{
		{"same", map[string]string{"OPENAI_API_KEY": "sk-server-secret", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "AUTOCODER_MODEL": "openai:gpt-4.1"}, nil, nil},
		{"other URL and key", map[string]string{"OPENAI_API_KEY": "sk-other", "OPENAI_BASE_URL": "http://127.0.0.1:2/v1", "AUTOCODER_MODEL": "openai:gpt-4.1"}, nil,
			[]string{"OPENAI_API_KEY", "OPENAI_BASE_URL"}},
		{"empty shell", nil, nil, []string{"AUTOCODER_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"}},
		{"sandbox and an overridden model", map[string]string{"OPENAI_API_KEY": "sk-server-secret", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "AUTOCODER_SANDBOX": "bwrap"},
			[]string{"AUTOCODER_MODEL"}, []string{"AUTOCODER_SANDBOX"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := settingsFrom(envOf(tc.env)).differing(server, tc.ignored...)
			if !slices.Equal(got, tc.want) {
				t.Errorf("differing = %v, want %v", got, tc.want)
			}
		})
	}
	if got, want := differPhrase([]string{"A", "B", "C"}), "its A, B and C differ"; got != want {
		t.Errorf("differPhrase = %q, want %q", got, want)
	}
}
