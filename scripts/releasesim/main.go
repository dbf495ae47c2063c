// Command releasesim writes a Go module proxy directory (the layout GOPROXY=file://
// serves) holding the given modules of this repository at one version, as a release
// would publish them. scripts/releasecheck.sh uses it to fetch every module at a fake tag
// from a clean consumer, with no replace directive, before a real tag exists.
//
//	go run . -proxy DIR -version v0.99.0 MODULE_DIR...
//
// The zips come from golang.org/x/mod/zip, the code the go command itself uses to
// check module zips, so what is excluded (nested modules, vendor) and what is refused
// (invalid file names, oversize files) is what a real proxy would do.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	proxy := flag.String("proxy", "", "proxy directory to write (required)")
	version := flag.String("version", "", "version to publish, e.g. v0.99.0 (required)")
	flag.Parse()
	if *proxy == "" || *version == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: releasesim -proxy DIR -version VERSION MODULE_DIR...")
		os.Exit(2)
	}
	for _, dir := range flag.Args() {
		if err := publish(*proxy, *version, dir); err != nil {
			fmt.Fprintf(os.Stderr, "releasesim: %s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

func publish(proxy, version, dir string) error {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return fmt.Errorf("no module line in go.mod")
	}
	mv := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return err
	}
	esc, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	at := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	z, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(z, mv, dir); err != nil {
		z.Close()
		return fmt.Errorf("zip: %w", err)
	}
	if err := z.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(at, version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err := os.WriteFile(filepath.Join(at, version+".info"), info, 0o644); err != nil {
		return err
	}
	list, err := os.OpenFile(filepath.Join(at, "list"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(list, version); err != nil {
		list.Close()
		return err
	}
	fmt.Printf("published %s@%s\n", path, version)
	return list.Close()
}
