;; An agent whose run returns an err of 1 MiB ('x' repeated).
(component
  (core module $m
    (memory (export "mem") 17)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "run") (param i32 i32) (result i32)
      (memory.fill (i32.const 4096) (i32.const 120) (i32.const 1048576))
      (i32.store8 (i32.const 0) (i32.const 1))
      (i32.store (i32.const 4) (i32.const 4096))
      (i32.store (i32.const 8) (i32.const 1048576))
      (i32.const 0)))
  (core instance $i (instantiate $m))
  (func (export "run") (param "input" string) (result (result string (error string)))
    (canon lift (core func $i "run") (memory $i "mem") (realloc (func $i "realloc")))))
