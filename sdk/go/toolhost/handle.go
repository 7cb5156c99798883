package toolhost

import "runtime"

// handle is an owned resource handle (own<tooling>, own<provider>) and
// whether it was dropped; closed is read and written under abiMu.
type handle struct {
	h      uint32
	closed bool
}

// close drops the handle once; later calls do nothing.
func (x *handle) close(drop func(self uint32)) {
	lock()
	defer unlock()
	if x.closed {
		return
	}
	x.closed = true
	drop(x.h)
}

// call runs an import call on the handle that returns through the return
// area (see hostCall); ErrClosed after close.
func (x *handle) call(do func(self, ret uint32), lift func(m memory, ret uint32)) error {
	var closed bool
	err := hostCall(func(ret uint32) {
		if closed = x.closed; !closed {
			do(x.h, ret)
		}
	}, func(m memory, ret uint32) {
		if !closed {
			lift(m, ret)
		}
	})
	if closed {
		return ErrClosed
	}
	return err
}

// stringOf calls an import (self, ret) that returns a string; "" after
// close (or for a string too large for the reserved region).
func (x *handle) stringOf(raw func(self, ret uint32)) string {
	var s string
	x.call(raw, func(m memory, ret uint32) { s = liftString(m, ret) })
	return s
}

// boolOf calls an import (self, s) -> bool; false after close and for an
// s that is not valid UTF-8 (it names nothing the host gave out).
func (x *handle) boolOf(s string, raw func(self, p, n uint32) uint32) bool {
	if checkUTF8("", s) != nil {
		return false
	}
	lock()
	defer unlock()
	if x.closed {
		return false
	}
	p, n := stringArg(s)
	b := raw(x.h, p, n)
	runtime.KeepAlive(s)
	return liftBool(b)
}

// resultOf calls an import (self, ret) and lifts a result<T, host-error>.
func resultOf[T any](x *handle, raw func(self, ret uint32), ok func(memory, uint32) T) (T, error) {
	var v T
	var herr error
	err := x.call(raw, func(m memory, ret uint32) { v, herr = liftResult(m, ret, ok) })
	if err != nil {
		return v, err
	}
	return v, herr
}

// resultOfString calls an import (self, s, ret) and lifts a result<T,
// host-error>; InvalidArgument (what) for an s that is not valid UTF-8.
func resultOfString[T any](x *handle, what, s string, raw func(self, p, n, ret uint32), ok func(memory, uint32) T) (T, error) {
	var v T
	if err := checkUTF8(what, s); err != nil {
		return v, err
	}
	return resultOf(x, func(self, ret uint32) {
		p, n := stringArg(s)
		raw(self, p, n, ret)
		runtime.KeepAlive(s)
	}, ok)
}

// getHandle calls a get(name) import: result<own<T>, host-error>.
func getHandle(what, name string, raw func(p, n, ret uint32)) (uint32, error) {
	if err := checkUTF8(what, name); err != nil {
		return 0, err
	}
	return openHandle(name, raw, func(m memory, ret uint32) (uint32, error) { return liftResult(m, ret, u32) })
}

// openHandle calls an import (name) -> result<own<T>, E> whose result lift
// reads (name is valid UTF-8).
func openHandle(name string, raw func(p, n, ret uint32), lift func(m memory, ret uint32) (uint32, error)) (uint32, error) {
	var h uint32
	var herr error
	err := hostCall(func(ret uint32) {
		p, n := stringArg(name)
		raw(p, n, ret)
		runtime.KeepAlive(name)
	}, func(m memory, ret uint32) { h, herr = lift(m, ret) })
	if err != nil {
		return 0, err
	}
	return h, herr
}
