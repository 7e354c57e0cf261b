package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llm"
)

func writeFile(t *testing.T, dir, name, text string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// TestPrecedence: a flag beats the environment, which beats the file,
// which beats the default; each value says where it came from.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, ProjectFile, "model = \"openai:from-file\"\n\n[sandbox]\nbackend = \"bwrap\"\n", 0o600)
	for _, tc := range []struct {
		name       string
		env        map[string]string
		flag       string
		want, from string
	}{
		{"default", nil, "", "", "default"},
		{"file", nil, "", "openai:from-file", "file " + file + ":1"},
		{"env over file", map[string]string{"AUTOCODER_MODEL": "anthropic:from-env"}, "", "anthropic:from-env", "env AUTOCODER_MODEL"},
		{"flag over env", map[string]string{"AUTOCODER_MODEL": "anthropic:from-env"}, "ollama:from-flag", "ollama:from-flag", "flag --model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{ProjectDir: dir, Getenv: envOf(tc.env)}
			if tc.name == "default" {
				o.ProjectDir = t.TempDir()
			}
			if tc.flag != "" {
				o.Flags = map[string]Value{"model": {Text: tc.flag}}
			}
			c, err := Load(o)
			if err != nil {
				t.Fatal(err)
			}
			if v := c.Get("model"); v.Text != tc.want || v.Source.String() != tc.from {
				t.Errorf("model = %q from %s, want %q from %s", v.Text, v.Source, tc.want, tc.from)
			}
		})
	}
}

