package wasmtime

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

// resourceWAT imports a host resource "r" with a constructor-like "make"
// and a method "get", and exports functions moving handles both ways.
const resourceWAT = `(component
  (import "host" (instance $host
    (export "r" (type $r (sub resource)))
    (export "make" (func (param "rep" u32) (result (own $r))))
    (export "[method]r.get" (func (param "self" (borrow $r)) (result u32)))
  ))
  (alias export $host "r" (type $r))
  (alias export $host "make" (func $make))
  (alias export $host "[method]r.get" (func $get))
  (core func $make_low (canon lower (func $make)))
  (core func $get_low (canon lower (func $get)))
  (core func $drop (canon resource.drop $r))
  (core module $m
    (import "h" "make" (func $make (param i32) (result i32)))
    (import "h" "get" (func $get (param i32) (result i32)))
    (import "h" "drop" (func $drop (param i32)))
    (func (export "cycle") (param i32) (result i32) (local $h i32) (local $v i32)
      (local.set $h (call $make (local.get 0)))
      (local.set $v (call $get (local.get $h)))
      (local.set $v (i32.add (local.get $v) (call $get (local.get $h))))
      (call $drop (local.get $h))
      (local.get $v))
    (func (export "take") (param i32) (result i32) (local $v i32)
      (local.set $v (call $get (local.get 0)))
      (call $drop (local.get 0))
      (local.get $v))
    (func (export "give") (param i32) (result i32) (call $make (local.get 0)))
    (func (export "peek") (param i32) (result i32) (call $get (local.get 0)))
  )
  (core instance $i (instantiate $m (with "h" (instance
    (export "make" (func $make_low)) (export "get" (func $get_low)) (export "drop" (func $drop))))))
  (func (export "cycle") (param "rep" u32) (result u32) (canon lift (core func $i "cycle")))
  (func (export "take") (param "r" (own $r)) (result u32) (canon lift (core func $i "take")))
  (func (export "give") (param "rep" u32) (result (own $r)) (canon lift (core func $i "give")))
  (func (export "peek") (param "r" (borrow $r)) (result u32) (canon lift (core func $i "peek")))
)`

const resType = 7

type resourceHost struct {
	mu      sync.Mutex
	dropped []uint32
	gets    []ResourceHost
}

