//go:build ignore

// gen_sdk writes sdkgo.zip, the module zip of ../../sdk/go at SDKVersion
// (read from sdk.go), and records its hash in sdkgo.sums. It refuses when
// sdkgo.sums lists SDKVersion with another hash: a released version's
// content never changes (module caches and go.sum files hold its hash), so
// bump SDKVersion in sdk.go first. Run it with go generate.
package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

func main() {
	log.SetFlags(0)
	src, err := os.ReadFile("sdk.go")
	if err != nil {
		log.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const SDKVersion = "([^"]+)"`).FindSubmatch(src)
	if m == nil {
		log.Fatal("sdk.go: no const SDKVersion")
	}
	version := string(m[1])
	var buf bytes.Buffer
	if err := zip.CreateFromDir(&buf, module.Version{Path: "github.com/toolhostd/toolhostd/sdk/go", Version: version}, "../../sdk/go"); err != nil {
		log.Fatal(err)
	}
	tmp, err := os.CreateTemp("", "sdkgo-*.zip")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, bytes.NewReader(buf.Bytes())); err != nil {
		log.Fatal(err)
	}
	tmp.Close()
	sum, err := dirhash.HashZip(tmp.Name(), dirhash.Hash1)
	if err != nil {
		log.Fatal(err)
	}
	sums, err := os.ReadFile("sdkgo.sums")
	if err != nil && !os.IsNotExist(err) {
		log.Fatal(err)
	}
	recorded := false
	for _, line := range strings.Split(string(sums), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == version {
			if f[1] != sum {
				log.Fatalf("sdk/go changed since %s was recorded (%s, now %s): bump SDKVersion in sdk.go", version, f[1], sum)
			}
			recorded = true
		}
	}
	if !recorded {
		sums = fmt.Appendf(sums, "%s %s\n", version, sum)
		if err := os.WriteFile("sdkgo.sums", sums, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if err := os.WriteFile("sdkgo.zip", buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("sdkgo.zip: %s@%s, %d bytes, %s\n", "github.com/toolhostd/toolhostd/sdk/go", version, buf.Len(), sum)
}
