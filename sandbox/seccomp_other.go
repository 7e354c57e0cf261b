//go:build !amd64 && !arm64

package sandbox

import (
	"fmt"
	"runtime"
)

// seccompFilter has no filter to give on this architecture: its system
// call numbers are not listed here.
func seccompFilter() ([]byte, error) {
	return nil, fmt.Errorf("seccomp filter: not built for %s", runtime.GOARCH)
}
