package toolhost

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrClosed is returned by the methods of a Tooling or a Provider that
// return an error, after Close.
var ErrClosed = errors.New("toolhost: handle is closed")

// ErrTooLarge is the target for errors.Is of a *TooLargeError.
var ErrTooLarge = errors.New("toolhost: result larger than the reserved region")

// ErrShutdown is RecvContext's error once the shutdown envelope was
// delivered: no envelope follows it.
var ErrShutdown = errors.New("toolhost: the shutdown envelope was delivered")

// TooLargeError is the error of a host call whose result did not fit the
// region results are lowered into (see Reserve): the result was dropped,
// and nothing of it is returned. Size counts the bytes of all the result's
// strings and lists together, with their alignment, as the host asked for
// them (a tool-result holds the arguments and the MCP result, and an echo
// tool's result holds the arguments once more); Reserved is the region's
// size at the call. Reserve(Size) before a call makes a result of that size
// fit. A call that has effects (CallToolBlocking, Chat) had them.
type TooLargeError struct {
	Size     uint64
	Reserved uint64
}

func (e *TooLargeError) Error() string {
	return "toolhost: a result of " + strconv.FormatUint(e.Size, 10) + " bytes does not fit the reserved region of " +
		strconv.FormatUint(e.Reserved, 10) + " bytes (call toolhost.Reserve before the call)"
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// invalidUTF8 is the error of a string argument the canonical ABI cannot
// carry: the host would trap on it, so the call is not made.
func invalidUTF8(what string) error {
	return &HostError{Code: InvalidArgument, Message: "toolhost: " + what + " is not valid UTF-8"}
}

// checkUTF8 returns invalidUTF8(what) if s is not valid UTF-8.
func checkUTF8(what, s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	return invalidUTF8(what)
}

// sanitize replaces each run of invalid UTF-8 in s with U+FFFD.
func sanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
