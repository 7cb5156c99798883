package mcpclient

import "github.com/toolhostd/toolhostd/internal/config"

// expand resolves the `${env:NAME}` and `${file:/path}` references in a
// config value at the moment it is used. Expanded values are secrets: never
// log them.
var expand = config.Expand
