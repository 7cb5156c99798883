//go:build !wasip1

package toolhost

// Outside a wasip1 build there is no host: the package compiles (so that
// its pure parts are tested natively) and every host call panics.

const noHost = "toolhost: host functions exist only in a GOOS=wasip1 GOARCH=wasm component"

func rawGet(name, nameLen, ret uint32)                                   { panic(noHost) }
func rawDrop(self uint32)                                                { panic(noHost) }
func rawKind(self, ret uint32)                                           { panic(noHost) }
func rawName(self, ret uint32)                                           { panic(noHost) }
func rawListTools(self, ret uint32)                                      { panic(noHost) }
func rawCallTool(self, name, nameLen, args, argsLen, ret uint32)         { panic(noHost) }
func rawIsOpen(self, id, idLen uint32) uint32                            { panic(noHost) }
func rawCancel(self, id, idLen uint32) uint32                            { panic(noHost) }
func rawCallToolBlocking(self, name, nameLen, args, argsLen, ret uint32) { panic(noHost) }
func rawListResources(self, ret uint32)                                  { panic(noHost) }
func rawReadResource(self, uri, uriLen, ret uint32)                      { panic(noHost) }
func rawSubscribeResourceList(self, ret uint32)                          { panic(noHost) }
func rawUnsubscribeResourceList(self, id, idLen uint32) uint32           { panic(noHost) }
func rawSubscribeResource(self, uri, uriLen, ret uint32)                 { panic(noHost) }
func rawUnsubscribeResource(self, id, idLen uint32) uint32               { panic(noHost) }
func rawRecv(isSome, timeoutMS, ret uint32)                              { panic(noHost) }
func rawTryRecv(ret uint32)                                              { panic(noHost) }
func rawPending() uint32                                                 { panic(noHost) }
func rawLogWrite(level, msg, msgLen uint32)                              { panic(noHost) }

// linearMemory is never read without a host.
var linearMemory memory

func stringArg(string) (ptr, n uint32) { return 0, 0 }
func beginImport() uint32              { return 0 }
func endImport()                       {}

// Reserve has no region to enlarge without a host.
func Reserve(n int) {}