// TestSearchOrder: --config, else the project's file, else the user's.
func TestSearchOrder(t *testing.T) {
	project, home, other := t.TempDir(), t.TempDir(), t.TempDir()
	user := writeFile(t, home, ".config/autocoder/config.toml", "model = \"openai:user\"\n", 0o600)
	env := envOf(map[string]string{"HOME": home, "XDG_CONFIG_HOME": "relative/ignored"})
	load := func(o Options) *Config {
		t.Helper()
		o.Getenv = env
		c, err := Load(o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := load(Options{ProjectDir: project}); c.File != user {
		t.Errorf("no project file: read %q, want the user's %q", c.File, user)
	}
	proj := writeFile(t, project, ProjectFile, "model = \"openai:project\"\n", 0o600)
	if c := load(Options{ProjectDir: project}); c.File != proj || c.String("model") != "openai:project" {
		t.Errorf("project file: read %q (model %q), want %q", c.File, c.String("model"), proj)
	}
	named := writeFile(t, other, "x.toml", "model = \"openai:named\"\n", 0o600)
	if c := load(Options{File: named, ProjectDir: project}); c.File != named {
		t.Errorf("--config: read %q, want %q", c.File, named)
	}
	if _, err := Load(Options{File: filepath.Join(other, "missing.toml"), Getenv: env}); err == nil {
		t.Error("a missing --config file is no error")
	}
}

// TestFileErrorsNameTheLine: each mistake names path:line and what is wrong.
func TestFileErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line       int
		want       string
	}{
		{"unknown key", "model = \"openai:gpt-4.1\"\n\n[limits]\niterations = 4\nturn = 9\n", 5, `unknown key "limits.turn"`},
		{"unknown section", "[sandbx]\nbackend = \"docker\"\n", 1, `unknown key "sandbx"`},
		{"bad value", "[sandbox]\n# the backend\nbackend = \"podman\"\n", 3, "sandbox.backend: \"podman\": want auto, docker, bwrap"},
		{"wrong type", "[limits]\niterations = \"many\"\n", 2, "limits.iterations: want a whole number"},
		{"out of range", "[limits]\niterations = 0\n", 2, "want 1 or more"},
		{"bad model", "model = \"mistral:large\"\n", 1, "provider must be openai"},
		{"inline table", "providers = { openai = { base_url = \"nope\" } }\n", 1, "providers.openai.base_url"},
		{"reserved not a table", "\nregistries = 3\n", 2, "registries must be a table"},
		{"syntax", "model = \n", 1, "TOML syntax"},
		{"setup longer than its activity", "[worker]\nsetup_timeout = \"2h\"\n", 2, "worker.setup_timeout: \"2h\" is longer than a setup may run (50m0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "c.toml", tc.text, 0o600)
			_, err := Load(Options{File: p})
			if err == nil {
				t.Fatal("no error")
			}
			prefix := p + ":" + itoa(tc.line) + ":"
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q… naming %q", err, prefix, tc.want)
			}
		})
	}
	p := writeFile(t, t.TempDir(), "ok.toml", "[registries]\n[notifications]\n[mcp_servers]\n", 0o600)
	if _, err := Load(Options{File: p}); err != nil {
		t.Errorf("empty reserved sections: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestSecretNeedsPrivateFile: a key in a file others can read is refused,
// naming the chmod; the same file with mode 0600, or a key named by
// variable, is accepted.
func TestSecretNeedsPrivateFile(t *testing.T) {
	dir := t.TempDir()
	text := "[providers.openai]\napi_key = \"sk-secret\"\n"
	p := writeFile(t, dir, "c.toml", text, 0o644)
	_, err := Load(Options{File: p})
	if err == nil || !strings.Contains(err.Error(), "chmod 600 "+p) || !strings.HasPrefix(err.Error(), p+":2:") {
		t.Fatalf("group/world-readable key: error %v, want one naming chmod 600 and line 2", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Options{File: p})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := c.ModelEnv(context.Background()); err != nil || e.OpenAIKey != "sk-secret" {
		t.Errorf("ModelEnv = %+v, %v", e, err)
	}
	q := writeFile(t, dir, "env.toml", "[providers.openai]\napi_key_env = \"MY_KEY\"\n", 0o644)
	if _, err := Load(Options{File: q}); err != nil {
		t.Errorf("a key named by variable in a readable file: %v", err)
	}
	both := writeFile(t, dir, "both.toml", "[providers.openai]\napi_key = \"a\"\napi_key_cmd = \"echo b\"\n", 0o600)
	if _, err := Load(Options{File: both}); err == nil || !strings.Contains(err.Error(), "keep one") {
		t.Errorf("two forms of one key: error %v", err)
	}
}

// TestAPIKeyForms: the key by variable, by command (run in the file's
// directory), and the environment's key over the file's form.
func TestAPIKeyForms(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "key.txt", "sk-from-cmd\n", 0o600)
	cmd := writeFile(t, dir, "cmd.toml", "[providers.anthropic]\napi_key_cmd = \"cat key.txt\"\n[providers.openai]\napi_key_env = \"MY_KEY\"\n", 0o644)
	c, err := Load(Options{File: cmd, Getenv: envOf(map[string]string{"MY_KEY": "sk-from-var"})})
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.ModelEnv(context.Background())
	if err != nil || e.AnthropicKey != "sk-from-cmd" || e.OpenAIKey != "sk-from-var" {
		t.Errorf("ModelEnv = %q, %q, %v; want the command's and the variable's keys", e.AnthropicKey, e.OpenAIKey, err)
	}
	c, err = Load(Options{File: cmd, Getenv: envOf(map[string]string{"ANTHROPIC_API_KEY": "sk-env"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ModelEnv(context.Background()); err == nil || !strings.Contains(err.Error(), "MY_KEY, which is not set") {
		t.Errorf("unset api_key_env variable: error %v", err)
	}
	if k, _ := c.apiKey(context.Background(), "anthropic"); k != "sk-env" {
		t.Errorf("ANTHROPIC_API_KEY did not override api_key_cmd: %q", k)
	}
}

// TestGeminiSettings: Gemini's key comes from GEMINI_API_KEY, else from
// GOOGLE_API_KEY as Google's SDKs accept it, else from the file's
// [providers.gemini]; its base URL from GEMINI_BASE_URL or the file; and a
// key alone makes Gemini the default model, unless it is GOOGLE_API_KEY's,
// which people hold for other Google APIs: then an Ollama host stays the
// default, and with no other provider there is none.
func TestGeminiSettings(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "gemini.toml", "[providers.gemini]\napi_key_env = \"MY_GEMINI_KEY\"\nbase_url = \"http://127.0.0.1:9/v1beta\"\n", 0o644)
	for _, tc := range []struct {
		name     string
		env      map[string]string
		key, src string
		url      string
		noFile   bool
		model    string
	}{
		{"GEMINI_API_KEY", map[string]string{"GEMINI_API_KEY": "gm-1", "GOOGLE_API_KEY": "gm-2", "MY_GEMINI_KEY": "gm-3"}, "gm-1", "env GEMINI_API_KEY", "http://127.0.0.1:9/v1beta", false, "gemini:gemini-2.5-pro"},
		{"GOOGLE_API_KEY", map[string]string{"GOOGLE_API_KEY": "gm-2", "MY_GEMINI_KEY": "gm-3"}, "gm-2", "env GOOGLE_API_KEY", "http://127.0.0.1:9/v1beta", false, "gemini:gemini-2.5-pro"},
		{"file", map[string]string{"MY_GEMINI_KEY": "gm-3", "GEMINI_BASE_URL": "http://127.0.0.1:8/v1beta"}, "gm-3", "", "http://127.0.0.1:8/v1beta", false, "gemini:gemini-2.5-pro"},
		{"GOOGLE_API_KEY with Ollama", map[string]string{"GOOGLE_API_KEY": "gm-2", "OLLAMA_HOST": "http://127.0.0.1:11434"}, "gm-2", "env GOOGLE_API_KEY", "", true, "ollama:qwen2.5-coder"},
		{"GOOGLE_API_KEY alone", map[string]string{"GOOGLE_API_KEY": "gm-2"}, "gm-2", "env GOOGLE_API_KEY", "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{File: file, Getenv: envOf(tc.env)}
			if tc.noFile {
				opts.File = writeFile(t, t.TempDir(), "empty.toml", "", 0o644)
			}
			c, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			e, err := c.ModelEnv(context.Background())
			if err != nil || e.GeminiKey != tc.key || e.GeminiBaseURL != tc.url {
				t.Errorf("ModelEnv: key %q, base URL %q, %v; want %q, %q", e.GeminiKey, e.GeminiBaseURL, err, tc.key, tc.url)
			}
			if v := c.Get("providers.gemini.api_key"); tc.src != "" && v.Source.String() != tc.src {
				t.Errorf("api_key from %s, want %s", v.Source, tc.src)
			}
			sp, err := c.DefaultModel()
			if tc.model == "" && !errors.Is(err, llm.ErrNoModel) || tc.model != "" && (err != nil || sp.String() != tc.model) {
				t.Errorf("DefaultModel = %v, %v; want %q", sp, err, tc.model)
			}
			if err == nil {
				if ws, err := e.DefaultSpec(); err != nil || ws != sp { // the worker's choice, from the keys read
					t.Errorf("ModelEnv's DefaultSpec = %v, %v; want %v", ws, err, sp)
				}
			}
		})
	}
}

// TestDataDir: one rule, a relative XDG_DATA_HOME ignored as the XDG spec says.
func TestDataDir(t *testing.T) {
	for _, tc := range []struct {
		env        map[string]string
		want, from string
	}{
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/share/autocoder", "default (~/.local/share)"},
		{map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "/xdg"}, "/xdg/autocoder", "env XDG_DATA_HOME"},
		{map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "rel"}, "/home/u/.local/share/autocoder", "default (~/.local/share)"},
		{map[string]string{"HOME": "/home/u", "AUTOCODER_DATA_DIR": "/d"}, "/d", "env AUTOCODER_DATA_DIR"},
	} {
		c, err := Load(Options{ProjectDir: t.TempDir(), Getenv: envOf(tc.env)})
		if err != nil {
			t.Fatal(err)
		}
		if v := c.Get("data_dir"); v.Text != tc.want || v.Source.String() != tc.from {
			t.Errorf("env %v: data dir %q from %s, want %q from %s", tc.env, v.Text, v.Source, tc.want, tc.from)
		}
	}
}

// TestFingerprint: the file's values count like the environment's, a
// secret only as its hash.
func TestFingerprint(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, ProjectFile, "model = \"openai:gpt-4.1\"\n[providers.openai]\napi_key = \"sk-secret\"\nbase_url = \"http://127.0.0.1:1/v1\"\n", 0o600)
	fromFile, err := Load(Options{File: p})
	if err != nil {
		t.Fatal(err)
	}
	fromEnv, err := Load(Options{ProjectDir: t.TempDir(), Getenv: envOf(map[string]string{
		"AUTOCODER_MODEL": "openai:gpt-4.1", "OPENAI_API_KEY": "sk-secret", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "AUTOCODER_SANDBOX": "auto"})})
	if err != nil {
		t.Fatal(err)
	}
	a, b := fromFile.Fingerprint(), fromEnv.Fingerprint()
	if len(a) != 3 || len(a) != len(b) {
		t.Fatalf("fingerprints %v and %v", a, b)
	}
	for k, v := range a {
		if b[k] != v || strings.Contains(v, "sk-secret") {
			t.Errorf("%s: %q from the file, %q from the environment", k, v, b[k])
		}
	}
}

// TestListKeys: a list is an array in the file and a comma-separated
// variable; each item is checked, and a bad one names its line.
func TestListKeys(t *testing.T) {
	p := writeFile(t, t.TempDir(), "c.toml", "[egress]\nallow = [\"*.example.test\", \"files.example.test:8443\"]\ndeny = [\"10.0.0.0/8\"]\n\n[registries]\nprivate = [\"http://127.0.0.1:3141/simple\"]\n", 0o600)
	c, err := Load(Options{File: p})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.List("egress.allow"); len(got) != 2 || got[0] != "*.example.test" || got[1] != "files.example.test:8443" {
		t.Errorf("egress.allow = %q", got)
	}
	if v := c.Get("registries.private"); c.List("registries.private")[0] != "http://127.0.0.1:3141/simple" || v.Source.Line != 6 {
		t.Errorf("registries.private = %q from %s", c.List("registries.private"), v.Source)
	}
	c, err = Load(Options{File: p, Getenv: envOf(map[string]string{"AUTOCODER_EGRESS_DENY": " a.example.test, 192.168.0.0/16 ,"})})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.List("egress.deny"); len(got) != 2 || got[1] != "192.168.0.0/16" {
		t.Errorf("egress.deny from the environment = %q", got)
	}
	if got := c.List("egress.allow"); len(c.List("registries.private")) != 1 || len(got) != 2 {
		t.Errorf("the file's other lists: %q", got)
	}
	if _, err := Load(Options{Getenv: envOf(map[string]string{"AUTOCODER_EGRESS_ALLOW": "ok.example.test,*"})}); err == nil || !strings.Contains(err.Error(), "AUTOCODER_EGRESS_ALLOW") {
		t.Errorf("a bad item in a variable: %v", err)
	}
	for _, tc := range []struct{ text, want string }{
		{"[egress]\n\nallow = [\"ok.example.test\", \"bad host\"]\n", "egress.allow"},
		{"[egress]\nallow = \"ok.example.test\"\n", "want an array of strings"},
		{"[egress]\ndeny = [\"10.0.0.0/40\"]\n", "address range"},
		{"[egress]\ndeny = [3]\n", "item 1: want a string"},
		{"[registries]\nprivate = [\"127.0.0.1\"]\n", "host:port"},
		{"[egress]\nmax_connections = 0\n", "want 1 or more"},
	} {
		p := writeFile(t, t.TempDir(), "c.toml", tc.text, 0o600)
		_, err := Load(Options{File: p})
		line := strings.Count(tc.text[:strings.LastIndex(tc.text, "=")], "\n") + 1
		if err == nil || !strings.HasPrefix(err.Error(), p+":"+itoa(line)+":") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want line %d naming %q", tc.text, err, line, tc.want)
		}
	}
}

// TestEgressConfig: the proxy gets the user's lists and limits.
func TestEgressConfig(t *testing.T) {
	p := writeFile(t, t.TempDir(), "c.toml", "[egress]\nallow = [\"a.example.test\"]\ndeny = [\"b.example.test\"]\nidle_timeout = \"30s\"\nmax_connections = 4\n[registries]\nprivate = [\"127.0.0.1:3141\"]\n", 0o600)
	c, err := Load(Options{File: p})
	if err != nil {
		t.Fatal(err)
	}
	e := c.Egress()
	if len(e.Allow) != 1 || e.Allow[0] != "a.example.test" || e.Deny[0] != "b.example.test" || e.Registries[0] != "127.0.0.1:3141" ||
		e.IdleTimeout != 30*time.Second || e.ConnectTimeout != 10*time.Second || e.MaxConnsPerTask != 4 {
		t.Errorf("Egress() = %+v", e)
	}
}
