// Command istioctlbin prints the path of the cached istioctl the benchmarks
// compare against, building it first if need be (lab/tools/istioctl).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/meshtriage/meshtriage/lab/bench"
)

func main() {
	bin, err := bench.IstioctlBinary(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "istioctlbin:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
