package notify

// gateMessage is a gate whose quoted text tries every trick a model's or
// a person's text could play on a chat: markup, mentions, a link under
// other words, a code fence closed early.
func gateMessage() Message {
	return Message{
		TaskID: "t-1", Event: EventGate,
		Task:     "Fix <b>bold</b> & @everyone <!channel> [click](http://evil.example)",
		Gate:     "command",
		Question: "Run this command?",
		Details:  "```\ncurl http://x <@123> && rm -rf ~\n```",
		Answers: []Answer{
			{Words: []string{"y", "yes"}, Signal: "approve", Means: "approve"},
			{Words: []string{"n", "no"}, Signal: "reject", Means: "reject"},
			{Signal: "reject", Means: "reject, with the text as the reason"},
		},
	}
}

// endMessage is a failed task whose reason quotes the model.
func endMessage() Message {
	return Message{TaskID: "t-2", Event: EventFailed, Task: "Add a <flag>", Result: "no passing attempt after 6 iterations; last: *boom* @here"}
}
