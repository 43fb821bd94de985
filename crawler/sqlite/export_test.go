package sqlite

// FailVacuum makes the compaction after a migration fail until the test
// ends.
func FailVacuum(t interface{ Cleanup(func()) }) {
	old := vacuumSQL
	vacuumSQL = `VACUUM no_such_schema`
	t.Cleanup(func() { vacuumSQL = old })
}
