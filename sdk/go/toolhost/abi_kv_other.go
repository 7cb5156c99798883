//go:build !wasip1

package toolhost

// The wasi:keyvalue imports outside wasip1: every call panics (see
// abi_other.go).

func rawKVOpen(id, idLen, ret uint32)                                    { panic(noHost) }
func rawKVDropBucket(self uint32)                                        { panic(noHost) }
func rawKVGet(self, key, keyLen, ret uint32)                             { panic(noHost) }
func rawKVSet(self, key, keyLen, value, valueLen, ret uint32)            { panic(noHost) }
func rawKVDelete(self, key, keyLen, ret uint32)                          { panic(noHost) }
func rawKVExists(self, key, keyLen, ret uint32)                          { panic(noHost) }
func rawKVListKeys(self, isSome, cursor, cursorLen, ret uint32)          { panic(noHost) }
func rawKVNewCAS(bucket, key, keyLen, ret uint32)                        { panic(noHost) }
func rawKVDropCAS(self uint32)                                           { panic(noHost) }
func rawKVCurrent(self, ret uint32)                                      { panic(noHost) }
func rawKVIncrement(bucket, key, keyLen uint32, delta int64, ret uint32) { panic(noHost) }
func rawKVSwap(cas, value, valueLen, ret uint32)                         { panic(noHost) }
func rawKVGetMany(bucket, keys, n, ret uint32)                           { panic(noHost) }
func rawKVSetMany(bucket, kvs, n, ret uint32)                            { panic(noHost) }
func rawKVDeleteMany(bucket, keys, n, ret uint32)                        { panic(noHost) }

func bytesArg([]byte) (ptr, n uint32) { return 0, 0 }
