package audit

import (
	"testing"
	"time"
)

// TestEncodeGolden: the encoded line, key order included, of records from
// empty to fully populated, byte for byte.
func TestEncodeGolden(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	// Set field by field, as a caller reads and writes them.
	var full Record
	full.Time, full.Agent, full.Tooling, full.Op = at, "reader", "fs", OpCallTool
	full.Tool, full.URI, full.CallID, full.SubID = "read_file", "file:///a", "call-1", "sub-1"
	full.Outcome, full.Message, full.Duration = "denied", "no", 3200*time.Microsecond
	full.Args, full.HasArgs, full.WithArgs = `{"path":"/srv/secret.txt"}`, true, true
	full.Provider, full.Model, full.FirstToken, full.HasFirstToken = "oai", "gpt-x", 150*time.Millisecond, true
	full.InputTokens, full.OutputTokens, full.HasUsage = 12, 7, true
	full.Request, full.HasRequest, full.StreamID, full.Reissued = []byte(`{"messages":[]}`), true, "s-1", true
	full.Sender, full.MessageID, full.Session, full.Instance = "agent:writer", "m-1", "sess", "inst-1"
	full.Content, full.HasContent = "hello", true
	full.TraceID, full.SpanID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	quiet := full
	quiet.WithArgs = false
	// Text that is not JSON is not written even with WithArgs; no usage
	// is 0 tokens when HasUsage.
	var bad Record
	bad.Op, bad.Outcome, bad.Args, bad.HasArgs, bad.WithArgs = OpChat, OutcomeOK, "{", true, true
	bad.Request, bad.HasRequest, bad.HasUsage = []byte("{"), true, true
	for _, tc := range []struct {
		name string
		r    Record
		want string
	}{
		{"empty", Record{}, `{"time":"0001-01-01T00:00:00Z","agent":"","op":"","outcome":"","duration_ms":0}` + "\n"},
		{"full", full, `{"time":"2026-01-02T03:04:05.000006Z","agent":"reader","tooling":"fs","provider":"oai","model":"gpt-x","op":"call-tool","tool":"read_file","uri":"file:///a","call_id":"call-1","sub_id":"sub-1","stream_id":"s-1","reissued":true,"outcome":"denied","message":"no","duration_ms":3.2,"args_bytes":26,"args_sha256":"a4d3fe1ecbd70820c981c2baeb974329929090b6cae47acd7fd2fff874b1f4f8","arguments":{"path":"/srv/secret.txt"},"first_token_ms":150,"input_tokens":12,"output_tokens":7,"request_bytes":15,"request_sha256":"5e4ce7b36ba37b78a5d5f9fd08e6b7b54ba6879d651aa46ec9e1d6fa24ebe30a","request":{"messages":[]},"sender":"agent:writer","message_id":"m-1","session":"sess","instance":"inst-1","content_bytes":5,"content_sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","content":"hello","trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331"}` + "\n"},
		{"without arguments", quiet, `{"time":"2026-01-02T03:04:05.000006Z","agent":"reader","tooling":"fs","provider":"oai","model":"gpt-x","op":"call-tool","tool":"read_file","uri":"file:///a","call_id":"call-1","sub_id":"sub-1","stream_id":"s-1","reissued":true,"outcome":"denied","message":"no","duration_ms":3.2,"args_bytes":26,"args_sha256":"a4d3fe1ecbd70820c981c2baeb974329929090b6cae47acd7fd2fff874b1f4f8","first_token_ms":150,"input_tokens":12,"output_tokens":7,"request_bytes":15,"request_sha256":"5e4ce7b36ba37b78a5d5f9fd08e6b7b54ba6879d651aa46ec9e1d6fa24ebe30a","sender":"agent:writer","message_id":"m-1","session":"sess","instance":"inst-1","content_bytes":5,"content_sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331"}` + "\n"},
		{"not json", bad, `{"time":"0001-01-01T00:00:00Z","agent":"","op":"chat","outcome":"ok","duration_ms":0,"args_bytes":1,"args_sha256":"021fb596db81e6d02bf3d2586ee3981fe519f275c0ac9ca76bbcf2ebb4097d96","input_tokens":0,"output_tokens":0,"request_bytes":1,"request_sha256":"021fb596db81e6d02bf3d2586ee3981fe519f275c0ac9ca76bbcf2ebb4097d96"}` + "\n"},
	} {
		if got := string(Encode(tc.r)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
