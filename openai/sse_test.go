package openai

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/kgagent/kgagent"
)

func readAllEvents(r io.Reader) ([]SSEEvent, error) {
	sr := NewSSEReader(r)
	var out []SSEEvent
	for {
		ev, err := sr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []SSEEvent
	}{
		{"openai style", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []SSEEvent{{Data: `{"a":1}`}, {Data: "[DONE]"}}},
		{"no space after colon", "data:x\n\n", []SSEEvent{{Data: "x"}}},
		{"two spaces keep one", "data:  x\n\n", []SSEEvent{{Data: " x"}}},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []SSEEvent{{Data: "a"}, {Data: "b"}}},
		{"cr only", "data: a\r\rdata: b\r\r", []SSEEvent{{Data: "a"}, {Data: "b"}}},
		{"multi-line data", "data: a\ndata: b\n\n", []SSEEvent{{Data: "a\nb"}}},
		{"comments and keepalives", ": ping\n\n: ping\ndata: x\n\n", []SSEEvent{{Data: "x"}}},
		{"event and id", "event: message\nid: 7\ndata: x\n\n", []SSEEvent{{Event: "message", ID: "7", Data: "x"}}},
		{"event without data is dropped", "event: ping\n\ndata: x\n\n", []SSEEvent{{Data: "x"}}},
		{"unterminated last event", "data: a\n\ndata: b", []SSEEvent{{Data: "a"}, {Data: "b"}}},
		{"unknown fields ignored", "retry: 10\nfoo: bar\ndata: x\n\n", []SSEEvent{{Data: "x"}}},
		{"empty data line", "data:\n\n", []SSEEvent{{Data: ""}}},
		{"empty input", "", nil},
		{"blank lines only", "\n\n\r\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAllEvents(r)
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %d events %+v, want %+v", len(got), got, tt.want)
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Errorf("event %d = %+v, want %+v", i, got[i], tt.want[i])
					}
				}
			}
		})
	}
}

func TestSSEReaderTooLarge(t *testing.T) {
	in := "data: " + strings.Repeat("x", MaxEventSize+10) + "\n\n"
	_, err := readAllEvents(strings.NewReader(in))
	if kgagent.ErrorCode(err) != kgagent.ETOOLARGE {
		t.Fatalf("err = %v, want %s", err, kgagent.ETOOLARGE)
	}
	in = strings.Repeat("data: "+strings.Repeat("x", 1000)+"\n", MaxEventSize/1000+2) + "\n"
	_, err = readAllEvents(strings.NewReader(in))
	if kgagent.ErrorCode(err) != kgagent.ETOOLARGE {
		t.Fatalf("many lines: err = %v, want %s", err, kgagent.ETOOLARGE)
	}
}

func TestSSEReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	got, err := readAllEvents(r)
	if !errors.Is(err, boom) || len(got) != 1 || got[0].Data != "a" {
		t.Fatalf("got %+v, %v; want one event then boom", got, err)
	}
}

// FuzzSSEReader checks that the reader never panics, that how the bytes
// arrive does not change the events, and that events written back in
// canonical form read the same.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
		"data: a\r\n\r\ndata: b\r\rdata:c\n",
		": comment\nevent: e\nid: 1\ndata: x\ndata: y\n\n",
		"data", "\r\n\r", "data: \xff\xfe\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		whole, err1 := readAllEvents(strings.NewReader(in))
		bytewise, err2 := readAllEvents(iotest.OneByteReader(strings.NewReader(in)))
		if (err1 == nil) != (err2 == nil) || len(whole) != len(bytewise) {
			t.Fatalf("whole %v %v, bytewise %v %v", whole, err1, bytewise, err2)
		}
		for i := range whole {
			if whole[i] != bytewise[i] {
				t.Fatalf("event %d: %+v vs %+v", i, whole[i], bytewise[i])
			}
		}
		if err1 != nil {
			return
		}
		var b strings.Builder
		for _, ev := range whole {
			for _, line := range strings.Split(ev.Data, "\n") {
				b.WriteString("data: " + line + "\n")
			}
			b.WriteString("\n")
		}
		again, err := readAllEvents(strings.NewReader(b.String()))
		if err != nil || len(again) != len(whole) {
			t.Fatalf("re-read %v %v, want %d events", again, err, len(whole))
		}
		for i := range again {
			if again[i].Data != whole[i].Data {
				t.Fatalf("re-read event %d data %q, want %q", i, again[i].Data, whole[i].Data)
			}
		}
	})
}

// FuzzStopFeed checks that stop sequences cut the text at the same place
// however it is split into chunks, and that nothing else is lost.
func FuzzStopFeed(f *testing.F) {
	f.Add("Ask Func[x]: q\nFunc[x] says: r", uint8(3))
	f.Add("no stop here\nQ", uint8(1))
	f.Add("\n\n\nAgent[", uint8(2))
	f.Fuzz(func(t *testing.T, text string, step uint8) {
		stops := []string{"\nFunc[", "\nAgent[", "\nQ:"}
		want := text
		for _, st := range stops {
			if i := strings.Index(want, st); i >= 0 {
				want = want[:i]
			}
		}
		n := int(step%7) + 1
		s := &stream{stops: stops}
		var got strings.Builder
		stopped := false
		for i := 0; i < len(text) && !stopped; i += n {
			out, st := s.feed(text[i:min(i+n, len(text))])
			got.WriteString(out)
			stopped = st
		}
		if !stopped {
			got.WriteString(s.pending)
		}
		if got.String() != want {
			t.Fatalf("chunks of %d: got %q, want %q", n, got.String(), want)
		}
	})
}
