package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhostd/toolhostd/sdk/go/toolhost"
)

// The key-value ops of probe.js (see its header: kv-open, kv-get, ...),
// on the SDK's Bucket and CAS. A value's bytes are the text's characters,
// one byte each (U+0000 to U+00FF), as in probe.js.

func bytesOf(text string) []byte {
	b := make([]byte, 0, len(text))
	for _, r := range text {
		b = append(b, byte(r))
	}
	return b
}

func textOf(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}

// optText is a value as the probe reports it: its text, nil for none.
func optText(b []byte, ok bool) any {
	if !ok {
		return nil
	}
	return textOf(b)
}

func (p *probe) bucket(s *step) (*toolhost.Bucket, error) {
	b, ok := p.buckets[s.H]
	if !ok {
		return nil, fmt.Errorf("Error: no handle %s", s.H)
	}
	return b, nil
}

func (p *probe) cas(s *step) (*toolhost.CAS, error) {
	c, ok := p.cases[s.H]
	if !ok {
		return nil, fmt.Errorf("Error: no handle %s", s.H)
	}
	return c, nil
}

// value is the step's value: size times "x", or the value's text.
func value(s *step) []byte {
	if s.Size != nil {
		return []byte(strings.Repeat("x", *s.Size))
	}
	return bytesOf(str(s.Value))
}

// dropKV closes the bucket or cas named s.H, if there is one.
func (p *probe) dropKV(s *step) (bool, error) {
	if b, ok := p.buckets[s.H]; ok {
		delete(p.buckets, s.H)
		return true, b.Close()
	}
	if c, ok := p.cases[s.H]; ok {
		delete(p.cases, s.H)
		return true, c.Close()
	}
	return false, nil
}

// storeErrOut is a store error as the probe reports it ({code, message}),
// nil for another error.
func storeErrOut(err error) *hostErrOut {
	var se *toolhost.StoreError
	if errors.As(err, &se) {
		return &hostErrOut{Code: se.Code.String(), Message: se.Message}
	}
	if errors.Is(err, toolhost.ErrCASFailed) {
		return &hostErrOut{Code: "cas-failed"}
	}
	return nil
}

// bucketOp adapts an op on the bucket named h.
func bucketOp(f func(p *probe, s *step, b *toolhost.Bucket) (any, error)) func(p *probe, s *step) (any, error) {
	return func(p *probe, s *step) (any, error) {
		b, err := p.bucket(s)
		if err != nil {
			return nil, err
		}
		return f(p, s, b)
	}
}

// kvOps are the key-value ops, by name.
var kvOps = map[string]func(p *probe, s *step) (any, error){
	"kv-open": func(p *probe, s *step) (any, error) {
		b, err := toolhost.OpenBucket(s.Name)
		if err != nil {
			return nil, err
		}
		if s.As == "" {
			return struct{}{}, nil
		}
		p.buckets[s.As] = b
		return s.As, nil
	},
	"kv-get": bucketOp(func(_ *probe, s *step, b *toolhost.Bucket) (any, error) {
		v, ok, err := b.Get(s.Key)
		return optText(v, ok), err
	}),
	"kv-set": bucketOp(func(_ *probe, s *step, b *toolhost.Bucket) (any, error) {
		return true, b.Set(s.Key, value(s))
	}),
	"kv-delete": bucketOp(func(_ *probe, s *step, b *toolhost.Bucket) (any, error) {
		return true, b.Delete(s.Key)
	}),
	"kv-exists": bucketOp(func(_ *probe, s *step, b *toolhost.Bucket) (any, error) {
		return b.Exists(s.Key)
	}),
	"kv-list": bucketOp(func(_ *probe, s *step, b *toolhost.Bucket) (any, error) {
		keys, next, err := b.ListKeys(s.Cursor)
		if err != nil {
			return nil, err
		}
		return keyPage{nonNil(keys), next}, nil
	}),
	"kv-list-all": bucketOp(func(_ *probe, _ *step, b *toolhost.Bucket) (any, error) {
		pages := [][]string{}
		var cursor *string
		for {
			keys, next, err := b.ListKeys(cursor)
			if err != nil {
				return nil, err
			}
			pages = append(pages, nonNil(keys))
			if next == nil {
				return pages, nil
			}
			cursor = next
		}
	}),
	"kv-increment": bucketOp(func(_ *probe, s *step, b *toolhost.Bucket) (any, error) {
		d := int64(1)
		if s.Delta != nil {
			d = *s.Delta
		}
		return b.Increment(s.Key, d)
	}),
	"kv-increments": bucketOp(func(_ *probe, s *step, b *toolhost.Bucket) (any, error) {
		var n int64
		for range s.N {
			var err error
			if n, err = b.Increment(s.Key, 1); err != nil {
				return nil, err
			}
		}
		return n, nil
	}),
	"kv-cas": bucketOp(func(p *probe, s *step, b *toolhost.Bucket) (any, error) {
		c, err := b.NewCAS(s.Key)
		if err != nil {
			return nil, err
		}
		p.cases[s.As] = c
		return s.As, nil
	}),
	"kv-current": func(p *probe, s *step) (any, error) {
		c, err := p.cas(s)
		if err != nil {
			return nil, err
		}
		v, ok, err := c.Current()
		return optText(v, ok), err
	},
	"kv-swap": func(p *probe, s *step) (any, error) {
		c, err := p.cas(s)
		if err != nil {
			return nil, err
		}
		delete(p.cases, s.H) // swap takes the cas
		err = c.Swap(value(s))
		var failed *toolhost.CASFailedError
		if errors.As(err, &failed) && s.As != "" {
			p.cases[s.As] = failed.CAS
		}
		return true, err
	},
	"kv-get-many": bucketOp(func(_ *probe, s *step, b *toolhost.Bucket) (any, error) {
		kvs, err := b.GetMany(nonNil(s.Keys))
		if err != nil {
			return nil, err
		}
		out := make([]any, len(kvs))
		for i, kv := range kvs {
			if kv != nil {
				out[i] = []string{kv.Key, textOf(kv.Value)}
			}
		}
		return out, nil
	}),
	"kv-set-many": bucketOp(func(_ *probe, s *step, b *toolhost.Bucket) (any, error) {
		kvs := make([]toolhost.KeyValue, len(s.KVs))
		for i, kv := range s.KVs {
			kvs[i] = toolhost.KeyValue{Key: kv[0], Value: bytesOf(kv[1])}
		}
		return true, b.SetMany(kvs)
	}),
	"kv-delete-many": bucketOp(func(_ *probe, s *step, b *toolhost.Bucket) (any, error) {
		return true, b.DeleteMany(nonNil(s.Keys))
	}),
	"kv-time": bucketOp(func(_ *probe, s *step, b *toolhost.Bucket) (any, error) {
		v := value(s)
		ns := make([]int64, 0, s.N)
		for range s.N {
			start := time.Now()
			var err error
			if s.What == "set" {
				err = b.Set(s.Key, v)
			} else {
				_, _, err = b.Get(s.Key)
			}
			if err != nil {
				return nil, err
			}
			ns = append(ns, time.Since(start).Nanoseconds())
		}
		return map[string]any{"ns": ns}, nil
	}),
}

// keyPage is a list-keys page as probe.js reports it.
type keyPage struct {
	Keys   []string `json:"keys"`
	Cursor *string  `json:"cursor"`
}

// nonNil is xs, or an empty slice for nil (JSON [] rather than null).
func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
