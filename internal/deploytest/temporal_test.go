package deploytest

import (
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
)

// dynamicConfigFile is the Temporal server's dynamic config in
// docker-compose.yml, relative to the repository root.
const dynamicConfigFile = "deploy/temporal/dynamicconfig.yaml"

// TestTemporalDynamicConfig loads the compose deployment's dynamic config
// with the server's own loader and checks that the history queues read
// faster than the cluster default of 20 a second.
func TestTemporalDynamicConfig(t *testing.T) {
	done := make(chan any)
	defer close(done)
	dc, err := dynamicconfig.NewFileBasedClient(&dynamicconfig.FileBasedClientConfig{
		Filepath:     filepath.Join(repoRoot(t), dynamicConfigFile),
		PollInterval: time.Minute,
	}, log.NewNoopLogger(), done)
	if err != nil {
		t.Fatalf("load %s: %v", dynamicConfigFile, err)
	}
	shipped := dynamicconfig.NewCollection(dc, log.NewNoopLogger())
	defaults := dynamicconfig.NewCollection(dynamicconfig.StaticClient{}, log.NewNoopLogger())
	for _, s := range []dynamicconfig.GlobalIntSetting{
		dynamicconfig.TransferProcessorMaxPollRPS,
		dynamicconfig.TimerProcessorMaxPollRPS,
		dynamicconfig.VisibilityProcessorMaxPollRPS,
	} {
		if got, def := s.Get(shipped)(), s.Get(defaults)(); got <= def {
			t.Errorf("%s = %d, want above the default %d", s.Key(), got, def)
		}
	}
}
