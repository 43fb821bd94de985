package sqlite

import "context"

// WriteForTest runs fn as one queued write: exec runs a statement in the
// write's transaction (inside its savepoint).
func WriteForTest(ctx context.Context, s *Store, fn func(exec func(q string, args ...any) error) error) error {
	return s.write(ctx, "test write", func(x *wtx) error {
		return fn(func(q string, args ...any) error {
			_, err := x.s.w.conn.ExecContext(x.ectx, q, args...)
			return err
		})
	})
}

// QueuedWrites is how many writes wait for a transaction.
func QueuedWrites(s *Store) int {
	return s.writesQ.Waiting()
}

// BlockWrites is how many word blocks the writer's transactions wrote.
func BlockWrites(s *Store) int {
	return s.w.blockWrites
}
