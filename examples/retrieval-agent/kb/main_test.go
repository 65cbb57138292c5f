package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestSearchRanksBySharedWords(t *testing.T) {
	got := search("How do I reset my password? (run 4242)", 2)
	if len(got) == 0 || got[0].Title != "Password reset" {
		t.Fatalf("search = %+v, want Password reset first", got)
	}
	if hits := search("zebra xylophone", 2); len(hits) != 0 {
		t.Fatalf("search(no shared words) = %+v, want none", hits)
	}
	if hits := search("settings security export", 1); len(hits) != 1 {
		t.Fatalf("search with limit 1 returned %d documents", len(hits))
	}
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(handler(2))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	code, body := get("/search?q=" + url.QueryEscape("Can I get a refund on the annual plan?"))
	if code != http.StatusOK || !strings.HasPrefix(body, "[Refund policy] ") {
		t.Errorf("/search refund = %d %q", code, body)
	}
	if code, body := get("/search?q=zebra"); code != http.StatusOK || body != "" {
		t.Errorf("/search without a match = %d %q, want 200 and an empty body", code, body)
	}
	if code, _ := get("/search?q=+"); code != http.StatusBadRequest {
		t.Errorf("/search with a blank q = %d, want 400", code)
	}
}
