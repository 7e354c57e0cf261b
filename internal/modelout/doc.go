// Package modelout reads what a model writes back: plans and files.
//
// # Plans
//
// A plan is a numbered list, one step per item, numbered "1." or "1)":
//
//	Plan:
//	1. Create the package
//	2) Add tests
//
// or written as "Step 1: Create the package" lines; when such lines exist
// they alone are the steps. Markdown around the numbers (headings, bold,
// quotes) is ignored, as are numbered lines inside code blocks and indented
// sub-lists. At most MaxPlanSteps steps are kept.
//
// # Files
//
// Every file is a fenced code block tagged with its path relative to the
// workspace root. The path goes in the info string,
//
//	```python path=app/main.py
//	```go title="cmd/x/main.go"
//	```app/main.py
//
// or on the line right before the fence (one blank line may separate them):
//
//	File: app/main.py
//	### app/main.py
//	**app/main.py**
//
// A block holds the whole new content of the file. Blocks naming no path are
// ignored (they are usually examples or shell commands). To show a fence
// inside a file, open the outer block with more backticks than the inner.
//
// # Edits
//
// A large existing file may instead be changed with search/replace sections
// inside a block tagged with its path:
//
//	```python path=app/main.py
//	<<<<<<< SEARCH
//	def greet():
//	    return "hi"
//	=======
//	def greet(name):
//	    return f"hi {name}"
//	>>>>>>> REPLACE
//	```
//
// The SEARCH lines must match exactly one run of whole lines of the current
// file; an empty REPLACE deletes them.
//
// # Deletions
//
// A line of its own outside any block, DELETE app/old.py, removes a file.
//
// Every path is checked with workspace.CleanPath. Errors are short and name
// the file so they can be handed back to the model as they are.
package modelout
