package kgagent

import "fmt"

// MaxQuestionBytes is the longest question (or search query, or agent
// protocol message text) kgagent accepts, in bytes of UTF-8: 10 KiB. Every
// transport refuses a longer one once, at admission, with ETOOLARGE (HTTP
// 413), before anything is charged or run; the corpus applies the same
// limit to queries (corpus.MaxQueryBytes is this constant), so nothing
// admitted is refused later with a different error.
const MaxQuestionBytes = 10 << 10

// CheckQuestionSize returns ETOOLARGE, with details limit and size, when
// text is longer than MaxQuestionBytes; what names it in the message
// ("question", "query", "message text").
func CheckQuestionSize(what, text string) error {
	if len(text) <= MaxQuestionBytes {
		return nil
	}
	return &Error{Code: ETOOLARGE, Message: fmt.Sprintf("%s is %d bytes, over the limit of %d bytes", what, len(text), MaxQuestionBytes),
		Details: map[string]any{"limit": MaxQuestionBytes, "size": len(text)}}
}
