//go:build wasip1

package toolhost

import "unsafe"

// The wasi:keyvalue@0.2.0-draft2 imports (keyvalue.go), by the rules of
// abi_wasip1.go: a list<u8> parameter is (ptr, len), increment's s64 an
// i64, a list of strings or of (key, value) tuples the address and length
// of its elements, laid out by a lowerer.

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 open
func rawKVOpen(id, idLen, ret uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [resource-drop]bucket
func rawKVDropBucket(self uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [method]bucket.get
func rawKVGet(self, key, keyLen, ret uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [method]bucket.set
func rawKVSet(self, key, keyLen, value, valueLen, ret uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [method]bucket.delete
func rawKVDelete(self, key, keyLen, ret uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [method]bucket.exists
func rawKVExists(self, key, keyLen, ret uint32)

//go:wasmimport wasi:keyvalue/store@0.2.0-draft2 [method]bucket.list-keys
func rawKVListKeys(self, isSome, cursor, cursorLen, ret uint32)

//go:wasmimport wasi:keyvalue/atomics@0.2.0-draft2 [static]cas.new
func rawKVNewCAS(bucket, key, keyLen, ret uint32)

//go:wasmimport wasi:keyvalue/atomics@0.2.0-draft2 [resource-drop]cas
func rawKVDropCAS(self uint32)

//go:wasmimport wasi:keyvalue/atomics@0.2.0-draft2 [method]cas.current
func rawKVCurrent(self, ret uint32)

//go:wasmimport wasi:keyvalue/atomics@0.2.0-draft2 increment
func rawKVIncrement(bucket, key, keyLen uint32, delta int64, ret uint32)

//go:wasmimport wasi:keyvalue/atomics@0.2.0-draft2 swap
func rawKVSwap(cas, value, valueLen, ret uint32)

//go:wasmimport wasi:keyvalue/batch@0.2.0-draft2 get-many
func rawKVGetMany(bucket, keys, n, ret uint32)

//go:wasmimport wasi:keyvalue/batch@0.2.0-draft2 set-many
func rawKVSetMany(bucket, kvs, n, ret uint32)

//go:wasmimport wasi:keyvalue/batch@0.2.0-draft2 delete-many
func rawKVDeleteMany(bucket, keys, n, ret uint32)

// bytesArg lowers a list<u8> parameter: its bytes are passed in place, as
// stringArg's (the caller keeps b alive across the call).
func bytesArg(b []byte) (ptr, n uint32) {
	return addrOf(unsafe.Pointer(unsafe.SliceData(b))), uint32(len(b))
}
