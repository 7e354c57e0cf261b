package starter

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	conf "github.com/autocoder/autocoder/internal/config"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// settingsFor resolves the configuration of a shell whose environment is env.
func settingsFor(t *testing.T, env map[string]string) *conf.Config {
	t.Helper()
	s, err := conf.Load(conf.Options{ProjectDir: t.TempDir(), Getenv: envOf(env)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSettingsNameWhatDiffers: the settings compare by key, a secret by
// its hash (never written as itself), and `auto` is the unset sandbox.
func TestSettingsNameWhatDiffers(t *testing.T) {
	server := serverSettings(settingsFor(t, map[string]string{
		"OPENAI_API_KEY": "sk-server-secret", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "AUTOCODER_SANDBOX": "auto",
		"AUTOCODER_MODEL": "openai:gpt-4.1",
	}).Fingerprint())
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
			[]string{"providers.openai.api_key", "providers.openai.base_url"}},
		{"empty shell", nil, nil, []string{"model", "providers.openai.api_key", "providers.openai.base_url"}},
		{"sandbox and an overridden model", map[string]string{"OPENAI_API_KEY": "sk-server-secret", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "AUTOCODER_SANDBOX": "bwrap"},
			[]string{"model"}, []string{"sandbox.backend"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := serverSettings(settingsFor(t, tc.env).Fingerprint()).differing(server, tc.ignored...)
			if !slices.Equal(got, tc.want) {
				t.Errorf("differing = %v, want %v", got, tc.want)
			}
		})
	}
	if got, want := differPhrase([]string{"A", "B", "C"}), "its A, B and C differ"; got != want {
		t.Errorf("differPhrase = %q, want %q", got, want)
	}
}

// TestConfigShow: `config show` resolves --config, the environment and the
// command's flags, names each value's source, and never prints a secret.
func TestConfigShow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.toml")
	text := "model = \"openai:gpt-4.1-mini\"\n[providers.openai]\napi_key = \"sk-file-secret\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[limits]\nturns = 7\n" +
		"[[notifications]]\nurl = \"https://hooks.slack.com/services/T0/B0/hook-secret\"\nevents = [\"gate\"]\n" +
		"[[mcp_servers]]\nname = \"tracker\"\nurl = \"https://tracker.example/mcp\"\nheaders = { Authorization = \"Bearer mcp-secret\" }\ntools = [\"*\"]\nask = true\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	f := NewFactory(config{}, IOStreams{Out: &out, ErrOut: &errOut})
	f.Getenv = envOf(map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:8/v1", "AUTOCODER_DATABASE_URL": "postgres://u:pw@db/x", "HOME": dir})
	if code := execute(context.Background(), f, []string{"config", "show", "--json", "--config", file}); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if strings.Contains(out.String(), "sk-file-secret") || strings.Contains(out.String(), "pw@") || strings.Contains(out.String(), "hook-secret") ||
		strings.Contains(out.String(), "mcp-secret") {
		t.Fatalf("a secret is shown: %s", out.String())
	}
	var got struct {
		File     string
		Settings []shownSetting
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"model":                     {"openai:gpt-4.1-mini", "file " + file + ":1"},
		"providers.openai.api_key":  {conf.MaskedSecret, "file " + file + ":3"},
		"providers.openai.base_url": {"http://127.0.0.1:8/v1", "env OPENAI_BASE_URL"},
		"store.url":                 {conf.MaskedSecret, "env AUTOCODER_DATABASE_URL"},
		"notifications[0]":          {"https://hooks.slack.com/" + conf.MaskedSecret + ", format by host, gate", "file " + file + ":7"},
		"limits.turns":              {"7", "file " + file + ":6"},
		"mcp_servers[0]":            {"tracker: https://tracker.example/mcp, header Authorization: " + conf.MaskedSecret + ", tools *, each call asks", "file " + file + ":10"},
		"sandbox.backend":           {"auto", "default"},
		"data_dir":                  {filepath.Join(dir, ".local/share/autocoder"), "default (~/.local/share)"},
	}
	for _, s := range got.Settings {
		if w, ok := want[s.Key]; ok {
			if s.Value != w[0] || s.Source != w[1] {
				t.Errorf("%s = %q from %q, want %q from %q", s.Key, s.Value, s.Source, w[0], w[1])
			}
			delete(want, s.Key)
		}
	}
	if got.File != file || len(want) > 0 {
		t.Errorf("file %q (want %q); settings not shown: %v", got.File, file, want)
	}
}

// TestRunTakesLimitsFromTheFile: run's limits and policy come from the
// file unless a flag sets them, and a bad key stops the command as a usage
// error naming file:line.
func TestRunTakesLimitsFromTheFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, conf.ProjectFile), []byte("[limits]\niterations = 2\nturns = 9\n[policy]\nmode = \"deny\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got RunOptions
	var errOut bytes.Buffer
	f := NewFactory(config{}, IOStreams{Out: &bytes.Buffer{}, ErrOut: &errOut})
	f.Getenv = envOf(nil)
	root := newRootCmd(f)
	root.RemoveCommand(findCmd(root, "run"))
	root.AddCommand(NewCmdRun(f, func(o *RunOptions) error { got = *o; return nil }))
	root.SetArgs([]string{"run", "--dir", dir, "--max-turns", "4", "task"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.MaxIterations != 2 || got.MaxTurns != 4 || got.Policy != "deny" {
		t.Errorf("iterations %d, turns %d, policy %q; want 2 from the file, 4 from the flag, deny from the file", got.MaxIterations, got.MaxTurns, got.Policy)
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[limits]\niteration = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := execute(context.Background(), f, []string{"config", "check", "--config", bad}); code != exitUsage || !strings.Contains(errOut.String(), bad+":2: unknown key") {
		t.Errorf("exit %d, stderr %q; want 2 naming %s:2", code, errOut.String(), bad)
	}
}

func findCmd(root *cobra.Command, name string) *cobra.Command {
	for _, c := range root.Commands() {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// TestWebUILink: local mode links its own Web UI; a cluster's is shown
// only when configured, since the client cannot know where it is.
func TestWebUILink(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": home}, "http://127.0.0.1:8233/namespaces/default/workflows/t-1"},
		{map[string]string{"HOME": home, "TEMPORAL_ADDRESS": "temporal:7233"}, ""},
		{map[string]string{"HOME": home, "TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_UI_URL": "https://ui.example"},
			"https://ui.example/namespaces/default/workflows/t-1"},
	} {
		if got := configFrom(settingsFor(t, tc.env)).workflowURL("t-1"); got != tc.want {
			t.Errorf("with %v: workflowURL = %q, want %q", tc.env, got, tc.want)
		}
	}
}
