package sqlite

import (
	"database/sql/driver"
	"fmt"

	sqlite3 "modernc.org/sqlite"
)

// strHash is the 32-bit FNV-1a hash of s as a signed 32-bit value (four
// bytes in a SQLite record): strs.h, by which a string's id is found.
func strHash(s string) int64 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return int64(int32(h))
}

// The SQL function kg_strhash(s) is strHash, for the statements that look
// strings up (strID) or intern them in SQL (the migrations). Registered for
// every connection of the process's "sqlite" driver.
func init() {
	sqlite3.MustRegisterDeterministicScalarFunction("kg_strhash", 1, func(_ *sqlite3.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case string:
			return strHash(v), nil
		case []byte:
			return strHash(string(v)), nil
		case nil:
			return nil, nil
		default:
			return strHash(fmt.Sprint(v)), nil
		}
	})
}
