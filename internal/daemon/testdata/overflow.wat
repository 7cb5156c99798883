;; An agent whose run recurses until the stack overflows.
(component
  (core module $m
    (memory (export "mem") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func $f (call $f))
    (func (export "run") (param i32 i32) (result i32) (call $f) (i32.const 0)))
  (core instance $i (instantiate $m))
  (func (export "run") (param "input" string) (result (result string (error string)))
    (canon lift (core func $i "run") (memory $i "mem") (realloc (func $i "realloc")))))
