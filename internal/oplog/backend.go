package oplog

// backend is where a Store keeps its logs: a bbolt file (bolt.go) or etcd
// (etcd.go). The Store around it does the rest, the same over either: the
// keys in use, the Logs and their seqs, the committer goroutine and its
// batches, the counters. Only the committer calls commit, one batch at a
// time; the other methods may run concurrently with it and each other.
type backend interface {
	// read reads and verifies the log key: nil if the backend holds none,
	// an error wrapping ErrCorrupt if it fails verification (see
	// verifier).
	read(key string) (*stored, error)
	// keys are the keys of the logs held, sorted.
	keys() ([]string, error)
	// summaries describe the logs held, sorted by key, without verifying
	// them.
	summaries() ([]Summary, error)
	// commit writes batch, in order, setting errs[i] for each request that
	// fails; a request whose errs[i] is already set is not written. It
	// returns the transactions it committed.
	commit(batch []*request, errs []error) (commits int)
	// close releases what the backend holds of its own.
	close() error
}
