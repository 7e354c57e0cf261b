package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"gopkg.in/yaml.v3"

	"github.com/autocoder/autocoder/internal/devserver"
)

// dynamicConfigFile is the Temporal server's dynamic config in
// docker-compose.yml, relative to the repository root.
const dynamicConfigFile = "deploy/temporal/dynamicconfig.yaml"

// TestTemporalDynamicConfig loads the compose deployment's dynamic config
// with the server's own loader and checks that it holds exactly the
// settings local mode's embedded server runs with: the history queues read
// faster than the cluster default, and one write partition per task queue
// keeps waiting sandbox runs in arrival order.
func TestTemporalDynamicConfig(t *testing.T) {
	done := make(chan any)
	defer close(done)
	fc, err := dynamicconfig.NewFileBasedClient(&dynamicconfig.FileBasedClientConfig{
		Filepath:     filepath.Join(repoRoot(t), dynamicConfigFile),
		PollInterval: time.Minute,
	}, log.NewNoopLogger(), done)
	if err != nil {
		t.Fatalf("load %s: %v", dynamicConfigFile, err)
	}
	local := devserver.DynamicConfig()
	var keys []string
	for k := range local {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	for _, k := range keys {
		want := local[dynamicconfig.MakeKey(k)]
		got := fc.GetValue(dynamicconfig.MakeKey(k))
		if len(got) != 1 || got[0].Constraints != (dynamicconfig.Constraints{}) || fmt.Sprint(got[0].Value) != fmt.Sprint(want) {
			t.Errorf("%s: %s has %+v, local mode runs with %v", k, dynamicConfigFile, got, want)
		}
	}

	// A key the file sets that local mode does not would make the cluster
	// behave differently.
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), dynamicConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatalf("parse %s: %v", dynamicConfigFile, err)
	}
	for k := range file {
		if !slices.Contains(keys, strings.ToLower(k)) {
			t.Errorf("%s sets %s, which local mode does not", dynamicConfigFile, k)
		}
	}
}
