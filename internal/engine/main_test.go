package engine

import (
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// watSmall is a component with a core module, an instance of it and a
// lifted export: the smallest with sections of every layer to cut.
const watSmall = `(component
  (core module $m (func (export "f") (result i32) i32.const 42))
  (core instance $i (instantiate $m))
  (func (export "f") (result u32) (canon lift (core func $i "f"))))`

// linkBare links nothing: the components of these tests import nothing.
func linkBare(e *wt.Engine, _ *wt.Component) (*wt.Linker, any, error) {
	l, err := wt.NewLinker(e)
	return l, nil, err
}

// testEngine is an engine of its own, with no compile cache, that links
// bare components and logs to an observer from info up; the test closes it.
type testEngine struct {
	*Engine
	logs *observer.ObservedLogs
}

func newTestEngine(t testing.TB) testEngine {
	t.Helper()
	obs, logs := observer.New(zapcore.InfoLevel)
	e, err := New(Options{Log: zap.New(obs), Link: linkBare})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return testEngine{Engine: e, logs: logs}
}
