package qdrant

// SetScrollPage sets how many points one Scroll call reads and returns a
// func that restores it (tests of paging).
func SetScrollPage(n uint32) func() {
	old := scrollPage
	scrollPage = n
	return func() { scrollPage = old }
}
