package mcpclient

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhostd/toolhostd/internal/tooling"
)

// octetStream is the mime type given to a blob without a mime type whose
// bytes are not UTF-8 text: it cannot be carried as text without loss.
const octetStream = "application/octet-stream"

// IsTextMIME reports whether content of mime type m is carried as text by
// the contract: m is absent or text/* (case-insensitive, parameters
// ignored).
func IsTextMIME(m string) bool {
	m = strings.TrimSpace(m)
	if m == "" {
		return true
	}
	if i := strings.IndexByte(m, ';'); i >= 0 {
		m = strings.TrimSpace(m[:i])
	}
	return len(m) >= 5 && strings.EqualFold(m[:5], "text/")
}

// SelectContent picks, among the contents a resources/read returned, the
// one whose uri equals uri, else the first; nil when there is none.
func SelectContent(uri string, contents []*mcp.ResourceContents) *mcp.ResourceContents {
	var first *mcp.ResourceContents
	for _, c := range contents {
		if c == nil {
			continue
		}
		if c.URI == uri {
			return c
		}
		if first == nil {
			first = c
		}
	}
	return first
}

// EncodeContent applies the contract's read-resource encoding rule to one
// MCP resource content: Content is text when the mime type is absent or
// text/*, and base64 of the bytes for any other mime type (including
// application/json). An MCP blob is decoded and re-encoded as needed, so a
// blob with a text mime type becomes text and a text with another mime type
// becomes base64. Two cases cannot hold the rule without a choice: a blob
// without a mime type whose bytes are not UTF-8 gets the mime type
// application/octet-stream (and base64 content, no loss); text/* bytes that
// are not UTF-8 have their invalid sequences replaced by U+FFFD.
func EncodeContent(c *mcp.ResourceContents) tooling.ResourceContent {
	out := tooling.ResourceContent{URI: c.URI}
	mimeType := c.MIMEType
	var data []byte
	isBlob := c.Blob != nil
	if isBlob {
		data = c.Blob
	} else {
		data = []byte(c.Text)
	}
	if mimeType == "" && isBlob && !utf8.Valid(data) {
		mimeType = octetStream
	}
	if mimeType != "" {
		m := mimeType
		out.MIMEType = &m
	}
	if IsTextMIME(mimeType) {
		out.Content = strings.ToValidUTF8(string(data), "\uFFFD")
	} else {
		out.Content = base64.StdEncoding.EncodeToString(data)
	}
	return out
}
