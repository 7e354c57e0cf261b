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

// minFreeSpaceSetting names, in messages, what sets the space needed.
const minFreeSpaceSetting = "worker.min_free_space, or AUTOCODER_MIN_FREE_SPACE"

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

// minFreeSpace is MinFreeSpace, resolved once at worker start
// (worker.min_free_space), else the default.
func (a *Activities) minFreeSpace() int64 {
	if a.MinFreeSpace > 0 {
		return a.MinFreeSpace
	}
	return DefaultMinFreeSpace
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
	need := a.minFreeSpace()
	for _, p := range a.spacePaths() {
		free, err := statfs(p)
		if err != nil {
			activity.GetLogger(ctx).Warn("cannot check free disk space", "path", p, "error", err)
			continue
		}
		if free < need {
			msg := fmt.Sprintf("not enough free disk space in %s: %s free, %s needed before calling the model (%s); free some space there, then run the task again",
				p, bytesize.Format(free), bytesize.Format(need), minFreeSpaceSetting)
			return temporal.NewNonRetryableApplicationError(msg, ErrTypeNoSpace, errors.New("disk full"))
		}
	}
	return nil
}
