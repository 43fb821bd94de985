package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/sqlite"
)

// User storage keeps ints and bytes exact and rejects anonymous callers.
func ExampleUserStorage() {
	dir, _ := os.MkdirTemp("", "kgagent")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "agent.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	us := db.UserStorage()
	ctx := context.Background()

	_ = us.Set(ctx, "calendar", "alice", "prefs", map[string]any{"days": 1 << 60, "blob": []byte{0, 1}})
	v, _ := us.Get(ctx, "calendar", "alice", "prefs")
	fmt.Printf("%#v\n", v.(map[string]any)["days"])

	_, err = us.Get(ctx, "calendar", "", "prefs")
	fmt.Println(kgagent.ErrorCode(err), kgagent.HTTPStatus(kgagent.ErrorCode(err)))
	_, err = us.Get(ctx, "calendar", "alice", "missing")
	fmt.Println(kgagent.ErrorCode(err))
	// Output:
	// 1152921504606846976
	// ERR_USERSTORAGE_REQUIRES_USER 400
	// ERR_USERSTORAGE_KEY_NOT_FOUND
}
