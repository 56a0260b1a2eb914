package config

import (
	"runtime"
	"runtime/debug"
)

// Version is the release of the binaries. The build may set it with
// -ldflags "-X flashsale/sharding/config.Version=1.2.3"; otherwise it is read
// from the build information (the module version or the VCS revision).
var Version = ""

// VersionLine returns "program version (go version)".
func VersionLine(program string) string {
	return program + " " + version() + " (" + runtime.Version() + ")"
}

func version() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "-dirty"
		}
		return rev
	}
	if v := bi.Main.Version; v != "" {
		return v
	}
	return "unknown"
}
