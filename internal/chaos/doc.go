// Package chaos holds fault-injection tests and the concurrency benchmark
// of the whole product: a real Temporal server, the worker as a separate OS
// process of the built binary, the real sandbox and store, and a scripted
// model. Workers are killed with SIGKILL, Temporal and Postgres are
// restarted mid-task, and every task must still finish with the right files.
//
// The benchmark runs only with AUTOCODER_BENCH=1:
//
//	AUTOCODER_BENCH=1 go test ./internal/chaos -run TestConcurrencyBenchmark -v -timeout 20m
package chaos
