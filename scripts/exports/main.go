// Command exports fails when an exported identifier of the rule packages
// (coordinator/gate, coordinator/plan, coordinator/schedule) is referenced
// only from _test.go files, or from nowhere: an exported rule the trainer
// does not call is a rule that lives twice (issue #17).
//
// It loads the module's packages, test variants included, with
// golang.org/x/tools/go/packages, collects the exported package-level
// names, methods and struct fields declared in the non-test files of the
// checked packages, and then looks up every identifier use the type
// checker resolved, anywhere in the module, by the declaration it refers
// to. A declaration with no use outside _test.go files is printed, one per
// line with its position, and the command exits 1.
//
// A method is also used when it satisfies an interface the standard
// library calls implicitly (String, Error, MarshalJSON and the like): no
// identifier names it at the call site.
//
// It is its own module, so that x/tools stays out of skillfleet's go.mod:
//
//	go run -C scripts/exports . -dir ../..
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	dir := flag.String("dir", ".", "root directory of the module to check")
	pkgs := flag.String("pkgs", "coordinator/gate,coordinator/plan,coordinator/schedule",
		"comma-separated package paths to check, relative to the module path")
	flag.Parse()
	found, err := check(*dir, strings.Split(*pkgs, ","))
	if err != nil {
		fmt.Fprintln(os.Stderr, "exports:", err)
		os.Exit(2)
	}
	for _, f := range found {
		fmt.Println(f)
	}
	if len(found) > 0 {
		fmt.Fprintf(os.Stderr, "exports: %d exported identifiers of %s are used only by tests (or not at all): unexport or delete them, or use them\n", len(found), *pkgs)
		os.Exit(1)
	}
}
