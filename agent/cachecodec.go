package agent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"sync"

	"github.com/klauspost/compress/s2"

	"github.com/kgagent/kgagent"
)

// encodeEntry encodes a cached answer and its events as one compressed
// byte slice, and returns the events' errors beside it (errs[i] is event
// i's; nil when no event has one). Only what a replay uses is kept: an
// event's RequestID, Seq and Time are not (replay's emit sets them), nor
// the events' errors, whose Code and Message are copied into errs.
// Strings are a length and their bytes, so any bytes come back as they
// were; a nil slice of sources or headings stays nil and an empty one
// empty (Answer.Sources is written as [] or null accordingly).
func encodeEntry(ans kgagent.Answer, events []kgagent.Event) (blob []byte, errs []*kgagent.Error) {
	scratch := entryScratch.Get().(*[2][]byte)
	defer func() {
		if cap(scratch[0])+cap(scratch[1]) <= maxEntryScratch {
			entryScratch.Put(scratch)
		}
	}()
	b := scratch[0][:0]
	b = appendStr(b, ans.RequestID)
	b = appendStr(b, ans.Agent)
	b = appendStr(b, ans.Answer)
	b = appendSources(b, ans.Sources)
	b = binary.AppendVarint(b, int64(ans.Iterations))
	b = binary.AppendVarint(b, int64(ans.Usage.PromptTokens))
	b = binary.AppendVarint(b, int64(ans.Usage.CompletionTokens))
	b = appendStr(b, ans.Citations)
	b = binary.AppendUvarint(b, uint64(len(events)))
	for i := range events {
		ev := &events[i]
		b = appendStr(b, string(ev.Kind))
		b = appendStr(b, ev.Text)
		b = appendStr(b, ev.Agent)
		b = appendStr(b, ev.Func)
		var flags byte
		if ev.Delta {
			flags |= 1
		}
		if ev.Final {
			flags |= 2
		}
		if ev.Usage != nil {
			flags |= 4
		}
		b = append(b, flags)
		b = appendSources(b, ev.Sources)
		if ev.Usage != nil {
			b = binary.AppendVarint(b, int64(ev.Usage.PromptTokens))
			b = binary.AppendVarint(b, int64(ev.Usage.CompletionTokens))
		}
		b = appendStr(b, ev.Citations)
		if ev.Error != nil {
			if errs == nil {
				errs = make([]*kgagent.Error, len(events))
			}
			er := *ev.Error
			er.Code, er.Message = string([]byte(er.Code)), string([]byte(er.Message))
			errs[i] = &er
		}
	}
	scratch[0] = b
	if n := s2.MaxEncodedLen(len(b)); cap(scratch[1]) < n {
		scratch[1] = make([]byte, n)
	}
	// a copy of its length: the encoder's buffer has room for the
	// incompressible case. s2.Encode, not EncodeBetter: for an encoding of
	// 16 KB or more (most answers with their events) EncodeBetter takes a
	// 576 KB hash table from a pool that every other collection empties,
	// 59 of the 1,066 MB serve allocated over 800 OpenJDK API docs searches
	// and answers; Encode's is 64 KB, for slightly larger entries
	return bytes.Clone(s2.Encode(scratch[1][:cap(scratch[1])], b)), errs
}

// entryScratch holds encodeEntry's buffers: the encoding and its
// compression.
var entryScratch = sync.Pool{New: func() any { return new([2][]byte) }}

// maxEntryScratch is the most bytes of buffers entryScratch keeps: an
// answer of a few hundred KB is encoded in buffers of its own.
const maxEntryScratch = 1 << 20

// errBadEntry: bytes that encodeEntry did not write.
var errBadEntry = errors.New("answer cache: bad entry")

// maxEntryLen is the most bytes an entry's encoding may take before
// compression. A longer answer is not cached (a long answer and its
// events take ~100 KB), and decodeEntry refuses a blob whose header
// claims more, so that bytes encodeEntry did not write cannot make it
// allocate up to 4 GiB.
const maxEntryLen = 64 << 20

