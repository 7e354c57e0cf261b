package starter

import (
	"os"
	"path/filepath"
	"strconv"
)

// Environment variables the CLI reads.
const (
	envTemporalAddress   = "TEMPORAL_ADDRESS"
	envTemporalNamespace = "TEMPORAL_NAMESPACE"
	envTemporalUI        = "TEMPORAL_UI_URL"
	envDatabaseURL       = "AUTOCODER_DATABASE_URL"
	envDataDir           = "AUTOCODER_DATA_DIR"
	envSandbox           = "AUTOCODER_SANDBOX"
	envDevPort           = "AUTOCODER_DEV_PORT"
	envUIPort            = "AUTOCODER_UI_PORT"
)

// config is the process configuration, read once from the environment.
type config struct {
	TemporalAddress string
	Namespace       string
	UIURL           string
	DatabaseURL     string
	DataDir         string
	Sandbox         string
	// Ports of the embedded Temporal frontend and Web UI (local mode).
	devPort int
	uiPort  int
	// addressSet is true when the user named a Temporal server; otherwise
	// local commands may start an embedded one.
	addressSet bool
}

func configFromEnv() config {
	c := config{
		TemporalAddress: os.Getenv(envTemporalAddress),
		Namespace:       envOr(envTemporalNamespace, "default"),
		UIURL:           os.Getenv(envTemporalUI),
		DatabaseURL:     os.Getenv(envDatabaseURL),
		DataDir:         os.Getenv(envDataDir),
		Sandbox:         envOr(envSandbox, "auto"),
	}
	c.devPort = portFromEnv(envDevPort, 7233)
	c.uiPort = portFromEnv(envUIPort, 8233)
	c.addressSet = c.TemporalAddress != ""
	if !c.addressSet {
		c.TemporalAddress = "127.0.0.1:" + strconv.Itoa(c.devPort)
	}
	if c.UIURL == "" {
		c.UIURL = "http://127.0.0.1:" + strconv.Itoa(c.uiPort)
	}
	if c.DataDir == "" {
		c.DataDir = defaultDataDir()
	}
	return c
}

// defaultDataDir follows the XDG convention: $XDG_DATA_HOME/autocoder or
// ~/.local/share/autocoder.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "autocoder")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "autocoder")
	}
	return filepath.Join(home, ".local", "share", "autocoder")
}

func (c config) sqlitePath() string { return filepath.Join(c.DataDir, "autocoder.db") }

// inFlightDir keeps the records of the activities the worker runs.
func (c config) inFlightDir() string { return filepath.Join(c.DataDir, "in-flight") }

func (c config) workflowURL(id string) string {
	return c.UIURL + "/namespaces/" + c.Namespace + "/workflows/" + id
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
