package main

import (
	"os"
	"os/signal"
)

// ignoreSignals makes the process ignore sigs.
func ignoreSignals(sigs ...os.Signal) { signal.Ignore(sigs...) }
