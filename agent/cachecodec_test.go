package agent

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
)

// codecFixture is an answer and events with every field the codec keeps
// set, nil and empty lists both, bytes that are not UTF-8, and errors.
func codecFixture() (kgagent.Answer, []kgagent.Event) {
	src := []kgagent.Source{
		{URL: "https://docs.example/a.html#x", Title: "A", Score: 0.75, HeadingPath: []string{"A", "", "x"}, Snippet: "snip\xff\xfe"},
		{URL: "", Title: "no URL", Score: math.Inf(-1), HeadingPath: []string{}},
		{Score: math.Copysign(0, -1)},
	}
	ans := kgagent.Answer{RequestID: "r1", Agent: "docs", Answer: "The answer [1].", Sources: src, Iterations: 3,
		Usage: kgagent.Usage{PromptTokens: 120, CompletionTokens: -1}, Citations: kgagent.CitationsModel}
	events := []kgagent.Event{
		{Kind: kgagent.EventRoute, Text: "docs", Agent: "router"},
		{Kind: kgagent.EventAction, Func: "search", Text: strings.Repeat("query ", 300), Sources: []kgagent.Source{}, Usage: &kgagent.Usage{PromptTokens: 7}},
		{Kind: kgagent.EventObservation, Func: "search", Sources: src[:1], Error: &kgagent.Error{Code: kgagent.ENOTFOUND, Message: "none", Details: map[string]any{"n": 1}}},
		{Kind: kgagent.EventAnswer, Text: "The", Delta: true},
		{Kind: kgagent.EventAnswer, Text: "The answer [1].", Final: true, Sources: src, Citations: kgagent.CitationsAttributed},
	}
	return ans, events
}

// TestEntryCodecRoundTrip: an answer and its events come back from the
// cache's encoding as they were, but for what a replay sets anew (an
// event's request id, sequence and time).
func TestEntryCodecRoundTrip(t *testing.T) {
	ans, events := codecFixture()
	in := slicesOfEvents(events)
	for i := range in {
		in[i].RequestID, in[i].Seq, in[i].Time = "r1", int64(i+1), time.Now()
	}
	blob, errs := encodeEntry(ans, in)
	gotAns, gotEvents, err := decodeEntry(blob, errs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotAns, ans) {
		t.Errorf("answer\n got %#v\nwant %#v", gotAns, ans)
	}
	if !reflect.DeepEqual(gotEvents, events) {
		t.Errorf("events\n got %#v\nwant %#v", gotEvents, events)
	}
	if gotEvents[2].Error == events[2].Error {
		t.Error("the decoded error is the caller's, not a copy")
	}
	// no sources at all, nil and empty
	for _, a := range []kgagent.Answer{{}, {Sources: []kgagent.Source{}}} {
		blob, errs := encodeEntry(a, nil)
		got, evs, err := decodeEntry(blob, errs)
		if err != nil || !reflect.DeepEqual(got, a) || evs != nil || errs != nil {
			t.Errorf("%#v came back as %#v, %v, %v (errs %v)", a, got, evs, err, errs)
		}
	}
	if _, _, err := decodeEntry(blob[:len(blob)-1], errs); err == nil {
		t.Error("a cut entry decoded")
	}
	if _, _, err := decodeEntry(blob, errs[:1]); err == nil {
		t.Error("an entry decoded with the wrong count of errors")
	}
}

func slicesOfEvents(ev []kgagent.Event) []kgagent.Event { return append([]kgagent.Event(nil), ev...) }

// TestCachedEntryCompact: a cached answer holds its encoding, a fraction
// of its strings' bytes when they repeat as answers' do (the evidence
// quoted in the observations, the sources of every event), not copies of
// them (~23 KB an answer, 11.5 MB of serve's live heap after 500 OpenJDK
// answers, before).
func TestCachedEntryCompact(t *testing.T) {
	ans, events, strs := longFixture(20)
	c := newAnswerCache(8, 0, 0)
	c.put(&cached{key: cacheKey{question: "q"}, ans: ans, events: events})
	if c.bytes*3 > strs {
		t.Errorf("an answer with %d bytes of event text holds %d bytes in the cache", strs, c.bytes)
	}
	got, ok := c.get(cacheKey{question: "q"}, time.Now())
	if !ok || !reflect.DeepEqual(got.events, events) || !reflect.DeepEqual(got.ans, ans) {
		t.Fatalf("cached entry changed: %v %+v", ok, got)
	}
}

// FuzzDecodeEntry: bytes the encoder did not write never panic the
// decoder, and whatever it accepts encodes back to the same answer.
func FuzzDecodeEntry(f *testing.F) {
	ans, events := codecFixture()
	blob, _ := encodeEntry(ans, events)
	f.Add(blob, false)
	f.Add([]byte{}, false)
	b, _ := encodeEntry(kgagent.Answer{}, nil)
	f.Add(b, false)
	f.Fuzz(func(t *testing.T, blob []byte, withErrs bool) {
		var errs []*kgagent.Error
		if withErrs {
			errs = make([]*kgagent.Error, 3)
			errs[1] = &kgagent.Error{Code: "x"}
		}
		a, evs, err := decodeEntry(blob, errs)
		if err != nil {
			return
		}
		b, errs2 := encodeEntry(a, evs)
		a2, evs2, err := decodeEntry(b, errs2)
		if err != nil || !reflect.DeepEqual(a, a2) || !reflect.DeepEqual(evs, evs2) {
			t.Fatalf("decoded entry does not round-trip: %v", err)
		}
	})
}

