//go:build race

package sdk

// raceEnabled builds the gateway under test with -race too, so that a data
// race in the server fails the run.
const raceEnabled = true
