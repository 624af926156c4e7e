// Command hello is the images test's stand-in binary for platforms the test
// does not build kfed's binaries for: the standard library alone, so that
// cross-compiling it is quick.
package main

import (
	"fmt"
	"runtime"
)

func main() { fmt.Println("hello from", runtime.GOOS+"/"+runtime.GOARCH) }
