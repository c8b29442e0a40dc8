//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "the lab needs Linux, root and the kernel's IPVS: run make demo (docs/lab.md)")
	os.Exit(1)
}
