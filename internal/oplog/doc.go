// Package oplog is the operation log of durable agents.
//
// For each live instance of a durable agent the host appends, in order,
// every host call's result the guest got, so that after a crash a fresh
// instance can be replayed from it. The package stores and returns
// entries; what they mean is the caller's business.
//
// A [Store] holds many logs, each named by a key ("agent" or
// "agent/session"), in one of two backends: a bbolt file ([Open]), for a
// single host, or etcd under a prefix ([OpenEtcd]), for a cluster, where
// the host that runs an agent now may not be the one that ran it before.
// The Store and its [Log]s behave the same over either. [Store.Open] opens
// a log, creating it with a [Header] if the store has none of that key, or
// reading and verifying what it holds ([Log.Recorded]) if it has.
// [Log.Append] adds an [Entry] and returns once the entry is durable
// (synced to the bbolt file's journal, or committed by a quorum of etcd).
// [Log.Delete] removes a log whose instance ended cleanly; [Log.Close]
// keeps it for a later Open. [Store.Summaries] and [Store.Entries] read
// the logs of the store, open or not, for an operator. A key is open in
// one Log of a Store at a time ([ErrBusy]); across the hosts of a cluster
// the placement of agents keeps one writer per log, and
// [EtcdOptions].Guard fences a host that lost its agent ([ErrFenced]).
//
// # Group commit
//
// A transaction costs an fsync (bbolt) or a round of raft (etcd), so
// appends are not written one transaction each: appends queue in their
// Store, and one writer at a time takes every append waiting at that
// moment (up to [Options].MaxBatch), writes them all together and only
// then answers each caller. An append that finds the Store idle is
// written by its own caller, with no goroutine between (one instance
// appending alone pays the transaction and little else); those that
// queue behind a transaction are written by the Store's committer
// goroutine, batch after batch, until none waits. Many instances
// appending at once share their transactions; [Store.Stats] counts both. Over bbolt a batch is one
// transaction. Over etcd it is as few as etcd's default limits allow, in
// order: at most 128 operations (and 128 comparisons) and about 1 MiB of
// keys and values each, an entry larger than that in one of its own (and
// an entry larger than etcd's 1.5 MiB request limit refused by Append);
// the creation of a log (which must find no header) and the deletion of
// one each take a transaction. Every etcd transaction that writes a log
// requires the log's Guard comparisons (and, of an append, the log's
// header); one that fails them writes nothing, and its appends fail with
// ErrFenced, the others of its transaction being written again without
// them. Each etcd request is bounded by [EtcdOptions].Timeout: a store
// that cannot reach etcd fails, it does not hang.
//
// # Layout and encoding
//
// The bbolt file has two top-level buckets. "logs" holds a bucket per log
// key, with the values "header" and "id" (8 bytes, big-endian, from the
// sequence of "logs"). "wal" holds every log's entries in the order they
// were committed: its keys are positions (8 bytes, big-endian, from its
// sequence), its values the log's id and the entry's seq (8 bytes each)
// followed by the entry. A batch of appends of many logs so writes to the
// end of one tree, a page or two, rather than to the last page of each
// log's. Where each log's entries are is held in memory, built by one scan
// of the wal when the file is opened (which also moves the entries of a
// file written before the wal, each log's in a bucket "entries" of its
// own, into it). A log's Open reads its entries at those positions;
// Summaries reads no entry.
//
// # The journal
//
// Over bbolt a batch is not a bbolt transaction (which syncs twice: its
// pages, then its meta page) but a record appended to a journal beside
// the file (its path and "-journal", a fixed 1 MiB written with zeros when
// made, so that a record's write allocates nothing) and synced once
// (fdatasync). The records are folded into the bbolt file, many in one
// transaction that also stores the last one's seq, when the journal is
// full (then it starts again from its beginning, in a new generation),
// before a log a pending record wrote is read, and at Close; a batch too
// large for the journal is a bbolt transaction of its own. Opening the
// store folds in the records the file lacks (a crash's), up to the first
// that is torn or of an earlier generation; see journal.go.
//
// In etcd a log is under PREFIX/<key>/, the key escaped by
// [url.PathEscape] (so that a '/' of the key is "%2F" and the prefixes of
// two logs never nest): PREFIX/<key>/h is its header and
// PREFIX/<key>/e/<seq> an entry, the seq in 16 hex digits, which sort as
// the seqs do. A read is of one revision.
//
// Headers and entries are encoded, in either backend, in a compact binary
// form that starts with a version byte and ends with a CRC-32C
// (Castagnoli) of all that precedes it; see codec.go. Opening a log
// verifies every entry (its checksum, its encoding, and that the seqs run
// 1..n without a gap); a log that fails is reported with [ErrCorrupt],
// naming the key and the seq, and the other logs of the store stay
// usable.
package oplog
