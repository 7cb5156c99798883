package transport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/zap"
)

// scanned is what a topLevelScan found.
type scanned struct {
	id        string // the ID's JSON, "" if none
	hasMethod bool
}

func scanResult(s *topLevelScan) scanned {
	r := scanned{hasMethod: s.hasMethod}
	if id, ok := s.requestID(); ok {
		b, _ := json.Marshal(id.Raw())
		r.id = string(b)
	}
	return r
}

// scanSplit feeds data to a topLevelScan in the pieces cuts makes of it.
func scanSplit(data []byte, cuts []byte) scanned {
	var s topLevelScan
	for _, c := range cuts {
		n := min(int(c), len(data))
		s.feed(data[:n])
		data = data[n:]
	}
	s.feed(data)
	return scanResult(&s)
}

// referenceScan is what topLevelScan must find in a valid JSON object,
// read by encoding/json: the last top-level member spelled "id" (its value
// as jsonrpc.MakeID takes it, from its first maxScanID bytes counted from
// the colon), and whether a top-level member is spelled "method". Members
// are matched by their key as written: an escaped key such as "\u0069d" is
// not "id" to the scanner. ok is false when data is not one JSON object.
func referenceScan(data []byte) (r scanned, ok bool) {
	if !json.Valid(data) {
		return r, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return r, false
	}
	var idBytes []byte
	found := false
	for dec.More() {
		before := dec.InputOffset()
		if _, err := dec.Token(); err != nil {
			return r, false
		}
		afterKey := dec.InputOffset()
		key := strings.TrimLeft(string(data[before:afterKey]), " \t\r\n,")
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return r, false
		}
		afterValue := dec.InputOffset()
		switch key {
		case `"method"`:
			r.hasMethod = true
		case `"id"`:
			// What the scanner keeps: after the colon, up to the ',' or
			// '}' that ends the member, spaces included.
			colon := afterKey + int64(bytes.IndexByte(data[afterKey:], ':')) + 1
			end := afterValue
			for end < int64(len(data)) && strings.IndexByte(" \t\r\n", data[end]) >= 0 {
				end++
			}
			idBytes, found = data[colon:end], true
		}
	}
	if found {
		idBytes = idBytes[:min(len(idBytes), maxScanID)]
		var v any
		if json.Unmarshal(bytes.TrimSpace(idBytes), &v) == nil {
			if id, err := jsonrpc.MakeID(v); err == nil && id.IsValid() {
				b, _ := json.Marshal(id.Raw())
				r.id = string(b)
			}
		}
	}
	return r, true
}

func TestTopLevelScan(t *testing.T) {
	long := strings.Repeat("z", 300)
	tests := []struct {
		in   string
		want scanned
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, scanned{id: "1"}},
		{`{"id" : "a,}b" , "method":"x"}`, scanned{id: `"a,}b"`, hasMethod: true}},
		{`{"id":"q\"}\\","x":1}`, scanned{id: `"q\"}\\"`}},
		{`{"result":{"id":5,"method":"nested"},"id":6}`, scanned{id: "6"}},
		{`{"params":["id",{"id":1}],"method":"m"}`, scanned{hasMethod: true}},
		{`{"id":1,"id":2}`, scanned{id: "2"}},
		{`{"id":null}`, scanned{}},
		{`{"id":{"a":1}}`, scanned{}},
		{`{"id":1.5}`, scanned{id: "1"}}, // as jsonrpc.MakeID takes it
		{`{"id":"` + long + `"}`, scanned{}},
		{`{"ID":1,"Method":"m","methods":1}`, scanned{}},
		{`{"\u0069d":1}`, scanned{}}, // matched as written
		{`{"id":7`, scanned{}},       // unterminated: no id
		{`not json at all`, scanned{}},
	}
	for _, tt := range tests {
		for cut := 1; cut <= len(tt.in); cut++ {
			cuts := bytes.Repeat([]byte{byte(cut)}, len(tt.in)/cut+1)
			if got := scanSplit([]byte(tt.in), cuts); got != tt.want {
				t.Errorf("%s in pieces of %d: %+v, want %+v", tt.in, cut, got, tt.want)
				break
			}
		}
		if ref, ok := referenceScan([]byte(tt.in)); ok && ref != tt.want {
			t.Errorf("%s: the reference says %+v, the table %+v", tt.in, ref, tt.want)
		}
	}
}

