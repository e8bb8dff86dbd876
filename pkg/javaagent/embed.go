// Package javaagent carries weft's Java agent: the jar built from javaagent/
// and jni/ by scripts/build-agent.sh, committed like the BPF objects so that
// building weft needs no JDK or Maven (`make test` checks it matches its
// sources). weft writes it out to attach it to running JVMs.
package javaagent

import _ "embed"

//go:embed weft-agent.jar
var jar []byte

// Jar returns the agent jar's bytes.
func Jar() []byte { return jar }