// TestEntryCodecKeepsEveryField: an answer and events with every field of
// theirs set (by reflection, so a field added to kgagent.Answer, Event,
// Source or Usage later is set too) come back from the encoding as they
// were, but for an event's request id, sequence and time, which a replay
// sets anew. The struct copies the cache kept before the encoding carried
// a new field along; the encoding drops one it does not write.
func TestEntryCodecKeepsEveryField(t *testing.T) {
	var ans kgagent.Answer
	fillAll(t, reflect.ValueOf(&ans).Elem(), 1)
	events := make([]kgagent.Event, 2)
	for i := range events {
		fillAll(t, reflect.ValueOf(&events[i]).Elem(), i+2)
	}
	blob, errs := encodeEntry(ans, events)
	gotAns, gotEvents, err := decodeEntry(blob, errs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotAns, ans) {
		t.Errorf("answer\n got %#v\nwant %#v", gotAns, ans)
	}
	for i := range events {
		events[i].RequestID, events[i].Seq, events[i].Time = "", 0, time.Time{}
	}
	if !reflect.DeepEqual(gotEvents, events) {
		t.Errorf("events\n got %#v\nwant %#v", gotEvents, events)
	}
}

// fillAll sets every field of v, recursively, to a value that is not its
// zero value (n makes the values of one call differ from another's).
func fillAll(t *testing.T, v reflect.Value, n int) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(strings.Repeat("s", n) + v.Type().Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(n) * 7)
	case reflect.Float64:
		v.SetFloat(float64(n) + 0.25)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(int64(n), 0)))
			return
		}
		for i := range v.NumField() {
			fillAll(t, v.Field(i), n+i)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(t, v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillAll(t, v.Index(i), n+i)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(t, k, n)
		fillAll(t, e, n)
		v.SetMapIndex(k, e)
	case reflect.Interface:
		if v.Type() == reflect.TypeFor[error]() {
			v.Set(reflect.ValueOf(errors.New("cause")))
		} else {
			v.Set(reflect.ValueOf("any"))
		}
	default:
		t.Fatalf("fillAll: a field of kind %s (%s): teach fillAll and the codec", v.Kind(), v.Type())
	}
}

// TestDecodeEntryRefusesHugeClaim: a blob whose header claims a gigabyte
// is refused before anything is allocated for it, and an answer whose
// encoding is past maxEntryLen is not cached (its blob would be refused).
func TestDecodeEntryRefusesHugeClaim(t *testing.T) {
	blob := binary.AppendUvarint(nil, 1<<30)
	blob = append(blob, 0, 1, 2, 3)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, _, err := decodeEntry(blob, nil); err == nil {
		t.Fatal("a blob claiming 1 GiB decoded")
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("decoding a blob that claims 1 GiB allocated %d bytes", grew)
	}

	c := newAnswerCache(4, 1<<30, time.Hour)
	key := cacheKey{agent: "a", question: "q"}
	c.put(&cached{key: key, at: time.Now(), ans: kgagent.Answer{Answer: strings.Repeat("a", maxEntryLen+1)}})
	if _, ok := c.get(key, time.Now()); ok {
		t.Fatal("an answer past maxEntryLen was cached")
	}
	c.put(&cached{key: key, at: time.Now(), ans: kgagent.Answer{Answer: "short"}})
	if got, ok := c.get(key, time.Now()); !ok || got.ans.Answer != "short" {
		t.Fatalf("a short answer was not cached: %v %+v", ok, got)
	}
}

// TestEncodeEntryAllocatesLittle: encoding an answer of a few tens of KB
// allocates a small part of what EncodeBetter's 576 KB table took each
// time a collection had emptied its pool, and the entry stays compact.
func TestEncodeEntryAllocatesLittle(t *testing.T) {
	ans, events, strs := longFixture(40)
	encodeEntry(ans, events) // the scratch buffers
	var total uint64
	const runs = 5
	for range runs {
		runtime.GC()
		runtime.GC() // the pools' items, as between answers in serve
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		blob, _ := encodeEntry(ans, events)
		runtime.ReadMemStats(&after)
		total += after.TotalAlloc - before.TotalAlloc
		if len(blob)*3 > strs {
			t.Fatalf("%d bytes of event text encoded in %d", strs, len(blob))
		}
	}
	// encodeEntry's own buffers (~70 KB here: the encoding grown by doubling,
	// its compression) go with the pool too; EncodeBetter took 735 KB
	if per := total / runs; per > 320<<10 {
		t.Errorf("%d bytes allocated an encoding of %d bytes of text, want at most %d", per, strs, 320<<10)
	}
}

// longFixture is codecFixture with n sentences of a Javadoc method
// description added to each event's text, as OpenJDK answers quote them;
// strs is the events' text bytes.
func longFixture(n int) (ans kgagent.Answer, events []kgagent.Event, strs int) {
	ans, events = codecFixture()
	para := strings.Repeat("Returns the number of elements in this collection. If this collection contains more than Integer.MAX_VALUE elements, returns Integer.MAX_VALUE. ", n)
	for i := range events {
		events[i].Text += para
		strs += len(events[i].Text)
	}
	return ans, events, strs
}
