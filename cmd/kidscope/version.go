package main

import (
	"runtime/debug"
)

// version is set by a release build: go build -ldflags "-X main.version=v1.2.0".
var version string

// kidscopeVersion is version when set, else the module version the binary was built at, with the
// VCS revision when the build recorded one ("(devel)" for a plain go build
// in a checkout, "+dirty" for a modified one).
func kidscopeVersion() string {
	if version != "" {
		return version
	}
	v := "(devel)"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v = bi.Main.Version
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && (v == "(devel)" || v == "") {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " " + rev
		if modified == "true" {
			v += "+dirty"
		}
	}
	return v
}
