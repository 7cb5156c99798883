package cluster

// Place is place, for the tests' and benchmarks' convergence checks.
var Place = place
