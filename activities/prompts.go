package activities

import (
	"fmt"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/instructions"
	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/repomap"
	"github.com/autocoder/autocoder/internal/truncate"
	"github.com/autocoder/autocoder/internal/workspace"
)

// promptFileBudget bounds the file contents quoted in one prompt.
const promptFileBudget = 48 << 10

const systemPrompt = `You are autocoder, a careful senior software engineer working autonomously.
You write complete, working code with tests, and you follow the output format exactly.`

// agentSystemPrompt opens an attempt's conversation with tools.
const agentSystemPrompt = `You are autocoder, a careful senior software engineer working autonomously on a project through tools.
How to work:
- Look before you edit: the repository map in the first message is a start; use list, search and read to find the code that matters.
- Change files with edit, whose old_text must match the file exactly once (copy it from a read, with enough lines to be unique); use write for new files and delete to remove one.
- After a change, run a targeted test with run (one test file or function), then run_tests to run the task's tests as the judge does.
- When the step is done, call finish with a short summary of what you changed and the tests this step made pass.
- Commands run without network access: use what the project and the standard library already have.
- The user's tests are the judge: never weaken, skip or delete them to make them pass; fix the code instead.`

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

// languageGuide is what the model is told about the task's language.
func languageGuide(name string) string {
	return knownOrNamed(name).Guide
}

func testGuide(testCmd string) string {
	if testCmd != "" {
		return fmt.Sprintf("Success is decided by this test command, run in the project root: %s\nMake the tests it runs pass by changing the code they test.", testCmd)
	}
	return "There are no tests yet: write focused tests for the behaviour you implement; they decide success."
}

// planPrompt lists a small project's files; a larger one is shown as its
// repository map, which names what matters to the task within a budget
// instead of every path.
func planPrompt(in PlanInput, files []workspace.File, instr instructions.Set, m repomap.Map) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task:\n%s\n\n%s\n%s\n\n", in.Task, languageGuide(in.Language), testGuide(in.TestCmd))
	if len(files) > 0 && !m.Whole {
		fmt.Fprintf(&b, "The project has %d files. A map of them, most relevant to the task first:\n%s\n", len(files), m.Text)
	} else if len(files) > 0 {
		b.WriteString("The project already has these files:\n")
		for _, f := range files {
			fmt.Fprintf(&b, "- %s (%d bytes)\n", f.Path, len(f.Data))
		}
		b.WriteString("\n")
	}
	writeInstructions(&b, instr)
	writeGuidance(&b, in.Guidance)
	writeLessons(&b, in.Lessons)
	b.WriteString(`Write a short plan as numbered steps (1. 2. 3.), at most 5, each one line. Small tasks need one step.
Only the last step is judged by the whole test command; each earlier step must compile and pass the tests it names, so give each step its own tests.
If the task needs third-party packages, end the plan with one line naming them as the language's registry does, for example:
Packages: name, name
Their current versions will be looked up for you. Without such packages, write no such line.`)
	return b.String()
}

// generatePrompt asks for a step's code; current is the task's note of
// current package versions (stepVersions).
func generatePrompt(in GenerateInput, files []workspace.File, current string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task:\n%s\n\n%s\n%s\n\n", in.Task, languageGuide(in.Language), testGuide(in.TestCmd))
	writePlan(&b, in.Plan, in.Step)
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
	writeVersions(&b, current)
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

// openStepPrompt is the first user message of a plan step's conversation:
// the task and its step, the project's instructions, what people and
// earlier tasks said, the last failure, and the repository map. A fenced
// conversation (a model without tool calling) ends with the output format.
// current is the task's note of current package versions (stepVersions);
// addGuide, when set, tells how the install tool adds a package
// (lang.Add.Guide).
func openStepPrompt(in OpenStepInput, instr instructions.Set, m repomap.Map, current, addGuide string) string {
	var b strings.Builder
	guide := languageGuide(in.Language)
	if addGuide != "" {
		guide += "\n" + addGuide
	}
	fmt.Fprintf(&b, "Task:\n%s\n\n%s\n%s\n\n", in.Task, guide, testGuide(in.TestCmd))
	writePlan(&b, in.Plan, in.Step)
	fmt.Fprintf(&b, "\nStep %d of %d: %s\n", in.Step, len(in.Plan), stepText(in.Plan, in.Step))
	if in.Step < len(in.Plan) {
		b.WriteString("This step is judged by the language's compile check and the tests you name when you finish it; the whole test command judges the last step. Do this step only.\n\n")
	} else {
		b.WriteString("This is the last step: the whole test command judges it.\n\n")
	}
	writeInstructions(&b, instr)
	writeGuidance(&b, in.Guidance)
	writeLessons(&b, in.Lessons)
	writeVersions(&b, current)
	if in.Failure != "" {
		fmt.Fprintf(&b, "The last attempt failed. Output:\n```\n%s\n```\n\n", tailClip(in.Failure, failureBytes))
	}
	switch {
	case m.Whole && len(m.Entries) == 0:
		b.WriteString("The project has no files yet.\n")
	case m.Whole:
		b.WriteString("The project is small; here are its files whole:\n")
	}
	b.WriteString(m.Text)
	if in.Fenced {
		b.WriteString("\n" + outputFormat)
	}
	return b.String()
}

// failureBytes bounds the failure output an opening message quotes: its
// end, where test runners put their summaries.
const failureBytes = 6 << 10

// tailClip keeps the last n bytes of s and marks a cut.
func tailClip(s string, n int) string {
	if tail := truncate.Tail(s, n); len(tail) < len(s) {
		return "…\n" + tail
	}
	return s
}

// writePlan lists the plan with an arrow at the current step.
func writePlan(b *strings.Builder, plan []string, step int) {
	b.WriteString("Plan:\n")
	for i, s := range plan {
		marker := "  "
		if i+1 == step {
			marker = "->"
		}
		fmt.Fprintf(b, "%s %d. %s\n", marker, i+1, s)
	}
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

// writeInstructions quotes the project's own instructions, naming their
// files, as rules to follow.
func writeInstructions(b *strings.Builder, instr instructions.Set) {
	if instr.Text == "" {
		return
	}
	fmt.Fprintf(b, "The project's instructions (%s); follow them:\n%s\n\n", strings.Join(instr.Paths(), ", "), instr.Text)
}

func writeLessons(b *strings.Builder, lessons string) {
	if lessons == "" {
		return
	}
	b.WriteString("Lessons from earlier tasks (verified fixes; apply them where they fit):\n")
	b.WriteString(lessons)
	b.WriteString("\n")
}

// writeVersions quotes the current versions of the packages the plan
// named, so manifests pin versions that exist today.
func writeVersions(b *strings.Builder, note string) {
	if note == "" {
		return
	}
	b.WriteString(note)
	b.WriteString("\n")
}
