// Command kb is the retrieval-agent example's knowledge-base service: a tiny HTTP server
// that answers GET /search?q=... with the plain-text snippets of the documents that
// share the most words with q. agentd's http.retrieve action calls it from the
// before_planning stage and stores the answer in the rag_context enrichment.
//
// It is a demo, not a search engine: the documents are a fixed list in this file and the
// ranking counts distinct shared words.
//
//	go run ./examples/retrieval-agent/kb                     # listens on 127.0.0.1:18282
//	go run ./examples/retrieval-agent/kb -addr 127.0.0.1:9000
//	curl '127.0.0.1:18282/search?q=how+do+I+reset+my+password'
//
// Endpoints:
//
//	GET /search?q=TEXT  200 text/plain, one "[title] text" line per match, best first
//	                    (at most -max results; an empty body when nothing matches);
//	                    400 when q is missing or blank.
//	GET /healthz        200 "ok".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"
)

// doc is one knowledge-base entry.
type doc struct {
	Title string
	Text  string
}

// docs is the knowledge base.
var docs = []doc{
	{"Password reset", "To reset a password, open Settings > Security and choose Reset password. " +
		"A reset link is e-mailed and stays valid for 30 minutes."},
	{"Two-factor authentication", "Two-factor authentication is enabled under Settings > Security. " +
		"Recovery codes are shown once; store them offline."},
	{"Refund policy", "Annual plans can be refunded in full within 14 days of purchase. " +
		"Monthly plans are not refunded but can be cancelled at any time."},
	{"Invoices", "Invoices are issued on the first day of each billing period and can be " +
		"downloaded as PDF from Billing > Invoices."},
	{"API rate limits", "The public API allows 600 requests per minute per token. " +
		"Requests above the limit receive HTTP 429 with a Retry-After header."},
	{"Data export", "Workspace owners can export all documents as a ZIP archive from " +
		"Settings > Data export. Large exports are e-mailed when ready."},
	{"Service status", "Incidents and planned maintenance are announced on the status page " +
		"and in the #status channel."},
}

// stopwords are left out of matching.
var stopwords = map[string]bool{
	"the": true, "and": true, "for": true, "how": true, "what": true, "when": true, "where": true,
	"can": true, "you": true, "your": true, "are": true, "with": true, "from": true, "does": true,
	"this": true, "that": true, "have": true, "will": true, "which": true, "about": true,
	"into": true, "there": true, "any": true, "our": true, "who": true, "why": true,
}

// words returns the distinct lower-case words of s that take part in matching: runs of
// letters and digits, at least three characters long, not stopwords.
func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len([]rune(w)) >= 3 && !stopwords[w] {
			out[w] = true
		}
	}
	return out
}

// search returns up to limit documents sharing at least one word with q, the ones sharing
// the most words first (ties keep the list order).
func search(q string, limit int) []doc {
	qw := words(q)
	type hit struct {
		d     doc
		score int
	}
	var hits []hit
	for _, d := range docs {
		score := 0
		for w := range words(d.Title + " " + d.Text) {
			if qw[w] {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, hit{d, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return b.score - a.score })
	var out []doc
	for i := 0; i < len(hits) && i < limit; i++ {
		out = append(out, hits[i].d)
	}
	return out
}

// handler serves /search and /healthz.
func handler(limit int) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("q")
		if strings.TrimSpace(q) == "" {
			http.Error(w, "query parameter q is required", http.StatusBadRequest)
			return
		}
		hits := search(q, limit)
		log.Printf("search q=%q request_id=%q hits=%d", q, r.Header.Get("X-Request-Id"), len(hits))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for _, d := range hits {
			fmt.Fprintf(w, "[%s] %s\n", d.Title, d.Text)
		}
	})
	return mux
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18282", "listen address")
	limit := flag.Int("max", 2, "most snippets per answer")
	flag.Parse()
	log.SetPrefix("kb: ")
	log.SetFlags(0)
	if *limit < 1 {
		log.Fatal("-max must be at least 1")
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: handler(*limit), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("serving %d documents on http://%s", len(docs), ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
