package control

import (
	"fmt"
	"unicode/utf8"
)

// MaxLastError bounds the last_error of an agent or a tooling as the API
// reports it (and as `toolhostd ps` shows it): a trap's message with its
// backtrace, or a server's error, can be long.
const MaxLastError = 4 << 10

// CapError cuts s to at most MaxLastError bytes, at a rune boundary, saying
// how much was left out.
func CapError(s string) string {
	if len(s) <= MaxLastError {
		return s
	}
	suffix := fmt.Sprintf("… (%d more bytes)", len(s))
	n := MaxLastError - len(suffix)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("… (%d more bytes)", len(s)-n)
}

func capAgent(a AgentStatus) AgentStatus {
	a.LastError = CapError(a.LastError)
	return a
}
