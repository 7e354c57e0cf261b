package worker

import (
	"os"
	"testing"

	"github.com/autocoder/autocoder/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Cleanup() // the programs the tests built
	os.Exit(code)
}
