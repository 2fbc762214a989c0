// Command bundle builds the live view's page: it bundles ui/web/src (and
// the npm packages ui/web/package-lock.json pins, fetched from the npm
// registry and checked against the lock's integrity when
// ui/web/node_modules is missing: fetch.go, no Node.js needed) into
// ui/assets/app.js and app.css with esbuild's Go API. `go generate ./ui` runs it from the ui directory; the
// output is committed so that building hymn needs neither npm nor the
// network, and ui's TestBundleCurrent checks it is current.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/evanw/esbuild/pkg/api"
)

func main() {
	web := flag.String("web", "web", "the page's sources (package.json, src/)")
	out := flag.String("out", "assets", "where app.js and app.css go")
	flag.Parse()
	if err := run(*web, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(web, out string) error {
	if _, err := os.Stat(filepath.Join(web, "node_modules")); err != nil {
		if err := fetch(web); err != nil {
			return fmt.Errorf("installing the packages of %s/package-lock.json: %w", web, err)
		}
	}
	res := api.Build(api.BuildOptions{
		EntryPointsAdvanced: []api.EntryPoint{{InputPath: filepath.Join(web, "src", "main.js"), OutputPath: "app"}},
		Outdir:              out,
		Bundle:              true,
		MinifyWhitespace:    true,
		MinifySyntax:        true,
		MinifyIdentifiers:   true,
		Target:              api.ES2020,
		Format:              api.FormatIIFE,
		LegalComments:       api.LegalCommentsEndOfFile,
		Charset:             api.CharsetUTF8,
		Write:               true,
		LogLevel:            api.LogLevelWarning,
	})
	if len(res.Errors) > 0 {
		return fmt.Errorf("esbuild: %d errors (first: %s)", len(res.Errors), res.Errors[0].Text)
	}
	return nil
}
