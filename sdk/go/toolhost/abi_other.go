//go:build !wasip1

package toolhost

// Outside a wasip1 build there is no host: the package compiles (so that
// its pure parts are tested natively) and every host call panics. The
// exported API and its documentation are in the files without a build
// constraint; nothing exported is declared here.

const noHost = "toolhost: host functions exist only in a GOOS=wasip1 GOARCH=wasm component"

func rawGet(name, nameLen, ret uint32)                                    { panic(noHost) }
func rawDrop(self uint32)                                                 { panic(noHost) }
func rawKind(self, ret uint32)                                            { panic(noHost) }
func rawName(self, ret uint32)                                            { panic(noHost) }
func rawListTools(self, ret uint32)                                       { panic(noHost) }
func rawCallTool(self, name, nameLen, args, argsLen, ret uint32)          { panic(noHost) }
func rawIsOpen(self, id, idLen uint32) uint32                             { panic(noHost) }
func rawCancel(self, id, idLen uint32) uint32                             { panic(noHost) }
func rawCallToolBlocking(self, name, nameLen, args, argsLen, ret uint32)  { panic(noHost) }
func rawListResources(self, ret uint32)                                   { panic(noHost) }
func rawReadResource(self, uri, uriLen, ret uint32)                       { panic(noHost) }
func rawSubscribeResourceList(self, ret uint32)                           { panic(noHost) }
func rawUnsubscribeResourceList(self, id, idLen uint32) uint32            { panic(noHost) }
func rawSubscribeResource(self, uri, uriLen, ret uint32)                  { panic(noHost) }
func rawUnsubscribeResource(self, id, idLen uint32) uint32                { panic(noHost) }
func rawProviderGet(name, nameLen, ret uint32)                            { panic(noHost) }
func rawProviderDrop(self uint32)                                         { panic(noHost) }
func rawProviderKind(self, ret uint32)                                    { panic(noHost) }
func rawProviderName(self, ret uint32)                                    { panic(noHost) }
func rawChat(params, ret uint32)                                          { panic(noHost) }
func rawChatStream(params, ret uint32)                                    { panic(noHost) }
func rawProviderIsOpen(self, id, idLen uint32) uint32                     { panic(noHost) }
func rawProviderCancel(self, id, idLen uint32) uint32                     { panic(noHost) }
func rawReplyDelta(id, idLen, text, textLen, ret uint32)                  { panic(noHost) }
func rawReply(id, idLen, content, contentLen, ret uint32)                 { panic(noHost) }
func rawReplyError(id, idLen, msg, msgLen, ret uint32)                    { panic(noHost) }
func rawSend(to, toLen, content, contentLen, isSome, s, sLen, ret uint32) { panic(noHost) }
func rawMessageIsOpen(id, idLen uint32) uint32                            { panic(noHost) }
func rawMessageCancel(id, idLen uint32) uint32                            { panic(noHost) }
func rawRecv(isSome, timeoutMS, ret uint32)                               { panic(noHost) }
func rawTryRecv(ret uint32)                                               { panic(noHost) }
func rawPending() uint32                                                  { panic(noHost) }
func rawLogWrite(level, msg, msgLen uint32)                               { panic(noHost) }

// linearMemory is never read without a host.
var linearMemory memory

func stringArg(string) (ptr, n uint32)        { return 0, 0 }
func placeParams(*lowerer) (uint32, []uint64) { return 0, nil }
func beginImport() uint32                     { startImport(); return 0 }
func endImport() *TooLargeError               { return stopImport() }

// newReserve gives the reserve a size at an address no memory has; the
// native tests of alloc.go set their own regions.
func newReserve(size uint32) {
	reserve = region{base: 1 << 20, size: size}
	reserveFloor = 0
}
