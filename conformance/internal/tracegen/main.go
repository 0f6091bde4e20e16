// Command tracegen writes docs/conformance-matrix.md and
// conformance/zz_generated.spec.go from docs/driver-api.md, the suite's
// rules and the reasons of conformance/internal/trace. Run it from the
// conformance module: `go generate ./...` (see doc.go).
//
// With -add-ids it first writes a proposed id after every normative
// sentence of the spec that has none, for a spec author to review.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/machina-io/machina/conformance/internal/trace"
)

func main() {
	root := flag.String("root", "..", "the repository root, relative to the conformance module")
	addIDs := flag.Bool("add-ids", false, "add proposed ids to the spec's untagged sentences first")
	flag.Parse()
	if err := run(*root, *addIDs); err != nil {
		fmt.Fprintln(os.Stderr, "tracegen:", err)
		os.Exit(1)
	}
}

func run(root string, addIDs bool) error {
	specPath := filepath.Join(root, trace.SpecPath)
	if addIDs {
		src, err := os.ReadFile(specPath)
		if err != nil {
			return err
		}
		out, added := trace.AddIDs(string(src))
		if len(added) > 0 {
			if err := os.WriteFile(specPath, []byte(out), 0o644); err != nil {
				return err
			}
			for _, id := range added {
				fmt.Println("added", id)
			}
		}
	}
	files, err := trace.Generate(root)
	if err != nil {
		return err
	}
	for path, content := range files {
		if err := os.WriteFile(filepath.Join(root, path), content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
