package mcp

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxLine bounds one message line of a stdio upstream, as the SDK's own reader does.
const maxLine = 16 << 20

// maxLogged bounds the bytes of an upstream line quoted in a log line.
const maxLogged = 512

// vetLines returns a reader of the JSON-RPC messages among the newline-delimited lines
// of r, each followed by a newline. A line that is not a JSON-RPC message (not JSON,
// not a request, notification or response, or over maxLine bytes) is dropped with a
// log line; when it carries the id of a response, a JSON-RPC error response for that
// id takes its place, so the call it answered fails rather than waiting for its
// timeout. The returned reader ends with r's error (io.EOF at the end of r).
func vetLines(r io.Reader, server string, log lineLog) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := readLine(br)
			if len(bytes.TrimSpace(line)) > 0 {
				if out := vetLine(line, server, log); out != nil {
					if _, werr := pw.Write(out); werr != nil {
						return // the reader was closed
					}
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// readLine reads one line without its line ending. Of a line over maxLine bytes it
// returns the first maxLine, which are not valid JSON, and skips the rest.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if room := maxLine - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return bytes.TrimRight(line, "\r\n"), err
		}
	}
}

// anID finds the id member of a line that is not valid JSON.
var anID = regexp.MustCompile(`"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")`)

// vetLine returns line (with a newline) when it is a JSON-RPC message, else logs it
// and returns an error response for its id when it looks like a response, else nil.
func vetLine(line []byte, server string, log lineLog) []byte {
	_, err := jsonrpc.DecodeMessage(line)
	if err == nil {
		return append(line, '\n')
	}
	log.logger.Warn("malformed message from MCP upstream dropped", log.attrs(server, line, err)...)
	id, ok := responseID(line)
	if !ok {
		return nil
	}
	resp, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code:    jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("agentd dropped a malformed message from MCP server %q", server),
	}})
	if err != nil {
		return nil
	}
	return append(resp, '\n')
}

// responseID returns the id of a line that is meant as a response: an object with an
// id and no method (a malformed request of the upstream must not answer one of ours),
// or, when the line is not JSON at all, an "id" member in its text and no "method".
func responseID(line []byte) (jsonrpc.ID, bool) {
	var raw any
	if json.Valid(line) {
		var probe struct {
			ID     any             `json:"id"`
			Method json.RawMessage `json:"method"`
		}
		if json.Unmarshal(line, &probe) != nil || probe.Method != nil || probe.ID == nil {
			return jsonrpc.ID{}, false
		}
		raw = probe.ID
	} else {
		m := anID.FindSubmatch(line)
		if m == nil || bytes.Contains(line, []byte(`"method"`)) || json.Unmarshal(m[1], &raw) != nil {
			return jsonrpc.ID{}, false
		}
	}
	id, err := jsonrpc.MakeID(raw)
	return id, err == nil && id.IsValid()
}

// quote returns the start of line for a log line.
func quote(line []byte) string {
	if len(line) > maxLogged {
		return string(line[:maxLogged]) + "…"
	}
	return string(line)
}

// lineLog logs what an upstream wrote that is no message of the protocol (its stderr,
// malformed lines). Such a line may hold anything the upstream handled, so its text
// (and a parse error, which quotes it) is logged only with payloads
// (--log-payloads); otherwise its length and the first 16 hex digits of its SHA-256,
// which tell lines apart and match a line found elsewhere.
type lineLog struct {
	logger   *slog.Logger
	payloads bool
}

// attrs are the log attributes of line from server; err is why it was dropped, if it was.
func (l lineLog) attrs(server string, line []byte, err error) []any {
	if l.payloads {
		out := []any{"server", server, "line", quote(line)}
		if err != nil {
			out = append(out, "error", err.Error())
		}
		return out
	}
	sum := sha256.Sum256(line)
	return []any{"server", server, "bytes", len(line), "sha256", hex.EncodeToString(sum[:8])}
}
