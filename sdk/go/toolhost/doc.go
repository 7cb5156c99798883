// Package toolhost is the guest SDK for writing toolhostd agents in Go: the
// whole toolhost:agent@0.3.0 world (wit/agent.wit) for mainline Go's
// GOOS=wasip1 GOARCH=wasm, with the canonical ABI glue written by hand.
//
// An agent is a package main that registers its entry point from an init
// function and has an empty main:
//
//	func init() {
//		toolhost.Run(func(input string) (string, error) {
//			t, err := toolhost.Get("everything")
//			if err != nil {
//				return "", err // e.g. errors.Is(err, toolhost.Denied)
//			}
//			defer t.Close()
//			res, err := t.CallToolBlocking("echo", map[string]any{"message": input})
//			if err != nil {
//				return "", err
//			}
//			v, err := res.Result()
//			if err != nil {
//				return "", err
//			}
//			return v.Text(), nil
//		})
//	}
//
//	func main() {}
//
// It is built as a reactor module and turned into a component with the
// WASI preview1 reactor adapter (the repository's Makefile does both):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o agent.core.wasm .
//	node scripts/componentize-go.mjs --wit wit/agent.wit --world agent agent.core.wasm agent.wasm
//
// The API maps the world one to one: Get and the methods of Tooling,
// GetProvider and the methods of Provider (Close drops a handle; Chat takes
// a ChatRequest whose Tools are the records ListTools returns), the
// methods of Messages (Reply, ReplyDelta, ReplyError, Send, IsOpen,
// Cancel), Recv/TryRecv/Pending with the event variant as the Event types
// (and RecvDeadline, RecvContext on top), Log with the four levels, host
// errors as *HostError whose ErrorCode works with errors.Is, and Run for
// the run export.
//
// The key-value store (wasi:keyvalue@0.2.0-draft2's store, atomics and
// batch, which the world imports) is OpenBucket and the methods of Bucket
// and CAS; a component imports it only if the agent calls it. An agent's
// buckets are its own, "session" is a per-session instance's bucket of its
// session, and a write that returned is seen by every later read:
//
//	notes, err := toolhost.OpenBucket("notes")
//	if err != nil {
//		return "", err // a *StoreError: errors.Is(err, toolhost.AccessDenied), ...
//	}
//	defer notes.Close()
//	n, err := notes.Increment("runs", 1) // atomic across instances and hosts
//	keys, next, err := notes.ListKeys(nil) // a page; next is nil after the last
//
// Swap replaces a value read by NewCAS only if it is unchanged; when it
// changed, its *CASFailedError holds a fresh CAS to try again with.
//
// On top of it, an Inbox waits for one id at a time and holds the other
// envelopes: Serve answers messages (a handler gets each message and a
// Replier that streams its reply), Replier.StreamChat streams a model's
// answer into a reply as it arrives, StreamChat follows a chat-stream and
// ReplyOf the reply to a sent message; a Toolbox answers a model's tool
// calls with tool messages. An agent that only answers messages:
//
//	func init() {
//		toolhost.Run(func(string) (string, error) {
//			return "", toolhost.Serve(func(m toolhost.Incoming, r *toolhost.Replier) error {
//				return r.End("you said: " + m.Content)
//			})
//		})
//	}
//
// Host calls block the whole module (a wasm guest is one thread);
// goroutines run only while run's handler is running, between host calls.
//
// Where the host would trap, the SDK returns an error instead: a string
// argument that is not valid UTF-8 (a name, a URI, JSON text, a chat
// message) is refused with InvalidArgument before the call, a log message
// is sanitized, run's output is replaced by an err. A result larger than
// the region results are lowered into (ReserveSize, growing) is dropped for
// a *TooLargeError: see Reserve for what counts.
//
// Outside wasip1 the package compiles with the same API and documentation,
// its layout, lowering, lifting and argument checks are tested natively,
// and every call that reaches the host panics.
package toolhost
