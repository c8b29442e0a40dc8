// Command genconf writes a large keepalived configuration to standard
// output, for benchmarks that compare directord and keepalived on it.
package main

import (
	"flag"
	"fmt"

	"github.com/directord/directord/internal/testconf"
)

func main() {
	vs := flag.Int("vs", 1000, "virtual servers")
	rs := flag.Int("rs", 20, "real servers per virtual server")
	flag.Parse()
	fmt.Print(testconf.Large(*vs, *rs))
}
