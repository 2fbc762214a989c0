// Package python holds hymn's mininet Python package (the directory
// mininet/ beside this file), embedded so that "hymn python" finds it
// wherever the binary is installed. pyapi extracts it to a cache.
package python

import "embed"

// Files is the mininet package and its tests' helpers, rooted at this
// directory ("mininet/__init__.py", ...).
//
//go:embed mininet/*.py mininet/examples/*.py
var Files embed.FS
