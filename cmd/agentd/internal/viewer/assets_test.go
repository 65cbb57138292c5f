package viewer

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// The pages hold no inline script, no event attribute and no inline style, and the
// scripts never turn text into markup or code.
func TestViewer_AssetsKeepToThePolicy(t *testing.T) {
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setTimeout\(\s*['"]|javascript:`)
	checked := 0
	err := fs.WalkDir(assets, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		checked++
		data, err := fs.ReadFile(assets, path)
		if err != nil {
			return err
		}
		switch filepath.Ext(path) {
		case ".js":
			if m := sinks.Find(data); m != nil {
				t.Errorf("%s uses %s", path, m)
			}
		case ".html":
			checkHTML(t, path, string(data))
		}
		return nil
	})
	if err != nil || checked < 5 {
		t.Fatalf("checked %d files: %v", checked, err)
	}
}

func checkHTML(t *testing.T, path, page string) {
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		src := ""
		for _, a := range tok.Attr {
			if strings.HasPrefix(a.Key, "on") || a.Key == "style" {
				t.Errorf("%s: <%s> has the attribute %s", path, tok.Data, a.Key)
			}
			if a.Key == "src" || a.Key == "href" {
				src = a.Val
				if !strings.HasPrefix(a.Val, "/ui/") && !strings.HasPrefix(a.Val, "#") {
					t.Errorf("%s: <%s %s=%q> loads from elsewhere than the viewer", path, tok.Data, a.Key, a.Val)
				}
			}
		}
		if tok.Data == "script" && src == "" {
			t.Errorf("%s has an inline script", path)
		}
		if tok.Data == "style" {
			t.Errorf("%s has an inline style sheet", path)
		}
	}
}
