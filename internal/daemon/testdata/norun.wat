;; A component that exports no run.
(component
  (core module $m (func (export "start")))
  (core instance $i (instantiate $m))
  (func (export "start") (canon lift (core func $i "start"))))
