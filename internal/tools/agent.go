package tools

// Names of the tools that do not run on the files: the sandbox runs run,
// run_tests and install, and finish ends the step.
const (
	NameRun      = "run"
	NameRunTests = "run_tests"
	NameInstall  = "install"
	NameFinish   = "finish"
)

// RunArgs are the arguments of run.
type RunArgs struct {
	Command        string `json:"command" desc:"shell command line, run with sh -c in the project's root, e.g. \"python3 -m pytest -x tests/test_api.py\" or \"go build ./... && go vet ./...\""`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" desc:"wall-clock limit in seconds; the command and everything it started is killed then (default and maximum: the sandbox's limit, a few minutes)"`
}

// RunTestsArgs are the arguments of run_tests.
type RunTestsArgs struct {
	Tests []string `json:"tests,omitempty" desc:"tests to run, as the language names them: pytest paths or node ids (tests/test_api.py, tests/test_api.py::test_get), Go test names (TestParse) or package patterns (./parser/...); empty runs the task's whole test command"`
}

// InstallArgs are the arguments of install.
type InstallArgs struct {
	Packages []string `json:"packages" desc:"the packages to add, each named as the language's registry names it, with its version"`
	Dev      bool     `json:"dev,omitempty" desc:"the packages are needed only by the tests, where the ecosystem keeps those apart (package.json's devDependencies); elsewhere it changes nothing"`
}

// FinishArgs are the arguments of finish.
type FinishArgs struct {
	Summary string   `json:"summary" desc:"what you changed and why, in a few sentences"`
	Tests   []string `json:"tests,omitempty" desc:"the tests this step added or made pass, named as for run_tests; they are run to check the step"`
}

var runTool = newDef[RunArgs](NameRun, "Run a shell command in a sandbox on the current workspace. "+
	"The network is off: nothing can be downloaded or installed. "+
	"Output is stdout then stderr, capped: a long output shows only its head and tail. "+
	"Files the command creates, changes or deletes become the workspace, so build outputs and large or binary files should be removed within the same command; "+
	"the result lists the files changed. Use it to reproduce a failure, try code, or run one test.", Sandbox)

var runTestsTool = newDef[RunTestsArgs](NameRunTests, "Run the project's tests in the sandbox, judged as the final check judges them: "+
	"the user's test files run as they were at the start, whatever the workspace holds. "+
	"Name tests to run only those; name none to run the task's whole test command. "+
	"The network is off; output is capped to its head and tail. Changes the run makes to files are not kept.", Sandbox)

var installTool = newDef[InstallArgs](NameInstall, "Add third-party packages to the project with the ecosystem's own command (pip, go get, npm install): "+
	"the only way to reach the package registry. The registry must have each package at the version named, or the call fails with the command's message. "+
	"The manifest and lock file the command writes become the workspace, and nothing else it leaves; "+
	"run, run_tests and the check then find the packages installed. The result lists the files changed and the command's output.", Sandbox)

var finishTool = newDef[FinishArgs](NameFinish, "Call once, when the current step is done, and make no other call in the same turn. "+
	"The step is then checked: the code must build and the tests you name must pass (the plan's last step: the task's whole test command). "+
	"If the check fails you are told why and can continue.", Finish)
