package openai

import (
	"bufio"
	"bytes"
	"io"
	"strings"

	"github.com/kgagent/kgagent"
)

// MaxEventSize bounds one server-sent event; a longer line or event fails
// with ETOOLARGE instead of growing memory without limit.
const MaxEventSize = 1 << 20

// SSEEvent is one event of a text/event-stream: its data lines joined by
// "\n", and its event name and id when the server set them.
type SSEEvent struct {
	Event string
	Data  string
	ID    string
}

// SSEReader reads server-sent events (the WHATWG text/event-stream format)
// from r: "data:" lines, ":" comments, "event:" and "id:" fields, events
// ended by a blank line, CRLF, CR or LF line ends. An event still open at the
// end of the input is delivered as if a blank line followed it.
type SSEReader struct {
	r       *bufio.Reader
	line    []byte
	afterCR bool
}

// NewSSEReader returns an SSEReader reading from r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 4096)}
}

// Next returns the next event that carries data. It returns io.EOF at the end
// of the input, ETOOLARGE for an event over MaxEventSize, and read errors as
// they come.
func (s *SSEReader) Next() (SSEEvent, error) {
	var (
		ev      SSEEvent
		data    strings.Builder
		hasData bool
		size    int
	)
	for {
		line, err := s.readLine()
		if err != nil && err != io.EOF {
			return SSEEvent{}, err
		}
		eof := err == io.EOF
		if len(line) > 0 {
			size += len(line)
			if size > MaxEventSize {
				return SSEEvent{}, kgagent.Errorf(kgagent.ETOOLARGE, "server-sent event over %d bytes", MaxEventSize)
			}
			field, value := line, []byte(nil)
			if i := bytes.IndexByte(line, ':'); i >= 0 {
				field, value = line[:i], line[i+1:]
				if len(value) > 0 && value[0] == ' ' {
					value = value[1:]
				}
			}
			switch string(field) {
			case "": // a comment line
			case "data":
				if hasData {
					data.WriteByte('\n')
				}
				data.Write(value)
				hasData = true
			case "event":
				ev.Event = string(value)
			case "id":
				ev.ID = string(value)
			}
		}
		if len(line) == 0 || eof {
			if hasData {
				ev.Data = data.String()
				return ev, nil
			}
			if eof {
				return SSEEvent{}, io.EOF
			}
			ev = SSEEvent{}
		}
	}
}

// readLine returns the next line without its end (LF, CRLF or CR). At the end
// of the input it returns the last partial line with io.EOF. A CR ends the
// line at once; an LF right after it is skipped on the next call, so a
// CR-terminated line is never held back waiting for more bytes. It scans
// the buffered bytes at once rather than byte by byte.
func (s *SSEReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	if s.afterCR {
		s.afterCR = false
		b, err := s.r.ReadByte()
		if err != nil {
			return s.line, err
		}
		if b != '\n' {
			_ = s.r.UnreadByte()
		}
	}
	for {
		if s.r.Buffered() == 0 {
			if _, err := s.r.Peek(1); err != nil {
				return s.line, err
			}
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		n := i
		if i < 0 {
			n = len(buf)
		}
		if len(s.line)+n > MaxEventSize {
			return nil, kgagent.Errorf(kgagent.ETOOLARGE, "server-sent event line over %d bytes", MaxEventSize)
		}
		s.line = append(s.line, buf[:n]...)
		if i < 0 {
			_, _ = s.r.Discard(n)
			continue
		}
		s.afterCR = buf[i] == '\r'
		_, _ = s.r.Discard(i + 1)
		return s.line, nil
	}
}
