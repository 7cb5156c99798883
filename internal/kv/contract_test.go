package kv_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolhostd/toolhostd/internal/kv"
)

// contract are the scenarios every backend passes: wasi:keyvalue's
// semantics as toolhostd serves them.
var contract = []struct {
	name string
	run  func(t *testing.T, st kv.Store)
}{
	{"read your writes", func(t *testing.T, st kv.Store) {
		c := ctx(t)
		b := open(t, kv.New(st, kv.Options{}), "a", "", kv.Policy{}, "default")
		if v, ok, err := b.Get(c, "k"); err != nil || ok || v != nil {
			t.Fatalf("get of a missing key = %q, %v, %v; want nil, false, nil", v, ok, err)
		}
		for _, v := range [][]byte{[]byte("one"), []byte("two"), {}} {
			if err := b.Set(c, "k", v); err != nil {
				t.Fatal(err)
			}
			got, ok, err := b.Get(c, "k")
			if err != nil || !ok || !bytes.Equal(got, v) || got == nil {
				t.Fatalf("get after set %q = %q, %v, %v", v, got, ok, err)
			}
			if ok, err := b.Exists(c, "k"); err != nil || !ok {
				t.Fatalf("exists = %v, %v; want true", ok, err)
			}
		}
		if err := b.Delete(c, "k"); err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(c, "k"); err != nil {
			t.Fatalf("delete of a missing key: %v", err)
		}
		if ok, err := b.Exists(c, "k"); err != nil || ok {
			t.Fatalf("exists after delete = %v, %v; want false", ok, err)
		}
		if err := b.Set(c, "", []byte("x")); err == nil || kv.KindOf(err) != kv.KindOther {
			t.Fatalf("set of an empty key: %v; want other(...)", err)
		}
	}},
	{"buckets are per agent and per session", func(t *testing.T, st kv.Store) {
		c, s := ctx(t), kv.New(st, kv.Options{})
		refs := []struct{ agent, session, id string }{
			{"a", "", "x"}, {"b", "", "x"}, {"a", "", "y"}, {"a", "s1", "session"}, {"a", "s2", "session"}, {"b", "s1", "session"},
		}
		for i, r := range refs {
			if err := open(t, s, r.agent, r.session, kv.Policy{}, r.id).Set(c, "k", []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		for i, r := range refs {
			v, _, err := open(t, s, r.agent, r.session, kv.Policy{}, r.id).Get(c, "k")
			if err != nil || !bytes.Equal(v, []byte{byte(i)}) {
				t.Errorf("%+v: get = %v, %v; want [%d]: buckets shared", r, v, err, i)
			}
		}
		if got := open(t, s, "a", "s1", kv.Policy{}, "session").Ref().Bucket; got != "session/s1" {
			t.Errorf("session bucket named %q, want session/s1", got)
		}
		got, err := s.Buckets(c, "a")
		if want := []string{"session/s1", "session/s2", "x", "y"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("buckets of a = %q, %v; want %q", got, err, want)
		}
		if got, err := s.Agents(c); err != nil || !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("agents = %q, %v", got, err)
		}
	}},
	{"open refusals", func(t *testing.T, st kv.Store) {
		s := kv.New(st, kv.Options{})
		for _, tc := range []struct {
			session, id string
			p           kv.Policy
			want        kv.Kind
		}{
			{"", "", kv.Policy{}, kv.KindNoSuchStore},
			{"", "a/b", kv.Policy{}, kv.KindNoSuchStore},
			{"", strings.Repeat("x", 256), kv.Policy{}, kv.KindNoSuchStore},
			{"", "session", kv.Policy{}, kv.KindNoSuchStore},
			{"", "other", kv.Policy{Stores: []string{"default"}}, kv.KindAccessDenied},
			{"s", "session", kv.Policy{Stores: []string{"default"}}, kv.KindAccessDenied},
			{"", "default", kv.Policy{Stores: []string{}}, kv.KindAccessDenied},
		} {
			_, err := s.Open("a", tc.session, tc.p, tc.id)
			if err == nil || kv.KindOf(err) != tc.want {
				t.Errorf("open(%q) session %q stores %q: %v (kind %d); want kind %d", tc.id, tc.session, tc.p.Stores, err, kv.KindOf(err), tc.want)
			}
		}
		for _, id := range []string{"session", "cache-1", "default"} {
			if _, err := s.Open("a", "s", kv.Policy{Stores: []string{"default", "session", "cache-*"}}, id); err != nil {
				t.Errorf("open of %q, which stores allows: %v", id, err)
			}
		}
	}},
	{"list-keys pages in a stable order", func(t *testing.T, st kv.Store) {
		c := ctx(t)
		b := open(t, kv.New(st, kv.Options{PageSize: 3}), "a", "", kv.Policy{}, "default")
		if keys, cur, err := b.ListKeys(c, ""); err != nil || len(keys) != 0 || cur != "" {
			t.Fatalf("empty bucket: %q, %q, %v", keys, cur, err)
		}
		var want []string
		for _, k := range []string{"b", "a", "c/1", "c", "Z", "é", "a0", "c/0", "b\x00", "zz"} {
			want = append(want, k)
			if err := b.Set(c, k, []byte(k)); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(want) // bytewise
		var got []string
		cur, pages := "", 0
		for {
			keys, next, err := b.ListKeys(c, cur)
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) > 3 {
				t.Fatalf("page of %d keys, page size 3", len(keys))
			}
			got = append(got, keys...)
			pages++
			if pages == 2 { // a write between pages: a key before the cursor, one after
				if err := b.Set(c, "A", nil); err != nil {
					t.Fatal(err)
				}
				if err := b.Set(c, "zzz", nil); err != nil {
					t.Fatal(err)
				}
				want = append(want, "zzz")
			}
			if next == "" {
				break
			}
			cur = next
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("keys listed %q, want %q", got, want)
		}
	}},
	{"increment", func(t *testing.T, st kv.Store) {
		c := ctx(t)
		b := open(t, kv.New(st, kv.Options{}), "a", "", kv.Policy{}, "default")
		for _, tc := range []struct{ delta, want int64 }{{5, 5}, {-7, -2}, {0, -2}, {1 << 40, 1<<40 - 2}} {
			if n, err := b.Increment(c, "n", tc.delta); err != nil || n != tc.want {
				t.Fatalf("increment by %d = %d, %v; want %d", tc.delta, n, err, tc.want)
			}
		}
		v, _, _ := b.Get(c, "n")
		if n := int64(binary.LittleEndian.Uint64(v)); len(v) != 8 || n != 1<<40-2 {
			t.Errorf("value %x; want 8 bytes little-endian of %d", v, int64(1<<40-2))
		}
		if err := b.Set(c, "s", []byte("text")); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Increment(c, "s", 1); err == nil || !strings.Contains(err.Error(), "not a 64-bit integer") {
			t.Errorf("increment of text: %v", err)
		}
	}},
	{"compare and swap", func(t *testing.T, st kv.Store) {
		c := ctx(t)
		b := open(t, kv.New(st, kv.Options{}), "a", "", kv.Policy{}, "default")
		cas, err := b.NewCAS(c, "k")
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := cas.Current(); ok || v != nil {
			t.Fatalf("current of a missing key = %q, %v", v, ok)
		}
		if _, err := cas.Swap(c, []byte("1")); err != nil {
			t.Fatal(err)
		}
		stale := cas // read before the swap: fails now
		again, err := stale.Swap(c, []byte("x"))
		if !errors.Is(err, kv.ErrCASFailed) || again == nil {
			t.Fatalf("swap of a stale cas: %v, %v; want cas-failed with a fresh cas", again, err)
		}
		if v, ok := again.Current(); !ok || string(v) != "1" {
			t.Fatalf("the failed swap's cas holds %q, %v; want 1", v, ok)
		}
		if _, err := again.Swap(c, []byte("2")); err != nil {
			t.Fatal(err)
		}
		if v, _, _ := b.Get(c, "k"); string(v) != "2" {
			t.Errorf("value %q, want 2", v)
		}
		// The comparison is of values: the same bytes written again in
		// between do not fail a swap.
		cas, err = b.NewCAS(c, "k")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Set(c, "k", []byte("2")); err != nil {
			t.Fatal(err)
		}
		if _, err := cas.Swap(c, []byte("3")); err != nil {
			t.Errorf("swap after the same value was written again: %v", err)
		}
	}},
	{"batch", func(t *testing.T, st kv.Store) {
		c := ctx(t)
		b := open(t, kv.New(st, kv.Options{}), "a", "", kv.Policy{Quota: kv.Quota{MaxKeys: 3}}, "default")
		if err := b.SetMany(c, []kv.KV{{"a", []byte("1")}, {"b", []byte("2")}}); err != nil {
			t.Fatal(err)
		}
		vals, err := b.GetMany(c, []string{"b", "x", "a"})
		if err != nil || len(vals) != 3 || string(vals[0]) != "2" || vals[1] != nil || string(vals[2]) != "1" {
			t.Fatalf("get-many = %q, %v", vals, err)
		}
		// Not atomic: the keys before the one over the quota are set.
		err = b.SetMany(c, []kv.KV{{"c", nil}, {"d", nil}, {"e", nil}})
		if err == nil || !strings.HasPrefix(err.Error(), "quota") {
			t.Fatalf("set-many past max_keys: %v; want quota ...", err)
		}
		if ok, _ := b.Exists(c, "c"); !ok {
			t.Error("set-many: the key before the refused one is not set")
		}
		if ok, _ := b.Exists(c, "d"); ok {
			t.Error("set-many: the refused key is set")
		}
		if err := b.DeleteMany(c, []string{"a", "c", "missing"}); err != nil {
			t.Fatal(err)
		}
		keys, _, _ := b.ListKeys(c, "")
		if !slices.Equal(keys, []string{"b"}) {
			t.Errorf("keys after delete-many %q, want [b]", keys)
		}
	}},
	{"quotas", func(t *testing.T, st kv.Store) {
		c, s := ctx(t), kv.New(st, kv.Options{})
		p := kv.Policy{Quota: kv.Quota{MaxKeys: 2, MaxBytes: 20}}
		b1, b2 := open(t, s, "a", "", p, "one"), open(t, s, "a", "", p, "two")
		if err := b1.Set(c, "k1", []byte("12345678")); err != nil { // 10 bytes
			t.Fatal(err)
		}
		if err := b2.Set(c, "k2", []byte("1234")); err != nil { // 6 bytes; 2 keys
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			do   func() error
			what string
		}{
			{"a third key", func() error { return b2.Set(c, "k3", nil) }, "max_keys"},
			{"a third key by increment", func() error { _, err := b1.Increment(c, "n", 1); return err }, "max_keys"},
			{"a larger value", func() error { return b1.Set(c, "k1", []byte("1234567890123")) }, "max_bytes"},
		} {
			err := tc.do()
			var q *kv.QuotaError
			if !errors.As(err, &q) || q.What != tc.what || !strings.HasPrefix(err.Error(), "quota "+tc.what) || kv.KindOf(err) != kv.KindOther {
				t.Errorf("%s: %v; want quota %s ...", tc.name, err, tc.what)
			}
		}
		if v, _, _ := b1.Get(c, "k1"); string(v) != "12345678" {
			t.Errorf("a refused write changed the value: %q", v)
		}
		u, err := st.Usage(c, "a")
		if err != nil || u != (kv.Usage{Keys: 2, Bytes: 16}) {
			t.Errorf("usage %+v, %v; want 2 keys, 16 bytes", u, err)
		}
		// Shrinking is always allowed; a delete frees room.
		if err := b1.Set(c, "k1", []byte("1")); err != nil {
			t.Error(err)
		}
		if err := b2.Delete(c, "k2"); err != nil {
			t.Fatal(err)
		}
		if err := b2.Set(c, "k3", []byte("x")); err != nil {
			t.Errorf("set after a delete freed room: %v", err)
		}
		if u, _ := st.Usage(c, "a"); u != (kv.Usage{Keys: 2, Bytes: 6}) {
			t.Errorf("usage %+v; want 2 keys, 6 bytes", u)
		}
	}},
	{"export and import", func(t *testing.T, st kv.Store) {
		c, s := ctx(t), kv.New(st, kv.Options{})
		for i, r := range []kv.Ref{{"a", "x"}, {"a", "session/s"}, {"b", "x"}} {
			for j := range 3 {
				if err := s.Put(c, r, fmt.Sprint("k", j), []byte{byte(i), byte(j), 0xff}); err != nil {
					t.Fatal(err)
				}
			}
		}
		var all, one bytes.Buffer
		if n, err := s.Export(c, &all, "", ""); err != nil || n != 9 {
			t.Fatalf("export = %d, %v", n, err)
		}
		if n, err := s.Export(c, &one, "a", "x"); err != nil || n != 3 {
			t.Fatalf("export a/x = %d, %v", n, err)
		}
		if !strings.Contains(one.String(), `{"agent":"a","bucket":"x","key":"k0","value":"AAD/"}`) {
			t.Errorf("export line not as documented:\n%s", one.String())
		}
		for _, r := range []kv.Ref{{"a", "x"}, {"a", "session/s"}, {"b", "x"}} {
			for j := range 3 {
				if err := s.Remove(c, r, fmt.Sprint("k", j)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if u, _ := s.Usage(c); len(u) != 0 {
			t.Fatalf("usage after removing all %+v", u)
		}
		if n, err := s.Import(c, bytes.NewReader(all.Bytes())); err != nil || n != 9 {
			t.Fatalf("import = %d, %v", n, err)
		}
		var again bytes.Buffer
		if _, err := s.Export(c, &again, "", ""); err != nil || again.String() != all.String() {
			t.Errorf("export after import differs (%v):\n%s\nwant\n%s", err, again.String(), all.String())
		}
		if _, err := s.Import(c, strings.NewReader("{}\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("import of a record without agent: %v", err)
		}
		u, err := s.Usage(c)
		if err != nil || len(u) != 2 || u[0] != (kv.AgentUsage{Agent: "a", Usage: kv.Usage{Keys: 6, Bytes: 6 * 5}}) {
			t.Errorf("usage %+v, %v", u, err)
		}
	}},
}

func TestContract(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			for _, tc := range contract {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, be.open(t)) })
			}
		})
	}
}
