;; An agent whose run returns ok(input): the input string lands at 1024 and
;; the result points back at it.
(component
  (core module $m
    (memory (export "mem") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "run") (param i32 i32) (result i32)
      (i32.store8 (i32.const 16) (i32.const 0))
      (i32.store (i32.const 20) (local.get 0))
      (i32.store (i32.const 24) (local.get 1))
      (i32.const 16)))
  (core instance $i (instantiate $m))
  (func (export "run") (param "input" string) (result (result string (error string)))
    (canon lift (core func $i "run") (memory $i "mem") (realloc (func $i "realloc")))))
