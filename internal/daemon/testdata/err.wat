;; An agent whose run returns err("agent says no") without importing anything.
(component
  (core module $m
    (memory (export "mem") 1)
    (data (i32.const 64) "agent says no")
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "run") (param i32 i32) (result i32)
      (i32.store8 (i32.const 16) (i32.const 1))
      (i32.store (i32.const 20) (i32.const 64))
      (i32.store (i32.const 24) (i32.const 13))
      (i32.const 16)))
  (core instance $i (instantiate $m))
  (func (export "run") (param "input" string) (result (result string (error string)))
    (canon lift (core func $i "run") (memory $i "mem") (realloc (func $i "realloc")))))
