package tooling

import "context"

// Progress is one notifications/progress about a tool call.
type Progress struct {
	CallID   string // from WithCallID; "" when the caller set none
	Tool     string
	Progress float64
	Total    float64 // 0 when unknown
	Message  string
}

type callIDKey struct{}

type progressKey struct{}

// WithCallID names the call made with ctx in toolhostd's logs (call_id).
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// WithProgress makes the tool calls made with ctx hand each progress
// notification to f. f runs on the session's goroutine: it must not block.
func WithProgress(ctx context.Context, f func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// CallIDOf returns the call id WithCallID put in ctx, "" if none.
func CallIDOf(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// ProgressOf returns the function WithProgress put in ctx, nil if none.
func ProgressOf(ctx context.Context) func(Progress) {
	f, _ := ctx.Value(progressKey{}).(func(Progress))
	return f
}
