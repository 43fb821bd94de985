package sqlite

import (
	"fmt"
	"runtime"
	"testing"
)

// TestLinksEncoderSmall: the links' encoder, which lives as long as the
// process, holds about its window (256 KiB) once it has packed a page's
// links, not the 8 MiB window of its level (10.0 MB held before), and the
// links still read back.
func TestLinksEncoderSmall(t *testing.T) {
	links := make([]string, 2000)
	for i := range links {
		links[i] = fmt.Sprintf("https://docs.example/java.base/java/util/Class%d.html#method%d()", i%300, i)
	}
	in := []byte(fmt.Sprint(links))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	e, err := newLinksEncoder()
	if err != nil {
		t.Fatal(err)
	}
	out := e.EncodeAll(in, nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 4<<20 {
		t.Fatalf("the encoder holds %d bytes after packing %d bytes of links", held, len(in))
	}
	runtime.KeepAlive(e)
	d, err := linksDecoder()
	if err != nil {
		t.Fatal(err)
	}
	back, err := d.DecodeAll(out, nil)
	if err != nil || string(back) != string(in) {
		t.Fatalf("links do not read back: %v", err)
	}
}
