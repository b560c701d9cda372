package wsplugin

import (
	"errors"
	"path/filepath"
)

// FileName is the plugin's file name in a plugins folder.
const FileName = "kidscope.lua"

// PersonalDir is the folder in which Wireshark and tshark look for a
// user's own Lua plugins (Help → About Wireshark → Folders, "Personal Lua
// Plugins"; tshark -G folders): %APPDATA%\Wireshark\plugins on Windows,
// ~/.local/lib/wireshark/plugins elsewhere. It does not depend on
// Wireshark's version. getenv reads the environment (os.Getenv).
func PersonalDir(goos string, getenv func(string) string) (string, error) {
	if goos == "windows" {
		appData := getenv("APPDATA")
		if appData == "" {
			return "", errors.New("APPDATA is not set: it names the folder of Wireshark's personal plugins")
		}
		return filepath.Join(appData, "Wireshark", "plugins"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("HOME is not set: it names the folder of Wireshark's personal plugins")
	}
	return filepath.Join(home, ".local", "lib", "wireshark", "plugins"), nil
}