func newResourceLinker(t *testing.T, e *Engine, h *resourceHost) *Linker {
	t.Helper()
	l := mustLinker(t, e)
	inst, err := l.Root().Instance("host")
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.AddResource("r", resType, func(c *Caller, rep uint32) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.dropped = append(h.dropped, rep)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := inst.AddFunc("make", func(c *Caller, args, results []Val) error {
		results[0] = ResourceHost{Type: resType, Rep: uint32(args[0].(U32)), Owned: true}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := inst.AddFunc("[method]r.get", func(c *Caller, args, results []Val) error {
		r := args[0].(ResourceHost)
		h.mu.Lock()
		h.gets = append(h.gets, r)
		h.mu.Unlock()
		results[0] = U32(r.Rep)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestHostResources(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, resourceWAT)
	h := &resourceHost{}
	l := newResourceLinker(t, e, h)
	s := mustStore(t, e, StoreConfig{})
	inst, err := l.Instantiate(s, c)
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string, arg Val) Val {
		t.Helper()
		f, err := inst.Func(name)
		if err != nil {
			t.Fatal(err)
		}
		v, err := f.Call(arg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	reset := func() { h.dropped, h.gets = nil, nil }

	// Created by the host, handed to the guest, two borrowed method calls,
	// dropped by the guest: the destructor runs once with the rep.
	if v := call("cycle", U32(42)); v != U32(84) {
		t.Fatalf("cycle = %v, want 84", v)
	}
	if !slices.Equal(h.dropped, []uint32{42}) {
		t.Fatalf("dropped = %v, want [42]", h.dropped)
	}
	for _, g := range h.gets {
		if g != (ResourceHost{Type: resType, Rep: 42, Owned: false}) {
			t.Fatalf("method got %+v, want a borrow of rep 42", g)
		}
	}
	reset()

	// An own handle returned to the host: no destructor, the host owns it.
	if v := call("give", U32(5)); v != (ResourceHost{Type: resType, Rep: 5, Owned: true}) {
		t.Fatalf("give = %#v", v)
	}
	if len(h.dropped) != 0 {
		t.Fatalf("dropped = %v after give", h.dropped)
	}

	// Passed by the host as own: the guest drops it.
	if v := call("take", ResourceHost{Type: resType, Rep: 9, Owned: true}); v != U32(9) {
		t.Fatalf("take = %v", v)
	}
	if !slices.Equal(h.dropped, []uint32{9}) {
		t.Fatalf("dropped = %v, want [9]", h.dropped)
	}
	reset()

	// A host borrow passed to the guest from outside a call would abort the
	// process inside wasmtime 39; the binding refuses it.
	f, _ := inst.Func("peek")
	if _, err := f.Call(ResourceHost{Type: resType, Rep: 11, Owned: false}); !errors.Is(err, errBorrowToGuest) {
		t.Fatalf("peek with a borrow: err = %v", err)
	}
	// Ownership is checked in Go before reaching wasmtime.
	if _, err := f.Call(ResourceHost{Type: resType, Rep: 1, Owned: true}); err == nil {
		t.Fatal("peek with an own handle succeeded")
	}
	// The instance is still usable.
	if v := call("cycle", U32(1)); v != U32(2) {
		t.Fatalf("cycle after refused calls = %v", v)
	}
}

// guestResourceWAT defines its own resource (with a destructor that counts
// drops in a global) and exports functions moving handles of it. (A
// component cannot import a function over its own resource type, so guest
// resources reach the host only through exports.)
const guestResourceWAT = `(component
  (core module $dt
    (global $drops (export "drops") (mut i32) (i32.const 0))
    (func (export "dtor") (param i32) (global.set $drops (i32.add (global.get $drops) (i32.const 1))))
  )
  (core instance $dt (instantiate $dt))
  (type $g (resource (rep i32) (dtor (func $dt "dtor"))))
  (core func $new (canon resource.new $g))
  (core func $rep (canon resource.rep $g))
  (core func $drop (canon resource.drop $g))
  (core module $m
    (import "h" "new" (func $new (param i32) (result i32)))
    (import "h" "rep" (func $rep (param i32) (result i32)))
    (import "h" "drop" (func $drop (param i32)))
    (import "h" "drops" (global $drops (mut i32)))
    (func (export "make") (param i32) (result i32) (call $new (local.get 0)))
    ;; A borrow of the component's own resource arrives as its rep.
    (func (export "look") (param i32) (result i32) (local.get 0))
    (func (export "consume") (param i32) (result i32) (local $v i32)
      (local.set $v (call $rep (local.get 0)))
      (call $drop (local.get 0))
      (local.get $v))
    (func (export "drops") (result i32) (global.get $drops))
  )
  (core instance $i (instantiate $m (with "h" (instance
    (export "new" (func $new)) (export "rep" (func $rep)) (export "drop" (func $drop))
    (export "drops" (global $dt "drops"))))))
  (export $ge "g" (type $g))
  (func (export "make") (param "v" u32) (result (own $ge)) (canon lift (core func $i "make")))
  (func (export "look") (param "x" (borrow $ge)) (result u32) (canon lift (core func $i "look")))
  (func (export "consume") (param "x" (own $ge)) (result u32) (canon lift (core func $i "consume")))
  (func (export "drops") (result u32) (canon lift (core func $i "drops")))
)`

func TestGuestResources(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, guestResourceWAT)
	l := mustLinker(t, e)
	s := mustStore(t, e, StoreConfig{})
	inst, err := l.Instantiate(s, c)
	if err != nil {
		t.Fatal(err)
	}
	fn := func(name string) *Func {
		f, err := inst.Func(name)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	mk, look, consume, drops := fn("make"), fn("look"), fn("consume"), fn("drops")
	newRes := func(v uint32) *ResourceAny {
		out, err := mk.Call(U32(v))
		if err != nil {
			t.Fatal(err)
		}
		r, ok := out.(*ResourceAny)
		if !ok || !r.Owned() {
			t.Fatalf("make = %#v, want an owned *ResourceAny", out)
		}
		return r
	}
	wantDrops := func(n uint32) {
		t.Helper()
		if v, err := drops.Call(); err != nil || v != U32(n) {
			t.Fatalf("drops = %v, %v; want %d", v, err, n)
		}
	}

	a := newRes(3)
	for range 2 { // lent to the guest twice: the borrow ends with each call
		if v, err := look.Call(a); err != nil || v != U32(3) {
			t.Fatalf("look = %v, %v", v, err)
		}
	}
	wantDrops(0)
	if err := a.Drop(); err != nil { // runs the guest destructor
		t.Fatalf("drop: %v", err)
	}
	wantDrops(1)
	if err := a.Drop(); err != nil {
		t.Fatalf("second drop: %v", err)
	}
	if _, err := look.Call(a); err == nil {
		t.Fatal("call with a dropped resource succeeded")
	}

	b := newRes(8) // ownership moves back to the guest
	if v, err := consume.Call(b); err != nil || v != U32(8) {
		t.Fatalf("consume = %v, %v", v, err)
	}
	wantDrops(2)
	if _, err := look.Call(b); err == nil {
		t.Fatal("call with a moved resource succeeded")
	}

	// A handle left undropped is freed with the store.
	_ = newRes(1)
}

func TestResourceDtorPanic(t *testing.T) {
	e := mustEngine(t, EngineConfig{})
	c := mustComponent(t, e, resourceWAT)
	l := mustLinker(t, e)
	inst, _ := l.Root().Instance("host")
	inst.AddResource("r", resType, func(*Caller, uint32) error { panic("dtor panic") })
	inst.AddFunc("make", func(_ *Caller, args, results []Val) error {
		results[0] = ResourceHost{Type: resType, Rep: uint32(args[0].(U32)), Owned: true}
		return nil
	})
	inst.AddFunc("[method]r.get", func(_ *Caller, args, results []Val) error {
		results[0] = U32(args[0].(ResourceHost).Rep)
		return nil
	})
	s := mustStore(t, e, StoreConfig{})
	f := mustFunc(t, l, s, c, "cycle")
	_, err := f.Call(U32(1))
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "dtor panic" {
		t.Fatalf("err = %v, want the destructor's panic", err)
	}
}
