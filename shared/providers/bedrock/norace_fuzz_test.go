//go:build !race

package bedrock_test

const raceEnabled = false
