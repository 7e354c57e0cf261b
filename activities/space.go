package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/bytesize"
)

// EnvMinFreeSpace sets the free disk space a model call needs first.
const EnvMinFreeSpace = "AUTOCODER_MIN_FREE_SPACE"

// DefaultMinFreeSpace leaves room for an answer, its snapshot and memo,
// and the sandbox's files, with plenty to spare.
const DefaultMinFreeSpace = 64 << 20

// ErrTypeNoSpace is a disk too full to keep what a model call would
// produce: the call is not made, since its answer would be lost.
const ErrTypeNoSpace = "NoSpace"

// diskDir is implemented by stores that keep their data in a local
// directory (SQLite).
type diskDir interface{ Dir() string }

// spacePaths are the directories a model call's results are written to:
// the store's, and the temporary directory sandboxes keep files in.
func (a *Activities) spacePaths() []string {
	if a.SpacePaths != nil {
		return a.SpacePaths
	}
	var paths []string
	if d, ok := a.Store.(diskDir); ok {
		paths = append(paths, d.Dir())
	}
	return append(paths, os.TempDir())
}

// minFreeSpace is MinFreeSpace, else EnvMinFreeSpace, else the default.
func (a *Activities) minFreeSpace() (int64, error) {
	if a.MinFreeSpace > 0 {
		return a.MinFreeSpace, nil
	}
	v := os.Getenv(EnvMinFreeSpace)
	if v == "" {
		return DefaultMinFreeSpace, nil
	}
	n, err := bytesize.Parse(v)
	if err != nil {
		return 0, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: %v", EnvMinFreeSpace, err), ErrTypeModelConfig, err)
	}
	return n, nil
}

// statfs reports the bytes available to this process under path.
var statfs = func(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// checkSpace fails, before the model is paid, when a directory its
// answer goes to has less free space than needed. A directory that cannot
// be examined is let through: the write itself reports its trouble.
func (a *Activities) checkSpace(ctx context.Context) error {
	need, err := a.minFreeSpace()
	if err != nil {
		return err
	}
	for _, p := range a.spacePaths() {
		free, err := statfs(p)
		if err != nil {
			activity.GetLogger(ctx).Warn("cannot check free disk space", "path", p, "error", err)
			continue
		}
		if free < need {
			msg := fmt.Sprintf("not enough free disk space in %s: %s free, %s needed before calling the model (%s); free some space there, then run the task again",
				p, bytesize.Format(free), bytesize.Format(need), EnvMinFreeSpace)
			return temporal.NewNonRetryableApplicationError(msg, ErrTypeNoSpace, errors.New("disk full"))
		}
	}
	return nil
}
