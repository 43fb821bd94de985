// Command sitesrv serves a directory of static files on loopback, for the
// benchmarks (deploy/bench.sh serves the Python docs with it). It prints the
// base URL on stdout and runs until killed.
//
//	go run ./deploy/sitesrv /usr/share/doc/python3.11/html
package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sitesrv DIR [ADDR]")
		os.Exit(2)
	}
	addr := "127.0.0.1:0"
	if len(os.Args) > 2 {
		addr = os.Args[2]
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s/\n", ln.Addr())
	srv := &http.Server{Handler: http.FileServer(http.Dir(os.Args[1])), ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.Serve(ln))
}
