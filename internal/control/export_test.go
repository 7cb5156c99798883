package control

// ReadEvents is readEvents, for the tests.
var ReadEvents = readEvents
