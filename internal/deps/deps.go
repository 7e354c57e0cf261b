// Package deps pins modules that packages under construction import.
package deps

import (
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/moby/moby/client"
	_ "github.com/spf13/cobra"
	_ "github.com/tmc/langchaingo/llms/anthropic"
	_ "github.com/tmc/langchaingo/llms/ollama"
	_ "github.com/tmc/langchaingo/llms/openai"
	_ "go.temporal.io/sdk/client"
	_ "go.temporal.io/sdk/testsuite"
	_ "go.temporal.io/sdk/worker"
	_ "go.temporal.io/sdk/workflow"
	_ "modernc.org/sqlite"
	_ "github.com/moby/moby/api/types/container"
	_ "github.com/golang-migrate/migrate/v4"
)
