// mismatch: an agent built against world.wit, which differs from the
// host's toolhost:agent@0.1.0 in one type (inbox.pending returns u64): the
// host must refuse to link it and name the function.
package main

import (
	"strconv"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

//go:wasmimport toolhost:agent/inbox@0.1.0 pending
func pending64() uint64

func init() {
	toolhost.Run(func(string) (string, error) { return strconv.FormatUint(pending64(), 10), nil })
}

func main() {}
