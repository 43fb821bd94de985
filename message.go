package kgagent

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Message is the unit of the Fixie agent protocol: text plus named embeds.
// Embeds marshal as {} when empty, never null, as the reference SDK does.
type Message struct {
	Text   string           `json:"text"`
	Embeds map[string]Embed `json:"embeds"`
}

// MarshalJSON writes embeds as {} when there are none.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	p := plain(m)
	if p.Embeds == nil {
		p.Embeds = map[string]Embed{}
	}
	return json.Marshal(p)
}

// Embed is an attachment of a Message: a content type and a URI that is an
// http(s) URL or a data URI.
type Embed struct {
	ContentType string `json:"content_type"`
	URI         string `json:"uri"`
}

// DataURI returns the data URI the reference SDK writes for content:
// "data:base64,<base64>".
func DataURI(content []byte) string {
	return "data:base64," + base64.StdEncoding.EncodeToString(content)
}

// DecodeDataURI reads a data URI as the reference SDK does: whatever follows
// the first comma is standard base64. It fails with EINVALID when uri is not a
// data URI or its payload is not base64.
func DecodeDataURI(uri string) ([]byte, error) {
	if !strings.HasPrefix(uri, "data:") {
		return nil, Errorf(EINVALID, "embed uri is not a data URI")
	}
	i := strings.IndexByte(uri, ',')
	if i < 0 {
		return nil, Errorf(EINVALID, "data URI has no comma")
	}
	b, err := base64.StdEncoding.DecodeString(uri[i+1:])
	if err != nil {
		return nil, Errorf(EINVALID, "data URI payload is not base64: %v", err)
	}
	return b, nil
}
