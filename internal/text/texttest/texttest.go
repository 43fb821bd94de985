// Package texttest holds the questions that every reader of a question —
// keyword search, the vocabulary check, the router and the answer writer —
// is tested with, and the words and terms each must see, so that their
// tests fail together when one of them stops reading a question the way
// package text does.
package texttest

// Question is a question and what the readers of it must see.
type Question struct {
	Q string
	// Words are its text.QuestionWords: what the vocabulary check looks
	// up and an abstention may name.
	Words []string
	// Terms are its text.QuestionTerms: what keyword search looks for.
	Terms []string
	// Keys are the terms the answer writer requires of the evidence: the
	// text.Term of Words, less the words it holds too vague to require.
	Keys []string
}

// Questions have contractions, filler, snake_case and dotted names, and
// words the answer writer folds to a short form.
var Questions = []Question{
	{Q: "the server won't start because the port is already used",
		Words: []string{"server", "start", "port", "already"},
		Terms: []string{"serv", "start", "port", "alreadi"},
		Keys:  []string{"server", "start", "port"}},
	{Q: "Why doesn't json.loads accept bytes?",
		Words: []string{"json", "loads", "accept", "bytes"},
		Terms: []string{"json", "load", "accept", "byt"},
		Keys:  []string{"json", "load", "accept", "byt"}},
	{Q: "Can you show me how to configure the maximum upload size, please?",
		Words: []string{"configure", "maximum", "upload", "size"},
		Terms: []string{"configur", "maximum", "upload", "size"},
		Keys:  []string{"config", "max", "upload", "size"}},
	{Q: "I've set max_body_size but it's ignored; what am I missing?",
		Words: []string{"set", "max_body_size", "ignored", "missing"},
		Terms: []string{"set", "max_body_s", "ignor", "miss"},
		Keys:  []string{"set", "max_body_size", "ignor", "miss"}},
}
