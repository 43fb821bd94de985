package sqlite

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Durable commits off the writer's path. With synchronous=FULL SQLite
// fsyncs the WAL inside every COMMIT, on the single writer, which then
// waits for the disk before it runs the next group's SQL. During a bulk
// load the writer connection runs with synchronous=NORMAL instead (a
// COMMIT writes the WAL and returns) and each write, once its group has
// committed, waits in its own goroutine until an fsync of the WAL file
// that began after that commit has ended (walSync.wait): one fsync then
// covers every group committed before it began, and it runs while the
// writer runs the next groups. A write still returns only once its
// commit is on disk, as with FULL (DECISIONS.md, "Durable commits off the
// writer's path").

// walSync counts the writer's commits whose WAL frames may not be on disk
// yet and fsyncs the WAL for the writes that wait for theirs.
type walSync struct {
	path string // the WAL file

	mu        sync.Mutex
	cond      sync.Cond
	committed uint64 // commits made with synchronous=NORMAL, numbered from 1
	synced    uint64 // those an fsync has covered
	syncing   bool   // a waiter is fsyncing
	err       error  // an fsync failed: every later wait fails too
	f         *os.File
	syncs     int // fsyncs made (tests)

	// checkpoint, when set, checkpoints the WAL (PASSIVE) on a connection
	// other than the writer's; a waiter starts it after an fsync, at most
	// every ckptEvery, in a goroutine of its own (ckpts). The writer's own
	// checkpoints (wal_autocheckpoint) then find most frames copied.
	checkpoint func()
	ckptAt     time.Time
	ckpting    bool
	ckpts      sync.WaitGroup
}

// ckptEvery is how often the waiters start a checkpoint beside the writer.
const ckptEvery = 200 * time.Millisecond

func newWALSync(dbPath string) *walSync {
	w := &walSync{path: dbPath + "-wal"}
	w.cond.L = &w.mu
	return w
}

// commit records a commit of the writer whose frames are not synced and
// returns its number, for wait. Only the writer calls it.
func (w *walSync) commit() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.committed++
	return w.committed
}

// wait returns once commit n is on disk: an fsync of the WAL that began
// after commit n has ended. A waiter that finds none under way makes one
// for every commit made so far; the others wait for it.
func (w *walSync) wait(n uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.synced < n && w.err == nil {
		if w.syncing {
			w.cond.Wait()
			continue
		}
		w.syncing = true
		upto := w.committed
		w.mu.Unlock()
		err := w.fsync()
		w.mu.Lock()
		w.syncing = false
		w.syncs++
		if err != nil {
			w.err = err
		} else {
			w.synced = max(w.synced, upto)
			w.startCheckpoint()
		}
		w.cond.Broadcast()
	}
	return w.err
}

// startCheckpoint starts a checkpoint beside the writer unless one runs
// or one started less than ckptEvery ago. w.mu is held.
func (w *walSync) startCheckpoint() {
	if w.checkpoint == nil || w.ckpting || time.Since(w.ckptAt) < ckptEvery {
		return
	}
	w.ckpting, w.ckptAt = true, time.Now()
	w.ckpts.Go(func() {
		w.checkpoint()
		w.mu.Lock()
		w.ckpting = false
		w.mu.Unlock()
	})
}

// fsync syncs the WAL file; the first call opens it and syncs its
// directory too (the file may be new). Called by one waiter at a time.
func (w *walSync) fsync() error {
	if w.f == nil {
		f, err := os.Open(w.path)
		if err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(w.path)); err != nil {
			f.Close()
			return err
		}
		w.f = f
	}
	return w.f.Sync()
}

// close releases the WAL file.
func (w *walSync) close() {
	w.ckpts.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.syncing {
		w.cond.Wait()
	}
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}

// syncDir fsyncs the directory dir (its entries).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
