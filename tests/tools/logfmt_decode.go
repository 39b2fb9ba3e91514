// SPDX-License-Identifier: MIT
// logfmt_decode reads logfmt lines on stdin and writes, for each, one JSON
// array of [key, value] pairs on stdout, as go-logfmt (the reference
// logfmt implementation, Debian's golang-github-go-logfmt-logfmt-dev)
// decodes them.  A line it cannot decode is written as {"error": "..."}.
// The log tests compare what it reads with the fields the library wrote.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/go-logfmt/logfmt"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		d := logfmt.NewDecoder(bytes.NewReader(in.Bytes()))
		pairs := [][2]string{}
		for d.ScanRecord() {
			for d.ScanKeyval() {
				pairs = append(pairs, [2]string{string(d.Key()), string(d.Value())})
			}
		}
		if err := d.Err(); err != nil {
			enc.Encode(map[string]string{"error": err.Error()})
			continue
		}
		enc.Encode(pairs)
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
