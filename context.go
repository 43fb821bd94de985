package kgagent

import "context"

var (
	errContextCanceled = context.Canceled
	errDeadline        = context.DeadlineExceeded
)
