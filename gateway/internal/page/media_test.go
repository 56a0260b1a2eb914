package page

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMedia: a media directory is read at start and served by name, with
// its own inert policy; anything but an image in it is refused.
func TestMedia(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("logo.svg", `<svg xmlns="http://www.w3.org/2000/svg"/>`)
	write("item_1.PNG", "\x89PNG")
	write(".DS_Store", "junk")
	s, err := New(Config{Media: dir, MaxAge: 30e9})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Media([]byte("logo.svg"))
	if a == nil || string(a.ContentType) != "image/svg+xml" || string(a.CacheControl) != "public, max-age=30" ||
		!strings.Contains(string(a.CSP), "sandbox") || len(a.ETag) == 0 || a.Name != MediaPrefix+"logo.svg" {
		t.Fatalf("logo.svg: %+v", a)
	}
	if a := s.Media([]byte("item_1.PNG")); a == nil || string(a.ContentType) != "image/png" {
		t.Fatalf("item_1.PNG: %+v", a)
	}
	for _, name := range []string{".DS_Store", "nope.svg", "../page.go", ""} {
		if s.Media([]byte(name)) != nil {
			t.Errorf("%q served", name)
		}
	}
	name := []byte("logo.svg")
	if n := testing.AllocsPerRun(100, func() { _ = s.Media(name) }); n != 0 {
		t.Errorf("Media: %v allocs", n)
	}
	if s, _ := New(Config{}); s.Media(name) != nil {
		t.Error("media served without a directory")
	}
	for file, want := range map[string]string{"notes.txt": "want an image", "a b.svg": "want an image"} {
		bad := t.TempDir()
		if err := os.WriteFile(filepath.Join(bad, file), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Config{Media: bad}); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: %v", file, err)
		}
	}
	if _, err := New(Config{Media: filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing media directory is accepted")
	}
}
