package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// ParseTokenFile reads the tokens of a token file named name. The file holds either one
// bare token on one line, an admin token bound to no tenant, or a YAML (or JSON) list of
// tokens, each a mapping:
//
//   - token_sha256: 9f86d0…   # hex SHA-256 of the token (or token: its text)
//     role: orchestrator      # admin, orchestrator, approver or viewer
//     tenant: acme            # optional: confine the token to metadata.tenant acme
//     name: desk-lead         # optional: how records name the token (who decided)
//
// Every mistake is reported, each as name:line:col.
func ParseTokenFile(name string, data []byte) ([]Token, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err == nil && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.SequenceNode {
		return parseTokenList(name, doc.Content[0])
	}
	text := string(bytes.TrimSpace(data))
	switch {
	case text == "":
		return nil, fmt.Errorf("token file %s is empty", name)
	case strings.ContainsAny(text, " \t\r\n"):
		return nil, fmt.Errorf("token file %s holds neither one bare token (one word) nor a YAML list of tokens", name)
	}
	return []Token{{SHA256: sha256.Sum256([]byte(text)), Role: RoleAdmin}}, nil
}

func parseTokenList(name string, list *yaml.Node) ([]Token, error) {
	var errs []error
	fail := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d:%d: %s", name, n.Line, n.Column, fmt.Sprintf(format, args...)))
	}
	if len(list.Content) == 0 {
		fail(list, "the token list is empty")
	}
	tokens := make([]Token, 0, len(list.Content))
	first := map[[sha256.Size]byte]*yaml.Node{}
	for _, entry := range list.Content {
		if entry.Kind != yaml.MappingNode {
			fail(entry, "a token is a mapping with token or token_sha256, role and optional tenant and name")
			continue
		}
		var tok Token
		var hashed, role bool
		for i := 0; i+1 < len(entry.Content); i += 2 {
			key, value := entry.Content[i], entry.Content[i+1]
			if value.Kind != yaml.ScalarNode || value.Value == "" {
				fail(value, "%s must be a non-empty string", key.Value)
				continue
			}
			switch key.Value {
			case "token":
				tok.SHA256, hashed = sha256.Sum256([]byte(value.Value)), true
			case "token_sha256":
				sum, err := hex.DecodeString(value.Value)
				if err != nil || len(sum) != sha256.Size {
					fail(value, "token_sha256 must be %d hex digits", 2*sha256.Size)
					continue
				}
				tok.SHA256, hashed = [sha256.Size]byte(sum), true
			case "role":
				switch r := Role(value.Value); r {
				case RoleAdmin, RoleOrchestrator, RoleApprover, RoleViewer:
					tok.Role, role = r, true
				default:
					fail(value, "unknown role %q (admin, orchestrator, approver or viewer)", value.Value)
				}
			case "tenant":
				tok.Tenant = value.Value
			case "name":
				tok.Name = value.Value
			default:
				fail(key, "unknown field %q (token, token_sha256, role, tenant, name)", key.Value)
			}
		}
		if n := countKeys(entry, "token", "token_sha256"); n != 1 {
			fail(entry, "a token needs exactly one of token and token_sha256")
			continue
		}
		if !role {
			fail(entry, "a token needs a role")
			continue
		}
		if !hashed {
			continue
		}
		if prev, dup := first[tok.SHA256]; dup {
			fail(entry, "the same token as at line %d", prev.Line)
			continue
		}
		first[tok.SHA256] = entry
		tokens = append(tokens, tok)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return tokens, nil
}

// countKeys counts the keys of mapping m that are among names.
func countKeys(m *yaml.Node, names ...string) int {
	n := 0
	for i := 0; i < len(m.Content); i += 2 {
		for _, name := range names {
			if m.Content[i].Value == name {
				n++
			}
		}
	}
	return n
}