// FuzzTopLevelScan checks that the scanner never panics, finds the same
// wherever its input is cut, and on a JSON object finds what encoding/json
// finds (referenceScan).
func FuzzTopLevelScan(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"a\"b","method":"sampling/createMessage","params":{"id":2}}`,
		`{"method":"m","params":["}",{"id":"x"}],"id": 42 }`,
		`{"id":1,"id":"two"}`,
		`{"id":"\u0041","x":[[[{}]]]}`,
		`[{"id":1}]`,
		`{"id":`,
		"\x00\xff{\"",
	} {
		f.Add([]byte(s), []byte{3, 1, 7})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		whole := scanSplit(data, nil)
		if split := scanSplit(data, cuts); split != whole {
			t.Fatalf("cut at %v: %+v, whole: %+v", cuts, split, whole)
		}
		if ref, ok := referenceScan(data); ok && ref != whole {
			t.Fatalf("scanned %+v, encoding/json finds %+v", whole, ref)
		}
	})
}

// chunkReader returns its data in pieces of the sizes cuts gives in turn.
type chunkReader struct {
	data, cuts []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.cuts) > 0 {
		n, r.cuts = max(1, int(r.cuts[0])), r.cuts[1:]
	}
	n = copy(p, r.data[:min(n, len(r.data))])
	r.data = r.data[n:]
	return n, nil
}

// referenceLines frames stream as nextMessages must: line by line, each
// held whole. A line (without its '\n') over max+1 bytes, or over max
// once trimmed, becomes the error response for its id (if it answers a
// request of ours) or nothing; other lines are decoded, and skipped if
// they are not JSON-RPC; a partial last line is dropped.
func referenceLines(stream []byte, max int64) []string {
	lines := bytes.Split(stream, []byte{'\n'})
	lines = lines[:len(lines)-1]
	var out []string
	for _, raw := range lines {
		line := bytes.TrimSpace(raw)
		size := int64(len(line))
		if int64(len(raw)) > max+1 {
			size = int64(len(raw))
		} else if len(line) == 0 {
			continue
		}
		if size > max {
			var s topLevelScan
			s.feed(raw)
			if id, ok := s.requestID(); ok && !s.hasMethod {
				out = append(out, string(mustEncode(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
					Code: CodeMessageTooLarge, Message: tooLargeMessage(size, max, "t")}})))
			}
			continue
		}
		msgs, err := decodeLine(line)
		if err != nil {
			continue
		}
		for _, m := range msgs {
			out = append(out, string(mustEncode(m)))
		}
	}
	return out
}

func mustEncode(m jsonrpc.Message) []byte {
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzNextMessages checks the stdio framing against referenceLines:
// whatever the stream and however it arrives (the reader's pieces, a
// 16-byte bufio buffer, so that lines span many fragments), nextMessages
// yields exactly the messages of its lines.
func FuzzNextMessages(f *testing.F) {
	resp := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`
	f.Add([]byte(resp+"\n"+`{"jsonrpc":"2.0","method":"m"}`+"\n"), []byte{5, 40}, uint16(1<<10))
	f.Add([]byte(resp+"\n\n  "+resp+" \r\n"), []byte{1}, uint16(len(resp)))
	f.Add([]byte(resp+"\n"+resp+"\n"), []byte{17, 3}, uint16(len(resp)-1))
	f.Add([]byte(`[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":"x","result":1}]`+"\nnope\n{\"id\":2"), []byte{2}, uint16(20))
	f.Add([]byte(`{"jsonrpc":"2.0","id":9,"method":"x","params":{}}`+"\n"), []byte{}, uint16(8))
	f.Fuzz(func(t *testing.T, stream, cuts []byte, max uint16) {
		c := pipeConn(int64(max), zap.NewNop(), nopWriteCloser{io.Discard})
		r := bufio.NewReaderSize(&chunkReader{data: stream, cuts: cuts}, 16)
		var got []string
		for {
			msgs, err := c.nextMessages(r)
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("nextMessages: %v", err)
				}
				break
			}
			for _, m := range msgs {
				got = append(got, string(mustEncode(m)))
			}
		}
		want := referenceLines(stream, int64(max))
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
