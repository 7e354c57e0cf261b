package taskclient

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// temporalCalls are the Temporal client's methods that reach a workflow or
// the server; outside the places below, code calls the task client.
var temporalCalls = map[string]bool{
	"ExecuteWorkflow": true, "SignalWorkflow": true, "SignalWithStartWorkflow": true,
	"QueryWorkflow": true, "QueryWorkflowWithOptions": true, "UpdateWorkflow": true,
	"UpdateWithStartWorkflow": true, "GetWorkflowUpdateHandle": true,
	"CancelWorkflow": true, "TerminateWorkflow": true, "GetWorkflow": true,
	"GetWorkflowHistory": true, "DescribeWorkflowExecution": true, "DescribeWorkflow": true,
	"ListWorkflow": true, "ListOpenWorkflow": true, "ListClosedWorkflow": true, "ScanWorkflow": true,
	"CountWorkflow": true, "ResetWorkflowExecution": true, "CompleteActivity": true,
	"CheckHealth": true, "OperatorService": true, "WorkflowService": true, "DescribeTaskQueue": true,
}

// allowedTemporal are the directories that may talk to Temporal directly:
// this package, the worker's wiring, the embedded server, and a benchmark
// of the activities that runs a workflow of its own, not a task. The
// workflow's own tests call the SDK's test environment, whose methods
// share the client's names.
var allowedTemporal = map[string]bool{
	"internal/taskclient":            true,
	"workflows":                      true,
	"worker":                         true,
	"internal/devserver":             true,
	"activities/toolcall_bench_test": true,
}

// TestOnlyTheClientCallsTemporal parses every Go file of the module and
// fails on a Temporal client call outside the allowed places. Importing
// the SDK's client package to dial or name its types stays allowed.
func TestOnlyTheClientCallsTemporal(t *testing.T) {
	root := moduleRoot(t)
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("found only %d Go files under %s", len(files), root)
	}
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		if allowed(rel) {
			continue
		}
		for _, v := range temporalViolations(t, path) {
			t.Errorf("%s: %s; reach tasks through internal/taskclient", rel, v)
		}
	}
}

func allowed(rel string) bool {
	rel = filepath.ToSlash(rel)
	return allowedTemporal[filepath.ToSlash(filepath.Dir(rel))] || allowedTemporal[strings.TrimSuffix(rel, ".go")]
}

// temporalViolations lists a file's calls of methods named as the
// Temporal client's, on any value (a client can reach a file through a
// helper's parameter without its package being imported).
func temporalViolations(t *testing.T, path string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && temporalCalls[sel.Sel.Name] {
			found = append(found, fset.Position(call.Pos()).String()+": calls "+sel.Sel.Name)
		}
		return true
	})
	return found
}

func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}
