module github.com/toolhostd/toolhostd/internal/host/testdata/agents-go

go 1.26.0

require github.com/toolhostd/toolhostd/sdk/go v0.0.0

replace github.com/toolhostd/toolhostd/sdk/go => ../../../../sdk/go
