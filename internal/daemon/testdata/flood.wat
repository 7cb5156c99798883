;; An agent that calls log.write("flood") 1000 times per byte of its input.
(component
  (import "toolhost:agent/log@0.1.0" (instance $log
    (type $level (enum "debug" "info" "warn" "error"))
    (export "level" (type $lvl (eq $level)))
    (export "write" (func (param "level" $lvl) (param "message" string)))))
  (core module $mm (memory (export "mem") 1))
  (core instance $mi (instantiate $mm))
  (alias core export $mi "mem" (core memory $mem))
  (alias export $log "write" (func $write))
  (core func $write_low (canon lower (func $write) (memory $mem)))
  (core module $m
    (import "h" "mem" (memory 1))
    (import "h" "write" (func $write (param i32 i32 i32)))
    (data (i32.const 16) "flood")
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))
    (func (export "run") (param $in i32) (param $len i32) (result i32)
      (local $n i32)
      (local.set $n (i32.mul (local.get $len) (i32.const 1000)))
      (block $done
        (loop $l
          (br_if $done (i32.eqz (local.get $n)))
          (call $write (i32.const 1) (i32.const 16) (i32.const 5))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br $l)))
      (i32.store8 (i32.const 0) (i32.const 0))
      (i32.store (i32.const 4) (i32.const 16))
      (i32.store (i32.const 8) (i32.const 5))
      (i32.const 0)))
  (core instance $i (instantiate $m (with "h" (instance (export "mem" (memory $mem)) (export "write" (func $write_low))))))
  (func (export "run") (param "input" string) (result (result string (error string)))
    (canon lift (core func $i "run") (memory $mem) (realloc (func $i "realloc"))))
)
