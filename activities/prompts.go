package activities

import (
	"fmt"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/workspace"
)

// promptFileBudget bounds the file contents quoted in one prompt.
const promptFileBudget = 48 << 10

const systemPrompt = `You are autocoder, a careful senior software engineer working autonomously.
You write complete, working code with tests, and you follow the output format exactly.`

const outputFormat = `Output format:
- Send every file you create or replace whole as a fenced code block whose info string is its path
  relative to the project root, for example:
  ` + "```path=pkg/util.py" + `
  ...whole file...
  ` + "```" + `
- To change part of a large existing file, send search/replace edits in a block tagged with its path;
  SEARCH must match the current file exactly once:
  ` + "```path=pkg/util.py" + `
  <<<<<<< SEARCH
  old lines
  =======
  new lines
  >>>>>>> REPLACE
  ` + "```" + `
- Paths are relative; never absolute, never containing "..".
- No prose is needed outside the blocks.`

func languageGuide(lang string) string {
	switch lang {
	case "go":
		return `Language: Go. The project is a Go module: keep or create go.mod ("module example.com/app", "go 1.21").
Use the standard library only (there is no network to download modules). Tests are *_test.go files using package testing.`
	default:
		return `Language: Python 3.11. Use the standard library only (there is no network to install packages).
Tests are pytest files named test_*.py next to the code; import the code under test by module name.`
	}
}

func testGuide(testCmd string) string {
	if testCmd != "" {
		return fmt.Sprintf("Success is decided by this test command, run in the project root: %s", testCmd)
	}
	return "There are no tests yet: write focused tests for the behaviour you implement; they decide success."
}

func planPrompt(in PlanInput, files []workspace.File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task:\n%s\n\n%s\n%s\n\n", in.Task, languageGuide(in.Language), testGuide(in.TestCmd))
	if len(files) > 0 {
		b.WriteString("The project already has these files:\n")
		for _, f := range files {
			fmt.Fprintf(&b, "- %s (%d bytes)\n", f.Path, len(f.Data))
		}
		b.WriteString("\n")
	}
	writeGuidance(&b, in.Guidance)
	writeLessons(&b, in.Lessons)
	b.WriteString(`Write a short plan as numbered steps (1. 2. 3.), at most 5, each one line.
Every step must leave the tests passing, so each step includes its own tests. Small tasks need one step.`)
	return b.String()
}

func generatePrompt(in GenerateInput, files []workspace.File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task:\n%s\n\n%s\n%s\n\nPlan:\n", in.Task, languageGuide(in.Language), testGuide(in.TestCmd))
	for i, s := range in.Plan {
		marker := "  "
		if i+1 == in.Step {
			marker = "->"
		}
		fmt.Fprintf(&b, "%s %d. %s\n", marker, i+1, s)
	}
	fmt.Fprintf(&b, "\nNow do step %d.\n\n", in.Step)
	writeFiles(&b, files, in.Feedback)
	if in.Feedback != "" {
		fmt.Fprintf(&b, "Your previous attempt failed. Diagnosis and fix plan:\n%s\n\n", in.Feedback)
	}
	if in.Failure != nil && len(in.Failure.Findings) > 0 {
		b.WriteString(integrity.Report(in.Failure.Findings) + "\n")
	}
	writeGuidance(&b, in.Guidance)
	writeLessons(&b, in.Lessons)
	b.WriteString(outputFormat)
	return b.String()
}

func reflectPrompt(in ReflectInput, files []workspace.File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task:\n%s\n\n%s\n\nPlan step %d: %s\n\n", in.Task, languageGuide(in.Language), in.Step, stepText(in.Plan, in.Step))
	writeFiles(&b, files, in.Failure.Output)
	fmt.Fprintf(&b, "The attempt failed (%s). Output:\n```\n%s\n```\n\n", in.Failure.Headline(), in.Failure.Output)
	b.WriteString(`Reflect before the next attempt. Answer in three short sections:
Root cause: what exactly is wrong, citing file and line.
Hypothesis: why the code behaves this way.
Fix: the concrete changes to make, file by file.
Do not write the full code.`)
	return b.String()
}

func stepText(plan []string, step int) string {
	if step >= 1 && step <= len(plan) {
		return plan[step-1]
	}
	return ""
}

// writeFiles quotes the workspace within promptFileBudget: files named in
// the hint (usually a failure output) first, then tests, then smaller files.
// Files that do not fit are listed by name so the model knows they exist.
func writeFiles(b *strings.Builder, files []workspace.File, hint string) {
	if len(files) == 0 {
		return
	}
	order := make([]workspace.File, len(files))
	copy(order, files)
	rank := func(f workspace.File) int {
		switch {
		case hint != "" && strings.Contains(hint, f.Path):
			return 0
		case integrity.IsTestFile(f.Path):
			return 1
		default:
			return 2
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		ri, rj := rank(order[i]), rank(order[j])
		if ri != rj {
			return ri < rj
		}
		return len(order[i].Data) < len(order[j].Data)
	})
	b.WriteString("Current project files:\n")
	budget := promptFileBudget
	var omitted []string
	for _, f := range order {
		if len(f.Data) > budget {
			omitted = append(omitted, fmt.Sprintf("%s (%d bytes)", f.Path, len(f.Data)))
			continue
		}
		budget -= len(f.Data)
		fmt.Fprintf(b, "```path=%s\n%s", f.Path, f.Data)
		if len(f.Data) > 0 && f.Data[len(f.Data)-1] != '\n' {
			b.WriteString("\n")
		}
		b.WriteString("```\n")
	}
	if len(omitted) > 0 {
		fmt.Fprintf(b, "Not shown for space: %s\n", strings.Join(omitted, ", "))
	}
	b.WriteString("\n")
}

func writeGuidance(b *strings.Builder, guidance []string) {
	if len(guidance) == 0 {
		return
	}
	b.WriteString("Guidance from the person who asked for this task (follow it):\n")
	for _, g := range guidance {
		fmt.Fprintf(b, "- %s\n", g)
	}
	b.WriteString("\n")
}

func writeLessons(b *strings.Builder, lessons string) {
	if lessons == "" {
		return
	}
	b.WriteString("Lessons from earlier tasks (verified fixes; apply them where they fit):\n")
	b.WriteString(lessons)
	b.WriteString("\n")
}
