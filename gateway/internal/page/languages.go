package page

import (
	"encoding/json"
	"fmt"
	"html"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// messagesDir holds one message file per language, <tag>.json, a flat
// object of message key to {placeholder} template (see i18n.js). Every file
// has the same keys; a test checks it, and that the page's script and HTML
// name no key a file lacks.
const messagesDir = "assets/i18n"

// languageTag is the name of a message file: a primary language subtag.
var languageTag = regexp.MustCompile(`^[a-z]{2,3}$`)

// languageSwitch renders the page's language switch: one button per
// message file, in the file's own language (its "language.name"), naming
// the file's served path (names: served path by source path). The script
// loads the chosen file; the HTML stays the same for every buyer.
func languageSwitch(names map[string]string) (string, error) {
	entries, err := fs.ReadDir(files, messagesDir)
	if err != nil {
		return "", fmt.Errorf("sale page languages: %w", err)
	}
	var b strings.Builder
	for _, e := range entries {
		tag := strings.TrimSuffix(e.Name(), ".json")
		if path.Ext(e.Name()) != ".json" || !languageTag.MatchString(tag) {
			return "", fmt.Errorf("sale page languages: %s is not <language>.json", e.Name())
		}
		msgs, err := readMessages(tag)
		if err != nil {
			return "", err
		}
		name := msgs["language.name"]
		if name == "" {
			return "", fmt.Errorf("sale page languages: %s has no language.name", e.Name())
		}
		fmt.Fprintf(&b, `    <button type="button" class="lang" lang="%s" data-lang="%s" data-messages="%s" aria-pressed="false">%s</button>`+"\n",
			tag, tag, names["i18n/"+e.Name()], html.EscapeString(name))
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// readMessages reads the message file of language tag.
func readMessages(tag string) (map[string]string, error) {
	raw, err := files.ReadFile(messagesDir + "/" + tag + ".json")
	if err != nil {
		return nil, fmt.Errorf("sale page messages: %w", err)
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("sale page messages %s.json: %w", tag, err)
	}
	return m, nil
}
