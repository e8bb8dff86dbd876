// Package nodeagent carries weft's Node.js companion script
// (weft-node.js): weft writes it out for NODE_OPTIONS=--require and
// injects it into running Node.js processes (`weft node`).
package nodeagent

import _ "embed"

//go:embed weft-node.js
var script []byte

// Script returns the companion's source.
func Script() []byte { return script }
