module github.com/toolhostd/toolhostd/sdk/go

go 1.26.0