// decodable reports whether blob's header claims at most maxEntryLen
// bytes.
func decodable(blob []byte) bool {
	n, err := s2.DecodedLen(blob)
	return err == nil && n <= maxEntryLen
}

// decodeEntry is the answer and events encodeEntry encoded as blob, with
// errs.
func decodeEntry(blob []byte, errs []*kgagent.Error) (kgagent.Answer, []kgagent.Event, error) {
	if !decodable(blob) {
		return kgagent.Answer{}, nil, errBadEntry
	}
	b, err := s2.Decode(nil, blob)
	if err != nil {
		return kgagent.Answer{}, nil, errBadEntry
	}
	d := entryReader{b: b}
	var ans kgagent.Answer
	ans.RequestID = d.str()
	ans.Agent = d.str()
	ans.Answer = d.str()
	ans.Sources = d.sources()
	ans.Iterations = d.int()
	ans.Usage.PromptTokens = d.int()
	ans.Usage.CompletionTokens = d.int()
	ans.Citations = d.str()
	n := d.count()
	if errs != nil && len(errs) != n {
		d.bad = true
	}
	var events []kgagent.Event
	if n > 0 {
		events = make([]kgagent.Event, n)
	}
	for i := range events {
		ev := &events[i]
		ev.Kind = kgagent.EventKind(d.str())
		ev.Text = d.str()
		ev.Agent = d.str()
		ev.Func = d.str()
		flags := d.byte()
		ev.Delta, ev.Final = flags&1 != 0, flags&2 != 0
		ev.Sources = d.sources()
		if flags&4 != 0 {
			ev.Usage = &kgagent.Usage{PromptTokens: d.int(), CompletionTokens: d.int()}
		}
		ev.Citations = d.str()
		if errs != nil && !d.bad && errs[i] != nil {
			er := *errs[i]
			ev.Error = &er
		}
		if d.bad {
			break
		}
	}
	if d.bad || len(d.b) != 0 {
		return kgagent.Answer{}, nil, errBadEntry
	}
	return ans, events, nil
}

// appendStr appends s's length and bytes.
func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendSources appends 0 for nil, else 1 + the count, then each source.
func appendSources(b []byte, ss []kgagent.Source) []byte {
	if ss == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(ss))+1)
	for _, s := range ss {
		b = appendStr(b, s.URL)
		b = appendStr(b, s.Title)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Score))
		if s.HeadingPath == nil {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(s.HeadingPath))+1)
			for _, h := range s.HeadingPath {
				b = appendStr(b, h)
			}
		}
		b = appendStr(b, s.Snippet)
	}
	return b
}

// entryReader reads encodeEntry's bytes; past their end or on a bad length
// it sets bad and returns zero values.
type entryReader struct {
	b   []byte
	bad bool
}

func (d *entryReader) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *entryReader) int() int {
	v, n := binary.Varint(d.b)
	if n <= 0 || v > math.MaxInt || v < math.MinInt {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

// count reads a count of items, each at least one byte long.
func (d *entryReader) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return 0
	}
	return int(n)
}

func (d *entryReader) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *entryReader) str() string {
	n := d.count()
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// list reads 0 (nil) or 1 + a count; -1 for nil.
func (d *entryReader) list() int {
	n := d.uvarint()
	if n == 0 {
		return -1
	}
	if n-1 > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return -1
	}
	return int(n - 1)
}

func (d *entryReader) sources() []kgagent.Source {
	n := d.list()
	if n < 0 {
		return nil
	}
	ss := make([]kgagent.Source, n)
	for i := range ss {
		s := &ss[i]
		s.URL = d.str()
		s.Title = d.str()
		if len(d.b) < 8 {
			d.bad, d.b = true, nil
			return nil
		}
		s.Score = math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		d.b = d.b[8:]
		if h := d.list(); h >= 0 {
			s.HeadingPath = make([]string, h)
			for j := range s.HeadingPath {
				s.HeadingPath[j] = d.str()
			}
		}
		s.Snippet = d.str()
		if d.bad {
			return nil
		}
	}
	return ss
}
