// Package oplog is the operation log of durable agents.
//
// For each live instance of a durable agent the host appends, in order,
// every host call's result the guest got, so that after a crash a fresh
// instance can be replayed from it. The package stores and returns
// entries; what they mean is the caller's business.
//
// A [Store] is one bbolt file holding many logs, each named by a key
// ("agent" or "agent/session"). [Store.Open] opens a log, creating it with
// a [Header] if the file has none of that key, or reading and verifying
// what it holds ([Log.Recorded]) if it has. [Log.Append] adds an [Entry]
// and returns once the entry is durable. [Log.Delete] removes a log whose
// instance ended cleanly; [Log.Close] keeps it for a later Open.
// [Store.Summaries] and [Store.Entries] read the logs of the file, open or
// not, for an operator.
//
// # Group commit
//
// bbolt fsyncs once per read-write transaction, so appends are not written
// one transaction each: one committer goroutine per Store takes every
// append waiting at that moment (up to [Options].MaxBatch), writes them all
// in one transaction and only then answers each caller. Many instances
// appending at once share their fsyncs; [Store.Stats] counts both.
//
// # Layout and encoding
//
// The file has one top-level bucket, "logs", and in it a bucket per log
// key holding the value "header" and the bucket "entries", whose keys are
// the entries' seqs (8 bytes, big-endian) and whose values are the
// entries. Headers and entries are encoded in a compact binary form that
// starts with a version byte and ends with a CRC-32C (Castagnoli) of all
// that precedes it; see codec.go. Opening a log verifies every entry (its
// checksum, its encoding, and that the seqs run 1..n without a gap); a log
// that fails is reported with [ErrCorrupt], naming the key and the seq,
// and the other logs of the file stay usable.
package oplog
