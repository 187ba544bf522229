//go:build race

package bedrock_test

// raceEnabled: the race detector is on (FuzzDo then builds an SDK client
// per input, see there).
const raceEnabled = true
