package mcpclient_test

import (
	"encoding/base64"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
)

func TestIsTextMIME(t *testing.T) {
	tests := []struct {
		mime string
		want bool
	}{
		{"", true},
		{"text/plain", true},
		{"text/markdown; charset=utf-8", true},
		{"TEXT/HTML", true},
		{" text/csv ", true},
		{"application/json", false},
		{"application/octet-stream", false},
		{"image/png", false},
		{"text", false},
		{"texts/plain", false},
	}
	for _, tt := range tests {
		if got := mcpclient.IsTextMIME(tt.mime); got != tt.want {
			t.Errorf("IsTextMIME(%q) = %v, want %v", tt.mime, got, tt.want)
		}
	}
}

func TestEncodeContent(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	tests := []struct {
		name     string
		in       mcp.ResourceContents
		wantMIME string // "" means absent
		want     string
	}{
		{"text, no mime", mcp.ResourceContents{URI: "u", Text: "héllo"}, "", "héllo"},
		{"text/plain text", mcp.ResourceContents{URI: "u", MIMEType: "text/plain", Text: "a"}, "text/plain", "a"},
		{"text/plain blob decoded", mcp.ResourceContents{URI: "u", MIMEType: "text/plain", Blob: []byte("from blob")}, "text/plain", "from blob"},
		{"json text is base64", mcp.ResourceContents{URI: "u", MIMEType: "application/json", Text: `{"a":1}`}, "application/json", b64([]byte(`{"a":1}`))},
		{"image blob", mcp.ResourceContents{URI: "u", MIMEType: "image/png", Blob: []byte{0, 1, 2, 255}}, "image/png", b64([]byte{0, 1, 2, 255})},
		{"blob, no mime, utf-8", mcp.ResourceContents{URI: "u", Blob: []byte("plain bytes")}, "", "plain bytes"},
		{"blob, no mime, binary", mcp.ResourceContents{URI: "u", Blob: []byte{0xff, 0xfe}}, "application/octet-stream", b64([]byte{0xff, 0xfe})},
		{"text/* blob not utf-8", mcp.ResourceContents{URI: "u", MIMEType: "text/plain", Blob: []byte{'a', 0xff}}, "text/plain", "a\uFFFD"},
		{"empty blob with mime", mcp.ResourceContents{URI: "u", MIMEType: "application/pdf", Blob: []byte{}}, "application/pdf", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mcpclient.EncodeContent(&tt.in)
			gotMIME := ""
			if got.MIMEType != nil {
				gotMIME = *got.MIMEType
			}
			if got.URI != tt.in.URI || gotMIME != tt.wantMIME || got.Content != tt.want {
				t.Errorf("got {%q %q %q}, want {%q %q %q}", got.URI, gotMIME, got.Content, tt.in.URI, tt.wantMIME, tt.want)
			}
		})
	}
}

func TestSelectContent(t *testing.T) {
	a := &mcp.ResourceContents{URI: "a"}
	b := &mcp.ResourceContents{URI: "b"}
	if got := mcpclient.SelectContent("b", []*mcp.ResourceContents{a, b}); got != b {
		t.Errorf("exact uri: got %v", got)
	}
	if got := mcpclient.SelectContent("c", []*mcp.ResourceContents{nil, a, b}); got != a {
		t.Errorf("no match: got %v, want the first", got)
	}
	if got := mcpclient.SelectContent("a", nil); got != nil {
		t.Errorf("none: got %v", got)
	}
}

// FuzzEncodeContent checks the contract's rule on arbitrary input: the
// content is valid UTF-8; under a text mime type (or none) it is the text;
// otherwise it is base64 that decodes to exactly the bytes.
func FuzzEncodeContent(f *testing.F) {
	f.Add("u", "text/plain", []byte("hello"), false)
	f.Add("u", "application/json", []byte(`{"a":1}`), false)
	f.Add("u", "", []byte{0xff, 0}, true)
	f.Add("u", "image/png", []byte{0x89, 'P'}, true)
	f.Add("u", "Text/Plain; charset=latin1", []byte{0xe9}, true)
	f.Fuzz(func(t *testing.T, uri, mimeType string, data []byte, isBlob bool) {
		in := &mcp.ResourceContents{URI: uri, MIMEType: mimeType}
		if isBlob {
			in.Blob = append([]byte{}, data...)
		} else {
			in.Text = string(data)
		}
		got := mcpclient.EncodeContent(in)
		if got.URI != uri {
			t.Fatalf("uri %q, want %q", got.URI, uri)
		}
		if !utf8.ValidString(got.Content) {
			t.Fatalf("content is not UTF-8: %q", got.Content)
		}
		outMIME := ""
		if got.MIMEType != nil {
			outMIME = *got.MIMEType
			if outMIME == "" {
				t.Fatal("present but empty mime type")
			}
		}
		if mimeType != "" && outMIME != mimeType {
			t.Fatalf("mime %q changed to %q", mimeType, outMIME)
		}
		if mcpclient.IsTextMIME(outMIME) {
			if utf8.Valid(data) && got.Content != string(data) {
				t.Fatalf("text content %q, want %q", got.Content, data)
			}
			return
		}
		raw, err := base64.StdEncoding.DecodeString(got.Content)
		if err != nil {
			t.Fatalf("content under %q is not base64: %v", outMIME, err)
		}
		if string(raw) != string(data) {
			t.Fatalf("base64 decodes to %q, want %q", raw, data)
		}
	})
}
